#include "backends/vulkan/vk_device.h"

#include <cstring>
#include <mutex>

namespace osprey::vulkan {

std::string vkResultName(VkResult result) {
  switch (result) {
#define OSPREY_VK_RESULT(r) \
  case r:                   \
    return #r;
    OSPREY_VK_RESULT(VK_NOT_READY)
    OSPREY_VK_RESULT(VK_TIMEOUT)
    OSPREY_VK_RESULT(VK_INCOMPLETE)
    OSPREY_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    OSPREY_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    OSPREY_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    OSPREY_VK_RESULT(VK_ERROR_DEVICE_LOST)
    OSPREY_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    OSPREY_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    OSPREY_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    OSPREY_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    OSPREY_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    OSPREY_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    OSPREY_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    OSPREY_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    OSPREY_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    OSPREY_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    OSPREY_VK_RESULT(VK_ERROR_FRAGMENTATION)
    OSPREY_VK_RESULT(VK_ERROR_UNKNOWN)
#undef OSPREY_VK_RESULT
    default:
      return "VkResult " + std::to_string(static_cast<int>(result));
  }
}

namespace {

const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool layerInstalled(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

const char* typeNameOf(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

DeviceFacts factsOf(VkPhysicalDevice physical, int index) {
  DeviceFacts f;
  f.physical = physical;
  f.index = index;
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  subgroup.pNext = &driver;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(physical, &props);
  const VkPhysicalDeviceLimits& limits = props.properties.limits;
  f.name = props.properties.deviceName;
  f.type = props.properties.deviceType;
  f.typeName = typeNameOf(f.type);
  f.driver = std::string(driver.driverName) + " " + driver.driverInfo;
  f.apiVersion = props.properties.apiVersion;
  for (int i = 0; i < 3; ++i) {
    f.maxWorkGroupSize[i] = limits.maxComputeWorkGroupSize[i];
    f.maxWorkGroupCount[i] = limits.maxComputeWorkGroupCount[i];
  }
  f.maxWorkGroupInvocations = limits.maxComputeWorkGroupInvocations;
  f.sharedMemoryBytes = limits.maxComputeSharedMemorySize;
  f.maxPushConstantBytes = limits.maxPushConstantsSize;
  f.maxStorageBufferRange = limits.maxStorageBufferRange;
  f.minStorageBufferOffsetAlignment = limits.minStorageBufferOffsetAlignment;
  f.subgroupSize = subgroup.subgroupSize;
  const VkSubgroupFeatureFlags reductions = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  f.subgroupArithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (subgroup.supportedOperations & reductions) == reductions;

  VkPhysicalDeviceShaderFloat16Int8Features arithmetic{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  arithmetic.pNext = &storage16;
  storage16.pNext = &storage8;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &arithmetic;
  vkGetPhysicalDeviceFeatures2(physical, &features);
  f.fp16Arithmetic = arithmetic.shaderFloat16;
  f.int8Arithmetic = arithmetic.shaderInt8;
  f.storage16 = storage16.storageBuffer16BitAccess;
  f.storage8 = storage8.storageBuffer8BitAccess;

  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family(families);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &families, family.data());
  for (uint32_t i = 0; i < families; ++i)
    if (family[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      f.computeQueueFamily = i;
      break;
    }
  return f;
}

}  // namespace

std::string DeviceFacts::summary() const {
  auto yesNo = [](bool b) { return b ? "yes" : "no"; };
  return "device " + std::to_string(index) + ", " + typeName + ", Vulkan " + std::to_string(VK_API_VERSION_MAJOR(apiVersion)) +
         "." + std::to_string(VK_API_VERSION_MINOR(apiVersion)) + ", " + driver + "; workgroup max " +
         std::to_string(maxWorkGroupSize[0]) + "x" + std::to_string(maxWorkGroupSize[1]) + "x" +
         std::to_string(maxWorkGroupSize[2]) + ", " + std::to_string(maxWorkGroupInvocations) + " invocations, " +
         std::to_string(sharedMemoryBytes / 1024) + " KiB shared memory, subgroup " + std::to_string(subgroupSize) +
         (subgroupArithmetic ? " (arithmetic)" : "") +
         "; fp16 arithmetic " + yesNo(fp16Arithmetic) + ", int8 arithmetic " + yesNo(int8Arithmetic) +
         ", 16-bit storage " + yesNo(storage16) + ", 8-bit storage " + yesNo(storage8);
}

namespace {
Status createInstance(bool validation, VkInstance* out) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "osprey";
  app.pEngineName = "osprey";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  if (validation && layerInstalled(kValidationLayer)) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &kValidationLayer;
  }
  const VkResult made = vkCreateInstance(&info, nullptr, out);
  if (made == VK_ERROR_INCOMPATIBLE_DRIVER)
    return Status::unsupported("Vulkan: no Vulkan 1.1 driver is installed (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)");
  return vkCheck(made, "vkCreateInstance");
}
}  // namespace

Status processInstance(bool validation, VkInstance* out) {
  static std::mutex mutex;
  static VkInstance instances[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};  // [validation]
  std::lock_guard<std::mutex> lock(mutex);
  VkInstance& instance = instances[validation ? 1 : 0];
  // Never destroyed: runtimes may outlive static destructors, and drivers unload at exit.
  if (!instance) OSPREY_RETURN_IF_ERROR(createInstance(validation, &instance));
  *out = instance;
  return Status::ok();
}

std::vector<DeviceFacts> listDevices(VkInstance instance) {
  uint32_t count = 0;
  if (vkEnumeratePhysicalDevices(instance, &count, nullptr) != VK_SUCCESS) return {};
  std::vector<VkPhysicalDevice> devices(count);
  if (vkEnumeratePhysicalDevices(instance, &count, devices.data()) != VK_SUCCESS) return {};
  std::vector<DeviceFacts> out;
  for (uint32_t i = 0; i < count; ++i) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(devices[i], &props);
    if (props.apiVersion < VK_API_VERSION_1_1) continue;  // the features queried need 1.1
    out.push_back(factsOf(devices[i], static_cast<int>(i)));
  }
  return out;
}

Status selectDevice(VkInstance instance, const std::string& device, DeviceFacts* out) {
  std::vector<DeviceFacts> all = listDevices(instance);
  std::vector<DeviceFacts> usable;
  for (auto& f : all)
    if (f.computeQueueFamily != UINT32_MAX) usable.push_back(f);
  if (usable.empty()) return Status::unsupported("Vulkan: no device with a compute queue (Vulkan 1.1) is installed");
  if (device.empty()) {
    for (auto& f : usable)
      if (f.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU || f.type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU) {
        *out = f;
        return Status::ok();
      }
    *out = usable.front();
    return Status::ok();
  }
  const bool isIndex = device.find_first_not_of("0123456789") == std::string::npos;
  std::string names;
  for (auto& f : usable) {
    if (isIndex ? std::to_string(f.index) == device : f.name.find(device) != std::string::npos) {
      *out = f;
      return Status::ok();
    }
    names += (names.empty() ? "" : ", ") + std::to_string(f.index) + ": " + f.name;
  }
  return Status::invalidArgument("Vulkan: no device matches '" + device + "' (devices: " + names + ")");
}

}  // namespace osprey::vulkan
