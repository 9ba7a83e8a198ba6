#include "backends/vulkan/vk_backend.h"

#include <algorithm>
#include <cstring>

#include "backends/vulkan/vk_execution.h"
#include "core/dtype.h"
#include "core/half_arrays.h"
#include "core/layout.h"

namespace osprey::vulkan {

namespace {

// Planned memory: destroying it ends the chunk's lifetime in the plan.
class PlannedMemObj : public MemObj {
 public:
  PlannedMemObj(MemoryPlanner* planner, std::shared_ptr<MemChunk> chunk) : planner_(planner), chunk_(std::move(chunk)) {}
  ~PlannedMemObj() override { planner_->release(chunk_); }

 private:
  MemoryPlanner* planner_;
  std::shared_ptr<MemChunk> chunk_;
};

// A STATIC tensor's range of the runtime's StaticPool, given back when no tensor holds the chunk.
struct StaticChunk : MemChunk {
  std::shared_ptr<StaticPool> pool;
  StaticPool::Range range;
  BufferSlot slot;
  ~StaticChunk() { pool->release(range); }
};

class StaticMemObj : public MemObj {};

bool isHost(const RuntimeTensor* t) { return t->constData || !t->backend || t->backend->type() == ForwardType::CPU; }

}  // namespace

VulkanBackend::VulkanBackend(VulkanRuntime* runtime, const BackendConfig& config)
    : Backend(ForwardType::Vulkan),
      runtime_(runtime),
      config_(config),
      planner_(std::max<size_t>(64, runtime->facts().minStorageBufferOffsetAlignment)) {
  half_ = config.precision == BackendConfig::Precision::Low && runtime->facts().storage16;
  halfMath_ = half_ && config.vulkan.halfMath && runtime->facts().fp16Arithmetic;
  setupError_ = runtime_->allocateCommandBuffer(&commands_);
}

// The fence is made at the first submission, not with the backend: on NVIDIA's driver the first
// fence of a new device waited some 12 ms for the driver to finish starting the device, while
// the pipelines built from the cache file's list can go on meanwhile (the plan's first memory
// allocation then waits instead).
Status VulkanBackend::submitAndWait(VkCommandBuffer buffer) {
  if (!fence_) {
    VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateFence(runtime_->device(), &info, nullptr, &fence_), "vkCreateFence"));
  }
  return runtime_->submitAndWait(buffer, fence_);
}

VulkanBackend::~VulkanBackend() {
  (void)flush();
  dropCapturedRun();
  conversions_.clear();  // their descriptor sets go back while the runtime is certainly alive
  if (fence_) vkDestroyFence(runtime_->device(), fence_, nullptr);
  runtime_->freeCommandBuffer(commands_);
}

size_t VulkanBackend::storageBytes(const RuntimeTensor* t) const {
  return static_cast<size_t>(layoutElements(t->shape, t->layout)) * storageElementSize(t);
}

std::unique_ptr<MemObj> VulkanBackend::onAcquire(RuntimeTensor* tensor, StorageType storage) {
  const size_t bytes = storageBytes(tensor);
  tensor->backend = this;
  if (storage == StorageType::DYNAMIC) {
    tensor->chunk = planner_.acquire(bytes);
    tensor->chunk->device = &arenaSlot_;
    return std::make_unique<PlannedMemObj>(&planner_, tensor->chunk);
  }
  auto chunk = std::make_shared<StaticChunk>();
  chunk->pool = runtime_->staticPool();
  if (!chunk->pool->acquire(bytes, tensor->name, &chunk->range)) return nullptr;
  chunk->slot.buffer = chunk->range.buffer;
  chunk->slot.mapped = chunk->range.mapped;
  chunk->offset = chunk->range.offset;
  chunk->device = &chunk->slot;
  chunk->size = bytes;
  tensor->chunk = chunk;
  staticBytes_ += bytes;
  return std::make_unique<StaticMemObj>();
}

void VulkanBackend::onClearBuffer() {
  (void)flush();
  dropCapturedRun();
  arena_.reset();
  arenaSlot_.buffer = VK_NULL_HANDLE;
  ++memoryGeneration_;
}

void VulkanBackend::onResizeBegin() {
  (void)flush();
  dropCapturedRun();
  planner_.reset();
  staticBytes_ = 0;
}

Status VulkanBackend::onResizeEnd() {
  const size_t need = planner_.plan();
  if (arena_ && arena_->size() >= need) return Status::ok();
  onClearBuffer();
  OSPREY_RETURN_IF_ERROR(DeviceBuffer::create(runtime_, need, DeviceBuffer::Kind::Device, "the activation arena", &arena_));
  arenaSlot_.buffer = arena_->buffer();
  return Status::ok();
}

