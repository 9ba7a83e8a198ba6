// Exp and Tanh on sixteen floats at a time for the AVX-512 table; the other pointwise ops run
// the AVX2 loops (bound by memory, or by one cheap instruction per vector). Where a core
// executes 512-bit vectors at full width these two are bound by their arithmetic: Exp over
// 400 K floats took 0.14 ms in the AVX2 form on a Zen 5 core.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include "backends/cpu/kernels/avx512_math.h"
#include "backends/cpu/kernels/tanh_fit.h"

namespace osprey {

namespace {

inline __m512 set1(float v) { return _mm512_set1_ps(v); }

// e^x: +inf past 88.72 (vscalefps overflows), 0 below -87.34 (as the AVX2 form; expf would give
// a subnormal there), NaN stays NaN (max/min return their second operand, the input).
inline __m512 exp512(__m512 x) {
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, set1(-87.33654f), _CMP_LT_OQ);
  const __m512 t = _mm512_min_ps(set1(89.f), _mm512_max_ps(set1(-87.33654f), x));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~underflow), expClampedPlus512(t, _mm512_setzero_ps()));
}

// tanh_fit.h's rational fit, as the AVX2 form.
inline __m512 tanh512(__m512 x) {
  const __m512 c = _mm512_min_ps(_mm512_max_ps(x, set1(-kTanhClamp)), set1(kTanhClamp));
  const __m512 x2 = _mm512_mul_ps(c, c);
  __m512 p = set1(kTanhP[0]);
  for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, x2, set1(kTanhP[i]));
  __m512 q = set1(kTanhQ[0]);
  for (int i = 1; i < 4; ++i) q = _mm512_fmadd_ps(q, x2, set1(kTanhQ[i]));
  const __m512 r = _mm512_div_ps(_mm512_mul_ps(p, c), q);
  // Tiny |x| and NaN return x (the comparison is false for NaN: not-greater-or-equal is true).
  const __mmask16 keep = _mm512_cmp_ps_mask(_mm512_abs_ps(x), set1(kTanhTiny), _CMP_NGE_UQ);
  return _mm512_mask_mov_ps(r, keep, x);
}

}  // namespace

void f32_tanh__avx512f(const float* x, float* y, int64_t n) { mapFloats512<tanh512>(x, y, n); }

void f32_pointwise__avx512f(const Pointwise& p, const float* x, float* y, int64_t n) {
  switch (p.op) {
    case PointwiseOp::Exp: return mapFloats512<exp512>(x, y, n);
    case PointwiseOp::Tanh: return mapFloats512<tanh512>(x, y, n);
    default: return f32_pointwise__avx2_fma(p, x, y, n);
  }
}

}  // namespace osprey

#endif
