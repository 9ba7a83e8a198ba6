#include "backends/cpu/cpu_backend.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "backends/cpu/float16_cast.h"
#include "backends/cpu/kernels/channels_last_bytes.h"
#include "backends/cpu/kernels/nc8hw8.h"
#include "backends/cpu/kernels/quantized_elementwise.h"
#include "core/run_limits.h"
#include "geometry/raster.h"
#include "ops/evaluate.h"
#include "core/layout.h"
#include "ops/op_def.h"

namespace osprey {

namespace {

constexpr size_t kAlignment = 64;

std::shared_ptr<uint8_t> alignedAlloc(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) return nullptr;
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

// Planned memory: destroying it marks the end of the chunk's lifetime in the plan.
class PlannedMemObj : public MemObj {
 public:
  PlannedMemObj(MemoryPlanner* planner, std::shared_ptr<MemChunk> chunk) : planner_(planner), chunk_(std::move(chunk)) {}
  ~PlannedMemObj() override { planner_->release(chunk_); }

 private:
  MemoryPlanner* planner_;
  std::shared_ptr<MemChunk> chunk_;
};

// Memory with its own allocation: freed when the last holder (MemObj or tensor) lets go.
struct OwnedChunk : MemChunk {
  std::shared_ptr<uint8_t> block;
  uint8_t* blockBase = nullptr;
};

class OwnedMemObj : public MemObj {
 public:
  explicit OwnedMemObj(std::shared_ptr<uint8_t> block) : block_(std::move(block)) {}

 private:
  std::shared_ptr<uint8_t> block_;
};

// Runs the op's reference kernel: every op with one runs on the CPU.
class ReferenceExecution : public Execution {
 public:
  bool isReference() const override { return true; }
  ReferenceExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), op_(op), def_(opDef(op.type)) {}
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    in_.resize(inputs.size());
    out_.resize(outputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) refresh(inputs[i], &in_[i]);
    for (size_t i = 0; i < outputs.size(); ++i) refresh(outputs[i], &out_[i]);
    if (outputsAllEmpty(out_)) return Status::ok();
    auto* cpu = static_cast<CPUBackend*>(backend());
    return def_.reference(*op_.node, in_, out_, cpu->threadPool());
  }

 private:
  static void refresh(const RuntimeTensor* tensor, TensorView* view) {
    if (tensor) {
      tensor->viewInto(view);
    } else {
      *view = TensorView();
      view->present = false;
    }
  }
  OpRef op_;
  const OpDef& def_;
  TensorViews in_, out_;
};

class RasterExecution : public Execution {
 public:
  RasterExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), plan_(op.raster) {}
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    srcs_.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) srcs_[i] = inputs[i] ? inputs[i]->host() : nullptr;
    RuntimeTensor* out = outputs[0];
    executeRaster(*plan_, srcs_, out->host(), out->elements(), static_cast<int>(dataTypeSize(out->dtype)),
                  static_cast<int>(out->dtype), static_cast<CPUBackend*>(backend())->threadPool());
    return Status::ok();
  }

 private:
  std::shared_ptr<const RasterPlan> plan_;
  std::vector<const void*> srcs_;
};

}  // namespace

void CPURuntime::onGarbageCollect(int level) {
  (void)level;
  malloc_trim(0);
}

std::unique_ptr<Backend> CPURuntime::onCreate(const BackendConfig& config) {
  return std::make_unique<CPUBackend>(this, config);
}

CPUBackend::CPUBackend(CPURuntime* runtime, const BackendConfig& config)
    : Backend(ForwardType::CPU),
      runtime_(runtime),
      config_(config),
      planner_(kAlignment),
      packedLayout_(cpuPackedLayoutWanted(config)) {}

CPUBackend::~CPUBackend() = default;

std::unique_ptr<Execution> CPUBackend::onCreate(const std::vector<RuntimeTensor*>& inputs,
                                                const std::vector<RuntimeTensor*>& outputs, const OpRef& op) {
  std::unique_ptr<Execution> exe;
  if (op.type == OpType::Raster) {
    exe = std::make_unique<RasterExecution>(this, op);
  } else if (CPUExecutionCreator creator = cpuKernelCreator(op.type)) {
    exe = creator(this, op, inputs, outputs);
  }
  if (!exe && op.type == OpType::Cast) exe = createFloat16CastExecution(this, op, inputs, outputs);
  if (!exe && op.type == OpType::Cast) exe = createByteCastExecution(this, op, inputs, outputs);
  if (!exe && op.node && opDef(op.type).reference) exe = std::make_unique<ReferenceExecution>(this, op);
  if (exe && packedLayout_) exe = wrapForPackedLayout(this, op, inputs, outputs, std::move(exe));
  if (exe && config_.cpu.quantizedLayout != CpuOptions::QuantizedLayout::NCHW)
    exe = wrapForChannelsLastBytes(this, op, inputs, outputs, std::move(exe));
  return exe;
}

Layout CPUBackend::activationLayout(const RuntimeTensor& t) const {
  if (t.shape.size() != 4) return Layout::NCHW;
  if (t.dtype == DataType::Int8 || t.dtype == DataType::UInt8)
    return config_.cpu.quantizedLayout == CpuOptions::QuantizedLayout::NCHW ? Layout::NCHW : Layout::NHWC;
  return packedLayout_ && t.dtype == DataType::Float32 ? Layout::NC8HW8 : Layout::NCHW;
}

