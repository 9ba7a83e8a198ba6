// QuantizeLinear / DequantizeLinear rows (cpu_functions.h), AVX2, and their scalar forms.
#include <immintrin.h>

#include <cmath>

#include "backends/cpu/kernels/cpu_functions.h"

namespace osprey {

void quantize_row__avx2(const float* x, int64_t n, float scale, int32_t zp, bool signedOut, uint8_t* y) {
  const __m256 scaleV = _mm256_set1_ps(scale), zero = _mm256_set1_ps(static_cast<float>(zp));
  const __m256 lo = _mm256_set1_ps(signedOut ? -128.f : 0.f), hi = _mm256_set1_ps(signedOut ? 127.f : 255.f);
  auto quantized = [&](const float* p) {
    __m256 r = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(p), scaleV), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_add_ps(r, zero);
    r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));  // NaN to 0
    return _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i words = _mm256_packs_epi32(quantized(x + i), quantized(x + i + 8));
    words = _mm256_permute4x64_epi64(words, 0xD8);
    const __m128i l = _mm256_castsi256_si128(words), h = _mm256_extracti128_si256(words, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), signedOut ? _mm_packs_epi16(l, h) : _mm_packus_epi16(l, h));
  }
  quantize_row__scalar(x + i, n - i, scale, zp, signedOut, y + i);
}

void dequantize_row__avx2(const uint8_t* x, int64_t n, bool signedIn, int32_t zp, float scale, float* y) {
  const __m256i zero = _mm256_set1_epi32(zp);
  const __m256 scaleV = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i));
    const __m256i wide = signedIn ? _mm256_cvtepi8_epi32(raw) : _mm256_cvtepu8_epi32(raw);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(wide, zero)), scaleV));
  }
  dequantize_row__scalar(x + i, n - i, signedIn, zp, scale, y + i);
}

}  // namespace osprey
