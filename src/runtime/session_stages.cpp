// Stages: a node whose output shapes depend on values known only at run time (NonZero, If,
// Loop, a Reshape fed by computed data) ends the planned part of a session. What comes before
// it is planned and run with the backends' kernels; the node itself runs on the host with the
// values that part made; what follows is the next stage, a session of its own over the same
// model that plans again only when the shapes reaching it change.
#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_set>

#include "ops/evaluate.h"
#include "core/layout.h"
#include "runtime/session_impl.h"

namespace osprey {

namespace {

void addStats(SessionStats* into, const SessionStats& more) {
  into->arenaPeakBytes += more.arenaPeakBytes;
  into->activationBytesSum += more.activationBytesSum;
  into->staticBytes += more.staticBytes;
  into->executions += more.executions;
  into->views += more.views;
  into->relaidTensors += more.relaidTensors;
  into->foldedOps += more.foldedOps;
  into->loweredOps += more.loweredOps;
  into->fullPrecisionOps += more.fullPrecisionOps;
  into->flops += more.flops;
  into->stages += more.stages;
  into->hostOps += more.hostOps;
  into->weightsPacked += more.weightsPacked;
  into->weightsShared += more.weightsShared;
  into->plansMade += more.plansMade;
  into->plansKept += more.plansKept;
  for (auto& [key, count] : more.opsByBackend) into->opsByBackend[key] += count;
  for (auto& [key, count] : more.referenceOps) into->referenceOps[key] += count;
  for (auto& [key, count] : more.opsByDtype) into->opsByDtype[key] += count;
}

TensorView viewOf(const Tensor& t) {
  TensorView v;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.data = const_cast<void*>(t.data());
  v.strings = &t.strings();
  v.value = &t;
  v.present = !t.empty();  // an absent optional
  return v;
}

}  // namespace

Status SessionImpl::splitAfter(size_t boundary) {
  const Graph& g = model_->graph;
  boundary_ = static_cast<int>(boundary);
  const Node& node = g.nodes[boundary];
  std::unordered_set<int> later;  // made by the nodes after the boundary
  for (size_t n = boundary + 1; n < g.nodes.size(); ++n)
    for (int o : g.nodes[n].outputs)
      if (o >= 0) later.insert(o);
  std::set<int> nextNeeds;  // ordered, so that plans are deterministic
  for (size_t n = boundary + 1; n < g.nodes.size(); ++n)
    for (int i : g.nodes[n].inputs)
      if (i >= 0 && !later.count(i)) nextNeeds.insert(i);
  std::vector<int> nextOutputs;
  std::set<int> needed(nextNeeds.begin(), nextNeeds.end());
  for (int i : node.inputs)
    if (i >= 0) needed.insert(i);
  for (int o : outputs_) {
    if (later.count(o)) {
      nextOutputs.push_back(o);
    } else {
      needed.insert(o);
    }
  }
  const std::unordered_set<int> made(node.outputs.begin(), node.outputs.end());
  for (int i : needed)
    if (!known_[i] && !made.count(i)) keep_.push_back(i);
  if (nextOutputs.empty()) return Status::ok();  // nothing after the boundary reaches an output
  std::vector<int> entries;
  std::map<int, const RuntimeTensor*> known;
  for (int i : nextNeeds) {
    if (known_[i]) {
      known[i] = &tensors_[i];
    } else {
      entries.push_back(i);
    }
  }
  next_ = std::make_unique<SessionImpl>(*this, boundary + 1, std::move(entries), std::move(nextOutputs), std::move(known));
  return next_->init();
}

void SessionImpl::bindEntries() {
  std::unordered_set<const RuntimeTensor*> read;
  for (const Command& cmd : commands_) read.insert(cmd.inputs.begin(), cmd.inputs.end());
  copiedEntries_.clear();
  boundEntries_.clear();
  for (int i : inputs_) {
    const RuntimeTensor& t = tensors_[i];
    if (!read.count(&t)) continue;  // passes through to the boundary or a later stage
    (t.layout == Layout::NCHW && t.dtype != DataType::String ? boundEntries_ : copiedEntries_).push_back(i);
  }
  // Nothing writes an entry (views and Concat parts leave inputs alone), so the commands read
  // the earlier stage's host tensor where it lies.
  entryBases_.assign(boundEntries_.size(), nullptr);
  for (size_t k = 0; k < boundEntries_.size(); ++k) {
    RuntimeTensor& t = tensors_[boundEntries_[k]];
    t.chunk = std::make_shared<MemChunk>();
    t.chunk->base = &entryBases_[k];
    t.chunk->size = t.bytes();
    t.backend = inputHome();
  }
}

Status SessionImpl::readTensor(const RuntimeTensor& rt, Tensor* out) const {
  // readInto writes every byte: zeroing the memory first would be a wasted pass over it.
  *out = rt.dtype == DataType::String ? Tensor(rt.dtype, rt.shape) : Tensor::uninitialized(rt.dtype, rt.shape);
  return readInto(rt, out);
}

Status SessionImpl::readInto(const RuntimeTensor& rt, Tensor* out) const {
  if (rt.dtype == DataType::String) {
    if (rt.strings) out->strings() = *rt.strings;
  } else if (rt.constData || (rt.backend && rt.backend->type() == ForwardType::CPU)) {
    OSPREY_RETURN_IF_ERROR(convertLayout(rt.host(), rt.layout, out->data(), Layout::NCHW, rt.shape, dataTypeSize(rt.dtype),
                                         copyPool()));
  } else if (rt.backend) {
    RuntimeTensor host = rt;
    host.backend = nullptr;
    host.layout = Layout::NCHW;
    auto chunk = std::make_shared<MemChunk>();
    uint8_t* base = static_cast<uint8_t*>(out->data());
    chunk->base = &base;
    host.chunk = chunk;
    OSPREY_RETURN_IF_ERROR(rt.backend->onCopyBuffer(&rt, &host));
  }
  return Status::ok();
}

Status SessionImpl::runBoundary(const std::map<int, Tensor>& values, std::vector<Tensor>* results) {
  const Node& node = model_->graph.nodes[boundary_];
  TensorViews in(node.inputs.size()), out(node.outputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int idx = node.inputs[i];
    if (idx < 0) {
      in[i].present = false;
    } else if (known_[idx]) {
      in[i] = tensors_[idx].view();
    } else {
      in[i] = viewOf(values.at(idx));
    }
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) out[i].present = node.outputs[i] >= 0;
  const OpDef& def = opDef(node.type);
  if (def.hostRun) {  // on whole values: sequences, optionals, or a subgraph's results as they come
    OSPREY_RETURN_IF_ERROR_IN(def.hostRun(node, in, results), node.describe());
    if (results->size() < node.outputs.size())
      return Status::invalidModel(node.describe() + " gives " + std::to_string(results->size()) + " outputs; the node has " +
                                  std::to_string(node.outputs.size()));
    results->resize(node.outputs.size());
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const Tensor& r = (*results)[i];
      if (out[i].present && !isHostValue(r))
        OSPREY_RETURN_IF_ERROR(checkTensorFits("output '" + model_->graph.tensors[node.outputs[i]].name + "' of " +
                                               node.describe(), r.dtype(), r.shape()));
    }
    return Status::ok();
  }
  std::vector<RasterPlan> rasters;
  OSPREY_RETURN_IF_ERROR(computeShapes(node, in, out));
  results->assign(node.outputs.size(), Tensor());
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (!out[i].present) continue;
    if (out[i].dtype == DataType::String) return Status::unsupported(node.describe() + ": string outputs whose shape depends on data");
    OSPREY_RETURN_IF_ERROR(checkTensorFits("output '" + model_->graph.tensors[node.outputs[i]].name + "' of " + node.describe(),
                                           out[i].dtype, out[i].shape));
    (*results)[i] = Tensor(out[i].dtype, out[i].shape);
    out[i].data = (*results)[i].data();
  }
  OSPREY_RETURN_IF_ERROR(computeLowering(node, in, out, &rasters));
  return executeOnHost(node, in, out, rasters, mainRuntime_->threadPool());
}

