// AVX2+FMA micro-kernels. This file alone is compiled with -mavx2 -mfma (see CMakeLists.txt);
// nothing here runs unless cpu_features.cpp found both on the CPU.
#include "backends/cpu/kernels/cpu_functions.h"

#include <cmath>
#include "backends/cpu/kernels/avx2_math.h"
#include "backends/cpu/kernels/depthwise_kernel.h"
#include "backends/cpu/kernels/erfc_fit.h"
#include "backends/cpu/kernels/winograd_kernel.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace osprey {

// 12 accumulators (6 rows x 2 vectors of 8), 2 registers of B and one broadcast of A.
void f32_gemm_6x16__avx2_fma(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                             int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (accumulate) {
    c00 = _mm256_loadu_ps(c), c01 = _mm256_loadu_ps(c + 8);
    c10 = _mm256_loadu_ps(c + ldc), c11 = _mm256_loadu_ps(c + ldc + 8);
    c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
    c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
    c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  }
  // The next block's output and residual lines, as in the AVX-512 kernel (see there).
  if (!accumulate)
    for (int r = 0; r < 6; ++r) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_ET0);
  if (stage && stage->residual)
    for (int r = 0; r < 6; ++r)
      _mm_prefetch(reinterpret_cast<const char*>(stage->residual + r * stage->residualStride + 16), _MM_HINT_T0);
  if (aRowStride == 1) {
    // Packed A: the six rows' values through one pointer at fixed offsets. Six pointers of their
    // own cost six adds a step, enough to hold the FMAs below full rate (66 -> 89 GFLOP/s at
    // K = 256 on one core, whose ymm FMA loop peaks at 95).
    for (int64_t k = 0; k < kc; ++k) {
      const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
      __m256 av = _mm256_broadcast_ss(a);
      c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);
      av = _mm256_broadcast_ss(a + 1);
      c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);
      av = _mm256_broadcast_ss(a + 2);
      c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);
      av = _mm256_broadcast_ss(a + 3);
      c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);
      av = _mm256_broadcast_ss(a + 4);
      c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);
      av = _mm256_broadcast_ss(a + 5);
      c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);
      a += aColStride;
      b += ldb;
    }
    kc = 0;
  }
  const float* a0 = a;
  const float* a1 = a + aRowStride;
  const float* a2 = a + 2 * aRowStride;
  const float* a3 = a + 3 * aRowStride;
  const float* a4 = a + 4 * aRowStride;
  const float* a5 = a + 5 * aRowStride;
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 av = _mm256_broadcast_ss(a0);
    c00 = _mm256_fmadd_ps(av, b0, c00), c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a1);
    c10 = _mm256_fmadd_ps(av, b0, c10), c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a2);
    c20 = _mm256_fmadd_ps(av, b0, c20), c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a3);
    c30 = _mm256_fmadd_ps(av, b0, c30), c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a4);
    c40 = _mm256_fmadd_ps(av, b0, c40), c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a5);
    c50 = _mm256_fmadd_ps(av, b0, c50), c51 = _mm256_fmadd_ps(av, b1, c51);
    a0 += aColStride, a1 += aColStride, a2 += aColStride, a3 += aColStride, a4 += aColStride, a5 += aColStride;
    b += ldb;
  }
  if (stage) {
    const __m256 lo = _mm256_set1_ps(stage->lo), hi = _mm256_set1_ps(stage->hi);
    auto finish = [&](__m256& v0, __m256& v1, int row) {
      if (stage->rowBias) {
        const __m256 bias = _mm256_broadcast_ss(stage->rowBias + row);
        v0 = _mm256_add_ps(v0, bias), v1 = _mm256_add_ps(v1, bias);
      }
      if (stage->residual) {
        const float* z = stage->residual + row * stage->residualStride;
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(z)), v1 = _mm256_add_ps(v1, _mm256_loadu_ps(z + 8));
      }
      // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
      v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0)), v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
    };
    finish(c00, c01, 0), finish(c10, c11, 1), finish(c20, c21, 2);
    finish(c30, c31, 3), finish(c40, c41, 4), finish(c50, c51, 5);
  }
  _mm256_storeu_ps(c, c00), _mm256_storeu_ps(c + 8, c01);
  _mm256_storeu_ps(c + ldc, c10), _mm256_storeu_ps(c + ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

void f32_gemv_panel__avx2_fma(int64_t K, const float* a, int64_t aStride, const float* panel, int64_t nr,
                              float* out) {
  for (int64_t j = 0; j < nr; j += 32) {
    const int64_t width = nr - j < 32 ? nr - j : 32;  // 8, 16, 24 or 32 columns
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const float* p = panel + j;
    if (width == 32) {
      for (int64_t k = 0; k < K; ++k, p += nr) {
        const __m256 av = _mm256_broadcast_ss(a + k * aStride);
        acc[0] = _mm256_fmadd_ps(av, _mm256_loadu_ps(p), acc[0]);
        acc[1] = _mm256_fmadd_ps(av, _mm256_loadu_ps(p + 8), acc[1]);
        acc[2] = _mm256_fmadd_ps(av, _mm256_loadu_ps(p + 16), acc[2]);
        acc[3] = _mm256_fmadd_ps(av, _mm256_loadu_ps(p + 24), acc[3]);
      }
    } else {
      for (int64_t k = 0; k < K; ++k, p += nr) {
        const __m256 av = _mm256_broadcast_ss(a + k * aStride);
        for (int64_t v = 0; v < width / 8; ++v) acc[v] = _mm256_fmadd_ps(av, _mm256_loadu_ps(p + 8 * v), acc[v]);
      }
    }
    for (int64_t v = 0; v < width / 8; ++v) _mm256_storeu_ps(out + j + 8 * v, acc[v]);
  }
}

namespace {

inline __m256 sigmoid256(__m256 x) { return _mm256_div_ps(_mm256_set1_ps(1.f), onePlusExpNeg(x)); }

// erf(x) = sign(x) * (1 - erfc(|x|)), erfc by the fit of erfc_fit.h.
inline __m256 erf256(__m256 x) {
  const __m256 signMask = _mm256_set1_ps(-0.f);
  const __m256 sign = _mm256_and_ps(x, signMask);
  const __m256 z = _mm256_andnot_ps(signMask, x);
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z, one));
  __m256 p = _mm256_set1_ps(kErfcFit[0]);
  for (int i = 1; i < kErfcFitTerms; ++i) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kErfcFit[i]));
  const __m256 erfc = _mm256_mul_ps(t, exp256(_mm256_sub_ps(p, _mm256_mul_ps(z, z))));
  return _mm256_or_ps(_mm256_sub_ps(one, erfc), sign);
}

