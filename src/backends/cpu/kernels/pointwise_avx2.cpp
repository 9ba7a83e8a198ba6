// The pointwise kernel and Tanh on eight floats at a time (AVX2+FMA; the AVX-512 table uses them
// too: these loops are bound by memory or by the division, not by the vector width).
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include "backends/cpu/kernels/avx2_math.h"
#include "backends/cpu/kernels/tanh_fit.h"

namespace osprey {

namespace {

inline __m256 set1(float v) { return _mm256_set1_ps(v); }

// tanh_fit.h's rational fit; tiny |x| and NaN return x.
inline __m256 tanh256(__m256 x) {
  const __m256 c = _mm256_min_ps(_mm256_max_ps(x, set1(-kTanhClamp)), set1(kTanhClamp));
  const __m256 x2 = _mm256_mul_ps(c, c);
  __m256 p = set1(kTanhP[0]);
  for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, x2, set1(kTanhP[i]));
  __m256 q = set1(kTanhQ[0]);
  for (int i = 1; i < 4; ++i) q = _mm256_fmadd_ps(q, x2, set1(kTanhQ[i]));
  const __m256 r = _mm256_div_ps(_mm256_mul_ps(p, c), q);
  const __m256 abs = _mm256_andnot_ps(set1(-0.f), x);
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(abs, set1(kTanhTiny), _CMP_NGE_UQ));
}

// exp(x) - 1 without the cancellation near 0: a Taylor polynomial for |x| < 0.5 (error under
// 3e-7 relative), exp(x) - 1 outside.
inline __m256 expm1_256(__m256 x) {
  __m256 s = set1(1.f / 5040.f);
  s = _mm256_fmadd_ps(s, x, set1(1.f / 720.f));
  s = _mm256_fmadd_ps(s, x, set1(1.f / 120.f));
  s = _mm256_fmadd_ps(s, x, set1(1.f / 24.f));
  s = _mm256_fmadd_ps(s, x, set1(1.f / 6.f));
  s = _mm256_fmadd_ps(s, x, set1(0.5f));
  s = _mm256_fmadd_ps(_mm256_mul_ps(s, x), x, x);
  const __m256 e = _mm256_sub_ps(exp256(x), set1(1.f));
  const __m256 small = _mm256_cmp_ps(_mm256_andnot_ps(set1(-0.f), x), set1(0.5f), _CMP_LT_OQ);
  return _mm256_blendv_ps(e, s, small);
}

// log(1 + t) for t in [0, 1] as 2 atanh(t / (2 + t)): s <= 1/3, seven odd terms of the series
// leave a relative error under 2e-8, and small t keeps its precision (no 1 + t rounding).
inline __m256 log1pUnit256(__m256 t) {
  const __m256 s = _mm256_div_ps(t, _mm256_add_ps(t, set1(2.f)));
  const __m256 s2 = _mm256_mul_ps(s, s);
  __m256 p = set1(2.f / 13.f);
  p = _mm256_fmadd_ps(p, s2, set1(2.f / 11.f));
  p = _mm256_fmadd_ps(p, s2, set1(2.f / 9.f));
  p = _mm256_fmadd_ps(p, s2, set1(2.f / 7.f));
  p = _mm256_fmadd_ps(p, s2, set1(2.f / 5.f));
  p = _mm256_fmadd_ps(p, s2, set1(2.f / 3.f));
  p = _mm256_fmadd_ps(p, s2, set1(2.f));
  return _mm256_mul_ps(p, s);
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
inline __m256 softplus256(__m256 x) {
  const __m256 t = exp256(_mm256_or_ps(x, set1(-0.f)));
  return _mm256_add_ps(_mm256_max_ps(x, _mm256_setzero_ps()), log1pUnit256(t));
}

// x tanh(softplus(x)) = x n / (n + 2) with n = e^x (e^x + 2); past x = 20 the ratio is 1 in float.
inline __m256 mish256(__m256 x) {
  const __m256 e = exp256(_mm256_min_ps(x, set1(20.f)));
  const __m256 n = _mm256_mul_ps(e, _mm256_add_ps(e, set1(2.f)));
  return _mm256_mul_ps(x, _mm256_div_ps(n, _mm256_add_ps(n, set1(2.f))));
}

// clamp(a x + b, 0, 1); NaN gives 1, as fmax(0, fmin(1, NaN)) in the reference.
inline __m256 hardSigmoid256(__m256 x, __m256 a, __m256 b) {
  const __m256 t = _mm256_min_ps(_mm256_fmadd_ps(a, x, b), set1(1.f));
  return _mm256_max_ps(t, _mm256_setzero_ps());
}

}  // namespace

