// Creators of the CUDA executions in kernels/ (listed in cuda_kernels.cpp). Each returns null
// when the op's dtypes or attributes are outside what the kernel handles: the op then runs on
// the CPU backup.
#pragma once
#include <memory>
#include <vector>

#include "backends/cuda/cuda_backend.h"

namespace osprey::cuda {

#define OSPREY_CUDA_CREATOR(name)                                                                   \
  std::unique_ptr<Execution> name(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs, \
                                  const std::vector<RuntimeTensor*>& outputs)

OSPREY_CUDA_CREATOR(createRasterExecution);
OSPREY_CUDA_CREATOR(createUnaryExecution);
OSPREY_CUDA_CREATOR(createBinaryExecution);
OSPREY_CUDA_CREATOR(createWhereExecution);
OSPREY_CUDA_CREATOR(createCastExecution);
OSPREY_CUDA_CREATOR(createNotExecution);
OSPREY_CUDA_CREATOR(createReduceExecution);
OSPREY_CUDA_CREATOR(createSoftmaxExecution);
OSPREY_CUDA_CREATOR(createNormalizationExecution);
OSPREY_CUDA_CREATOR(createPoolExecution);
OSPREY_CUDA_CREATOR(createGatherExecution);
OSPREY_CUDA_CREATOR(createResizeExecution);

#undef OSPREY_CUDA_CREATOR

struct BroadcastIndex;
// The merged index space of `operands` (up to 3) broadcast to `out`; false past kMaxRank dims.
bool makeBroadcastIndex(const Shape& out, const std::vector<Shape>& operands, BroadcastIndex* index);

}  // namespace osprey::cuda
