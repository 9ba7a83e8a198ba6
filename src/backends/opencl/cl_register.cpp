// Registration of the OpenCL runtime under ForwardType::OpenCL, and the backend factory.
#include "backends/opencl/cl_backend.h"

namespace osprey {

namespace opencl {

std::unique_ptr<Backend> OpenCLRuntime::onCreate(const BackendConfig& config) {
  return std::make_unique<OpenCLBackend>(this, config);
}

namespace {

class OpenCLRuntimeCreator : public RuntimeCreator {
 public:
  std::unique_ptr<Runtime> onCreate(const ScheduleConfig& schedule, const BackendConfig& config) const override {
    (void)schedule;
    std::unique_ptr<OpenCLRuntime> rt;
    if (!OpenCLRuntime::create(RuntimeOptions::fromConfig(config.opencl), &rt)) return nullptr;
    return rt;
  }
  std::vector<DeviceInfo> devices() const override {
    std::vector<DeviceInfo> out;
    const RuntimeOptions options;  // the defaults: half arithmetic where the device has it
    for (auto& f : listDevices())
      out.push_back({f.name, f.summary() + ", precision low: half storage, " +
                                 (halfMathOn(f, options) ? "half arithmetic" : "float arithmetic")});
    return out;
  }
};

}  // namespace

}  // namespace opencl

void registerOpenCLRuntime() {
  insertRuntimeCreator(ForwardType::OpenCL, std::make_unique<opencl::OpenCLRuntimeCreator>());
}

}  // namespace osprey
