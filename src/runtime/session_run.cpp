// Session: executions, memory planning and running (resize's first half is in session.cpp).
#include <limits>
#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/layout.h"
#include "core/run_limits.h"
#include "runtime/session_impl.h"
#include "ops/op_def.h"

namespace osprey {

Status SessionImpl::createExecutions() {
  std::unordered_map<const RuntimeTensor*, Backend*> home;  // backend holding each activation
  // A mirror is the tensor's copy on a backend, in the precision its consumers there run at.
  std::map<std::tuple<const RuntimeTensor*, Backend*, bool>, RuntimeTensor*> mirrorOf;
  for (int i : inputs_) home[&tensors_[i]] = homeOfInput(i);
  chooseFullPrecisionStem();
  auto markOutputs = [](Command& cmd) {
    for (auto* t : cmd.outputs)
      if (t) t->fullPrecision = cmd.op.fullPrecision && t->dtype == DataType::Float32;
  };
  std::vector<Command> withCopies;
  for (auto& cmd : commands_) {
    Backend* chosen = main_.get();
    markOutputs(cmd);
    cmd.execution = main_->onCreate(cmd.inputs, cmd.outputs, cmd.op);
    if (!cmd.execution && backup_) {
      chosen = backup_.get();
      cmd.op.fullPrecision = cmd.op.fullPrecision && backup_->honoursFullPrecision();
      markOutputs(cmd);
      cmd.execution = backup_->onCreate(cmd.inputs, cmd.outputs, cmd.op);
    }
    if (!cmd.execution) {
      std::string dtypes;
      for (auto* t : cmd.inputs)
        if (t) dtypes += std::string(dtypes.empty() ? "" : ", ") + dataTypeName(t->dtype);
      return Status::unsupported(cmd.op.describe() + ": no kernel for inputs of dtype (" + dtypes + ") on backend '" +
                                 forwardTypeName(schedule_.backend) + "' or its backup");
    }
    cmd.backend = chosen;
    // Activations made on another backend, or kept in another precision on this one, reach
    // this command through a copy.
    for (auto*& t : cmd.inputs) {
      if (!t) continue;
      bool isConst = t->constData != nullptr;
      Backend* from = isConst ? nullptr : home[t];
      const bool precision = cmd.op.fullPrecision && t->dtype == DataType::Float32;
      bool needsCopy = isConst ? chosen->type() != ForwardType::CPU
                               : from != chosen || (chosen->honoursFullPrecision() && t->fullPrecision != precision);
      if (!needsCopy) continue;
      auto key = std::make_tuple(static_cast<const RuntimeTensor*>(t), chosen, precision);
      auto found = mirrorOf.find(key);
      if (found == mirrorOf.end()) {
        mirrors_.push_back(*t);
        RuntimeTensor* m = &mirrors_.back();
        m->constData = nullptr;
        m->chunk.reset();
        m->fullPrecision = precision;
        m->layout = chosen->preferredLayout(*m);
        Command copy;
        copy.isCopy = true;
        copy.inputs = {t};
        copy.outputs = {m};
        copy.backend = chosen->type() == ForwardType::CPU && from ? from : chosen;
        copy.outputHome = chosen;
        withCopies.push_back(std::move(copy));
        found = mirrorOf.emplace(key, m).first;
      }
      t = found->second;
    }
    for (auto* t : cmd.outputs)
      if (t) home[t] = chosen;
    stats_.fullPrecisionOps += cmd.op.fullPrecision ? 1 : 0;
    std::string key = std::string(forwardTypeName(chosen->type())) + ":" +
                      (cmd.op.type == OpType::Raster ? std::string("Raster") : opTypeName(cmd.op.type));
    ++stats_.opsByBackend[key];
    if (cmd.execution && cmd.execution->isReference()) ++stats_.referenceOps[opTypeName(cmd.op.type)];
    if (cmd.op.type != OpType::Raster && !cmd.isCopy) {
      const RuntimeTensor* in = cmd.inputs.empty() ? nullptr : cmd.inputs[0];
      const RuntimeTensor* out = cmd.outputs.empty() ? nullptr : cmd.outputs[0];
      ++stats_.opsByDtype[std::string(opTypeName(cmd.op.type)) + " " + (in ? dataTypeName(in->dtype) : "-") + " -> " +
                          (out ? dataTypeName(out->dtype) : "-")];
    }
    withCopies.push_back(std::move(cmd));
  }
  // Graph outputs produced off the CPU are read back through their backend's onCopyBuffer in run().
  commands_ = std::move(withCopies);
  chooseLayouts();
  findViews();
  stats_.executions = static_cast<int>(commands_.size()) - stats_.views;
  return Status::ok();
}

namespace {

// A region that reads its elements in order from offset 0 and writes them in order from
// dst.offset, row-major on both sides.
bool contiguousCopy(const RasterRegion& r) {
  if (r.src.offset != 0) return false;
  int64_t expected = 1;
  for (int k = 2; k >= 0; --k) {
    if (r.size[k] == 1) continue;
    if (r.src.stride[k] != expected || r.dst.stride[k] != expected) return false;
    expected *= r.size[k];
  }
  return true;
}

bool wholeContiguousCopy(const RasterRegion& r) { return r.dst.offset == 0 && contiguousCopy(r); }

// A region that reads its elements in order from src.offset and writes them in order from 0.
bool contiguousSlice(const RasterRegion& r) {
  RasterRegion shifted = r;
  shifted.src.offset = 0;
  return r.dst.offset == 0 && r.src.offset >= 0 && contiguousCopy(shifted);
}

}  // namespace

void SessionImpl::findViews() {
  std::unordered_map<const RuntimeTensor*, bool> graphInput;
  for (int i : inputs_) graphInput[&tensors_[i]] = true;
  for (auto& cmd : commands_) {
    if (cmd.isCopy || cmd.op.type != OpType::Raster || !cmd.op.raster || cmd.outputs.size() != 1) continue;
    const RasterPlan& plan = *cmd.op.raster;
    if (plan.fill || plan.regions.size() != 1) continue;
    const RasterRegion& r = plan.regions[0];
    RuntimeTensor* out = cmd.outputs[0];
    if (!out || r.input < 0 || static_cast<size_t>(r.input) >= cmd.inputs.size()) continue;
    RuntimeTensor* in = cmd.inputs[r.input];
    // Graph inputs are filled from the caller's tensor at every run: keep them apart.
    if (!in || in->constData || graphInput.count(in)) continue;
    if (in->dtype != out->dtype || in->layout != Layout::NCHW || out->layout != Layout::NCHW) continue;
    if (in->elements() != out->elements() || r.count() != out->elements() || !wholeContiguousCopy(r)) continue;
    if (!cmd.backend->canShareMemory(*in)) continue;
    cmd.viewOf = in;
    cmd.execution.reset();
    ++stats_.views;
  }
  Producers producer;
  for (auto& cmd : commands_)
    for (auto* t : cmd.outputs)
      if (t) producer[t] = &cmd;
  findSliceParts(producer);
  findConcatParts(producer);
}

// A Raster that copies one contiguous range of its input (a Slice, Split or Gather along the
// outermost axes: the query, key and value of a packed projection) needs no copy: its output is
// placed inside its input at that range, as a Concat's inputs are placed inside its output.
void SessionImpl::findSliceParts(const Producers& producer) {
  partOf_.clear();
  std::unordered_set<const RuntimeTensor*> kept;
  for (const auto* list : {&inputs_, &outputs_, &keep_})
    for (int i : *list) kept.insert(&tensors_[i]);
  for (auto& cmd : commands_) {
    if (cmd.isCopy || cmd.viewOf || cmd.op.type != OpType::Raster || !cmd.op.raster || cmd.outputs.size() != 1) continue;
    const RasterPlan& plan = *cmd.op.raster;
    if (plan.fill || plan.regions.size() != 1) continue;
    const RasterRegion& r = plan.regions[0];
    RuntimeTensor* out = cmd.outputs[0];
    if (!out || r.input < 0 || static_cast<size_t>(r.input) >= cmd.inputs.size()) continue;
    // Through views (a Reshape or Squeeze between): the memory's owner, whose elements are in
    // the same order.
    RuntimeTensor* in = cmd.inputs[r.input];
    auto from = in ? producer.find(in) : producer.end();
    while (from != producer.end() && from->second->viewOf) {
      if (kept.count(in)) break;
      in = from->second->viewOf;
      from = producer.find(in);
    }
    // The input made by an op of this backend in a memory of its own; the output read by ops.
    if (from == producer.end() || from->second->isCopy || from->second->viewOf || from->second->backend != cmd.backend) continue;
    if (in->constData || kept.count(in) || kept.count(out) || partOf_.count(in) || partOf_.count(out)) continue;
    if (in->dtype != out->dtype || in->dtype == DataType::String || in->layout != Layout::NCHW || out->layout != Layout::NCHW) continue;
    if (r.count() != out->elements() || !contiguousSlice(r) || r.src.offset + out->elements() > in->elements()) continue;
    if (!cmd.backend->canPlaceInside(*in) || !cmd.backend->canPlaceInside(*out)) continue;
    if (cmd.backend->storedElementBytes(*in) != cmd.backend->storedElementBytes(*out)) continue;
    if (r.src.offset * cmd.backend->storedElementBytes(*in) % cmd.backend->placementAlignment() != 0) continue;
    partOf_[out] = {in, r.src.offset};
    cmd.inputsInOutput = true;
    cmd.execution.reset();
    ++stats_.views;
  }
}

void SessionImpl::findConcatParts(const Producers& producer) {
  std::unordered_set<const RuntimeTensor*> wholes;
  // A tensor that slices already lie inside stays out of Concats: a part is placed once.
  std::unordered_set<const RuntimeTensor*> sliced;
  for (auto& [part, p] : partOf_) sliced.insert(p.whole);
  auto isWholeOfParts = [&](const RuntimeTensor* t) { return sliced.count(t) > 0; };
  for (auto& cmd : commands_) {
    if (cmd.isCopy || cmd.viewOf || cmd.inputsInOutput || cmd.op.type != OpType::Raster || !cmd.op.raster ||
        cmd.outputs.size() != 1)
      continue;
    const RasterPlan& plan = *cmd.op.raster;
    RuntimeTensor* whole = cmd.outputs[0];
    if (!whole || plan.fill || plan.regions.size() < 2 || whole->layout != Layout::NCHW) continue;
    if (whole->dtype == DataType::String || partOf_.count(whole) || isWholeOfParts(whole) ||
        !cmd.backend->canPlaceInside(*whole))
      continue;
    // Each region must copy a whole input, produced by an op of this backend, into its own
    // contiguous range of the output; together they cover it once.
    std::vector<std::pair<int64_t, RuntimeTensor*>> ranges;  // element offset in the output, input
    bool ok = true;
    for (const RasterRegion& r : plan.regions) {
      RuntimeTensor* in = r.input >= 0 && static_cast<size_t>(r.input) < cmd.inputs.size() ? cmd.inputs[r.input] : nullptr;
      auto from = in ? producer.find(in) : producer.end();
      ok = from != producer.end() && !from->second->isCopy && !from->second->viewOf && from->second->backend == cmd.backend &&
           !in->constData && in->dtype == whole->dtype && in->layout == Layout::NCHW && r.count() == in->elements() &&
           contiguousCopy(r) && !partOf_.count(in) && !wholes.count(in) && !isWholeOfParts(in) &&
           cmd.backend->canPlaceInside(*in) &&
           cmd.backend->storedElementBytes(*in) == cmd.backend->storedElementBytes(*whole) &&
           r.dst.offset * cmd.backend->storedElementBytes(*whole) % cmd.backend->placementAlignment() == 0;
      if (!ok) break;
      ranges.push_back({r.dst.offset, in});
    }
    if (!ok) continue;
    std::sort(ranges.begin(), ranges.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t next = 0;
    std::unordered_set<const RuntimeTensor*> seen;
    for (auto& [offset, in] : ranges) {
      ok = ok && offset == next && seen.insert(in).second;  // one place per part: Concat(a, a) copies
      next = offset + in->elements();
    }
    if (!ok || next != whole->elements()) continue;
    for (auto& [offset, in] : ranges) partOf_[in] = {whole, offset};
    wholes.insert(whole);
    cmd.inputsInOutput = true;
    cmd.execution.reset();
    ++stats_.views;
  }
}

Status SessionImpl::planMemory() {
  // A view shares its source's memory: liveness is tracked on the tensor that owns the memory.
  std::unordered_map<const RuntimeTensor*, RuntimeTensor*> owner;
  auto ownerOf = [&](RuntimeTensor* t) {
    auto it = owner.find(t);
    return it == owner.end() ? t : it->second;
  };
  for (auto& [part, p] : partOf_) owner[part] = p.whole;  // a whole is never a part
  for (auto& cmd : commands_)
    if (cmd.viewOf) owner[cmd.outputs[0]] = ownerOf(cmd.viewOf);
  std::unordered_map<const RuntimeTensor*, size_t> lastUse;
  for (size_t i = 0; i < commands_.size(); ++i)
    for (auto* t : commands_[i].inputs)
      if (t) lastUse[ownerOf(t)] = i;
  std::unordered_map<const RuntimeTensor*, bool> isGraphOutput;  // or kept for the next stage
  for (const auto* list : {&outputs_, &keep_})
    for (int o : *list) isGraphOutput[ownerOf(&tensors_[o])] = true;

  main_->onResizeBegin();
  if (backup_) backup_->onResizeBegin();
  std::unordered_map<const RuntimeTensor*, std::unique_ptr<MemObj>> live;
  size_t activationSum = 0;
  outputBound_.assign(outputs_.size(), false);
  outputBases_.assign(outputs_.size(), nullptr);
  auto acquire = [&](RuntimeTensor* t, Backend* b, StorageType storage) -> Status {
    if (t->chunk || t->constData) return Status::ok();
    if (storage == StorageType::DYNAMIC && bindsOutput(t, b)) {
      const size_t k = std::find(outputs_.begin(), outputs_.end(), static_cast<int>(t - tensors_.data())) - outputs_.begin();
      outputBound_[k] = true;
      t->chunk = std::make_shared<MemChunk>();
      t->chunk->base = &outputBases_[k];
      t->chunk->size = t->bytes();
      t->backend = b;
      activationSum += t->bytes();
      return Status::ok();
    }
    auto mem = b->onAcquire(t, storage);
    if (!mem) return Status::outOfMemory("cannot allocate '" + t->name + "' of " + std::to_string(t->bytes()) + " bytes");
    activationSum += t->bytes();
    if (storage == StorageType::DYNAMIC) {
      live[t] = std::move(mem);
    } else {
      memory_.push_back(std::move(mem));
    }
    return Status::ok();
  };
  for (int i : copiedEntries_) OSPREY_RETURN_IF_ERROR(acquire(&tensors_[i], homeOfInput(i), StorageType::DYNAMIC));
  for (size_t i = 0; i < commands_.size(); ++i) {
    Command& cmd = commands_[i];
    auto releaseIfDone = [&](RuntimeTensor* t, bool dead) {
      if (!t) return;
      t = ownerOf(t);
      if (isGraphOutput.count(t)) return;
      auto it = lastUse.find(t);
      if ((it != lastUse.end() && it->second == i) || (dead && it == lastUse.end())) live.erase(t);
    };
    if (cmd.viewOf) {
      RuntimeTensor* out = cmd.outputs[0];
      out->chunk = cmd.viewOf->chunk;
      out->backend = cmd.viewOf->backend;
      releaseIfDone(cmd.viewOf, false);
      releaseIfDone(out, true);
      continue;
    }
    for (auto* t : cmd.outputs) {
      if (!t) continue;
      auto part = partOf_.find(t);
      if (part != partOf_.end()) {  // the Concat's output holds it: acquired with its first part
        OSPREY_RETURN_IF_ERROR(acquire(part->second.whole, cmd.backend, StorageType::DYNAMIC));
        t->chunk = std::make_shared<MemChunk>();  // placed inside the output's once the plan is made
        t->backend = part->second.whole->backend;
        continue;
      }
      bool constantMirror = cmd.isCopy && cmd.inputs[0]->constData;
      Backend* owner = cmd.isCopy && cmd.outputHome ? cmd.outputHome : cmd.backend;
      OSPREY_RETURN_IF_ERROR(acquire(t, owner, constantMirror ? StorageType::STATIC : StorageType::DYNAMIC));
    }
    if (cmd.execution) OSPREY_RETURN_IF_ERROR_IN(cmd.execution->onResize(cmd.inputs, cmd.outputs), cmd.op.describe());
    for (auto* t : cmd.inputs) releaseIfDone(t, false);
    for (auto* t : cmd.outputs) releaseIfDone(t, true);
  }
  for (auto& [t, mem] : live) memory_.push_back(std::move(mem));
  reportPlannedWork();
  OSPREY_RETURN_IF_ERROR(main_->onResizeEnd().withContext(planName()));
  if (backup_) OSPREY_RETURN_IF_ERROR(backup_->onResizeEnd().withContext(planName()));
  for (auto& [part, p] : partOf_) {
    const MemChunk& whole = *p.whole->chunk;
    MemChunk& chunk = *part->chunk;
    chunk.base = whole.base;
    chunk.device = whole.device;
    chunk.offset = whole.offset + static_cast<size_t>(p.elements) * p.whole->backend->storedElementBytes(*p.whole);
    chunk.size = part->bytes();
  }
  stats_.arenaPeakBytes = main_->arenaPeakBytes() + (backup_ ? backup_->arenaPeakBytes() : 0);
  stats_.activationBytesSum = activationSum;
  stats_.staticBytes = main_->staticBytes() + (backup_ ? backup_->staticBytes() : 0);
  if (Status fits = checkPlanFits(); !fits) {
    main_->onClearBuffer();
    if (backup_) backup_->onClearBuffer();
    return fits;
  }
  // Constants needed on a device backend are uploaded once, now, and finished before a later
  // plan may release what the copies write.
  for (auto& cmd : commands_)
    if (cmd.isCopy && cmd.inputs[0]->constData)
      OSPREY_RETURN_IF_ERROR(cmd.backend->onCopyBuffer(cmd.inputs[0], cmd.outputs[0]));
  return main_->onWaitFinish();
}

Status SessionImpl::checkInput(const TensorInfo& info, const Tensor& t) const {
  if (t.empty()) {
    if (info.optional || info.dtype == DataType::Undefined) return Status::ok();
    return Status::invalidArgument("input '" + info.name + "' was given no value; it is not optional");
  }
  if (t.isSequence()) {
    if (info.dtype != DataType::Sequence && info.dtype != DataType::Undefined)
      return Status::invalidArgument("input '" + info.name + "' was given a sequence; the model expects a " +
                                     dataTypeName(info.dtype) + " tensor");
    if (info.elementDtype != DataType::Undefined && t.elementType() != info.elementDtype)
      return Status::invalidArgument("input '" + info.name + "' was given a sequence of " + dataTypeName(t.elementType()) +
                                     "; the model expects a sequence of " + dataTypeName(info.elementDtype));
    for (const Tensor& item : t.items())
      if (item.isSequence() || item.empty() || item.dtype() != t.elementType() || (!item.data() && item.bytes()))
        return Status::invalidArgument("input '" + info.name + "': every item of a sequence must be a " +
                                       dataTypeName(t.elementType()) + " tensor with data");
    return Status::ok();
  }
  if (info.dtype == DataType::Sequence)
    return Status::invalidArgument("input '" + info.name + "' is a sequence; it was given a " + dataTypeName(t.dtype()) + " tensor");
  if (info.dtype != DataType::Undefined && t.dtype() != info.dtype)
    return Status::invalidArgument("input '" + info.name + "' has dtype " + dataTypeName(t.dtype()) +
                                   "; the model expects " + dataTypeName(info.dtype));
  if (t.layout() != Layout::NCHW && t.layout() != Layout::NHWC)
    return Status::invalidArgument("input '" + info.name + "' must be in NCHW or NHWC layout");
  if (t.dtype() != DataType::String && !t.data() && t.elements() > 0)
    return Status::invalidArgument("input '" + info.name + "' has no data");
  return Status::ok();
}

Status SessionImpl::run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>* outputs,
                        const RunCallbacks* callbacks) {
  const RunDeadline deadline(schedule_.runTimeLimitMs);
  const RunMemoryLimit memoryLimit(memoryLimit_);
  const ScratchRelease scratch{this};
  // Backends run op by op while callbacks read tensors between ops (no CUDA graph, as when profiling).
  struct CallbackScope {
    SessionImpl* s;
    CallbackScope(SessionImpl* session, const RunCallbacks* callbacks) : s(session) {
      s->setCallbacks(callbacks);
    }
    ~CallbackScope() { s->setCallbacks(nullptr); }
  } callbackScope(this, callbacks);
  const SubgraphSessions::Scope bodies(subgraphs_.get());
  const Graph& g = model_->graph;
  if (!deviceInputs_.empty()) {  // the last run's inputs were bound to device memory
    deviceInputs_.clear();
    planned_ = false;
  }
  std::map<std::string, Shape> shapes;
  std::map<std::string, const Tensor*> values;
  for (auto& [name, t] : inputs) {
    int idx = g.findTensor(name);
    if (!isInput(idx)) {
      std::string names;
      for (int i : inputs_) names += (names.empty() ? "" : ", ") + g.tensors[i].name;
      return Status::invalidArgument("'" + name + "' is not an input of the model; its inputs are: " + names);
    }
    OSPREY_RETURN_IF_ERROR(checkInput(g.tensors[idx], t));
    if (g.tensors[idx].dtype == DataType::Undefined) {
      DataType& known = givenDtypes_[name];
      if (known != t.dtype()) planned_ = false;  // a new dtype needs a new plan
      known = t.dtype();
    }
    shapes[name] = isHostValue(t) ? Shape() : logicalShape(t.shape(), t.layout());
    values[name] = &t;
  }
  for (int i : inputs_)
    if (!values.count(g.tensors[i].name) && !planned_)
      return Status::invalidArgument("input '" + g.tensors[i].name + "' was not given");
  for (auto& [name, s] : shapes_)
    if (!shapes.count(name)) shapes[name] = s;
  OSPREY_RETURN_IF_ERROR(resize(shapes));
  std::map<int, Tensor> stageValues;  // host inputs, then what the stages hand on
  for (auto& [name, t] : values) {
    const int idx = g.findTensor(name);
    if (hostValue_[idx]) {
      stageValues[idx] = *t;
      continue;
    }
    RuntimeTensor& rt = tensors_[idx];
    if (rt.dtype == DataType::String) return Status::unsupported("string input '" + name + "' must be constant-folded");
    OSPREY_RETURN_IF_ERROR(
        convertLayout(t->data(), t->layout(), rt.host(), rt.layout, rt.shape, dataTypeSize(rt.dtype), copyPool()));
  }
  if (boundary_ < 0) {
    OSPREY_RETURN_IF_ERROR(storeOutputs(outputs));
    for (size_t k = 0; k < outputs_.size(); ++k)  // a host input the graph returns as it is
      if (stageValues.count(outputs_[k])) (*outputs)[k] = stageValues[outputs_[k]];
    return Status::ok();
  }
  OSPREY_RETURN_IF_ERROR(executeCommands());
  OSPREY_RETURN_IF_ERROR(continueStages(&stageValues));
  outputs->clear();
  for (int o : outputs_) {
    auto it = stageValues.find(o);
    if (it != stageValues.end()) {
      outputs->push_back(it->second);
    } else if (known_[o]) {
      outputs->emplace_back();
      OSPREY_RETURN_IF_ERROR(readTensor(tensors_[o], &outputs->back()));
    } else {
      return Status::internal("output '" + g.tensors[o].name + "' was made by no stage");
    }
  }
  return Status::ok();
}

// Each backend's share of the plan's work: an op's flops, or where that is more its output's
// elements times kElementWork (a core writes a float of a large output, and reads its source, in
// about the time of eight flops: a 2x nearest Resize to 96x80x120 took 0.077 ms on the calling
// thread and 0.045 on two); -1 once an op runs a subgraph, whose work is not counted.
void SessionImpl::reportPlannedWork() {
  std::unordered_map<Backend*, int64_t> work;
  for (const Command& cmd : commands_) {
    if (!cmd.execution || !cmd.backend) continue;
    int64_t& w = work[cmd.backend];
    if (w < 0) continue;
    const OpType type = cmd.op.type;
    if (type == OpType::If || type == OpType::Loop || type == OpType::Scan) {
      w = -1;
      continue;
    }
    int64_t elements = 0;
    for (const RuntimeTensor* t : cmd.outputs)
      if (t) elements += t->elements();
    constexpr int64_t kElementWork = 8;
    const int64_t add = std::max(cmd.flops, elements > std::numeric_limits<int64_t>::max() / kElementWork
                                                ? std::numeric_limits<int64_t>::max()
                                                : elements * kElementWork);
    w = add > std::numeric_limits<int64_t>::max() - w ? std::numeric_limits<int64_t>::max() : w + add;
  }
  serialCopies_ = main_->onPlannedWork(work[main_.get()]);
  if (backup_) serialCopies_ = backup_->onPlannedWork(work[backup_.get()]) || serialCopies_;
}

const char* SessionImpl::copyKind(const Command& cmd) {
  const RuntimeTensor* from = cmd.inputs[0];
  const bool fromHost = from->constData || !from->backend || from->backend->type() == ForwardType::CPU;
  const bool toHost = cmd.outputHome && cmd.outputHome->type() == ForwardType::CPU;
  if (fromHost == toHost) return "Copy";  // within one memory: a conversion of layout or precision
  return fromHost ? "CopyToDevice" : "CopyToHost";
}

Status SessionImpl::executeCommands() {
  // A run that fails part-way ends with onExecuteAbort instead of onExecuteEnd.
  struct ExecuteScope {
    Backend* main;
    Backend* backup;
    bool ended = false;
    ExecuteScope(Backend* m, Backend* b) : main(m), backup(b) {
      main->onExecuteBegin();
      if (backup) backup->onExecuteBegin();
    }
    // Brackets close in the reverse order of opening: a backend restores on end what it found
    // at begin (the CPU backend, the calling thread's serial flag).
    void end() {
      ended = true;
      if (backup) backup->onExecuteEnd();
      main->onExecuteEnd();
    }
    ~ExecuteScope() {
      if (ended) return;
      if (backup) backup->onExecuteAbort();
      main->onExecuteAbort();
    }
  } scope(main_.get(), backup_.get());
  using Clock = std::chrono::steady_clock;
  const Clock::time_point runStart = profiling_ ? Clock::now() : Clock::time_point();
  if (profiling_) profile_.clear();
  // Ops on a backend with its own clock are timed by marks in its queue (Backend::timesOnDevice).
  Backend* const deviceClock = profiling_ && main_->timesOnDevice() ? main_.get() : nullptr;
  struct DeviceTimed {
    size_t profileIndex;
    int firstMark;
  };
  std::vector<DeviceTimed> deviceTimed;
  int marks = 0;
  double firstMarkUs = -1;
  for (auto& cmd : commands_) {
    if (cmd.isCopy && cmd.inputs[0]->constData) continue;  // uploaded at resize
    const bool reported = callbacks_ && !cmd.isCopy;
    if (reported) OSPREY_RETURN_IF_ERROR(report(cmd, false));
    if (cmd.viewOf || cmd.inputsInOutput || cmd.noOutput) {  // nothing runs
      if (reported) OSPREY_RETURN_IF_ERROR(report(cmd, true));
      continue;
    }
    if (RunDeadline::passed()) return RunDeadline::error(cmd.isCopy ? "a copy" : cmd.op.describe());
    const bool markedOp = deviceClock && cmd.backend == deviceClock;
    const Clock::time_point start = profiling_ ? Clock::now() : Clock::time_point();
    auto us = [](Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
    if (markedOp) {
      OSPREY_RETURN_IF_ERROR(deviceClock->onProfileMark());
      if (firstMarkUs < 0) firstMarkUs = us(start - runStart);
      deviceTimed.push_back({profile_.size(), marks});
      marks += 2;
    }
    if (cmd.isCopy) {
      OSPREY_RETURN_IF_ERROR(cmd.backend->onCopyBuffer(cmd.inputs[0], cmd.outputs[0]));
    } else {
      OSPREY_RETURN_IF_ERROR_IN(cmd.execution->onExecute(cmd.inputs, cmd.outputs), cmd.op.describe());
    }
    if (markedOp) OSPREY_RETURN_IF_ERROR(deviceClock->onProfileMark());
    if (profiling_) {
      const Clock::time_point end = Clock::now();
      OpTiming t;
      t.opType = cmd.isCopy ? copyKind(cmd) : cmd.op.type == OpType::Raster ? "Raster" : opTypeName(cmd.op.type);
      if (cmd.op.node) t.name = cmd.op.node->name;
      t.backend = forwardTypeName(cmd.backend->type());
      for (auto* in : cmd.inputs) t.inputShapes.push_back(in ? in->shape : Shape());
      for (auto* out : cmd.outputs) t.outputShapes.push_back(out ? out->shape : Shape());
      t.startUs = us(start - runStart);
      t.durationUs = us(end - start);
      profile_.push_back(std::move(t));
    }
    if (reported) OSPREY_RETURN_IF_ERROR(report(cmd, true));
  }
  scope.end();
  if (!deviceTimed.empty()) {
    std::vector<double> times;
    OSPREY_RETURN_IF_ERROR(deviceClock->onProfileMarkTimes(&times));
    if (times.size() != static_cast<size_t>(marks))
      return Status::internal("the device gave " + std::to_string(times.size()) + " op times for " + std::to_string(marks) + " marks");
    for (const DeviceTimed& d : deviceTimed) {
      OpTiming& t = profile_[d.profileIndex];
      t.startUs = firstMarkUs + times[d.firstMark];
      t.durationUs = times[d.firstMark + 1] - times[d.firstMark];
    }
  }
  return Status::ok();
}

bool SessionImpl::bindsOutput(const RuntimeTensor* t, const Backend* backend) const {
  // Small outputs are not worth the bookkeeping; stages hand their outputs on in their arenas.
  constexpr size_t kMinBoundBytes = 64 << 10;
  if (isStage_ || boundary_ >= 0 || main_->type() != ForwardType::CPU || backend->type() != ForwardType::CPU) return false;
  if (t < tensors_.data() || t >= tensors_.data() + tensors_.size()) return false;  // a mirror
  const int index = static_cast<int>(t - tensors_.data());
  if (t->layout != Layout::NCHW || t->dtype == DataType::String || t->bytes() < kMinBoundBytes || isInput(index))
    return false;
  return std::find(outputs_.begin(), outputs_.end(), index) != outputs_.end();
}

std::vector<Tensor> SessionImpl::bindOutputs(std::vector<Tensor>* last) {
  std::vector<Tensor> targets(outputs_.size());
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const RuntimeTensor& rt = tensors_[outputs_[k]];
    if (rt.dtype == DataType::String) continue;  // readTensor makes its strings
    // A caller that runs again with the last run's outputs in `outputs`, and holds no other
    // handle on them, gets them overwritten in place: no allocation, no page faults.
    if (k < last->size() && (*last)[k].uniquelyOwned() && (*last)[k].dtype() == rt.dtype &&
        (*last)[k].shape() == rt.shape && (*last)[k].layout() == Layout::NCHW)
      targets[k] = std::move((*last)[k]);
    else
      targets[k] = Tensor::uninitialized(rt.dtype, rt.shape);
    if (outputBound_[k]) outputBases_[k] = static_cast<uint8_t*>(targets[k].data());
  }
  return targets;
}

Status SessionImpl::storeOutputs(std::vector<Tensor>* outputs) {
  std::vector<Tensor> targets = bindOutputs(outputs);
  outputs->clear();
  Status st = executeCommands();
  for (size_t k = 0; st && k < outputs_.size(); ++k) {
    const RuntimeTensor& rt = tensors_[outputs_[k]];
    if (rt.dtype == DataType::String) st = readTensor(rt, &targets[k]);
    else if (!outputBound_[k]) st = readInto(rt, &targets[k]);
  }
  std::fill(outputBases_.begin(), outputBases_.end(), nullptr);
  OSPREY_RETURN_IF_ERROR(st);
  *outputs = std::move(targets);
  return Status::ok();
}

}  // namespace osprey