template <__m256 (*F)(__m256)>
inline void mapFloats(const float* x, float* y, int64_t n) {
  mapVectors(x, y, n, F);
}

// x * 0.5 * (1 + erf(x / sqrt2)): the erf form of GELU.
inline __m256 gelu256(__m256 x) {
  const __m256 e = erf256(_mm256_mul_ps(x, _mm256_set1_ps(0.7071067811865476f)));
  return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), _mm256_add_ps(_mm256_set1_ps(1.f), e));
}

// x * sigmoid(x): SiLU, Swish with alpha 1.
inline __m256 swish256(__m256 x) { return _mm256_div_ps(x, onePlusExpNeg(x)); }

float horizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

void f32_gelu__avx2_fma(const float* x, float* y, int64_t n) { mapFloats<gelu256>(x, y, n); }
void f32_swish__avx2_fma(const float* x, float* y, int64_t n) { mapFloats<swish256>(x, y, n); }

void f32_softmax_row__avx2_fma(const float* x, float* y, int64_t n, float scale) {
  // Lanes past n take -inf: no part in the maximum, exp gives them 0 for the sum.
  const int64_t whole = n / 8 * 8, rest = n - whole;
  const __m256i tailMask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rest)),
                                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256 minusInf = _mm256_set1_ps(-__builtin_inff()), scaleV = _mm256_set1_ps(scale);
  auto tail = [&](const float* p) {
    return _mm256_blendv_ps(minusInf, _mm256_mul_ps(_mm256_maskload_ps(p, tailMask), scaleV),
                            _mm256_castsi256_ps(tailMask));
  };
  __m256 m0 = minusInf, m1 = minusInf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(m0, _mm256_mul_ps(_mm256_loadu_ps(x + i), scaleV));
    m1 = _mm256_max_ps(m1, _mm256_mul_ps(_mm256_loadu_ps(x + i + 8), scaleV));
  }
  if (i < whole) m0 = _mm256_max_ps(m0, _mm256_mul_ps(_mm256_loadu_ps(x + i), scaleV));
  if (rest) m1 = _mm256_max_ps(m1, tail(x + whole));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(_mm256_max_ps(m0, m1)), _mm256_extractf128_ps(_mm256_max_ps(m0, m1), 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  const __m256 shift = _mm256_set1_ps(_mm_cvtss_f32(m));
  __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m256 e0 = exp256(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), scaleV, shift));
    const __m256 e1 = exp256(_mm256_fmsub_ps(_mm256_loadu_ps(x + i + 8), scaleV, shift));
    _mm256_storeu_ps(y + i, e0), _mm256_storeu_ps(y + i + 8, e1);
    sum0 = _mm256_add_ps(sum0, e0), sum1 = _mm256_add_ps(sum1, e1);
  }
  if (i < whole) {
    const __m256 e = exp256(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), scaleV, shift));
    _mm256_storeu_ps(y + i, e);
    sum0 = _mm256_add_ps(sum0, e);
  }
  if (rest) {
    const __m256 e = exp256(_mm256_sub_ps(tail(x + whole), shift));
    _mm256_maskstore_ps(y + whole, tailMask, e);
    sum1 = _mm256_add_ps(sum1, e);
  }
  const __m256 inv = _mm256_set1_ps(1.f / horizontalSum(_mm256_add_ps(sum0, sum1)));
  for (i = 0; i < whole; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
  if (rest) _mm256_maskstore_ps(y + whole, tailMask, _mm256_mul_ps(_mm256_maskload_ps(y + whole, tailMask), inv));
}

