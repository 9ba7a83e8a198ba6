// Device memory: one VkBuffer bound to its own VkDeviceMemory. The backend makes one for the
// planned activation arena and one host-visible staging buffer that uploads and downloads pass
// through; STATIC tensors take ranges of the runtime's StaticPool blocks.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "backends/vulkan/vk_runtime.h"

namespace osprey::vulkan {

class DeviceBuffer {
 public:
  enum class Kind {
    Device,        // device-local where the device has it
    Staging,       // mapped, coherent host memory
    MappedDevice,  // device-local and mapped (a large BAR, or one memory as on lavapipe); fails where there is none
  };
  // `what` names the buffer in errors.
  static Status create(VulkanRuntime* runtime, size_t bytes, Kind kind, const std::string& what,
                       std::unique_ptr<DeviceBuffer>* out);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  VkBuffer buffer() const { return buffer_; }
  size_t size() const { return size_; }
  uint8_t* mapped() const { return mapped_; }  // null for Kind::Device

 private:
  DeviceBuffer() = default;
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint8_t* mapped_ = nullptr;
  size_t size_ = 0;
};

// Device-local memory for STATIC tensors (weights): blocks sub-allocated best-fit, so that a
// model's hundreds of weights take a handful of vkAllocateMemory calls (drivers cap the number
// of allocations, maxMemoryAllocationCount, and each one costs). Blocks grow from kFirstBlock
// to kLargestBlock (never past the device's maxStorageBufferRange); a tensor over half the
// block size gets a block of its own. A block whose every range came back is freed.
// Where the device has device-local memory the host can map, in a heap of at least
// kMappedHeapBytes (a resizable BAR; not the 256 MiB window, which other users need), blocks
// are mapped, and weights are written into them directly instead of through a staging copy.
class StaticPool {
 public:
  static constexpr size_t kFirstBlock = size_t(4) << 20;
  static constexpr size_t kLargestBlock = size_t(64) << 20;
  static constexpr uint64_t kMappedHeapBytes = uint64_t(1) << 30;
  // `mapped`: try mapped device memory for blocks (RuntimeOptions::mappedWeights).
  StaticPool(VulkanRuntime* runtime, size_t alignment, bool mapped);

  struct Range {
    VkBuffer buffer = VK_NULL_HANDLE;
    uint8_t* mapped = nullptr;  // the block's mapping (offset not applied) where it is host-visible
    size_t offset = 0, bytes = 0;
    int block = -1;
  };
  // `what` names the tensor in an out-of-memory error.
  Status acquire(size_t bytes, const std::string& what, Range* out);
  void release(const Range& range);  // a range of a block freed by clear() is ignored
  // Frees every block: the runtime's end, before its device goes.
  void clear();
  int blocks() const;
  size_t heldBytes() const;

 private:
  struct Block {
    std::unique_ptr<DeviceBuffer> memory;
    std::map<size_t, size_t> free;  // offset -> bytes, coalesced
    size_t used = 0;
  };
  void addFree(int block, size_t offset, size_t bytes);
  void dropFree(int block, size_t offset, size_t bytes);

  VulkanRuntime* runtime_;
  size_t alignment_, largest_;
  bool mapped_;  // blocks are tried in mapped device memory first
  size_t nextBlock_ = kFirstBlock;
  int nextId_ = 0;
  std::map<int, Block> blocks_;
  std::multimap<size_t, std::pair<int, size_t>> bySize_;  // free bytes -> (block, offset)
  mutable std::mutex mutex_;
};

}  // namespace osprey::vulkan
