// Vulkan instance creation, physical-device discovery and selection: what `osprey backends`
// lists and how a session picks its device (VulkanOptions::device: an index or a name substring).
#pragma once
#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "osprey/status.h"

namespace osprey::vulkan {

struct DeviceFacts {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  int index = 0;
  std::string name, typeName, driver;
  uint32_t apiVersion = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t computeQueueFamily = UINT32_MAX;  // UINT32_MAX: the device has no compute queue
  uint32_t maxWorkGroupSize[3] = {0, 0, 0};
  uint32_t maxWorkGroupInvocations = 0, maxWorkGroupCount[3] = {0, 0, 0};
  uint32_t sharedMemoryBytes = 0, maxPushConstantBytes = 0, subgroupSize = 0;
  uint64_t maxStorageBufferRange = 0, minStorageBufferOffsetAlignment = 0;
  bool fp16Arithmetic = false, int8Arithmetic = false, storage16 = false, storage8 = false;
  // Subgroup reductions (subgroupAdd / subgroupMax) in compute shaders: the _sg shader variants.
  bool subgroupArithmetic = false;

  std::string summary() const;  // one line of the facts above
};

// VkResult as its enum name ("VK_ERROR_OUT_OF_DEVICE_MEMORY").
std::string vkResultName(VkResult result);
inline Status vkCheck(VkResult result, const std::string& what) {
  if (result == VK_SUCCESS) return Status::ok();
  return Status::internal("Vulkan: " + what + " failed: " + vkResultName(result));
}

// The process's Vulkan 1.1 instance (one with VK_LAYER_KHRONOS_validation, where installed, and
// one without), made at the first call and kept for the life of the process, as ncnn keeps its
// GPU instance: every runtime and device listing shares it, so the driver is loaded once (about
// 100 ms on NVIDIA's), and NVIDIA's driver, which now and then refuses a new instance
// (VK_ERROR_INCOMPATIBLE_DRIVER) in a process that has made and destroyed many, is asked once.
Status processInstance(bool validation, VkInstance* out);
// Every physical device of `instance`.
std::vector<DeviceFacts> listDevices(VkInstance instance);
// The device chosen by `device` (an index or a name substring); empty: the first discrete or
// integrated GPU, else the first device with a compute queue.
Status selectDevice(VkInstance instance, const std::string& device, DeviceFacts* out);

}  // namespace osprey::vulkan
