// Reductions over one axis block: Reduce*, Softmax / LogSoftmax and LayerNormalization. Rows
// (inner == 1) take one warp each; strided reductions (inner > 1) one thread per output.
#include <cfloat>

#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/cuda_launch.h"

namespace osprey::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float warpSum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warpMax(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warpMin(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warpProd(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v *= __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float initial(ReduceKind k) {
  switch (k) {
    case ReduceKind::Max: return -INFINITY;
    case ReduceKind::Min: return INFINITY;
    case ReduceKind::Prod: return 1.f;
    default: return 0.f;
  }
}
__device__ __forceinline__ float accumulate(ReduceKind k, float acc, float x, float shift) {
  switch (k) {
    case ReduceKind::Max: return fmaxf(acc, x);
    case ReduceKind::Min: return fminf(acc, x);
    case ReduceKind::Prod: return acc * x;
    case ReduceKind::SumSquare:
    case ReduceKind::L2: return acc + x * x;
    case ReduceKind::L1: return acc + fabsf(x);
    case ReduceKind::LogSumExp: return acc + expf(x - shift);
    default: return acc + x;
  }
}
__device__ __forceinline__ float finish(ReduceKind k, float acc, int64_t n, float shift) {
  switch (k) {
    case ReduceKind::Mean: return acc / static_cast<float>(n);
    case ReduceKind::L2: return sqrtf(acc);
    case ReduceKind::LogSum: return logf(acc);
    case ReduceKind::LogSumExp: return logf(acc) + shift;
    default: return acc;
  }
}

template <class T>
__global__ void reduceRowsKernel(ReduceKind kind, const T* src, T* dst, int64_t rows, int64_t n) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const T* x = src + row * n;
  float shift = 0.f;
  if (kind == ReduceKind::LogSumExp) {
    float m = -INFINITY;
    for (int64_t i = lane; i < n; i += kWarp) m = fmaxf(m, toFloat(x[i]));
    shift = warpMax(m);
    if (isinf(shift)) shift = 0.f;
  }
  float acc = initial(kind);
  for (int64_t i = lane; i < n; i += kWarp) acc = accumulate(kind, acc, toFloat(x[i]), shift);
  switch (kind) {
    case ReduceKind::Max: acc = warpMax(acc); break;
    case ReduceKind::Min: acc = warpMin(acc); break;
    case ReduceKind::Prod: acc = warpProd(acc); break;
    default: acc = warpSum(acc); break;
  }
  if (lane == 0) dst[row] = fromFloat<T>(finish(kind, acc, n, shift));
}

template <class T>
__global__ void reduceStridedKernel(ReduceKind kind, const T* src, T* dst, int64_t outer, int64_t n, int64_t inner) {
  OSPREY_GRID_STRIDE(o, outer * inner) {
    const int64_t b = o / inner, i = o % inner;
    const T* x = src + b * n * inner + i;
    float shift = 0.f;
    if (kind == ReduceKind::LogSumExp) {
      float m = -INFINITY;
      for (int64_t k = 0; k < n; ++k) m = fmaxf(m, toFloat(x[k * inner]));
      shift = isinf(m) ? 0.f : m;
    }
    float acc = initial(kind);
    for (int64_t k = 0; k < n; ++k) acc = accumulate(kind, acc, toFloat(x[k * inner]), shift);
    dst[o] = fromFloat<T>(finish(kind, acc, n, shift));
  }
}

__device__ __forceinline__ float combine(ReduceKind k, float a, float b) {
  switch (k) {
    case ReduceKind::Max: return fmaxf(a, b);
    case ReduceKind::Min: return fminf(a, b);
    case ReduceKind::Prod: return a * b;
    default: return a + b;  // every other kind sums its terms
  }
}

constexpr int kColumnWarps = 16;

// A long axis over few outputs (a channels-last global pool: n = H * W, inner = C): one block per
// 32 neighbouring outputs, its warps taking every kColumnWarps-th step of the axis and their
// partial results combined in shared memory. The strided kernel gives each output one thread,
// which walked 12544 steps alone for a 112x112 pool of 32 channels.
template <class T>
__global__ void reduceColumnsKernel(ReduceKind kind, const T* src, T* dst, int64_t outer, int64_t n, int64_t inner) {
  __shared__ float part[kColumnWarps][kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t groups = (inner + kWarp - 1) / kWarp;
  const int64_t b = blockIdx.x / groups, c = (blockIdx.x % groups) * kWarp + lane;
  const bool valid = c < inner;
  const T* x = src + b * n * inner + c;
  float shift = 0.f;
  if (kind == ReduceKind::LogSumExp) {
    float m = -INFINITY;
    if (valid)
      for (int64_t k = warp; k < n; k += kColumnWarps) m = fmaxf(m, toFloat(x[k * inner]));
    part[warp][lane] = m;
    __syncthreads();
    if (warp == 0) {
      for (int w = 1; w < kColumnWarps; ++w) m = fmaxf(m, part[w][lane]);
      part[0][lane] = isinf(m) ? 0.f : m;
    }
    __syncthreads();
    shift = part[0][lane];
    __syncthreads();
  }
  float acc = initial(kind);
  if (valid)
    for (int64_t k = warp; k < n; k += kColumnWarps) acc = accumulate(kind, acc, toFloat(x[k * inner]), shift);
  part[warp][lane] = acc;
  __syncthreads();
  if (warp != 0 || !valid) return;
  for (int w = 1; w < kColumnWarps; ++w) acc = combine(kind, acc, part[w][lane]);
  dst[b * inner + c] = fromFloat<T>(finish(kind, acc, n, shift));
}

template <class T>
__global__ void softmaxRowsKernel(const T* src, T* dst, int64_t rows, int64_t n, bool logSoftmax) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const T* x = src + row * n;
  T* y = dst + row * n;
  float m = -INFINITY;
  for (int64_t i = lane; i < n; i += kWarp) m = fmaxf(m, toFloat(x[i]));
  m = warpMax(m);
  float s = 0.f;
  for (int64_t i = lane; i < n; i += kWarp) s += expf(toFloat(x[i]) - m);
  s = warpSum(s);
  if (logSoftmax) {
    const float l = logf(s);
    for (int64_t i = lane; i < n; i += kWarp) y[i] = fromFloat<T>(toFloat(x[i]) - m - l);
  } else {
    const float inv = 1.f / s;
    for (int64_t i = lane; i < n; i += kWarp) y[i] = fromFloat<T>(expf(toFloat(x[i]) - m) * inv);
  }
}

template <class T>
__global__ void softmaxStridedKernel(const T* src, T* dst, int64_t outer, int64_t n, int64_t inner, bool logSoftmax) {
  OSPREY_GRID_STRIDE(o, outer * inner) {
    const int64_t b = o / inner, i = o % inner;
    const T* x = src + b * n * inner + i;
    T* y = dst + b * n * inner + i;
    float m = -INFINITY;
    for (int64_t k = 0; k < n; ++k) m = fmaxf(m, toFloat(x[k * inner]));
    float s = 0.f;
    for (int64_t k = 0; k < n; ++k) s += expf(toFloat(x[k * inner]) - m);
    const float l = logf(s), inv = 1.f / s;
    for (int64_t k = 0; k < n; ++k) {
      const float v = toFloat(x[k * inner]) - m;
      y[k * inner] = fromFloat<T>(logSoftmax ? v - l : expf(v) * inv);
    }
  }
}

template <class T>
__global__ void layerNormKernel(const T* src, const T* scale, const T* bias, T* dst, int64_t rows, int64_t n, float eps, bool rms) {
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const T* x = src + row * n;
  T* y = dst + row * n;
  float mean = 0.f;
  if (!rms) {
    float s = 0.f;
    for (int64_t i = lane; i < n; i += kWarp) s += toFloat(x[i]);
    mean = warpSum(s) / static_cast<float>(n);
  }
  float v = 0.f;
  for (int64_t i = lane; i < n; i += kWarp) {
    const float d = toFloat(x[i]) - mean;
    v += d * d;
  }
  const float inv = rsqrtf(warpSum(v) / static_cast<float>(n) + eps);
  for (int64_t i = lane; i < n; i += kWarp) {
    float r = (toFloat(x[i]) - mean) * inv * toFloat(scale[i]);
    if (bias) r += toFloat(bias[i]);
    y[i] = fromFloat<T>(r);
  }
}

// A row of n = 16-byte vectors (kLanes elements each) held in registers, Vectors per lane: one
// read of the row from memory where the element-wise kernel reads it three times, two bytes at a
// time for fp16. Same arithmetic: mean, then the mean square of the deviations, in float.
template <class T, int Vectors>
__global__ void layerNormVectorKernel(const T* src, const T* scale, const T* bias, T* dst, int64_t rows, int n, float eps,
                                      bool rms) {
  constexpr int kLanes = 16 / sizeof(T);
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarpsPerBlock) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int count = n / kLanes;
  const uint4* x = reinterpret_cast<const uint4*>(src + row * n);
  float v[Vectors][kLanes];
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < Vectors; ++j) {
    const int at = lane + j * kWarp;
    const uint4 raw = at < count ? x[at] : make_uint4(0, 0, 0, 0);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int k = 0; k < kLanes; ++k) v[j][k] = toFloat(e[k]), sum += v[j][k];
  }
  const float mean = rms ? 0.f : warpSum(sum) / static_cast<float>(n);
  float squares = 0.f;
