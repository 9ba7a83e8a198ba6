#include <cfloat>
#include <cstdlib>

#include "backends/cuda/math/attention_kernel.h"
#include "backends/cuda/math/device_math.cuh"

namespace osprey::cuda_math {

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerBlock = 32;  // query rows of one (batch, head) per block
constexpr int kKeysPerChunk = 64;  // keys staged in shared memory at a time: two per lane
constexpr int kDimsPerLane = kAttentionMaxHeadDim / 32;

// Shared memory (floats): Q rows, then K and V chunks. K rows are padded by one float so the
// lanes of a warp, each reading its own key row, hit different banks.
__host__ __device__ inline int qFloats(int dim) { return kRowsPerBlock * dim; }
__host__ __device__ inline int kFloats(int dim) { return kKeysPerChunk * (dim + 1); }
__host__ __device__ inline int vFloats(int vDim) { return kKeysPerChunk * vDim; }

template <class T>
__global__ void __launch_bounds__(kThreads) attentionKernel(AttentionParams p) {
  extern __shared__ float smem[];
  float* qs = smem;
  float* ks = qs + qFloats(p.dim);
  float* vs = ks + kFloats(p.dim);
  const int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kRowsPerBlock;
  const int kvh = h / (p.qHeads / p.kvHeads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* q = static_cast<const T*>(p.q) + b * p.qStride[0] + h * p.qStride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.kStride[0] + kvh * p.kStride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.vStride[0] + kvh * p.vStride[1];
  T* o = static_cast<T*>(p.o) + b * p.oStride[0] + h * p.oStride[1];
  const int rows = min(kRowsPerBlock, p.qSeq - row0);

  // Q is pre-scaled so scores need no extra multiply.
  for (int i = threadIdx.x; i < rows * p.dim; i += kThreads) {
    const int r = i / p.dim, d = i % p.dim;
    qs[i] = toFloat(q[(row0 + r) * p.qStride[2] + d]) * p.scale;
  }
  constexpr int kRowsPerWarp = kRowsPerBlock / kWarps;
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -FLT_MAX;
    l[r] = 0.f;
#pragma unroll
    for (int t = 0; t < kDimsPerLane; ++t) acc[r][t] = 0.f;
  }

  for (int key0 = 0; key0 < p.kvSeq; key0 += kKeysPerChunk) {
    const int keys = min(kKeysPerChunk, p.kvSeq - key0);
    __syncthreads();  // the previous chunk is consumed (and, the first time, Q is staged)
    for (int i = threadIdx.x; i < keys * p.dim; i += kThreads) {
      const int j = i / p.dim, d = i % p.dim;
      ks[j * (p.dim + 1) + d] = toFloat(k[(key0 + j) * p.kStride[2] + d]);
    }
    for (int i = threadIdx.x; i < keys * p.vDim; i += kThreads) {
      const int j = i / p.vDim, d = i % p.vDim;
      vs[j * p.vDim + d] = toFloat(v[(key0 + j) * p.vStride[2] + d]);
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int localRow = warp * kRowsPerWarp + r;
      if (localRow >= rows) break;
      const int row = row0 + localRow;
      const float* qr = qs + localRow * p.dim;
      float s[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int j = lane + half * 32, key = key0 + j;
        float score = -INFINITY;
        if (j < keys) {
          const float* kr = ks + j * (p.dim + 1);
          float dot = 0.f;
          for (int d = 0; d < p.dim; ++d) dot = fmaf(qr[d], kr[d], dot);
          score = dot;
          if (p.maskKind != MaskKind::None) {
            if (key >= p.maskLength) {
              score = -INFINITY;
            } else {
              const int64_t at = b * p.maskStride[0] + h * p.maskStride[1] + row * p.maskStride[2] +
                                 key * p.maskStride[3];
              if (p.maskKind == MaskKind::Bool)
                score = static_cast<const unsigned char*>(p.mask)[at] ? score : -INFINITY;
              else
                score += toFloat(static_cast<const T*>(p.mask)[at]);
            }
          }
          if (p.causal && key > row) score = -INFINITY;
        }
        s[half] = score;
      }
      float chunkMax = fmaxf(s[0], s[1]);
      for (int offset = 16; offset > 0; offset /= 2) chunkMax = fmaxf(chunkMax, __shfl_xor_sync(0xffffffffu, chunkMax, offset));
      if (chunkMax == -INFINITY) continue;  // every key of this chunk is hidden from this row
      const float newMax = fmaxf(m[r], chunkMax);
      const float rescale = __expf(m[r] - newMax);
      const float p0 = __expf(s[0] - newMax), p1 = __expf(s[1] - newMax);
      float sum = p0 + p1;
      for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      l[r] = l[r] * rescale + sum;
      m[r] = newMax;
#pragma unroll
      for (int t = 0; t < kDimsPerLane; ++t) acc[r][t] *= rescale;
      for (int j = 0; j < keys; ++j) {
        const float pj = __shfl_sync(0xffffffffu, j < 32 ? p0 : p1, j % 32);
        const float* vr = vs + j * p.vDim;
#pragma unroll
        for (int t = 0; t < kDimsPerLane; ++t) {
          const int d = lane + t * 32;
          if (d < p.vDim) acc[r][t] = fmaf(pj, vr[d], acc[r][t]);
        }
      }
    }
  }
  // Rows whose keys were all hidden have l = 0 and write zeros, as the reference does.
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int localRow = warp * kRowsPerWarp + r;
    if (localRow >= rows) break;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    T* orow = o + (row0 + localRow) * p.oStride[2];
#pragma unroll
    for (int t = 0; t < kDimsPerLane; ++t) {
      const int d = lane + t * 32;
      if (d < p.vDim) orow[d] = fromFloat<T>(acc[r][t] * inv);
    }
  }
}

template <class T>
cudaError_t launchFor(cudaStream_t stream, const AttentionParams& p) {
  const size_t bytes = sizeof(float) * (qFloats(p.dim) + kFloats(p.dim) + vFloats(p.vDim));
  static bool raised = false;  // the kernel may use more than the default 48 KB of shared memory
  if (!raised) {
    cudaError_t e = cudaFuncSetAttribute(attentionKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(sizeof(float) * (qFloats(kAttentionMaxHeadDim) +
                                                                           kFloats(kAttentionMaxHeadDim) +
                                                                           vFloats(kAttentionMaxHeadDim))));
    if (e != cudaSuccess) return e;
    raised = true;
  }
  const dim3 grid((p.qSeq + kRowsPerBlock - 1) / kRowsPerBlock, p.qHeads, p.batch);
  attentionKernel<T><<<grid, kThreads, bytes, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchAttention(cudaStream_t stream, ElementType type, const AttentionParams& p) {
  if (p.dim > kAttentionMaxHeadDim || p.vDim > kAttentionMaxHeadDim || p.kvHeads < 1 || p.qHeads % p.kvHeads != 0)
    return cudaErrorInvalidValue;
  if (p.batch == 0 || p.qSeq == 0 || p.qHeads == 0) return cudaSuccess;
  if (attentionFlashEligible(type, p)) return launchAttentionFlash(stream, type, p);
  if (attentionTensorCoreEligible(type, p)) return launchAttentionTensorCore(stream, type, p);
  switch (type) {
    case ElementType::F32: return launchFor<float>(stream, p);
    case ElementType::F16: return launchFor<__half>(stream, p);
    case ElementType::BF16: return launchFor<__nv_bfloat16>(stream, p);
  }
  return cudaErrorInvalidValue;
}

}  // namespace osprey::cuda_math