void VulkanBackend::dropCapturedRun() {
  for (VkCommandBuffer b : captured_) runtime_->freeCommandBuffer(b);
  captured_.clear();
  capturedWhole_ = false;
}

void VulkanBackend::onExecuteBegin() {
  // What was recorded outside a run goes first, in its own submission.
  if (Status st = flush(); !st) setupError_ = st;
  nextCaptured_ = 0;
  captureSpoiled_ = false;
  // A profiled run times op by op, so it neither replays nor is kept.
  mode_ = profiling_ ? RunMode::Record : capturedWhole_ ? RunMode::Replay : RunMode::Capture;
  if (mode_ == RunMode::Capture) dropCapturedRun();
}

void VulkanBackend::onExecuteEnd() {
  const bool flushed = flush().isOk();
  if (mode_ == RunMode::Capture) capturedWhole_ = flushed && !captureSpoiled_;
  if (mode_ == RunMode::Replay && (!flushed || nextCaptured_ != captured_.size())) dropCapturedRun();
  mode_ = RunMode::Record;
}

void VulkanBackend::onExecuteAbort() {
  (void)flush();
  dropCapturedRun();
  mode_ = RunMode::Record;
}

Status VulkanBackend::onWaitFinish() { return flush(); }

std::shared_ptr<MemChunk> VulkanBackend::onWrapDevice(void* data, size_t bytes) const {
  (void)data;
  auto chunk = std::make_shared<MemChunk>();  // device stays null: locate() reports it
  chunk->size = bytes;
  return chunk;
}

Status VulkanBackend::locate(const RuntimeTensor* t, VkBuffer* buffer, uint32_t* elementOffset) const {
  if (!t || !t->chunk || !t->chunk->device || t->backend != this)
    return Status::internal("Vulkan: tensor '" + (t ? t->name : std::string("?")) + "' has no Vulkan memory");
  *buffer = static_cast<const BufferSlot*>(t->chunk->device)->buffer;
  if (!*buffer) return Status::internal("Vulkan: tensor '" + t->name + "' is used before its memory is planned");
  const size_t elem = storageElementSize(t);
  if (t->chunk->offset + storageBytes(t) > runtime_->facts().maxStorageBufferRange)
    return Status::unsupported("Vulkan: tensor '" + t->name + "' ends past maxStorageBufferRange (" +
                               std::to_string(runtime_->facts().maxStorageBufferRange) + " bytes) of its buffer");
  *elementOffset = static_cast<uint32_t>(t->chunk->offset / elem);
  return Status::ok();
}

Status VulkanBackend::recording(VkCommandBuffer* out) {
  OSPREY_RETURN_IF_ERROR(setupError_);
  if (!recording_) {
    if (mode_ == RunMode::Replay) {
      recording_ = true;
      *out = current_ = VK_NULL_HANDLE;
      return Status::ok();
    }
    current_ = commands_;
    if (mode_ == RunMode::Capture) {
      OSPREY_RETURN_IF_ERROR(runtime_->allocateCommandBuffer(&current_));
      captured_.push_back(current_);
    }
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if (mode_ == RunMode::Record) begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    OSPREY_RETURN_IF_ERROR(vkCheck(vkBeginCommandBuffer(current_, &begin), "vkBeginCommandBuffer"));
    recording_ = true;
  }
  *out = current_;
  return Status::ok();
}

void VulkanBackend::barrier() {
  if (!recording_ || replaying()) return;
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                    VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(current_, stages, stages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &b, 0, nullptr, 0, nullptr);
}

Status VulkanBackend::flush() {
  if (!recording_) return Status::ok();
  recording_ = false;
  stagingUsed_ = 0;
  if (mode_ == RunMode::Replay) {
    if (nextCaptured_ >= captured_.size())
      return Status::internal("Vulkan: a run of a captured plan submitted more often than the captured run");
    return submitAndWait(captured_[nextCaptured_++]);
  }
  OSPREY_RETURN_IF_ERROR(vkCheck(vkEndCommandBuffer(current_), "vkEndCommandBuffer"));
  Status st = submitAndWait(current_);
  if (mode_ == RunMode::Record) vkResetCommandBuffer(current_, 0);
  return st;
}

Status VulkanBackend::stage(size_t bytes, size_t* offset) {
  const size_t aligned = (bytes + 63) & ~size_t(63);
  if (staging_ && stagingUsed_ + aligned <= staging_->size()) {
    *offset = stagingUsed_;
    stagingUsed_ += aligned;
    return Status::ok();
  }
  // Full: what is recorded reads or writes the staging buffer, so it runs before the buffer is
  // reused or replaced.
  OSPREY_RETURN_IF_ERROR(flush());
  if (!staging_ || staging_->size() < aligned) {
    // Captured submissions copy from or to the old buffer: this run is not kept for replay.
    if (mode_ != RunMode::Record) captureSpoiled_ = true;
    staging_.reset();
    OSPREY_RETURN_IF_ERROR(
        DeviceBuffer::create(runtime_, std::max<size_t>(aligned, 1 << 20), DeviceBuffer::Kind::Staging, "the staging buffer", &staging_));
  }
  *offset = 0;
  stagingUsed_ = aligned;
  return Status::ok();
}