#pragma unroll
  for (int j = 0; j < Vectors; ++j)
    if (lane + j * kWarp < count)
#pragma unroll
      for (int k = 0; k < kLanes; ++k) squares += (v[j][k] - mean) * (v[j][k] - mean);
  const float inv = rsqrtf(warpSum(squares) / static_cast<float>(n) + eps);
  uint4* y = reinterpret_cast<uint4*>(dst + row * n);
#pragma unroll
  for (int j = 0; j < Vectors; ++j) {
    const int at = lane + j * kWarp;
    if (at >= count) continue;
    const uint4 gammaRaw = reinterpret_cast<const uint4*>(scale)[at];
    const uint4 betaRaw = bias ? reinterpret_cast<const uint4*>(bias)[at] : make_uint4(0, 0, 0, 0);
    const T* gamma = reinterpret_cast<const T*>(&gammaRaw);
    const T* beta = reinterpret_cast<const T*>(&betaRaw);
    uint4 out;
    T* o = reinterpret_cast<T*>(&out);
#pragma unroll
    for (int k = 0; k < kLanes; ++k) {
      float r = (v[j][k] - mean) * inv * toFloat(gamma[k]);
      if (bias) r += toFloat(beta[k]);
      o[k] = fromFloat<T>(r);
    }
    y[at] = out;
  }
}