std::unique_ptr<MemObj> CPUBackend::onAcquire(RuntimeTensor* tensor, StorageType storage) {
  size_t bytes = static_cast<size_t>(layoutElements(tensor->shape, tensor->layout)) * dataTypeSize(tensor->dtype);
  tensor->backend = this;
  if (storage == StorageType::DYNAMIC) {
    tensor->chunk = planner_.acquire(bytes);
    return std::make_unique<PlannedMemObj>(&planner_, tensor->chunk);
  }
  auto block = alignedAlloc(bytes);
  if (!block) return nullptr;
  std::memset(block.get(), 0, bytes);
  auto chunk = std::make_shared<OwnedChunk>();
  chunk->block = block;
  chunk->blockBase = block.get();
  chunk->base = &chunk->blockBase;
  chunk->size = bytes;
  tensor->chunk = chunk;
  if (storage == StorageType::STATIC) staticBytes_ += bytes;
  return std::make_unique<OwnedMemObj>(block);
}

std::unique_ptr<MemObj> CPUBackend::acquirePacked(RuntimeTensor* tensor, const PackKey& key, bool* fresh) {
  std::shared_ptr<uint8_t> block = runtime_->packedWeights().find(key);
  *fresh = !block;
  if (block) {
    ++packCounts_.reused;
  } else {
    block = alignedAlloc(key.bytes);
    if (!block) return nullptr;
    std::memset(block.get(), 0, key.bytes);
    runtime_->packedWeights().keep(key, block);
    ++packCounts_.made;
  }
  auto chunk = std::make_shared<OwnedChunk>();
  chunk->block = block;
  chunk->blockBase = block.get();
  chunk->base = &chunk->blockBase;
  chunk->size = key.bytes;
  tensor->chunk = chunk;
  tensor->backend = this;
  staticBytes_ += key.bytes;
  return std::make_unique<OwnedMemObj>(block);
}

void CPUBackend::onReleaseScratch() {
  if (!arena_) return;
  // Whole pages inside the arena only: the allocator's own header lies before it.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(arena_.get()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(arena_.get()) + arenaCapacity_) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void CPUBackend::onClearBuffer() {
  arena_.reset();
  arenaCapacity_ = 0;
  planner_.setBase(nullptr);
}

Status CPUBackend::onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) {
  if (src->dtype != dst->dtype || src->shape != dst->shape)
    return Status::internal("copy between tensors of different dtype or shape: " + src->name);
  return convertLayout(src->host(), src->layout, dst->host(), dst->layout, src->shape, dataTypeSize(src->dtype));
}

void CPUBackend::onExecuteBegin() {
  if (serialRuns_)
    serialBefore_ = exchangeSerialRun(true);
  else
    threadPool()->beginRun();
}

void CPUBackend::onExecuteEnd() {
  if (serialRuns_)
    exchangeSerialRun(serialBefore_);
  else
    threadPool()->endRun();
}

void CPUBackend::onResizeBegin() {
  planner_.reset();
  staticBytes_ = 0;  // executions are created anew by each plan, with their static memory
}

Status CPUBackend::onResizeEnd() {
  size_t need = planner_.plan();
  // Checked here, before the allocation, as well as by the session after it: an arena past the
  // limit would otherwise be allocated first (a fuzzer's model asked for gigabytes under 64 MiB).
  const uint64_t limit = config_.memoryLimit ? config_.memoryLimit : physicalMemoryBytes();
  if (need > limit)
    return Status::outOfMemory("its activations alone need " + std::to_string(need) + " bytes, more than the " +
                               "session's memory limit of " + std::to_string(limit) + " bytes (BackendConfig::memoryLimit)");
  if (need > arenaCapacity_) {
    arena_ = alignedAlloc(need);
    if (!arena_) return Status::outOfMemory("cannot allocate the activation arena of " + std::to_string(need) + " bytes");
    arenaCapacity_ = need;
  }
  planner_.setBase(arena_ ? arena_.get() : nullptr);
  return Status::ok();
}

namespace {
class CPURuntimeCreator : public RuntimeCreator {
 public:
  std::unique_ptr<Runtime> onCreate(const ScheduleConfig& schedule, const BackendConfig& config) const override {
    // CpuOptions::pinning: On or Off overrides the pool's automatic choice (thread_pool.h).
    using P = CpuOptions::Pinning;
    const P pin = config.cpu.pinning;
    return std::make_unique<CPURuntime>(schedule.threads, pin == P::On    ? ThreadPool::Pinning::On
                                                        : pin == P::Off ? ThreadPool::Pinning::Off
                                                                       : ThreadPool::Pinning::Auto);
  }
  std::vector<DeviceInfo> devices() const override {
    return {{"cpu", std::to_string(std::thread::hardware_concurrency()) + " hardware threads"}};
  }
};
}  // namespace

void registerCpuRuntime() { insertRuntimeCreator(ForwardType::CPU, std::make_unique<CPURuntimeCreator>()); }

}  // namespace osprey