// Host -> device: the layout changes on the host (convertLayout, the one place that knows
// layouts) straight into the staging buffer, then a copy is recorded; into a weight's mapped
// device memory, it goes there directly and nothing is recorded. fp16 storage: the host's
// float32 narrows to half first (weights so once, at resize), then the layout changes. Large
// tensors (weights) are converted on the runtime's host threads.
Status VulkanBackend::upload(const RuntimeTensor* src, RuntimeTensor* dst) {
  const size_t size = storageBytes(dst);
  if (size == 0) return Status::ok();
  const uint8_t* bytes = src->host();
  if (!bytes) return Status::internal("Vulkan upload of '" + src->name + "': the host tensor has no memory");
  VkBuffer buffer;
  uint32_t elementOffset;
  OSPREY_RETURN_IF_ERROR(locate(dst, &buffer, &elementOffset));
  uint8_t* mapped = static_cast<const BufferSlot*>(dst->chunk->device)->mapped;
  size_t at = 0;
  if (!mapped) OSPREY_RETURN_IF_ERROR(stage(size, &at));
  uint8_t* target = mapped ? mapped + dst->chunk->offset : staging_->mapped() + at;
  constexpr size_t kChunk = size_t(1) << 20;  // bytes per host thread's task
  std::unique_lock<std::mutex> hostThreadsLock;
  ThreadPool* pool = size >= 2 * kChunk ? runtime_->hostThreads(&hostThreadsLock) : nullptr;
  const bool sameLayout = src->layout == dst->layout;
  std::vector<uint16_t> half;
  if (halfStorage(dst)) {
    const int64_t n = layoutElements(src->shape, src->layout);
    if (!sameLayout) half.resize(n);
    uint16_t* narrowed = sameLayout ? reinterpret_cast<uint16_t*>(target) : half.data();
    const float* wide = reinterpret_cast<const float*>(bytes);
    const int64_t perTask = kChunk / 2;
    if (pool)
      pool->parallelFor((n + perTask - 1) / perTask, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c)
          floatsToHalves(wide + c * perTask, narrowed + c * perTask, std::min(perTask, n - c * perTask));
      });
    else
      floatsToHalves(wide, narrowed, n);
    bytes = reinterpret_cast<const uint8_t*>(narrowed);
  }
  if (bytes != target)  // a layout change, or a copy split over the pool's threads
    OSPREY_RETURN_IF_ERROR(convertLayout(bytes, src->layout, target, dst->layout, src->shape, storageElementSize(dst), pool));
  if (mapped) return Status::ok();  // coherent: the next submission sees it
  VkCommandBuffer cmd;
  OSPREY_RETURN_IF_ERROR(recording(&cmd));
  VkBufferCopy region{at, dst->chunk->offset, size};
  if (!replaying()) vkCmdCopyBuffer(cmd, staging_->buffer(), buffer, 1, &region);
  barrier();
  return afterOp();
}

Status VulkanBackend::download(const RuntimeTensor* src, RuntimeTensor* dst) {
  const size_t size = storageBytes(src);
  if (size == 0) return Status::ok();
  uint8_t* out = dst->host();
  if (!out) return Status::internal("Vulkan download of '" + src->name + "': the host tensor has no memory");
  VkBuffer buffer;
  uint32_t elementOffset;
  OSPREY_RETURN_IF_ERROR(locate(src, &buffer, &elementOffset));
  size_t at = 0;
  OSPREY_RETURN_IF_ERROR(stage(size, &at));
  VkCommandBuffer cmd;
  OSPREY_RETURN_IF_ERROR(recording(&cmd));
  VkBufferCopy region{src->chunk->offset, at, size};
  if (!replaying()) vkCmdCopyBuffer(cmd, buffer, staging_->buffer(), 1, &region);
  barrier();
  OSPREY_RETURN_IF_ERROR(flush());
  if (!halfStorage(src))
    return convertLayout(staging_->mapped() + at, src->layout, out, dst->layout, src->shape, dataTypeSize(src->dtype));
  // fp16 storage: the layout changes in half, then widens to the host's float32.
  const size_t n = static_cast<size_t>(layoutElements(src->shape, dst->layout));
  std::vector<uint16_t> half(n);
  OSPREY_RETURN_IF_ERROR(convertLayout(staging_->mapped() + at, src->layout, reinterpret_cast<uint8_t*>(half.data()),
                                       dst->layout, src->shape, 2));
  halvesToFloats(half.data(), reinterpret_cast<float*>(out), n);
  return Status::ok();
}

