// MatMulNBits with int8 activations, AVX-512 VNNI (matmul_nbits_int8.h has the layout): vpdpbusd
// of the unsigned 4-bit codes against four signed bytes of A broadcast, 64 products an
// instruction. Panels of 16 columns, up to 8 rows of A per call.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/kernels/matmul_nbits_int8.h"
#include "ops/matmul_nbits.h"

namespace osprey {

namespace {

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

template <int R>
void gemm(const Int4Panel& p, int64_t bs, const Int8Rows& a, float* c, int64_t ldc) {
  const __m512i mask = _mm512_set1_epi8(0x0F);
  const int64_t groups = bs / 8;
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  const uint8_t* q = p.q;
  for (int64_t b = 0; b < a.kBlocks; ++b) {
    __m512i dot[R];
    for (int r = 0; r < R; ++r) dot[r] = _mm512_setzero_si512();
    const int8_t* ak = a.q + b * bs;
    for (int64_t g = 0; g < groups; ++g, q += 64, ak += 8) {
      const __m512i w = _mm512_loadu_si512(q);
      const __m512i lo = _mm512_and_si512(w, mask), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), mask);
      for (int r = 0; r < R; ++r) {
        const int8_t* ar = ak + r * a.stride;
        dot[r] = _mm512_dpbusd_epi32(dot[r], lo, broadcast4(ar));
        dot[r] = _mm512_dpbusd_epi32(dot[r], hi, broadcast4(ar + 4));
      }
    }
    const __m512i zero = _mm512_loadu_si512(p.zero + b * 16);
    const __m512 scale = _mm512_loadu_ps(p.scale + b * 16);
    for (int r = 0; r < R; ++r) {
      const __m512i exact = _mm512_sub_epi32(dot[r], _mm512_mullo_epi32(zero, _mm512_set1_epi32(a.sum[r * a.kBlocks + b])));
      acc[r] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(exact), scale), _mm512_set1_ps(a.scale[r * a.kBlocks + b]),
                               acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) _mm512_storeu_ps(c + r * ldc, acc[r]);
}

}  // namespace

void int4_gemm_8x16__vnni_avx512(const Int4Panel& panel, int64_t bs, const Int8Rows& a, int64_t rows, float* c,
                                 int64_t ldc) {
  switch (rows) {
    case 1: return gemm<1>(panel, bs, a, c, ldc);
    case 2: return gemm<2>(panel, bs, a, c, ldc);
    case 3: return gemm<3>(panel, bs, a, c, ldc);
    case 4: return gemm<4>(panel, bs, a, c, ldc);
    case 5: return gemm<5>(panel, bs, a, c, ldc);
    case 6: return gemm<6>(panel, bs, a, c, ldc);
    case 7: return gemm<7>(panel, bs, a, c, ldc);
    default: return gemm<8>(panel, bs, a, c, ldc);
  }
}

void int8_quantize_rows__vnni_avx512(const float* a, int64_t K, int64_t bs, int8_t* q, float* scale, int32_t* sum) {
  const __m512 lo = _mm512_set1_ps(-127.f), hi = _mm512_set1_ps(127.f);
  const int64_t kBlocks = (K + bs - 1) / bs;
  for (int64_t b = 0; b < kBlocks; ++b) {
    const int64_t k0 = b * bs;
    if (k0 + bs > K) {  // the last block, partial
      nbitsQuantizeBlock(a + k0, K - k0, q + k0, scale + b, sum + b);
      std::memset(q + K, 0, static_cast<size_t>(k0 + bs - K));
      continue;
    }
    __m512 amax = _mm512_setzero_ps();
    // max(value, running): a NaN value leaves the running maximum, as in nbitsQuantizeBlock.
    for (int64_t k = k0; k < k0 + bs; k += 16) amax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(a + k)), amax);
    const float m = _mm512_reduce_max_ps(amax);
    const __m512 inverse = _mm512_set1_ps(m > 0.f ? 127.f / m : 0.f);
    __m512i total = _mm512_setzero_si512();
    for (int64_t k = k0; k < k0 + bs; k += 16) {
      const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(a + k), inverse), lo), hi);
      const __m512i i32 = _mm512_cvtps_epi32(v);
      total = _mm512_add_epi32(total, i32);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), _mm512_cvtepi32_epi8(i32));
    }
    scale[b] = m / 127.f;
    sum[b] = _mm512_reduce_add_epi32(total);
  }
}

}  // namespace osprey
