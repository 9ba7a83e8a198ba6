// Per-device CUDA resources shared by the sessions of one Runtime: the device, library handles
// (created lazily, on first use) and the error helpers every CUDA file uses.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <mutex>
#include <string>

#include "backends/cuda/cuda_tuning.h"
#include "core/backend.h"

namespace osprey {

// A CUDA / cuBLAS / cuDNN error as a Status naming what failed.
Status cudaStatus(cudaError_t err, const std::string& what);
Status cublasStatus(cublasStatus_t err, const std::string& what);
Status cudnnStatusOf(cudnnStatus_t err, const std::string& what);

#define OSPREY_CUDA_RETURN_IF_ERROR(expr, what)                 \
  do {                                                          \
    cudaError_t osprey_cuda_err_ = (expr);                      \
    if (osprey_cuda_err_ != cudaSuccess) return ::osprey::cudaStatus(osprey_cuda_err_, what); \
  } while (0)

// Number of usable CUDA devices; 0 when there is no driver or no device (never an error).
int cudaDeviceCountOrZero();

class CUDARuntime : public Runtime {
 public:
  CUDARuntime(int device, const CudaOptions& options);
  ~CUDARuntime() override;
  std::unique_ptr<Backend> onCreate(const BackendConfig& config) override;
  int device() const { return device_; }
  const cudaDeviceProp& properties() const { return props_; }
  cublasLtHandle_t cublasLt();  // null if cuBLASLt cannot start
  // A fresh cuDNN handle (each backend binds its own to its stream); null if cuDNN cannot start.
  cudnnHandle_t createCudnn();
  cuda::Tuning& tuning() { return *tuning_; }

 private:
  int device_;
  cudaDeviceProp props_{};
  std::mutex mutex_;
  cublasLtHandle_t cublasLt_ = nullptr;
  std::unique_ptr<cuda::Tuning> tuning_;
};

}  // namespace osprey
