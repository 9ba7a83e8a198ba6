// Device-side helpers shared by the kernels: storage loads/stores in fp32 and launch sizes.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "osprey/types.h"

namespace osprey::cuda {

template <class T>
__host__ __device__ __forceinline__ float toFloat(T v) { return static_cast<float>(v); }
template <>
__host__ __device__ __forceinline__ float toFloat<__half>(__half v) { return __half2float(v); }
template <>
__host__ __device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__host__ __device__ __forceinline__ T fromFloat(float v) { return static_cast<T>(v); }
template <>
__host__ __device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }
template <>
__host__ __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int kBlock = 256;
inline unsigned blocksFor(int64_t n, int block = kBlock) {
  int64_t b = (n + block - 1) / block;
  if (b > 65535LL * 32) b = 65535LL * 32;  // grid-stride loops cover the rest
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

// Whether p may be read or written as 16-byte vectors (uint4).
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

#define OSPREY_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Calls fn(T{}) with T the device type of a float storage dtype; false for other dtypes.
template <class Fn>
bool dispatchStorage(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::Float32: fn(float{}); return true;
    case DataType::Float16: fn(__half{}); return true;
    case DataType::BFloat16: fn(__nv_bfloat16{}); return true;
    default: return false;
  }
}

}  // namespace osprey::cuda
