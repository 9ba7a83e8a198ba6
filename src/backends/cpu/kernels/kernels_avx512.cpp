// AVX-512F micro-kernels. This file alone is compiled with -mavx512f -mfma (see CMakeLists.txt);
// nothing here runs unless cpu_features.cpp found AVX-512F on the CPU.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "backends/cpu/kernels/avx512_lanes.h"
#include "backends/cpu/kernels/avx512_math.h"
#include "backends/cpu/kernels/gemm_avx512.h"

#include <algorithm>
#include <limits>

namespace osprey {

// 16 accumulators (8 rows x 2 vectors of 16), 2 registers of B, one broadcast of A: each step
// issues 16 FMAs against 10 loads, so the FMA ports, not the loads, set the pace. Every row
// loop is unrolled so that the accumulator arrays live in registers: otherwise GCC zeroes them
// on the stack (rep stos) and spills them, which costs more than a short-K block itself.
namespace {

// kRows x 32: 8 for whole blocks, fewer for an unpacked A cut into blocks of equal height (49
// output positions as 7 blocks of 7, instead of 7 blocks of 8 with 7 rows of padding).
template <int kRows>
void gemmRowsX32(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b, int64_t ldb,
                 float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  __m512 acc0[kRows], acc1[kRows];
  // A fresh sum starts from the bias: with K = 16-64 the adds at the end cost a tenth of the FMAs.
  const float* initBias = !accumulate && stage ? stage->rowBias : nullptr;
  #pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    if (accumulate) {
      acc0[r] = _mm512_loadu_ps(c + r * ldc);
      acc1[r] = _mm512_loadu_ps(c + r * ldc + 16);
    } else {
      acc0[r] = acc1[r] = initBias ? _mm512_set1_ps(initBias[r]) : _mm512_setzero_ps();
    }
  }
  // On large maps the output and the residual miss in cache: a demand miss at the end of a
  // short-K block stalls its stores. The caller's next block usually lies to the right (the
  // same rows, 32 columns on): fetch its lines now, while this block's sums run (EfficientNet's
  // 16 -> 96 1x1 on 112x112 at one thread: 0.58 -> 0.50 ms). Lines past the end are harmless.
  if (!accumulate) {
    #pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 32), _MM_HINT_ET0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 48), _MM_HINT_ET0);
    }
  }
  if (stage && stage->residual) {
    #pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(stage->residual + r * stage->residualStride + 32), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(stage->residual + r * stage->residualStride + 48), _MM_HINT_T0);
    }
  }
  if (ldb == 32)  // packed B (an in-place B of exactly 32 columns is one stream as well)
    gemmSumsX32<kRows, BStream::kPackedB>(kc, a, aRowStride, aColStride, b, ldb, acc0, acc1);
  else
    gemmSumsX32<kRows>(kc, a, aRowStride, aColStride, b, ldb, acc0, acc1);
  if (stage) {
    if (stage->rowBias && accumulate) {
      #pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m512 bias = _mm512_set1_ps(stage->rowBias[r]);
        acc0[r] = _mm512_add_ps(acc0[r], bias), acc1[r] = _mm512_add_ps(acc1[r], bias);
      }
    }
    if (stage->residual) {
      #pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const float* z = stage->residual + r * stage->residualStride;
        acc0[r] = _mm512_add_ps(acc0[r], _mm512_loadu_ps(z)), acc1[r] = _mm512_add_ps(acc1[r], _mm512_loadu_ps(z + 16));
      }
    }
    // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
    // An infinite bound clamps nothing and is skipped (no activation; Relu's upper bound).
    if (stage->lo != -std::numeric_limits<float>::infinity()) {
      const __m512 lo = _mm512_set1_ps(stage->lo);
      #pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc0[r] = _mm512_max_ps(lo, acc0[r]), acc1[r] = _mm512_max_ps(lo, acc1[r]);
    }
    if (stage->hi != std::numeric_limits<float>::infinity()) {
      const __m512 hi = _mm512_set1_ps(stage->hi);
      #pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) acc0[r] = _mm512_min_ps(hi, acc0[r]), acc1[r] = _mm512_min_ps(hi, acc1[r]);
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc0[r]);
    _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
  }
}

}  // namespace

void f32_gemm_8x32__avx512f(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                            int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  gemmRowsX32<8>(kc, a, aRowStride, aColStride, b, ldb, c, ldc, accumulate, stage);
}

const GemmMicroKernel kAvx512TailKernels[8] = {nullptr,           gemmRowsX32<1>, gemmRowsX32<2>, gemmRowsX32<3>,
                                               gemmRowsX32<4>, gemmRowsX32<5>, gemmRowsX32<6>, gemmRowsX32<7>};

