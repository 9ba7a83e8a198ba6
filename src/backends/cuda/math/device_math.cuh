// Device helpers of the math kernels: float conversion of the storage types and the fused
// activations of src/ops/activation.h.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/math/kernel_types.h"

namespace osprey::cuda_math {

__device__ __forceinline__ float applyActivation(const DeviceActivation& act, float x) {
  using K = ActivationKind;
  switch (act.kind) {
    case K::None: return x;
    case K::Relu: return x > 0.f ? x : 0.f;
    case K::Clip: return fminf(fmaxf(x, act.a), act.b);
    case K::LeakyRelu: return x >= 0.f ? x : act.a * x;
    case K::Sigmoid: return 1.f / (1.f + expf(-x));
    case K::HardSigmoid: return fmaxf(0.f, fminf(1.f, act.a * x + act.b));
    case K::HardSwish: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case K::Tanh: return tanhf(x);
    case K::Elu: return x >= 0.f ? x : act.a * (expf(x) - 1.f);
    case K::Gelu:
      if (act.a != 0.f) return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
      return 0.5f * x * (1.f + erff(x * 0.7071067811865476f));
    case K::Swish: return x / (1.f + expf(-act.a * x));
  }
  return x;
}

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ __forceinline__ T fromFloat(float v);
template <>
__device__ __forceinline__ float fromFloat<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

}  // namespace osprey::cuda_math
