// exp on sixteen floats and a map of a vector function over an array, shared by the AVX-512 kernels. Include only from files compiled with
// -mavx512f. Internal linkage, as avx2_math.h's.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace osprey {
namespace {

// e^t + c for t already clamped to [-87.34, 89], as 2^(t log2e) = 2^n 2^f with n the nearest
// integer and f in [-0.5, 0.5]. f comes from two FMAs against log2e split in a high and a low
// part, so it carries the error of one rounding, not t's magnitude times an ulp of t log2e;
// vscalefps applies 2^n and a degree-6 fit of 2^f (relative error 1e-7 in float) does the rest.
// Past 88.72 the result overflows to infinity, as e^t does: 1 / (1 + e^t) is then 0, and
// x / (1 + e^t) NaN at x = -inf, as in the scalar forms. Against the AVX2 form (Cody-Waite in
// base e, 2^n built in the exponent bits) this is five instructions fewer per vector, and Swish
// over EfficientNet's activations is bound by them (11% faster on one thread).
inline __m512 expClampedPlus512(__m512 t, __m512 c) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_fmsub_ps(t, log2e, n);
  f = _mm512_fmadd_ps(t, _mm512_set1_ps(1.9259629911e-8f), f);  // log2e less its float
  __m512 p = _mm512_set1_ps(1.535391347715631e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3398813316598535e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618434123694897e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5503327399492264e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022647738456726e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931471824645996e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return _mm512_add_ps(_mm512_scalef_ps(p, n), c);
}


// y[i] = F(x[i]), sixteen at a time, the tail under a mask.
template <__m512 (*F)(__m512)>
inline void mapFloats512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, F(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, tail, F(_mm512_maskz_loadu_ps(tail, x + i)));
  }
}

}  // namespace
}  // namespace osprey

#endif
