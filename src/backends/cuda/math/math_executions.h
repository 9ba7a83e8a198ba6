// Creators of the CUDA math executions (listed in cuda_kernels.cpp): convolution through cuDNN,
// Gemm / MatMul through cuBLASLt, and fused attention. Each returns null when the op's dtypes,
// ranks or attributes are outside what it handles; the op then runs on the CPU backup.
#pragma once
#include <memory>
#include <vector>

#include "backends/cuda/cuda_backend.h"

namespace osprey::cuda {

#define OSPREY_CUDA_MATH_CREATOR(name)                                                    \
  std::unique_ptr<Execution> name(CUDABackend* backend, const OpRef& op,                  \
                                  const std::vector<RuntimeTensor*>& inputs,              \
                                  const std::vector<RuntimeTensor*>& outputs)

OSPREY_CUDA_MATH_CREATOR(createConvExecution);
OSPREY_CUDA_MATH_CREATOR(createGemmExecution);
OSPREY_CUDA_MATH_CREATOR(createMatMulExecution);
OSPREY_CUDA_MATH_CREATOR(createAttentionExecution);

#undef OSPREY_CUDA_MATH_CREATOR

}  // namespace osprey::cuda
