// The register-resident form of the fused attention (FlashAttention-2's arrangement) for half
// and bfloat16 with head sizes 32, 64, 96 or 128 (Q/K and V alike): each warp owns 16 query rows
// and keeps their Q fragments, scores, probabilities and output accumulators in registers
// (mma.sync m16n8k16 with float accumulation; a score tile's accumulator layout is the next
// product's A-operand layout, so probabilities go from one to the other without shared memory).
// Key and value tiles of 64 rows are staged in shared memory for the block's 4 warps. The WMMA
// form (attention_tensor_core.cu) staged scores and outputs in shared memory as well: 156 KB a
// block, one block per multiprocessor, 84 us for BERT-base at batch 32 on an H200.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

#include "backends/cuda/math/attention_kernel.h"
#include "backends/cuda/math/device_math.cuh"

namespace osprey::cuda_math {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRows = 16 * kWarps;  // query rows per block
constexpr int kKeys = 64;           // keys per shared tile
constexpr int kPad = 8;             // 16 bytes per shared row: fragment reads spread over the banks

__device__ inline uint32_t pack2(__half a, __half b) {
  return static_cast<uint32_t>(__half_as_ushort(a)) | (static_cast<uint32_t>(__half_as_ushort(b)) << 16);
}
__device__ inline uint32_t pack2(__nv_bfloat16 a, __nv_bfloat16 b) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(a)) | (static_cast<uint32_t>(__bfloat16_as_ushort(b)) << 16);
}
template <class T>
__device__ inline uint32_t packFloats(float a, float b) {
  return pack2(fromFloat<T>(a), fromFloat<T>(b));
}
// Two neighbouring elements (the first at an even index of a 4-byte aligned row).
template <class T>
__device__ inline uint32_t load2(const T* at) {
  return *reinterpret_cast<const uint32_t*>(at);
}

// c += a (16x16, row-major) * b (16x8, column-major), float accumulators.
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, __half) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, __nv_bfloat16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The reference's score for (row, key): scaled, masked, causal; -inf where hidden.
template <class T>
__device__ inline float maskedScore(const AttentionParams& p, float score, int b, int h, int row, int key) {
  if (key >= p.kvSeq || row >= p.qSeq) return -INFINITY;
  if (p.maskKind != MaskKind::None) {
    if (key >= p.maskLength) return -INFINITY;
    const int64_t at = b * p.maskStride[0] + h * p.maskStride[1] + row * p.maskStride[2] + key * p.maskStride[3];
    if (p.maskKind == MaskKind::Bool) {
      if (!static_cast<const unsigned char*>(p.mask)[at]) return -INFINITY;
    } else {
      score += toFloat(static_cast<const T*>(p.mask)[at]);
    }
  }
  if (p.causal && key > row) return -INFINITY;
  return score;
}

// Fragment coordinates (PTX mma.m16n8k16): lane = 4 g + t; A and C rows g and g + 8, C columns
// 2t and 2t + 1; B rows (the reduction) 2t, 2t + 1 and 2t + 8, 2t + 9, column g.
template <class T, int D>
__global__ void __launch_bounds__(kThreads) attentionFlashKernel(AttentionParams p) {
  __shared__ __align__(16) T ks[kKeys][D + kPad];
  __shared__ __align__(16) T vs[kKeys][D + kPad];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int b = blockIdx.z, h = blockIdx.y;
  const int kvh = h / (p.qHeads / p.kvHeads);
  const T* q = static_cast<const T*>(p.q) + b * p.qStride[0] + h * p.qStride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.kStride[0] + kvh * p.kStride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.vStride[0] + kvh * p.vStride[1];
  T* o = static_cast<T*>(p.o) + b * p.oStride[0] + h * p.oStride[1];
  const int rowA = blockIdx.x * kRows + warp * 16 + g, rowB = rowA + 8;

  uint32_t qf[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int c = kk * 16 + 2 * t;
    const bool a = rowA < p.qSeq, bb = rowB < p.qSeq;
    qf[kk][0] = a ? load2(q + rowA * p.qStride[2] + c) : 0u;
    qf[kk][1] = bb ? load2(q + rowB * p.qStride[2] + c) : 0u;
    qf[kk][2] = a ? load2(q + rowA * p.qStride[2] + c + 8) : 0u;
    qf[kk][3] = bb ? load2(q + rowB * p.qStride[2] + c + 8) : 0u;
  }
  float acc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  float maxA = -INFINITY, maxB = -INFINITY, sumA = 0.f, sumB = 0.f;  // sums: this lane's columns

  for (int key0 = 0; key0 < p.kvSeq; key0 += kKeys) {
    const int keys = min(kKeys, p.kvSeq - key0);
    __syncthreads();  // every warp is done with the previous tile
    for (int i = threadIdx.x; i < kKeys * (D / 8); i += kThreads) {
      const int r = i / (D / 8), c = (i % (D / 8)) * 8;
      uint4 kv = make_uint4(0, 0, 0, 0), vv = kv;
      if (r < keys) {
        kv = *reinterpret_cast<const uint4*>(k + (key0 + r) * p.kStride[2] + c);
        vv = *reinterpret_cast<const uint4*>(v + (key0 + r) * p.vStride[2] + c);
      }
      *reinterpret_cast<uint4*>(&ks[r][c]) = kv;
      *reinterpret_cast<uint4*>(&vs[r][c]) = vv;
    }
    __syncthreads();

    float s[kKeys / 8][4];
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j) {
        const T* kr = &ks[j * 8 + g][kk * 16 + 2 * t];
        mma(s[j], qf[kk], load2(kr), load2(kr + 8), T());
      }

    float tileMaxA = -INFINITY, tileMaxB = -INFINITY;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key0 + j * 8 + 2 * t + (e & 1);
        const float x = maskedScore<T>(p, s[j][e] * p.scale, b, h, e < 2 ? rowA : rowB, key);
        s[j][e] = x;
        if (e < 2)
          tileMaxA = fmaxf(tileMaxA, x);
        else
          tileMaxB = fmaxf(tileMaxB, x);
      }