Status VulkanBackend::onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) {
  if (src->dtype != dst->dtype || src->shape != dst->shape)
    return Status::internal("Vulkan copy between tensors of different dtype or shape: '" + src->name + "' " +
                            shapeToString(src->shape) + " -> '" + dst->name + "' " + shapeToString(dst->shape));
  const bool srcHost = isHost(src), dstHost = isHost(dst);
  if (srcHost && dstHost)
    return convertLayout(src->host(), src->layout, dst->host(), dst->layout, src->shape, dataTypeSize(src->dtype));
  if (srcHost) return upload(src, dst);
  if (dstHost) return download(src, dst);
  if (src->layout == dst->layout && halfStorage(src) != halfStorage(dst)) return convertPrecision(src, dst);
  if (src->layout != dst->layout) {
    // Device to device across layouts: through the host, where layout conversion lives (and,
    // on the fp32 stem's edge, precision conversion: download widens, upload narrows).
    RuntimeTensor host = *src;
    host.backend = nullptr;
    host.layout = dst->layout;
    host.constData = nullptr;
    std::vector<uint8_t> staging(static_cast<size_t>(layoutElements(src->shape, dst->layout)) * dataTypeSize(src->dtype));
    auto chunk = std::make_shared<MemChunk>();
    uint8_t* base = staging.data();
    chunk->base = &base;
    host.chunk = chunk;
    OSPREY_RETURN_IF_ERROR(download(src, &host));
    return upload(&host, dst);
  }
  const size_t size = storageBytes(src);
  if (size == 0) return Status::ok();
  VkBuffer from, to;
  uint32_t ignored;
  OSPREY_RETURN_IF_ERROR(locate(src, &from, &ignored));
  OSPREY_RETURN_IF_ERROR(locate(dst, &to, &ignored));
  VkCommandBuffer cmd;
  OSPREY_RETURN_IF_ERROR(recording(&cmd));
  VkBufferCopy region{src->chunk->offset, dst->chunk->offset, size};
  if (!replaying()) vkCmdCopyBuffer(cmd, from, to, 1, &region);
  barrier();
  return afterOp();
}

Status VulkanBackend::convertPrecision(const RuntimeTensor* src, RuntimeTensor* dst) {
  const bool toHalf = halfStorage(dst);
  const RuntimeTensor* f32 = toHalf ? src : dst;
  const RuntimeTensor* stored = toHalf ? dst : src;
  std::unique_ptr<Dispatch>& dispatch = conversions_[{src, dst}];
  if (!dispatch) {
    dispatch = std::make_unique<Dispatch>();
    OSPREY_RETURN_IF_ERROR(dispatch->prepare(this, "convert", 2, stored));
  }
  std::vector<VkBuffer> buffers(2);
  std::vector<uint32_t> offsets(2);
  OSPREY_RETURN_IF_ERROR(locate(f32, &buffers[0], &offsets[0]));
  OSPREY_RETURN_IF_ERROR(locate(stored, &buffers[1], &offsets[1]));
  const int64_t n = layoutElements(src->shape, src->layout);
  if (n > UINT32_MAX) return Status::unsupported("Vulkan: copy of '" + src->name + "' has more than 2^32 elements");
  struct {
    uint32_t f32Off, storedOff, n, toStored;
  } push{offsets[0], offsets[1], static_cast<uint32_t>(n), toHalf ? 1u : 0u};
  OSPREY_RETURN_IF_ERROR(dispatch->record(buffers, push, elementwiseGroups(n)));
  return afterOp();
}

std::unique_ptr<Execution> VulkanBackend::onCreate(const std::vector<RuntimeTensor*>& inputs,
                                                   const std::vector<RuntimeTensor*>& outputs, const OpRef& op) {
  VkExecutionCreator creator = vkKernelCreator(op.type);
  if (!creator) return nullptr;
  // A shader reaches one tensor through one descriptor, of at most maxStorageBufferRange bytes
  // (128 MiB on lavapipe and many mobile GPUs): an op with a larger tensor (AlexNet's or VGG's
  // first fully connected weights) runs on the backup backend.
  for (const std::vector<RuntimeTensor*>* list : {&inputs, &outputs})
    for (const RuntimeTensor* t : *list)
      if (t && storageBytes(t) > runtime_->facts().maxStorageBufferRange) return nullptr;
  return creator(this, op, inputs, outputs);
}

}  // namespace osprey::vulkan