void f32_layernorm_row__avx2_fma(const float* x, int64_t n, float epsilon, const float* gamma, const float* beta,
                                 float* y) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(x + i)), acc1 = _mm256_add_ps(acc1, _mm256_loadu_ps(x + i + 8));
  float sum = horizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  const __m256 meanV = _mm256_set1_ps(mean);
  acc0 = acc1 = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), meanV), d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), meanV);
    acc0 = _mm256_fmadd_ps(d0, d0, acc0), acc1 = _mm256_fmadd_ps(d1, d1, acc1);
  }
  float squares = horizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) squares += (x[i] - mean) * (x[i] - mean);
  const float invStd = 1.f / std::sqrt(squares / static_cast<float>(n) + epsilon);
  const __m256 invV = _mm256_set1_ps(invStd);
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), meanV), invV), _mm256_loadu_ps(gamma + i));
    if (beta) v = _mm256_add_ps(v, _mm256_loadu_ps(beta + i));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; ++i) y[i] = (x[i] - mean) * invStd * gamma[i] + (beta ? beta[i] : 0.f);
}

void f32_sigmoid__avx2_fma(const float* x, float* y, int64_t n) { mapFloats<sigmoid256>(x, y, n); }
void f32_erf__avx2_fma(const float* x, float* y, int64_t n) { mapFloats<erf256>(x, y, n); }
void f32_exp__avx2_fma(const float* x, float* y, int64_t n) { mapFloats<exp256>(x, y, n); }

