// The tensor-core form of the fused attention for half and bfloat16 (head sizes a multiple of
// 16, up to 128): per block 128 query rows of one head, 16 per warp; key/value chunks (128 keys
// for head sizes up to 64, else 64) are staged in shared memory, S = Q K^T and O += P V run as
// WMMA 16x16x16 products with float accumulation. The softmax walks the warp's rows one at a
// time with all 32 lanes across the keys, so reductions are shuffles and shared accesses are
// conflict-free; the float output rows live in shared memory, where the online softmax can
// rescale them when a later chunk raises a row's maximum.
#include <mma.h>

#include <cfloat>

#include "backends/cuda/math/attention_kernel.h"
#include "backends/cuda/math/device_math.cuh"

namespace osprey::cuda_math {

namespace {

using namespace nvcuda;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 16 * kWarps;  // query rows per block
constexpr int kHalfPad = 8;         // 16 bytes of padding per shared row of half values
constexpr int kFloatPad = 4;

// Byte offsets of the shared buffers. P (half) is written over S (float) row by row: a row's
// scores are all in registers before its probabilities are stored, and the P row fits in the
// first half of the S row.
struct SmemLayout {
  int ldq, ldk, ldv, lds, ldp, ldo;
  size_t q, k, v, s, o, bytes;
  __host__ __device__ SmemLayout(int dim, int vDim, int keys) {
    ldq = dim + kHalfPad;
    ldk = dim + kHalfPad;
    ldv = vDim + kHalfPad;
    lds = keys + kFloatPad;
    ldp = 2 * lds;
    ldo = vDim + kFloatPad;
    q = 0;
    k = q + sizeof(uint16_t) * kRows * ldq;
    v = k + sizeof(uint16_t) * keys * ldk;
    s = v + sizeof(uint16_t) * keys * ldv;
    o = s + sizeof(float) * kRows * lds;
    bytes = o + sizeof(float) * kRows * ldo;
  }
};

// Copies `rows` rows of `cols` (a multiple of 8) elements into shared rows of stride ld, 16
// bytes at a time; rows past `valid` are zero.
template <class T>
__device__ void stageRows(T* dst, int ld, const T* src, int64_t srcStride, int rows, int valid, int cols) {
  const int vectorsPerRow = cols / 8;
  for (int i = threadIdx.x; i < rows * vectorsPerRow; i += kThreads) {
    const int r = i / vectorsPerRow, c = (i % vectorsPerRow) * 8;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < valid) value = *reinterpret_cast<const uint4*>(src + r * srcStride + c);
    *reinterpret_cast<uint4*>(dst + r * ld + c) = value;
  }
}

template <class T, int kKeys>
__global__ void __launch_bounds__(kThreads) attentionTensorCoreKernel(AttentionParams p) {
  extern __shared__ __align__(128) unsigned char smem[];  // WMMA pointers need 32-byte alignment
  const SmemLayout L(p.dim, p.vDim, kKeys);
  T* qs = reinterpret_cast<T*>(smem + L.q);
  T* ks = reinterpret_cast<T*>(smem + L.k);
  T* vs = reinterpret_cast<T*>(smem + L.v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* sw = reinterpret_cast<float*>(smem + L.s) + warp * 16 * L.lds;
  T* pw = reinterpret_cast<T*>(sw);
  float* ow = reinterpret_cast<float*>(smem + L.o) + warp * 16 * L.ldo;

  const int b = blockIdx.z, h = blockIdx.y, row0 = blockIdx.x * kRows;
  const int kvh = h / (p.qHeads / p.kvHeads);
  const T* q = static_cast<const T*>(p.q) + b * p.qStride[0] + h * p.qStride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.kStride[0] + kvh * p.kStride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.vStride[0] + kvh * p.vStride[1];
  T* o = static_cast<T*>(p.o) + b * p.oStride[0] + h * p.oStride[1];
  const int warpRow0 = row0 + warp * 16;

  stageRows(qs, L.ldq, q + row0 * p.qStride[2], p.qStride[2], kRows, p.qSeq - row0, p.dim);
  float m[16], l[16];  // per row of this warp, the same in every lane
#pragma unroll
  for (int r = 0; r < 16; ++r) m[r] = -INFINITY, l[r] = 0.f;

  for (int key0 = 0; key0 < p.kvSeq; key0 += kKeys) {
    const int keys = min(kKeys, p.kvSeq - key0);
    __syncthreads();  // the previous chunk is consumed (and, the first time, Q is staged)
    stageRows(ks, L.ldk, k + key0 * p.kStride[2], p.kStride[2], kKeys, keys, p.dim);
    stageRows(vs, L.ldv, v + key0 * p.vStride[2], p.vStride[2], kKeys, keys, p.vDim);
    __syncthreads();

    // S (16 x kKeys) = Q_w (16 x dim) K^T.
    for (int n = 0; n < kKeys / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
      for (int kk = 0; kk < p.dim; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> bt;
        wmma::load_matrix_sync(a, qs + warp * 16 * L.ldq + kk, L.ldq);
        wmma::load_matrix_sync(bt, ks + n * 16 * L.ldk + kk, L.ldk);
        wmma::mma_sync(acc, a, bt, acc);
      }
      wmma::store_matrix_sync(sw + n * 16, acc, L.lds, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax, one row at a time across the lanes; P overwrites the row's scores.
    const bool firstChunk = key0 == 0;
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      const int row = warpRow0 + r;
      constexpr int kPerLane = kKeys / 32;
      float s[kPerLane];
      float rowMax = -INFINITY;
#pragma unroll
      for (int t = 0; t < kPerLane; ++t) {
        const int j = lane + 32 * t, key = key0 + j;
        float score = -INFINITY;
        if (j < keys && row < p.qSeq) {
          score = sw[r * L.lds + j] * p.scale;
          if (p.maskKind != MaskKind::None) {
            if (key >= p.maskLength) {
              score = -INFINITY;
            } else {
              const int64_t at =
                  b * p.maskStride[0] + h * p.maskStride[1] + row * p.maskStride[2] + key * p.maskStride[3];
              if (p.maskKind == MaskKind::Bool)
                score = static_cast<const unsigned char*>(p.mask)[at] ? score : -INFINITY;
              else
                score += toFloat(static_cast<const T*>(p.mask)[at]);
            }
          }
          if (p.causal && key > row) score = -INFINITY;
        }
        s[t] = score;
        rowMax = fmaxf(rowMax, score);
      }
      for (int offset = 16; offset > 0; offset /= 2) rowMax = fmaxf(rowMax, __shfl_xor_sync(0xffffffffu, rowMax, offset));
      const float newMax = fmaxf(m[r], rowMax);
      const bool anyKey = newMax != -INFINITY;
      const float rescale = anyKey ? __expf(m[r] - newMax) : 1.f;
      float sum = 0.f;
      __syncwarp();  // every lane has read the row's scores before P overwrites them
#pragma unroll
      for (int t = 0; t < kPerLane; ++t) {
        const float pr = anyKey ? __expf(s[t] - newMax) : 0.f;
        sum += pr;
        pw[r * L.ldp + lane + 32 * t] = fromFloat<T>(pr);
      }
      for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      l[r] = l[r] * rescale + sum;
      m[r] = newMax;
      if (!firstChunk)
        for (int d = lane; d < p.vDim; d += 32) ow[r * L.ldo + d] *= rescale;
    }
    __syncwarp();

    // O_w (16 x vDim) += P (16 x kKeys) V (kKeys x vDim).
    for (int n = 0; n < p.vDim; n += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      if (firstChunk)
        wmma::fill_fragment(acc, 0.f);
      else
        wmma::load_matrix_sync(acc, ow + n, L.ldo, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kKeys; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bv;
        wmma::load_matrix_sync(a, pw + kk, L.ldp);
        wmma::load_matrix_sync(bv, vs + kk * L.ldv + n, L.ldv);
        wmma::mma_sync(acc, a, bv, acc);
      }
      wmma::store_matrix_sync(ow + n, acc, L.ldo, wmma::mem_row_major);
    }
    __syncwarp();
  }

  // Rows whose keys were all hidden have l = 0 and write zeros, as the reference does.
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    const int row = warpRow0 + r;
    if (row >= p.qSeq) break;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    T* orow = o + row * p.oStride[2];
    for (int d = lane; d < p.vDim; d += 32) orow[d] = fromFloat<T>(p.kvSeq > 0 ? ow[r * L.ldo + d] * inv : 0.f);
  }
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; }

template <class T, int kKeys>
cudaError_t launchWithChunk(cudaStream_t stream, const AttentionParams& p) {
  const SmemLayout L(p.dim, p.vDim, kKeys);
  static bool raised = false;  // more than the default 48 KB of shared memory
  if (!raised) {
    const int largestDim = kKeys == 128 ? 64 : kAttentionMaxHeadDim;
    const SmemLayout largest(largestDim, largestDim, kKeys);
    cudaError_t e = cudaFuncSetAttribute(attentionTensorCoreKernel<T, kKeys>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(largest.bytes));
    if (e != cudaSuccess) return e;
    raised = true;
  }
  const dim3 grid((p.qSeq + kRows - 1) / kRows, p.qHeads, p.batch);
  attentionTensorCoreKernel<T, kKeys><<<grid, kThreads, L.bytes, stream>>>(p);
  return cudaGetLastError();
}

// Chunks of 128 keys (one chunk for BERT's 128) while the buffers fit; 64 for larger heads.
template <class T>
cudaError_t launchFor(cudaStream_t stream, const AttentionParams& p) {
  if (p.dim <= 64 && p.vDim <= 64) return launchWithChunk<T, 128>(stream, p);
  return launchWithChunk<T, 64>(stream, p);
}

}  // namespace

bool attentionTensorCoreEligible(ElementType type, const AttentionParams& p) {
  if (type == ElementType::F32) return false;
  if (p.dim % 16 != 0 || p.vDim % 16 != 0 || p.dim > kAttentionMaxHeadDim || p.vDim > kAttentionMaxHeadDim)
    return false;
  for (const int64_t* s : {p.qStride, p.kStride, p.vStride})
    for (int i = 0; i < 3; ++i)
      if (s[i] % 8 != 0) return false;
  return aligned16(p.q) && aligned16(p.k) && aligned16(p.v);
}

cudaError_t launchAttentionTensorCore(cudaStream_t stream, ElementType type, const AttentionParams& p) {
  switch (type) {
    case ElementType::F16: return launchFor<__half>(stream, p);
    case ElementType::BF16: return launchFor<__nv_bfloat16>(stream, p);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace osprey::cuda_math
