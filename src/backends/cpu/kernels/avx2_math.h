// exp and 1 + exp(-x) on eight floats, and a map of a vector function over an array, shared by
// the AVX2+FMA kernels. Include only from files
// compiled with -mavx2 -mfma. Internal linkage: a copy compiled with other flags (an AVX-512
// file) must never be the one an AVX2 caller links to.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace osprey {
namespace {

// e^r for r = x - n ln 2 (|r| <= ln2 / 2), the subtraction in two parts, by a degree-6 polynomial.
inline __m256 expOfRemainder(__m256 x, __m256 n) {
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  return _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
}

// exp(x) = 2^n * e^r with n = round(x / ln 2) and |r| <= ln2 / 2.
inline __m256 exp256(__m256 input) {
  // Past the range of normal results: +inf above, 0 below (as expf rounds); NaN stays NaN, as
  // max/min return their second operand and the comparisons are false.
  const __m256 overflow = _mm256_cmp_ps(input, _mm256_set1_ps(88.72283f), _CMP_GT_OQ);
  const __m256 underflow = _mm256_cmp_ps(input, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ);
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(88.72283f), _mm256_max_ps(_mm256_set1_ps(-87.33654f), input));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 p = expOfRemainder(x, n);
  // 2^n, built in two halves so that n = 128 (x near the top of the range) does not overflow.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), _mm256_set1_epi32(127)), 23));
  const __m256 result = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  return _mm256_andnot_ps(underflow, _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()), overflow));
}

// 1 + exp(-x), the denominator of Sigmoid and Swish. -x is clamped to [-87.34, 88.72]: below, e^-x
// is below the smallest normal float and 1 + e^-x rounds to 1; at the top, n reaches 128 and 2^n
// is built as +inf, so the denominator overflows to inf where expf would (x = -inf then gives
// -inf / inf = NaN in Swish, as the scalar kernel). NaN stays NaN (max/min return it).
// n = round(-x / ln 2) comes from adding 1.5 * 2^23, which leaves n in the low bits of the sum: no
// round or convert instruction. Sigmoid and Swish then divide once: fewer instructions than a
// reciprocal estimate with a Newton step, which set the pace (this loop is instruction-bound).
inline __m256 onePlusExpNeg(__m256 x) {
  const __m256 t = _mm256_min_ps(_mm256_set1_ps(88.72283f),
                                 _mm256_max_ps(_mm256_set1_ps(-87.33654f), _mm256_sub_ps(_mm256_setzero_ps(), x)));
  const __m256 shifter = _mm256_set1_ps(12582912.f);
  const __m256 shifted = _mm256_fmadd_ps(t, _mm256_set1_ps(1.44269504088896341f), shifter);
  const __m256 p = expOfRemainder(t, _mm256_sub_ps(shifted, shifter));
  const __m256 scale = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(127)), 23));
  return _mm256_fmadd_ps(p, scale, _mm256_set1_ps(1.f));
}

// y = f(x) for n floats; the tail goes through a zero-padded vector, so it gets the same
// arithmetic as the rest.
template <class F>
inline void mapVectors(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = f(_mm256_loadu_ps(x + i)), b = f(_mm256_loadu_ps(x + i + 8));
    _mm256_storeu_ps(y + i, a);
    _mm256_storeu_ps(y + i + 8, b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = 0; j < n - i; ++j) tail[j] = x[i + j];
    _mm256_store_ps(tail, f(_mm256_load_ps(tail)));
    for (int64_t j = 0; j < n - i; ++j) y[i + j] = tail[j];
  }
}

}  // namespace
}  // namespace osprey

#endif
