#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "ops/evaluate.h"
#include "core/layout.h"
#include "core/run_limits.h"
#include "runtime/session_impl.h"
#include "core/files.h"
#include "ops/flops.h"
#include "ops/op_def.h"

namespace osprey {

namespace {
uint64_t saturatingProduct(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }
}  // namespace

SessionImpl::SessionImpl(std::shared_ptr<const Model> model, const ScheduleConfig& schedule, const BackendConfig& config)
    : model_(std::move(model)), schedule_(schedule), config_(config) {
  inputs_ = model_->graph.inputs;
  outputs_ = model_->graph.outputs;
}

SessionImpl::SessionImpl(std::shared_ptr<const Model> model, std::shared_ptr<SharedRuntime> runtime)
    : SessionImpl(std::move(model), runtime->schedule(), runtime->backendConfig()) {
  runtime_ = std::move(runtime);
}

SessionImpl::SessionImpl(const SessionImpl& parent, size_t firstNode, std::vector<int> entries, std::vector<int> exits,
                         std::map<int, const RuntimeTensor*> known)
    : model_(parent.model_),
      schedule_(parent.schedule_),
      config_(parent.config_),
      runtime_(parent.runtime_),
      subgraphs_(parent.subgraphs_),
      firstNode_(firstNode),
      inputs_(std::move(entries)),
      outputs_(std::move(exits)),
      givenKnown_(std::move(known)),
      isStage_(true),
      profiling_(parent.profiling_) {}

Status SessionImpl::init(Float16Widening* float16) {
  if (schedule_.threads < 1) return Status::invalidArgument("threads must be at least 1, got " + std::to_string(schedule_.threads));
  memoryLimit_ = config_.memoryLimit ? config_.memoryLimit : physicalMemoryBytes();
  if (!runtime_) OSPREY_RETURN_IF_ERROR(makeSharedRuntime(schedule_, config_, &runtime_));
  if (!subgraphs_) subgraphs_ = std::make_shared<SubgraphSessions>(runtime_);
  const SharedRuntimeState& shared = runtimeState(*runtime_);
  mainRuntime_ = shared.main.get();
  backupRuntime_ = shared.backup.get();
  OSPREY_RETURN_IF_ERROR(createBackends());
  if (float16 && !main_->computesFloat16()) {
    model_ = float16->widened();
    inputs_ = model_->graph.inputs;
    outputs_ = model_->graph.outputs;
  }
  return Status::ok();
}

Status SessionImpl::createBackends() {
  main_ = mainRuntime_->onCreate(config_);
  if (!main_) return Status::unsupported(std::string("backend '") + forwardTypeName(schedule_.backend) + "' could not start");
  if (backupRuntime_) {
    backup_ = backupRuntime_->onCreate(config_);
    if (!backup_) return Status::unsupported(std::string("backup backend '") + forwardTypeName(schedule_.backupBackend) + "' could not start");
  }
  main_->onProfiling(profiling_);
  if (backup_) backup_->onProfiling(profiling_);
  return Status::ok();
}

std::vector<TensorInfoPublic> SessionImpl::inputInfo() const {
  std::vector<TensorInfoPublic> out;
  for (int i : inputs_) {
    auto& t = model_->graph.tensors[i];
    auto it = shapes_.find(t.name);
    out.push_back({t.name, t.dtype, it != shapes_.end() && !hostInput(i) ? it->second : t.shape, t.dimNames, t.elementDtype,
                   t.optional});
  }
  return out;
}

std::vector<TensorInfoPublic> SessionImpl::outputInfo() const {
  std::vector<TensorInfoPublic> out;
  for (int i : outputs_) {
    auto& t = model_->graph.tensors[i];
    // Past a data-dependent op, shapes are known only once a run has made them.
    const bool planned = planned_ && boundary_ < 0;
    out.push_back({t.name, t.dtype, planned ? tensors_[i].shape : t.shape, t.dimNames, t.elementDtype, t.optional});
  }
  return out;
}

Backend::PackCounts SessionImpl::packCounts() const {
  Backend::PackCounts c = main_->packCounts();
  if (backup_) {
    c.made += backup_->packCounts().made;
    c.reused += backup_->packCounts().reused;
  }
  return c;
}

bool SessionImpl::hostInput(int tensor) const {
  const TensorInfo& info = model_->graph.tensors[tensor];
  if (info.dtype == DataType::Sequence || info.dtype == DataType::String || info.optional) return true;
  auto given = givenDtypes_.find(info.name);
  return given != givenDtypes_.end() && (given->second == DataType::Sequence || given->second == DataType::String ||
                                         given->second == DataType::Undefined);
}

bool SessionImpl::isInput(int tensor) const {
  return tensor >= 0 && std::find(inputs_.begin(), inputs_.end(), tensor) != inputs_.end();
}

Status SessionImpl::resize(const std::map<std::string, Shape>& inputShapes) {
  const Graph& g = model_->graph;
  std::map<std::string, Shape> shapes;
  for (auto& [name, shape] : inputShapes)
    if (!isInput(g.findTensor(name))) return Status::invalidArgument("'" + name + "' is not an input of the model");
  for (int i : inputs_) {
    const TensorInfo& t = g.tensors[i];
    auto it = inputShapes.find(t.name);
    Shape s;
    if (hostInput(i)) {  // a sequence or an optional: its shape is not planned
      shapes[t.name] = {};
      continue;
    }
    if (it != inputShapes.end()) {
      s = it->second;
      // A later stage's entries are the values an earlier stage made, whatever was declared.
      const bool declared = t.hasShape && !isStage_;
      if (declared && s.size() != t.shape.size())
        return Status::invalidArgument("input '" + t.name + "' has rank " + std::to_string(s.size()) +
                                       "; the model expects shape " + shapeToString(t.shape));
      for (size_t d = 0; d < s.size(); ++d) {
        if (s[d] < 0) return Status::invalidArgument("input '" + t.name + "' has a negative dimension");
        if (declared && t.shape[d] >= 0 && t.shape[d] != s[d])
          return Status::invalidArgument("input '" + t.name + "' has shape " + shapeToString(s) +
                                         "; the model expects " + shapeToString(t.shape));
      }
    } else {
      s = t.shape;
      for (int64_t d : s)
        if (d < 0 || !t.hasShape)
          return Status::invalidArgument("input '" + t.name + "' has symbolic shape " + shapeToString(t.shape) +
                                         "; give its shape");
    }
    OSPREY_RETURN_IF_ERROR(checkTensorFits("input '" + t.name + "'", t.dtype, s));
    shapes[t.name] = s;
  }
  if (planned_ && shapes == shapes_) return Status::ok();
  const SubgraphSessions::Scope bodies(subgraphs_.get());  // constant folding may run If / Loop bodies
  return switchPlan(shapes);
}

uint8_t* SessionImpl::allocateFolded(size_t bytes) {
  if (bytes > memoryLimit_ || foldedBytes_ > memoryLimit_ - bytes) return nullptr;
  auto block = allocateHost(bytes);
  if (!block) return nullptr;
  folded_.push_back(block);
  foldedBytes_ += bytes;
  return block.get();
}

Status SessionImpl::checkTensorFits(const std::string& what, DataType dtype, const Shape& shape) const {
  const int64_t elements = shapeElements(shape);
  const size_t elementBytes = std::max<size_t>(dataTypeSize(dtype), 1);
  const bool overflows = elements < 0 && std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 0; });
  if (!overflows && (elements <= 0 || static_cast<uint64_t>(elements) <= memoryLimit_ / elementBytes)) return Status::ok();
  const std::string bytes = overflows ? "more elements than int64 can count"
                                      : std::to_string(saturatingProduct(static_cast<uint64_t>(elements), elementBytes)) + " bytes";
  return Status::outOfMemory(what + " of shape " + shapeToString(shape) + " (" + dataTypeName(dtype) + ") needs " + bytes +
                             ", more than the session's memory limit of " + std::to_string(memoryLimit_) +
                             " bytes (BackendConfig::memoryLimit)");
}