unsigned rowBlocks(int64_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

cudaError_t reduceAxis(ReduceKind kind, const void* src, void* dst, int64_t outer, int64_t n, int64_t inner, DataType storage,
                       cudaStream_t stream) {
  if (outer * inner <= 0) return cudaSuccess;
  bool ok = dispatchStorage(storage, [&](auto t) {
    using T = decltype(t);
    if (inner == 1 && n >= kWarp)
      reduceRowsKernel<T><<<rowBlocks(outer), kWarp * kWarpsPerBlock, 0, stream>>>(kind, static_cast<const T*>(src),
                                                                                    static_cast<T*>(dst), outer, n);
    else if (n >= 8 * kColumnWarps)
      reduceColumnsKernel<T><<<static_cast<unsigned>(outer * ((inner + kWarp - 1) / kWarp)), kWarp * kColumnWarps, 0,
                               stream>>>(kind, static_cast<const T*>(src), static_cast<T*>(dst), outer, n, inner);
    else
      reduceStridedKernel<T><<<blocksFor(outer * inner), kBlock, 0, stream>>>(kind, static_cast<const T*>(src),
                                                                              static_cast<T*>(dst), outer, n, inner);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t softmax(const void* src, void* dst, int64_t outer, int64_t n, int64_t inner, bool logSoftmax, DataType storage,
                    cudaStream_t stream) {
  if (outer * inner * n <= 0) return cudaSuccess;
  bool ok = dispatchStorage(storage, [&](auto t) {
    using T = decltype(t);
    if (inner == 1)
      softmaxRowsKernel<T><<<rowBlocks(outer), kWarp * kWarpsPerBlock, 0, stream>>>(static_cast<const T*>(src),
                                                                                     static_cast<T*>(dst), outer, n, logSoftmax);
    else
      softmaxStridedKernel<T><<<blocksFor(outer * inner), kBlock, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst),
                                                                               outer, n, inner, logSoftmax);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t layerNorm(const void* x, const void* scale, const void* bias, void* y, int64_t rows, int64_t n, float epsilon,
                      bool rms, DataType storage, cudaStream_t stream) {
  if (rows * n <= 0) return cudaSuccess;
  bool ok = dispatchStorage(storage, [&](auto t) {
    using T = decltype(t);
    const T *src = static_cast<const T*>(x), *gamma = static_cast<const T*>(scale), *beta = static_cast<const T*>(bias);
    T* dst = static_cast<T*>(y);
    constexpr int64_t kLanes = 16 / sizeof(T);
    const int64_t perLane = (n / kLanes + kWarp - 1) / kWarp;
    const bool vectors = n % kLanes == 0 && perLane <= 8 && aligned16(src) && aligned16(gamma) && aligned16(dst) &&
                         (!beta || aligned16(beta));
    const unsigned grid = rowBlocks(rows), block = kWarp * kWarpsPerBlock;
    const int width = static_cast<int>(n);
    if (vectors && perLane <= 1)
      layerNormVectorKernel<T, 1><<<grid, block, 0, stream>>>(src, gamma, beta, dst, rows, width, epsilon, rms);
    else if (vectors && perLane <= 2)
      layerNormVectorKernel<T, 2><<<grid, block, 0, stream>>>(src, gamma, beta, dst, rows, width, epsilon, rms);
    else if (vectors && perLane <= 4)
      layerNormVectorKernel<T, 4><<<grid, block, 0, stream>>>(src, gamma, beta, dst, rows, width, epsilon, rms);
    else if (vectors)
      layerNormVectorKernel<T, 8><<<grid, block, 0, stream>>>(src, gamma, beta, dst, rows, width, epsilon, rms);
    else
      layerNormKernel<T><<<grid, block, 0, stream>>>(src, gamma, beta, dst, rows, n, epsilon, rms);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace osprey::cuda