namespace {

// Even-indexed floats of r[0..15] (evens) or of r[1..16] (odds), in order.
inline __m256 evens(const float* r) {
  const __m256 lo = _mm256_loadu_ps(r), hi = _mm256_loadu_ps(r + 8);
  const __m256 mixed = _mm256_shuffle_ps(lo, hi, 0x88);  // lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), 0xD8));
}

// 3x3, stride 2, dilation 1: eight outputs per step from de-interleaved input rows.
void dw3x3s2Interior(const float* r0, const float* r1, const float* r2, const float* w, float bias, int64_t lo,
                     int64_t hi, int64_t rowLength, float* row) {
  const float* rows[3] = {r0, r1, r2};
  __m256 wv[9];
  for (int t = 0; t < 9; ++t) wv[t] = _mm256_broadcast_ss(w + t);
  int64_t ow = lo;
  for (; ow + 8 <= hi && 2 * ow + 18 <= rowLength; ow += 8) {  // reads r[2ow .. 2ow+17]
    __m256 acc = _mm256_set1_ps(bias);
    for (int kh = 0; kh < 3; ++kh) {
      const float* r = rows[kh] + 2 * ow;
      acc = _mm256_fmadd_ps(wv[kh * 3], evens(r), acc);
      acc = _mm256_fmadd_ps(wv[kh * 3 + 1], evens(r + 1), acc);
      acc = _mm256_fmadd_ps(wv[kh * 3 + 2], evens(r + 2), acc);
    }
    _mm256_storeu_ps(row + ow, acc);
  }
  for (; ow < hi; ++ow) {
    const int64_t i = 2 * ow;
    float acc = bias;
    for (int kh = 0; kh < 3; ++kh)
      acc += w[kh * 3] * rows[kh][i] + w[kh * 3 + 1] * rows[kh][i + 1] + w[kh * 3 + 2] * rows[kh][i + 2];
    row[ow] = acc;
  }
}

}  // namespace

void f32_maxpool3x3s2__avx2_fma(const float* r0, const float* r1, const float* r2, int64_t lo, int64_t hi,
                                int64_t rowLength, float* out) {
  const float* rows[3] = {r0, r1, r2};
  int64_t ow = lo;
  for (; ow + 8 <= hi && 2 * ow + 18 <= rowLength; ow += 8) {  // reads r[2ow .. 2ow+17]
    // max_ps(v, acc) is v > acc ? v : acc, the reference's rule, starting from the first tap.
    __m256 acc = evens(r0 + 2 * ow);
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = kh == 0 ? 1 : 0; kw < 3; ++kw) acc = _mm256_max_ps(evens(rows[kh] + 2 * ow + kw), acc);
    _mm256_storeu_ps(out + ow, acc);
  }
  f32_maxpool3x3s2__scalar(r0, r1, r2, ow, hi, rowLength, out);
}

namespace {

// Stride-1 5x5 interior columns [lo, hi): eight outputs per step, the 25 taps in one register.
void dw5x5s1Interior(const float* const* r, const float* w, float bias, int64_t lo, int64_t hi, float* row) {
  int64_t ow = lo;
  for (; ow + 8 <= hi; ow += 8) {
    __m256 acc = _mm256_set1_ps(bias);
    for (int kh = 0; kh < 5; ++kh) {
      const float* src = r[kh] + ow;
      for (int kw = 0; kw < 5; ++kw) acc = _mm256_fmadd_ps(_mm256_set1_ps(w[kh * 5 + kw]), _mm256_loadu_ps(src + kw), acc);
    }
    _mm256_storeu_ps(row + ow, acc);
  }
  if (ow < hi) dwSquareInterior<5, 1>(r, w, bias, ow, hi, row);
}

}  // namespace

void f32_dwconv2d__avx2_fma(const DepthwiseArgs& args, const float* x, const float* w, float bias, float* y) {
  if (f32_dwconv2d_padded__avx2_fma(args, x, w, bias, y)) return;
  depthwisePlaneWith(args, x, w, bias, y, dw3x3s2Interior, dw5x5s1Interior);
}

void f32_winograd_input_2x3__avx2_fma(const float* const* rows, int64_t tiles, float* v, int64_t posStride) {
  winogradInputRow2x3(rows, tiles, v, posStride);
}

void f32_winograd_output_2x3__avx2_fma(const float* m, int64_t posStride, int64_t tiles, float* y0, float* y1,
                                       const WinogradOutputStage& stage) {
  winogradOutputRow2x3(m, posStride, tiles, y0, y1, stage);
}

void f32_winograd_output_channels_2x3__avx2_fma(const float* m, int64_t posStride, int64_t channels, float* y00,
                                                float* y01, float* y10, float* y11) {
  winogradOutputChannels2x3(m, posStride, channels, y00, y01, y10, y11);
}

}  // namespace osprey

#endif