std::string SessionImpl::planName() const {
  std::string shapes;
  for (auto& [name, shape] : shapes_) shapes += (shapes.empty() ? "" : ", ") + name + " " + shapeToString(shape);
  return "the plan for input shapes " + shapes;
}

Status SessionImpl::checkPlanFits() const {
  const uint64_t total = uint64_t{stats_.arenaPeakBytes} + stats_.staticBytes + foldedBytes_;
  if (total <= memoryLimit_) return Status::ok();
  return Status::outOfMemory(planName() + " needs " + std::to_string(total) +
                             " bytes (activations " + std::to_string(stats_.arenaPeakBytes) + ", weights " +
                             std::to_string(stats_.staticBytes) + ", folded constants " + std::to_string(foldedBytes_) +
                             "), more than the session's memory limit of " + std::to_string(memoryLimit_) +
                             " bytes (BackendConfig::memoryLimit)");
}

Status SessionImpl::plan() {
  const Graph& g = model_->graph;
  next_.reset();  // before the folded values it may point at
  boundary_ = -1;
  keep_.clear();
  commands_.clear();
  memory_.clear();
  mirrors_.clear();
  folded_.clear();
  foldedBytes_ = 0;
  stats_ = SessionStats();
  const Backend::PackCounts packsBefore = packCounts();
  tensors_.assign(g.tensors.size(), RuntimeTensor());
  known_.assign(g.tensors.size(), false);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const TensorInfo& info = g.tensors[i];
    RuntimeTensor& t = tensors_[i];
    t.name = info.name;
    t.dtype = info.dtype;
    t.shape = info.shape;
    if (info.isConstant) {
      t.constData = info.data.bytes ? info.data.bytes.get() : reinterpret_cast<const uint8_t*>("");
      t.strings = &info.data.strings;
      known_[i] = true;
    }
  }
  for (auto& [i, value] : givenKnown_) {
    RuntimeTensor& t = tensors_[i];
    t.dtype = value->dtype;
    t.shape = value->shape;
    t.constData = value->constData;
    t.strings = value->strings;
    known_[i] = true;
  }
  hostValue_.assign(g.tensors.size(), false);
  for (int i : inputs_) {
    RuntimeTensor& t = tensors_[i];
    t.shape = shapes_.at(t.name);
    if (hostInput(i)) {
      hostValue_[i] = true;
      auto given = givenDtypes_.find(t.name);
      if (given != givenDtypes_.end() && given->second != DataType::Undefined) t.dtype = given->second;
      continue;
    }
    if (t.dtype == DataType::Undefined || isStage_) {
      auto given = givenDtypes_.find(t.name);
      if (given == givenDtypes_.end()) return Status::invalidArgument("input '" + t.name + "' has no declared dtype; run it with a tensor");
      t.dtype = given->second;
    }
  }
  for (size_t n = firstNode_; n < g.nodes.size(); ++n) {
    bool planned = true;
    OSPREY_RETURN_IF_ERROR(computeNode(g.nodes[n], &planned));
    if (!planned) {
      OSPREY_RETURN_IF_ERROR(splitAfter(n));
      break;
    }
  }
  OSPREY_RETURN_IF_ERROR(createExecutions());
  for (Command& cmd : commands_)
    cmd.noOutput = std::all_of(cmd.outputs.begin(), cmd.outputs.end(),
                               [](const RuntimeTensor* t) { return !t || t->elements() == 0; });
  copiedEntries_.clear();
  for (int i : inputs_)
    if (!hostValue_[i]) copiedEntries_.push_back(i);
  if (isStage_) bindEntries();
  OSPREY_RETURN_IF_ERROR(planMemory());
  stats_.weightsPacked = packCounts().made - packsBefore.made;
  stats_.weightsShared = packCounts().reused - packsBefore.reused;
  mergedStats_ = stats_;
  releaseModelPages();
  return Status::ok();
}

