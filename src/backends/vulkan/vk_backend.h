// VulkanBackend: activations planned into one device arena (MemoryPlanner offsets into a single
// VkBuffer), STATIC tensors in ranges of the runtime's StaticPool, copies to and from the host through one
// host-visible staging buffer, and executions from the Vulkan kernel registry (vk_kernels.cpp).
// The dispatches and copies of a run are recorded into one command buffer, separated by
// barriers, and submitted when the host needs a result (a download) or the run ends. The first
// run of a plan keeps its command buffers; later runs of the plan resubmit them, and only copy
// their inputs into and their outputs out of the staging buffer.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/vulkan/vk_memory.h"
#include "core/memory_planner.h"

namespace osprey::vulkan {

class Dispatch;

// What MemChunk::device points at: the buffer a tensor lives in, and where the host may write it
// directly (mapped device memory of the StaticPool; the chunk's offset not applied), else null.
struct BufferSlot {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint8_t* mapped = nullptr;
};

class VulkanBackend : public Backend {
 public:
  VulkanBackend(VulkanRuntime* runtime, const BackendConfig& config);
  ~VulkanBackend() override;
  std::unique_ptr<Execution> onCreate(const std::vector<RuntimeTensor*>& inputs,
                                      const std::vector<RuntimeTensor*>& outputs, const OpRef& op) override;
  std::unique_ptr<MemObj> onAcquire(RuntimeTensor* tensor, StorageType storage) override;
  void onClearBuffer() override;
  Status onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) override;
  void onResizeBegin() override;
  Status onResizeEnd() override;
  void onExecuteBegin() override;
  void onExecuteEnd() override;
  void onExecuteAbort() override;
  void onProfiling(bool on) override { profiling_ = on; }
  Status onWaitFinish() override;
  std::shared_ptr<MemChunk> onWrapDevice(void* data, size_t bytes) const override;
  size_t arenaPeakBytes() const override { return planner_.peakBytes(); }
  size_t staticBytes() const override { return staticBytes_; }

  // Precision Low on a device with storageBuffer16BitAccess: Float32 tensors are stored as fp16
  // (the _fp16 shader variants), except those of the fp32 stem (RuntimeTensor::fullPrecision).
  // Without 16-bit storage, Low runs in fp32.
  bool honoursFullPrecision() const override { return half_; }
  bool halfStorage(const RuntimeTensor* t) const {
    return half_ && t && t->dtype == DataType::Float32 && !t->fullPrecision;
  }
  // fp16 storage on a device with shaderFloat16, VulkanOptions::halfMath on: the shaders that have
  // an _fp16a variant multiply in fp16.
  bool halfMath() const { return halfMath_; }
  // Bytes per element of `t` on the device (2 for fp16 storage).
  size_t storageElementSize(const RuntimeTensor* t) const { return halfStorage(t) ? 2 : dataTypeSize(t->dtype); }
  size_t storageBytes(const RuntimeTensor* t) const;

  VulkanRuntime* runtime() const { return runtime_; }
  // Changes whenever a buffer that descriptor sets may point at is replaced (a new arena), so
  // that a set written for the old one is written again even if the new handle is equal.
  uint64_t memoryGeneration() const { return memoryGeneration_; }
  // The buffer `t` lives in and its offset in elements of its dtype; an error naming `t` when it
  // has no Vulkan memory or lies past what one descriptor can reach (maxStorageBufferRange).
  Status locate(const RuntimeTensor* t, VkBuffer* buffer, uint32_t* elementOffset) const;
  // The command buffer this run records into (begun on first use). While replaying() it is null:
  // the caller records nothing (the commands are those of the captured run), only counts as having.
  Status recording(VkCommandBuffer* out);
  bool replaying() const { return mode_ == RunMode::Replay; }
  // Makes the writes of the commands recorded so far visible to the commands recorded next.
  void barrier();
  // Commands were recorded: within a run they wait for the next download or the run's end (with
  // profiling on they run now, so host clocks time them). Outside a run (the constants a plan
  // uploads, a device input copied in) they wait for onWaitFinish, the next run's start or a
  // full staging buffer: a model's weights go up in a few submissions, not one each.
  Status afterOp() { return profiling_ ? flush() : Status::ok(); }
  // Submits what is recorded and waits for it.
  Status flush();

 private:
  // Submits `buffer` and waits for it, through the backend's fence (made at the first submission).
  Status submitAndWait(VkCommandBuffer buffer);
  Status upload(const RuntimeTensor* src, RuntimeTensor* dst);
  Status download(const RuntimeTensor* src, RuntimeTensor* dst);
  // A copy between a float32 and an fp16 tensor of this backend (the fp32 stem's edge), by shader.
  Status convertPrecision(const RuntimeTensor* src, RuntimeTensor* dst);
  // `bytes` of the staging buffer for this submission; flushes first when it is full.
  Status stage(size_t bytes, size_t* offset);
  void dropCapturedRun();

  VulkanRuntime* runtime_;
  BackendConfig config_;
  MemoryPlanner planner_;
  std::unique_ptr<DeviceBuffer> arena_;
  BufferSlot arenaSlot_;  // planned chunks point at this
  std::unique_ptr<DeviceBuffer> staging_;
  size_t stagingUsed_ = 0;
  size_t staticBytes_ = 0;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;  // what Record mode records into, reset after each submission
  VkCommandBuffer current_ = VK_NULL_HANDLE;   // the buffer being recorded
  // Record: one-time command buffers (outside runs, profiled runs). Capture: the first run of a
  // plan, whose submissions are kept in captured_. Replay: a later run, resubmitting them in order.
  enum class RunMode { Record, Capture, Replay };
  RunMode mode_ = RunMode::Record;
  std::vector<VkCommandBuffer> captured_;
  size_t nextCaptured_ = 0;
  bool capturedWhole_ = false;  // captured_ holds every submission of a run of the current plan
  bool captureSpoiled_ = false;  // the staging buffer was replaced while capturing
  VkFence fence_ = VK_NULL_HANDLE;
  bool recording_ = false, profiling_ = false;
  bool half_ = false, halfMath_ = false;
  // convert.comp's dispatches, one per (source, destination) pair: a descriptor set may not change
  // between the dispatches of one command buffer, and captured runs replay the sets they used.
  std::map<std::pair<const RuntimeTensor*, const RuntimeTensor*>, std::unique_ptr<Dispatch>> conversions_;
  uint64_t memoryGeneration_ = 0;
  Status setupError_;  // a command buffer or fence that could not be made, reported at first use
};

// Creates the Vulkan execution for an op, or null when there is no kernel for it here.
using VkExecutionCreator = std::unique_ptr<Execution> (*)(VulkanBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs);
VkExecutionCreator vkKernelCreator(OpType type);

}  // namespace osprey::vulkan