Status SessionImpl::continueStages(std::map<int, Tensor>* values) {
  using Clock = std::chrono::steady_clock;
  const Graph& g = model_->graph;
  for (int i : keep_)
    if (!values->count(i)) OSPREY_RETURN_IF_ERROR(readTensor(tensors_[i], &(*values)[i]));
  // An output this stage knows from its shapes alone (a Shape of a value it planned) is in no
  // command's result; an earlier stage, which asked for it, finds it only in `values`.
  for (int o : outputs_)
    if (known_[o] && !values->count(o)) OSPREY_RETURN_IF_ERROR(readTensor(tensors_[o], &(*values)[o]));
  const Node& node = g.nodes[boundary_];
  const Clock::time_point start = Clock::now();
  if (callbacks_) OSPREY_RETURN_IF_ERROR(reportHost(node, *values, false));
  std::vector<Tensor> results;
  OSPREY_RETURN_IF_ERROR(runBoundary(*values, &results));
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (node.outputs[i] >= 0) (*values)[node.outputs[i]] = std::move(results[i]);
  if (callbacks_) OSPREY_RETURN_IF_ERROR(reportHost(node, *values, true));
  if (profiling_) {
    OpTiming t;
    t.opType = opTypeName(node.type);
    t.name = node.name;
    t.backend = "host";
    for (int i : node.inputs) t.inputShapes.push_back(i < 0 ? Shape() : known_[i] ? tensors_[i].shape : values->at(i).shape());
    for (int o : node.outputs) t.outputShapes.push_back(o < 0 ? Shape() : values->at(o).shape());
    t.startUs = profile_.empty() ? 0 : profile_.back().startUs + profile_.back().durationUs;
    t.durationUs = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    profile_.push_back(std::move(t));
  }
  mergedStats_ = stats_;
  mergedStats_.hostOps += 1;
  if (!next_) return Status::ok();
  next_->setCallbacks(callbacks_);
  OSPREY_RETURN_IF_ERROR(next_->runStage(values));
  addStats(&mergedStats_, next_->stats());
  if (profiling_) {
    const double offset = profile_.empty() ? 0 : profile_.back().startUs + profile_.back().durationUs;
    for (OpTiming t : next_->lastRunProfile()) {
      t.startUs += offset;
      profile_.push_back(std::move(t));
    }
  }
  return Status::ok();
}

