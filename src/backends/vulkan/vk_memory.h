// Device memory: one VkBuffer bound to its own VkDeviceMemory. The backend makes one for the
// planned activation arena, one per STATIC tensor, and one host-visible staging buffer that
// uploads and downloads pass through.
#pragma once
#include <memory>
#include <string>

#include "backends/vulkan/vk_runtime.h"

namespace osprey::vulkan {

class DeviceBuffer {
 public:
  // `hostVisible`: mapped, coherent memory for staging; otherwise device-local where the device
  // has it. `what` names the buffer in errors.
  static Status create(VulkanRuntime* runtime, size_t bytes, bool hostVisible, const std::string& what,
                       std::unique_ptr<DeviceBuffer>* out);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  VkBuffer buffer() const { return buffer_; }
  size_t size() const { return size_; }
  uint8_t* mapped() const { return mapped_; }  // null unless host-visible

 private:
  DeviceBuffer() = default;
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint8_t* mapped_ = nullptr;
  size_t size_ = 0;
};

}  // namespace osprey::vulkan