void f32_tanh__avx2_fma(const float* x, float* y, int64_t n) { mapVectors(x, y, n, tanh256); }

void f32_pointwise__avx2_fma(const Pointwise& p, const float* x, float* y, int64_t n) {
  const __m256 a = set1(p.a), b = set1(p.b), zero = _mm256_setzero_ps(), sign = set1(-0.f);
  // maxps / minps return their second operand when either is NaN: the argument order below
  // keeps NaN where the reference keeps it.
  switch (p.op) {
    case PointwiseOp::Relu: return mapVectors(x, y, n, [&](__m256 v) { return _mm256_max_ps(zero, v); });
    case PointwiseOp::Clip:
      return mapVectors(x, y, n, [&](__m256 v) { return _mm256_min_ps(b, _mm256_max_ps(a, v)); });
    case PointwiseOp::LeakyRelu:
      return mapVectors(x, y, n, [&](__m256 v) {
        return _mm256_blendv_ps(v, _mm256_mul_ps(a, v), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
      });
    case PointwiseOp::HardSigmoid: return mapVectors(x, y, n, [&](__m256 v) { return hardSigmoid256(v, a, b); });
    case PointwiseOp::HardSwish: {
      const __m256 sixth = set1(1.f / 6.f), half = set1(0.5f);
      return mapVectors(x, y, n, [&](__m256 v) { return _mm256_mul_ps(v, hardSigmoid256(v, sixth, half)); });
    }
    case PointwiseOp::Abs: return mapVectors(x, y, n, [&](__m256 v) { return _mm256_andnot_ps(sign, v); });
    case PointwiseOp::Neg: return mapVectors(x, y, n, [&](__m256 v) { return _mm256_xor_ps(sign, v); });
    case PointwiseOp::Sqrt: return mapVectors(x, y, n, [](__m256 v) { return _mm256_sqrt_ps(v); });
    case PointwiseOp::Reciprocal:
      return mapVectors(x, y, n, [](__m256 v) { return _mm256_div_ps(set1(1.f), v); });
    case PointwiseOp::Floor: return mapVectors(x, y, n, [](__m256 v) { return _mm256_floor_ps(v); });
    case PointwiseOp::Ceil: return mapVectors(x, y, n, [](__m256 v) { return _mm256_ceil_ps(v); });
    case PointwiseOp::Round:
      return mapVectors(x, y, n, [](__m256 v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); });
    case PointwiseOp::Exp: return mapVectors(x, y, n, exp256);
    case PointwiseOp::Tanh: return mapVectors(x, y, n, tanh256);
    case PointwiseOp::Elu:
      return mapVectors(x, y, n, [&](__m256 v) {
        const __m256 neg = _mm256_mul_ps(a, expm1_256(_mm256_min_ps(v, zero)));
        return _mm256_blendv_ps(v, neg, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
      });
    case PointwiseOp::Selu: {
      const __m256 gammaAlpha = set1(p.a * p.b);
      return mapVectors(x, y, n, [&](__m256 v) {
        const __m256 neg = _mm256_mul_ps(gammaAlpha, expm1_256(_mm256_min_ps(zero, v)));
        return _mm256_blendv_ps(neg, _mm256_mul_ps(b, v), _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
      });
    }
    case PointwiseOp::Softplus: return mapVectors(x, y, n, softplus256);
    case PointwiseOp::Mish: return mapVectors(x, y, n, mish256);
  }
}

}  // namespace osprey

#endif
