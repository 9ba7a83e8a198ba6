// Registration of the Vulkan runtime under ForwardType::Vulkan, and the backend factory.
#include "backends/vulkan/vk_backend.h"

namespace osprey {

namespace vulkan {

std::unique_ptr<Backend> VulkanRuntime::onCreate(const BackendConfig& config) {
  return std::make_unique<VulkanBackend>(this, config);
}

namespace {

class VulkanRuntimeCreator : public RuntimeCreator {
 public:
  std::unique_ptr<Runtime> onCreate(const ScheduleConfig& schedule, const BackendConfig& config) const override {
    std::unique_ptr<Runtime> rt;
    return create(schedule, config, &rt) ? std::move(rt) : nullptr;
  }
  Status create(const ScheduleConfig& schedule, const BackendConfig& config, std::unique_ptr<Runtime>* out) const override {
    (void)schedule;
    std::unique_ptr<VulkanRuntime> rt;
    OSPREY_RETURN_IF_ERROR(VulkanRuntime::create(RuntimeOptions::fromConfig(config.vulkan), &rt));
    *out = std::move(rt);
    return Status::ok();
  }
  std::vector<DeviceInfo> devices() const override {
    std::vector<DeviceInfo> out;
    VkInstance instance = VK_NULL_HANDLE;
    if (!processInstance(false, &instance)) return out;  // no loader or driver: no devices
    for (auto& f : listDevices(instance)) {
      if (f.computeQueueFamily == UINT32_MAX) continue;
      const std::string low = !f.storage16        ? "fp32 (no 16-bit storage)"
                              : f.fp16Arithmetic ? "fp16 storage, fp16 multiplies in convolutions and MatMul"
                                                 : "fp16 storage";
      out.push_back({f.name, f.summary() + ", precision low: " + low});
    }
    return out;
  }
};

}  // namespace

}  // namespace vulkan

void registerVulkanRuntime() {
  insertRuntimeCreator(ForwardType::Vulkan, std::make_unique<vulkan::VulkanRuntimeCreator>());
}

}  // namespace osprey
