#include "backends/cuda/cuda_runtime.h"

#include "backends/cuda/cuda_backend.h"

namespace osprey {

Status cudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return Status::ok();
  return Status::internal("CUDA error in " + what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

Status cublasStatus(cublasStatus_t err, const std::string& what) {
  if (err == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status::internal("cuBLAS error in " + what + ": status " + std::to_string(static_cast<int>(err)));
}

Status cudnnStatusOf(cudnnStatus_t err, const std::string& what) {
  if (err == CUDNN_STATUS_SUCCESS) return Status::ok();
  return Status::internal("cuDNN error in " + what + ": " + cudnnGetErrorString(err));
}

int cudaDeviceCountOrZero() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

namespace {
// What tuned choices hold for: the device, and the libraries whose algorithms they name.
std::string tuningIdentity(const cudaDeviceProp& p) {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  return std::string(p.name) + " sm_" + std::to_string(p.major) + std::to_string(p.minor) + " cudart " +
         std::to_string(runtime) + " cublasLt " + std::to_string(cublasLtGetVersion()) + " cudnn " +
         std::to_string(cudnnGetVersion());
}
}  // namespace

CUDARuntime::CUDARuntime(int device, const CudaOptions& options) : device_(device) {
  cudaSetDevice(device_);
  cudaGetDeviceProperties(&props_, device_);
  tuning_ = std::make_unique<cuda::Tuning>(options, tuningIdentity(props_));
}

CUDARuntime::~CUDARuntime() {
  if (cublasLt_) cublasLtDestroy(cublasLt_);
}

std::unique_ptr<Backend> CUDARuntime::onCreate(const BackendConfig& config) {
  cudaSetDevice(device_);
  return std::make_unique<CUDABackend>(this, config);
}

cublasLtHandle_t CUDARuntime::cublasLt() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!cublasLt_ && cublasLtCreate(&cublasLt_) != CUBLAS_STATUS_SUCCESS) cublasLt_ = nullptr;
  return cublasLt_;
}

cudnnHandle_t CUDARuntime::createCudnn() {
  cudnnHandle_t h = nullptr;
  if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) return nullptr;
  return h;
}

namespace {

// Sessions cannot run on a machine without a device: the runtime is refused with a clear message
// by the session (no runtime), and `osprey backends` says why.
class CUDARuntimeCreator : public RuntimeCreator {
 public:
  std::unique_ptr<Runtime> onCreate(const ScheduleConfig& schedule, const BackendConfig& config) const override {
    (void)schedule;
    if (cudaDeviceCountOrZero() == 0) return nullptr;
    return std::make_unique<CUDARuntime>(0, config.cuda);
  }
  std::vector<DeviceInfo> devices() const override {
    int count = cudaDeviceCountOrZero();
    if (count == 0) return {{"no device", "no CUDA device or driver found"}};
    std::vector<DeviceInfo> out;
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
      out.push_back({"cuda:" + std::to_string(i), std::string(p.name) + ", sm_" + std::to_string(p.major) +
                                                     std::to_string(p.minor) + ", " +
                                                     std::to_string(p.totalGlobalMem >> 20) + " MiB"});
    }
    return out;
  }
};

}  // namespace

void registerCudaRuntime() { insertRuntimeCreator(ForwardType::CUDA, std::make_unique<CUDARuntimeCreator>()); }

}  // namespace osprey
