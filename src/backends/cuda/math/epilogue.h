// Element-wise epilogues that cuDNN and cuBLASLt cannot fuse themselves: a per-channel bias, a
// residual tensor and any fused activation, applied in place over an NCHW or NHWC tensor of
// float, half or bfloat16.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/math/kernel_types.h"

namespace osprey::cuda_math {

struct ChannelGeometry {
  int64_t batch = 1, channels = 1, spatial = 1;  // elements = batch * channels * spatial
  bool channelsLast = false;                     // NHWC: the channel is the fastest dimension
};

// y = act(y + bias[c] + residual) in place; bias and residual (of y's element type, residual in
// y's layout and shape) may be null.
cudaError_t launchBiasActivation(cudaStream_t stream, ElementType type, void* y, const void* bias,
                                 const void* residual, const ChannelGeometry& g, const DeviceActivation& act);

}  // namespace osprey::cuda_math
