#include <cstdint>

#include "backends/cuda/math/device_math.cuh"
#include "backends/cuda/math/epilogue.h"

namespace osprey::cuda_math {

namespace {

// Index is 32-bit whenever the tensor allows: 64-bit division costs several times more.
template <class T, class Index, bool kChannelsLast>
__global__ void biasActivationKernel(T* y, const T* bias, const T* residual, Index count, Index channels,
                                     Index spatial, DeviceActivation act) {
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    float v = toFloat(y[i]);
    if (bias) {
      const Index c = kChannelsLast ? i % channels : (i / spatial) % channels;
      v += toFloat(bias[c]);
    }
    if (residual) v += toFloat(residual[i]);
    y[i] = fromFloat<T>(applyActivation(act, v));
  }
}

unsigned gridFor(int64_t count, int threads) {
  const int64_t blocks = (count + threads - 1) / threads;
  constexpr int64_t kMaxBlocks = 65535 * 8;  // grid-stride loops cover the rest
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <class T>
cudaError_t biasActivationFor(cudaStream_t stream, void* y, const void* bias, const void* residual,
                              const ChannelGeometry& g, const DeviceActivation& act) {
  const int64_t count = g.batch * g.channels * g.spatial;
  if (count == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const unsigned blocks = gridFor(count, kThreads);
  T* out = static_cast<T*>(y);
  const T* b = static_cast<const T*>(bias);
  const T* r = static_cast<const T*>(residual);
  if (count < (int64_t(1) << 30)) {  // headroom for the grid stride past the end
    const int32_t n = static_cast<int32_t>(count), c = static_cast<int32_t>(g.channels),
                  s = static_cast<int32_t>(g.spatial);
    if (g.channelsLast)
      biasActivationKernel<T, int32_t, true><<<blocks, kThreads, 0, stream>>>(out, b, r, n, c, s, act);
    else
      biasActivationKernel<T, int32_t, false><<<blocks, kThreads, 0, stream>>>(out, b, r, n, c, s, act);
  } else if (g.channelsLast) {
    biasActivationKernel<T, int64_t, true><<<blocks, kThreads, 0, stream>>>(out, b, r, count, g.channels, g.spatial, act);
  } else {
    biasActivationKernel<T, int64_t, false><<<blocks, kThreads, 0, stream>>>(out, b, r, count, g.channels, g.spatial, act);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchBiasActivation(cudaStream_t stream, ElementType type, void* y, const void* bias,
                                 const void* residual, const ChannelGeometry& g, const DeviceActivation& act) {
  switch (type) {
    case ElementType::F32: return biasActivationFor<float>(stream, y, bias, residual, g, act);
    case ElementType::F16: return biasActivationFor<__half>(stream, y, bias, residual, g, act);
    case ElementType::BF16: return biasActivationFor<__nv_bfloat16>(stream, y, bias, residual, g, act);
  }
  return cudaErrorInvalidValue;
}

}  // namespace osprey::cuda_math