namespace {

inline __m512 onePlusExpNeg512(__m512 x) {
  const __m512 t = _mm512_min_ps(_mm512_set1_ps(89.f),
                                 _mm512_max_ps(_mm512_set1_ps(-87.33654f), _mm512_sub_ps(_mm512_setzero_ps(), x)));
  return expClampedPlus512(t, _mm512_set1_ps(1.f));
}

// GELU's erf form, x * Phi(x) with Phi the normal CDF, as 0.5 + u P(u^2) / Q(u^2) for u = x
// clamped to [-5.5, 5.5]: a rational fit of degree 5 over 5 in u^2, made for this kernel by
// iterated weighted least squares (absolute error 7e-9 in double, 1.7e-7 evaluated in float).
// Below -5.5 Phi is under 2e-8 and taken as 0 (x * 0: -0, or NaN at -inf, as the reference);
// above 5.5 it rounds to 1. Against the erfc fit times an exponential (32 instructions, a
// division among them) this is 21, the division a reciprocal estimate refined once (about 1 ulp).
constexpr float kGeluClamp = 5.5f;
constexpr float kGeluP[6] = {3.989422321e-01f, 3.385074064e-02f, 4.677107558e-03f,
                             1.688014163e-04f, 6.351518550e-06f, 2.274821931e-08f};
constexpr float kGeluQ[6] = {1.f, 2.515171468e-01f, 2.864468843e-02f, 1.884309459e-03f, 7.363744226e-05f,
                             1.197425718e-06f};

inline __m512 gelu512(__m512 x) {
  const __m512 limit = _mm512_set1_ps(kGeluClamp);
  // min/max return their second operand for NaN: u is then the clamp, and x * Phi stays NaN.
  const __m512 u = _mm512_max_ps(_mm512_min_ps(x, limit), _mm512_set1_ps(-kGeluClamp));
  const __m512 t = _mm512_mul_ps(u, u);
  __m512 p = _mm512_set1_ps(kGeluP[5]), q = _mm512_set1_ps(kGeluQ[5]);
  for (int i = 4; i >= 0; --i) {
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kGeluP[i]));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(kGeluQ[i]));
  }
  __m512 r = _mm512_rcp14_ps(q);  // q >= 1: no overflow or zero
  r = _mm512_fmadd_ps(r, _mm512_fnmadd_ps(q, r, _mm512_set1_ps(1.f)), r);
  const __m512 phi = _mm512_fmadd_ps(_mm512_mul_ps(u, p), r, _mm512_set1_ps(0.5f));
  const __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-kGeluClamp), _CMP_LT_OQ);
  return _mm512_mul_ps(x, _mm512_mask_mov_ps(phi, below, _mm512_setzero_ps()));
}

inline __m512 sigmoid512(__m512 x) { return _mm512_div_ps(_mm512_set1_ps(1.f), onePlusExpNeg512(x)); }
inline __m512 swish512(__m512 x) { return _mm512_div_ps(x, onePlusExpNeg512(x)); }

}  // namespace

// Sixteen outputs per step from the column maxima of the three rows: the vertical max comes
// first (each input vector loaded once), then the three horizontal taps out of two-source
// permutes. The column maxima at 2 * ow + 32 start the next step, and their first lane is the
// last output's third tap. Four permutes and six loads per step where taking each row's taps
// separately cost nine and twelve. NaN as in the reference (acc = first tap, then
// v > acc ? v : acc): the maxima ignore NaN (each chain starts from -inf, and max_ps(v, acc)
// keeps acc when v is NaN), and an output whose first tap (the top row's even column) is NaN
// takes that NaN. The last step is masked: a scalar tail of up to 15 outputs cost as much as
// the vector steps on a 55-wide row.
void f32_maxpool3x3s2__avx512f(const float* r0, const float* r1, const float* r2, int64_t lo, int64_t hi,
                               int64_t rowLength, float* out) {
  if (lo >= hi) return;
  const __m512i evenIdx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i oddIdx = _mm512_add_epi32(evenIdx, _mm512_set1_epi32(1));
  const __m512i nextIdx = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
  const __m512 minusInf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  // Loads stop at rowLength; lanes past it only feed outputs past hi, which are not stored.
  auto columnMax = [&](int64_t at, __m512* top) {
    const __mmask16 m = firstLanes(rowLength - at);
    *top = _mm512_maskz_loadu_ps(m, r0 + at);
    const __m512 a = _mm512_max_ps(*top, minusInf), b = _mm512_max_ps(_mm512_maskz_loadu_ps(m, r1 + at), a);
    return _mm512_max_ps(_mm512_maskz_loadu_ps(m, r2 + at), b);
  };
  __m512 headTop;
  __m512 head = columnMax(2 * lo, &headTop);
  for (int64_t ow = lo; ow < hi; ow += 16) {
    __m512 midTop, nextTop;
    const __m512 mid = columnMax(2 * ow + 16, &midTop), next = columnMax(2 * ow + 32, &nextTop);
    const __m512 tap0 = _mm512_permutex2var_ps(head, evenIdx, mid), tap1 = _mm512_permutex2var_ps(head, oddIdx, mid);
    const __m512 tap2 = _mm512_permutex2var_ps(tap0, nextIdx, next);
    const __m512 first = _mm512_permutex2var_ps(headTop, evenIdx, midTop);
    const __m512 result = _mm512_max_ps(tap2, _mm512_max_ps(tap1, tap0));
    _mm512_mask_storeu_ps(out + ow, firstLanes(hi - ow),
                          _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(first, first, _CMP_UNORD_Q), first));
    head = next, headTop = nextTop;
  }
}