void SessionImpl::releaseScratch() {
  if (config_.memory != BackendConfig::Memory::Low) return;
  if (main_) main_->onReleaseScratch();
  if (backup_) backup_->onReleaseScratch();
  if (next_) next_->releaseScratch();
}

void SessionImpl::releaseModelPages() {
  if (config_.memory == BackendConfig::Memory::Low && model_->mapping) model_->mapping->releasePages();
}

Status SessionImpl::computeNode(const Node& node, bool* planned) {
  const OpDef& def = opDef(node.type);
  // Sequences, optionals and strings of a run live on the host: what makes or reads one runs there.
  auto hostTyped = [&](int i) {
    return i >= 0 && (hostValue_[i] || tensors_[i].dtype == DataType::Sequence || model_->graph.tensors[i].optional ||
                      model_->graph.tensors[i].dtype == DataType::Sequence ||
                      (tensors_[i].dtype == DataType::String && !known_[i]));
  };
  if (def.hostOnly || std::any_of(node.inputs.begin(), node.inputs.end(), hostTyped) ||
      std::any_of(node.outputs.begin(), node.outputs.end(), hostTyped)) {
    *planned = false;
    return Status::ok();
  }
  TensorViews in(node.inputs.size()), out(node.outputs.size());
  bool allKnown = true;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int idx = node.inputs[i];
    if (idx < 0) {
      in[i].present = false;
      continue;
    }
    in[i] = tensors_[idx].view();
    if (!known_[idx]) {
      in[i].data = nullptr;
      allKnown = allKnown && def.readsShapesOnly;
      if ((def.valueInputs >> i) & 1u || def.dataDependentShape) {
        *planned = false;
        return Status::ok();
      }
    }
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) out[i].present = node.outputs[i] >= 0;
  std::vector<RasterPlan> rasters;
  OSPREY_RETURN_IF_ERROR(computeShapes(node, in, out));
  for (size_t i = 0; i < node.outputs.size(); ++i)
    if (node.outputs[i] >= 0 && out[i].dtype == DataType::String) {  // strings are made on the host, at each run
      *planned = false;
      return Status::ok();
    }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] < 0) continue;
    RuntimeTensor& t = tensors_[node.outputs[i]];
    t.dtype = out[i].dtype;
    t.shape = out[i].shape;
    OSPREY_RETURN_IF_ERROR(checkTensorFits("output '" + t.name + "' of " + node.describe(), t.dtype, t.shape));
  }
  OSPREY_RETURN_IF_ERROR(computeLowering(node, in, out, &rasters));
  const bool lowered = !rasters.empty();  // an op may decline lowering for some attributes
  if (allKnown && (def.reference || lowered) && worthFolding(node, in, out)) {  // constant folding, on the host
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] < 0) continue;
      RuntimeTensor& t = tensors_[node.outputs[i]];
      uint8_t* p = allocateFolded(t.bytes());
      if (!p)
        return Status::outOfMemory("cannot allocate folded tensor '" + t.name + "' of " + std::to_string(t.bytes()) +
                                   " bytes (" + std::to_string(foldedBytes_) + " folded before it; memory limit " +
                                   std::to_string(memoryLimit_) + " bytes)");
      t.constData = p;
      out[i].data = p;
      known_[node.outputs[i]] = true;
    }
    OSPREY_RETURN_IF_ERROR(executeOnHost(node, in, out, rasters, mainRuntime_->threadPool()));
    ++stats_.foldedOps;
    return Status::ok();
  }
  const int64_t flops = opFlops(node, in, out);
  // Saturates: one op of huge shapes may count INT64_MAX flops alone.
  stats_.flops = flops > std::numeric_limits<int64_t>::max() - stats_.flops ? std::numeric_limits<int64_t>::max()
                                                                            : stats_.flops + flops;
  auto tensorsOf = [&](const std::vector<int>& idx) {
    std::vector<RuntimeTensor*> v;
    for (int i : idx) v.push_back(i < 0 ? nullptr : &tensors_[i]);
    return v;
  };
  if (lowered) {
    ++stats_.loweredOps;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] < 0) continue;
      Command cmd;
      cmd.op.type = OpType::Raster;
      cmd.op.node = &node;
      cmd.op.raster = std::make_shared<RasterPlan>(std::move(rasters[i]));
      cmd.inputs = tensorsOf(node.inputs);
      cmd.outputs = {&tensors_[node.outputs[i]]};
      commands_.push_back(std::move(cmd));
    }
    return Status::ok();
  }
  Command cmd;
  cmd.op.type = node.type;
  cmd.op.node = &node;
  cmd.inputs = tensorsOf(node.inputs);
  cmd.outputs = tensorsOf(node.outputs);
  cmd.flops = flops;
  commands_.push_back(std::move(cmd));
  return Status::ok();
}

}  // namespace osprey