#pragma unroll
    for (int offset = 1; offset < 4; offset *= 2) {
      tileMaxA = fmaxf(tileMaxA, __shfl_xor_sync(0xffffffffu, tileMaxA, offset));
      tileMaxB = fmaxf(tileMaxB, __shfl_xor_sync(0xffffffffu, tileMaxB, offset));
    }
    const float newA = fmaxf(maxA, tileMaxA), newB = fmaxf(maxB, tileMaxB);
    const float rescaleA = newA == -INFINITY ? 1.f : __expf(maxA - newA);
    const float rescaleB = newB == -INFINITY ? 1.f : __expf(maxB - newB);
    maxA = newA, maxB = newB;
    sumA *= rescaleA, sumB *= rescaleB;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float m = e < 2 ? newA : newB;
        const float prob = m == -INFINITY ? 0.f : __expf(s[j][e] - m);
        s[j][e] = prob;
        if (e < 2)
          sumA += prob;
        else
          sumB += prob;
      }
#pragma unroll
    for (int n = 0; n < D / 8; ++n) acc[n][0] *= rescaleA, acc[n][1] *= rescaleA, acc[n][2] *= rescaleB, acc[n][3] *= rescaleB;

    // O += P V: the probabilities of score tiles 2kt and 2kt + 1 are the A fragment of keys
    // 16kt .. 16kt + 15.
#pragma unroll
    for (int kt = 0; kt < kKeys / 16; ++kt) {
      const uint32_t pa[4] = {packFloats<T>(s[2 * kt][0], s[2 * kt][1]), packFloats<T>(s[2 * kt][2], s[2 * kt][3]),
                              packFloats<T>(s[2 * kt + 1][0], s[2 * kt + 1][1]),
                              packFloats<T>(s[2 * kt + 1][2], s[2 * kt + 1][3])};
      const int kr = kt * 16 + 2 * t;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        const int col = n * 8 + g;
        mma(acc[n], pa, pack2(vs[kr][col], vs[kr + 1][col]), pack2(vs[kr + 8][col], vs[kr + 9][col]), T());
      }
    }
  }

#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {
    sumA += __shfl_xor_sync(0xffffffffu, sumA, offset);
    sumB += __shfl_xor_sync(0xffffffffu, sumB, offset);
  }
  // Rows whose keys were all hidden have a zero sum and write zeros, as the reference does.
  const float invA = sumA > 0.f ? 1.f / sumA : 0.f, invB = sumB > 0.f ? 1.f / sumB : 0.f;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + 2 * t;
    if (rowA < p.qSeq) {
      T* out = o + rowA * p.oStride[2] + col;
      out[0] = fromFloat<T>(acc[n][0] * invA);
      out[1] = fromFloat<T>(acc[n][1] * invA);
    }
    if (rowB < p.qSeq) {
      T* out = o + rowB * p.oStride[2] + col;
      out[0] = fromFloat<T>(acc[n][2] * invB);
      out[1] = fromFloat<T>(acc[n][3] * invB);
    }
  }
}

template <class T>
cudaError_t launchFor(cudaStream_t stream, const AttentionParams& p) {
  const dim3 grid((p.qSeq + kRows - 1) / kRows, p.qHeads, p.batch);
  switch (p.dim) {
    case 32: attentionFlashKernel<T, 32><<<grid, kThreads, 0, stream>>>(p); break;
    case 64: attentionFlashKernel<T, 64><<<grid, kThreads, 0, stream>>>(p); break;
    case 96: attentionFlashKernel<T, 96><<<grid, kThreads, 0, stream>>>(p); break;
    case 128: attentionFlashKernel<T, 128><<<grid, kThreads, 0, stream>>>(p); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

bool attentionFlashEligible(ElementType type, const AttentionParams& p) {
  // The WMMA kernel's conditions (half / bfloat16, aligned rows), with one head size for Q/K and V.
  if (!attentionTensorCoreEligible(type, p) || p.dim != p.vDim) return false;
  if (p.dim != 32 && p.dim != 64 && p.dim != 96 && p.dim != 128) return false;
  return p.qHeads <= 65535 && p.batch <= 65535;  // grid y and z
}

cudaError_t launchAttentionFlash(cudaStream_t stream, ElementType type, const AttentionParams& p) {
  switch (type) {
    case ElementType::F16: return launchFor<__half>(stream, p);
    case ElementType::BF16: return launchFor<__nv_bfloat16>(stream, p);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace osprey::cuda_math