namespace {

// Lanes j of 16 with 0 <= first + j < width.
inline __mmask16 lanesInside(int64_t first, int64_t width) {
  return static_cast<__mmask16>(firstLanes(width - first) & ~firstLanes(-first));
}

// Sixteen output channels by sixteen columns per step: each tap's input vector (one load, or two
// and a two-source permute for stride 2) feeds 16 FMAs with broadcast weights, so the FMAs, not
// the loads, set the pace. Padding columns are masked off in the loads; padding rows are null
// and skipped.
template <int kStride>
void directConvRow512(const DirectConvRowArgs& a, const float* const* rows, const float* w, const float* bias,
                      float* y) {
  constexpr int64_t kBlock = kDirectConvBlock;
  const __m512i evenIdx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512 lo = _mm512_set1_ps(a.lo), hi = _mm512_set1_ps(a.hi);
  const int64_t tapStride = a.kernelW * kBlock;  // floats between two rows' weights
  for (int64_t o0 = 0; o0 < a.outChannels; o0 += kBlock) {
    const float* wb = w + o0 * a.rowCount * a.kernelW;
    const int64_t channels = std::min<int64_t>(kBlock, a.outChannels - o0);
    for (int64_t ow = 0; ow < a.outW; ow += 16) {
      __m512 acc[kBlock];
      #pragma GCC unroll 16
      for (int c = 0; c < kBlock; ++c) acc[c] = _mm512_set1_ps(bias && c < channels ? bias[o0 + c] : 0.f);
      for (int64_t kw = 0; kw < a.kernelW; ++kw) {
        // The column lane 0 reads; lanes outside the row are masked off, so a load that starts in
        // the left padding touches nothing before the row.
        const int64_t col = ow * kStride + kw - a.padW;
        const __mmask16 m0 = lanesInside(col, a.inW), m1 = lanesInside(col + 16, a.inW);
        const float* wt = wb + kw * kBlock;
        for (int64_t r = 0; r < a.rowCount; ++r, wt += tapStride) {
          if (!rows[r]) continue;
          __m512 v = _mm512_maskz_loadu_ps(m0, rows[r] + col);
          if (kStride == 2) v = _mm512_permutex2var_ps(v, evenIdx, _mm512_maskz_loadu_ps(m1, rows[r] + col + 16));
          #pragma GCC unroll 16
          for (int c = 0; c < kBlock; ++c) acc[c] = _mm512_fmadd_ps(v, _mm512_set1_ps(wt[c]), acc[c]);
        }
      }
      const __mmask16 store = firstLanes(a.outW - ow);
      #pragma GCC unroll 16
      for (int c = 0; c < kBlock; ++c)
        if (c < channels)
          _mm512_mask_storeu_ps(y + (o0 + c) * a.outPlaneStride + ow, store,
                                _mm512_min_ps(hi, _mm512_max_ps(lo, acc[c])));
    }
  }
}

}  // namespace

void f32_direct_conv_row__avx512f(const DirectConvRowArgs& args, const float* const* rows, const float* w,
                                  const float* bias, float* y) {
  if (args.stride == 2)
    directConvRow512<2>(args, rows, w, bias, y);
  else
    directConvRow512<1>(args, rows, w, bias, y);
}

// Sixteen positions at a time: 16 loads, one 16x16 transpose (64 shuffles) and 16 stores, where
// the scalar loop stored each value on its own.
void f32_transpose_to_planes__avx512f(const float* src, int64_t lds, int64_t positions, int64_t channels,
                                      const float* bias, const float* residual, float lo, float hi, float* y,
                                      int64_t ldy) {
  const __mmask16 channelLanes = firstLanes(channels);
  const __m512 loV = _mm512_set1_ps(lo), hiV = _mm512_set1_ps(hi);
  for (int64_t p0 = 0; p0 < positions; p0 += 16) {
    const int64_t count = std::min<int64_t>(16, positions - p0);
    __m512 r[16];
    #pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
      r[i] = i < count ? _mm512_maskz_loadu_ps(channelLanes, src + (p0 + i) * lds) : _mm512_setzero_ps();
    transpose16x16(r);
    const __mmask16 positionLanes = firstLanes(count);
    #pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      if (c >= channels) break;
      __m512 v = bias ? _mm512_add_ps(r[c], _mm512_set1_ps(bias[c])) : r[c];
      if (residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(positionLanes, residual + c * ldy + p0));
      _mm512_mask_storeu_ps(y + c * ldy + p0, positionLanes, _mm512_min_ps(hiV, _mm512_max_ps(loV, v)));
    }
  }
}

void f32_sigmoid__avx512f(const float* x, float* y, int64_t n) { mapFloats512<sigmoid512>(x, y, n); }
void f32_swish__avx512f(const float* x, float* y, int64_t n) { mapFloats512<swish512>(x, y, n); }
void f32_gelu__avx512f(const float* x, float* y, int64_t n) { mapFloats512<gelu512>(x, y, n); }

}  // namespace osprey

#endif
