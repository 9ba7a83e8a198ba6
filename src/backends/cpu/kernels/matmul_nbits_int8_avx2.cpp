// MatMulNBits with int8 activations, AVX2 (matmul_nbits_int8.h has the layout): vpmaddubsw of the
// unsigned 4-bit codes against four signed bytes of A broadcast (a pair sum is at most 2 * 15 * 127),
// the two halves of a group of eight k added in int16 and widened by vpmaddwd (widening four
// groups at once measured no faster: the per-block scaling and broadcasts weigh as much). Panels
// of 8 columns, up to 4 rows of A per call.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/matmul_nbits_int8.h"
#include "ops/matmul_nbits.h"

namespace osprey {

namespace {

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

template <int R>
void gemm(const Int4Panel& p, int64_t bs, const Int8Rows& a, float* c, int64_t ldc) {
  const __m256i mask = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const int64_t groups = bs / 8;
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const uint8_t* q = p.q;
  for (int64_t b = 0; b < a.kBlocks; ++b) {
    __m256i dot[R];
    for (int r = 0; r < R; ++r) dot[r] = _mm256_setzero_si256();
    const int8_t* ak = a.q + b * bs;
    for (int64_t g = 0; g < groups; ++g, q += 32, ak += 8) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
      const __m256i lo = _mm256_and_si256(w, mask), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
      for (int r = 0; r < R; ++r) {
        const int8_t* ar = ak + r * a.stride;
        const __m256i pairs =
            _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(ar)), _mm256_maddubs_epi16(hi, broadcast4(ar + 4)));
        dot[r] = _mm256_add_epi32(dot[r], _mm256_madd_epi16(pairs, ones));
      }
    }
    const __m256i zero = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.zero + b * 8));
    const __m256 scale = _mm256_loadu_ps(p.scale + b * 8);
    for (int r = 0; r < R; ++r) {
      const __m256i exact = _mm256_sub_epi32(dot[r], _mm256_mullo_epi32(zero, _mm256_set1_epi32(a.sum[r * a.kBlocks + b])));
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(exact), scale), _mm256_set1_ps(a.scale[r * a.kBlocks + b]),
                               acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(c + r * ldc, acc[r]);
}

inline float horizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline int32_t horizontalSum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void int4_gemm_4x8__avx2(const Int4Panel& panel, int64_t bs, const Int8Rows& a, int64_t rows, float* c, int64_t ldc) {
  switch (rows) {
    case 1: return gemm<1>(panel, bs, a, c, ldc);
    case 2: return gemm<2>(panel, bs, a, c, ldc);
    case 3: return gemm<3>(panel, bs, a, c, ldc);
    default: return gemm<4>(panel, bs, a, c, ldc);
  }
}

void int8_quantize_rows__avx2(const float* a, int64_t K, int64_t bs, int8_t* q, float* scale, int32_t* sum) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 lo = _mm256_set1_ps(-127.f), hi = _mm256_set1_ps(127.f);
  const int64_t kBlocks = (K + bs - 1) / bs;
  for (int64_t b = 0; b < kBlocks; ++b) {
    const int64_t k0 = b * bs;
    if (k0 + bs > K) {  // the last block, partial
      nbitsQuantizeBlock(a + k0, K - k0, q + k0, scale + b, sum + b);
      std::memset(q + K, 0, static_cast<size_t>(k0 + bs - K));
      continue;
    }
    __m256 amax = _mm256_setzero_ps();
    // max(value, running): a NaN value leaves the running maximum, as in nbitsQuantizeBlock.
    for (int64_t k = k0; k < k0 + bs; k += 8) amax = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(a + k), absMask), amax);
    const float m = horizontalMax(amax);
    const __m256 inverse = _mm256_set1_ps(m > 0.f ? 127.f / m : 0.f);
    __m256i total = _mm256_setzero_si256();
    for (int64_t k = k0; k < k0 + bs; k += 8) {
      const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(a + k), inverse), lo), hi);
      const __m256i i32 = _mm256_cvtps_epi32(v);
      total = _mm256_add_epi32(total, i32);
      const __m256i i16 = _mm256_packs_epi32(i32, i32);  // lanes: v0..3 v0..3 | v4..7 v4..7
      const __m256i i8 = _mm256_packs_epi16(i16, i16);
      const int32_t low = _mm_cvtsi128_si32(_mm256_castsi256_si128(i8));
      const int32_t high = _mm_cvtsi128_si32(_mm256_extracti128_si256(i8, 1));
      std::memcpy(q + k, &low, 4);
      std::memcpy(q + k + 4, &high, 4);
    }
    scale[b] = m / 127.f;
    sum[b] = horizontalSum(total);
  }
}

}  // namespace osprey
