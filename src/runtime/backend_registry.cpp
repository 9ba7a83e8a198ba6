#include <map>
#include <mutex>

#include "core/backend.h"
#include "osprey/interpreter.h"

namespace osprey {

void registerCpuRuntime();
#ifdef OSPREY_WITH_OPENCL
void registerOpenCLRuntime();
#endif
#ifdef OSPREY_WITH_CUDA
void registerCudaRuntime();
#endif
#ifdef OSPREY_WITH_VULKAN
void registerVulkanRuntime();
#endif

namespace {
std::map<ForwardType, std::unique_ptr<RuntimeCreator>>& creators() {
  static std::map<ForwardType, std::unique_ptr<RuntimeCreator>> m;
  return m;
}
std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}
}  // namespace

void insertRuntimeCreator(ForwardType type, std::unique_ptr<RuntimeCreator> creator) {
  creators()[type] = std::move(creator);
}

const RuntimeCreator* getRuntimeCreator(ForwardType type) {
  registerBuiltinBackends();
  auto it = creators().find(type);
  return it == creators().end() ? nullptr : it->second.get();
}

// The explicit list of backends compiled into this build.
void registerBuiltinBackends() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(registryMutex());
    registerCpuRuntime();
#ifdef OSPREY_WITH_OPENCL
    registerOpenCLRuntime();
#endif
#ifdef OSPREY_WITH_CUDA
    registerCudaRuntime();
#endif
#ifdef OSPREY_WITH_VULKAN
    registerVulkanRuntime();
#endif
  });
}

std::vector<BackendDescription> availableBackends() {
  registerBuiltinBackends();
  std::vector<BackendDescription> out;
  for (auto& [type, creator] : creators()) {
    BackendDescription d;
    d.name = forwardTypeName(type);
    for (auto& dev : creator->devices()) d.devices.push_back(dev.name + (dev.detail.empty() ? "" : " (" + dev.detail + ")"));
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace osprey