Status SessionImpl::runStage(std::map<int, Tensor>* values) {
  const Graph& g = model_->graph;
  std::map<std::string, Shape> shapes;
  for (int i : inputs_) {
    const Tensor& t = values->at(i);
    DataType& dtype = givenDtypes_[g.tensors[i].name];
    if (dtype != t.dtype()) planned_ = false;  // a new dtype needs a new plan
    dtype = t.dtype();
    shapes[g.tensors[i].name] = isHostValue(t) ? Shape() : t.shape();
  }
  OSPREY_RETURN_IF_ERROR(resize(shapes));
  for (size_t k = 0; k < boundEntries_.size(); ++k)
    entryBases_[k] = static_cast<uint8_t*>(const_cast<void*>(values->at(boundEntries_[k]).data()));
  for (int i : copiedEntries_) {
    const Tensor& t = values->at(i);
    RuntimeTensor& rt = tensors_[i];
    if (rt.dtype == DataType::String) return Status::unsupported("string tensor '" + rt.name + "' must be constant-folded");
    OSPREY_RETURN_IF_ERROR(convertLayout(t.data(), t.layout(), rt.host(), rt.layout, rt.shape, dataTypeSize(rt.dtype)));
  }
  OSPREY_RETURN_IF_ERROR(executeCommands());
  if (boundary_ >= 0) return continueStages(values);
  for (int o : outputs_)
    if (!values->count(o)) OSPREY_RETURN_IF_ERROR(readTensor(tensors_[o], &(*values)[o]));
  return Status::ok();
}

}  // namespace osprey
