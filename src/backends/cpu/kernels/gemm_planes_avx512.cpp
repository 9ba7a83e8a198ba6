// The AVX-512 GEMM micro-kernel that stores its block of C transposed. A convolution on a small
// map multiplies with output positions as the GEMM's rows and channels as its columns (see
// conv.cpp); stored transposed, each channel's 8 positions land in its plane, so the output needs
// no transpose pass over a position-major scratch copy of the whole result afterwards.
// Compiled with -mavx512f (see CMakeLists.txt); runs only where cpu_features.cpp found AVX-512F.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <limits>

#include "backends/cpu/kernels/gemm_avx512.h"

namespace osprey {

namespace {

// Rows 0-7 of 16 columns -> out[2m + h] holding column m + 8h in its low 8 lanes and column
// m + 4 + 8h in its high 8 lanes (rows 0-7 each), for m < 4, h < 2: 24 shuffles.
inline void transpose8x16(const __m512* r, __m512* out) {
  __m512 t[8], u[8];
  #pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);  // lane l: r0[4l] r1[4l] r0[4l+1] r1[4l+1]
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  #pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {  // u[m + 4 * half], lane l: column 4l + m, rows 4 * half .. + 3
    const __m512 *lo = t + 4 * half, *hi = lo + 2;
    u[4 * half + 0] = _mm512_shuffle_ps(lo[0], hi[0], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * half + 1] = _mm512_shuffle_ps(lo[0], hi[0], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * half + 2] = _mm512_shuffle_ps(lo[1], hi[1], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * half + 3] = _mm512_shuffle_ps(lo[1], hi[1], _MM_SHUFFLE(3, 2, 3, 2));
  }
  const __m512i lanes01 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i lanes23 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  #pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    out[2 * m] = _mm512_permutex2var_ps(u[m], lanes01, u[m + 4]);
    out[2 * m + 1] = _mm512_permutex2var_ps(u[m], lanes23, u[m + 4]);
  }
}

// The first `rows` floats at lo into lanes 0-7, those at hi into lanes 8-15.
inline __m512 loadPair(const float* lo, const float* hi, __mmask16 rows) {
  return _mm512_shuffle_f32x4(_mm512_maskz_loadu_ps(rows, lo), _mm512_maskz_loadu_ps(rows, hi), _MM_SHUFFLE(1, 0, 1, 0));
}

inline void storePair(float* lo, float* hi, __mmask16 rows, __m512 v) {
  _mm512_mask_storeu_ps(lo, rows, v);
  _mm512_mask_storeu_ps(hi, rows, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(3, 2, 3, 2)));
}

// Stores rows 0..kRows-1 of the block (acc0 / acc1: columns 0-15 / 16-31 of each row; rows past
// kRows must hold something, never stored) transposed, element (r, col) at c[col * ldc + r]:
// + C when accumulating, then the stage's residual (laid out as C) and clamp. A bias belongs in
// the sums already (see columnBiasRows).
template <int kRows>
__attribute__((always_inline)) inline void storePlanes(__m512* acc0, __m512* acc1, float* c, int64_t ldc,
                                                       bool accumulate, const GemmOutputStage* stage) {
  __m512 columns[16];
  transpose8x16(acc0, columns);
  transpose8x16(acc1, columns + 8);
  const __mmask16 rows = static_cast<__mmask16>((1u << kRows) - 1);
  const bool clampLo = stage && stage->lo != -std::numeric_limits<float>::infinity();
  const bool clampHi = stage && stage->hi != std::numeric_limits<float>::infinity();
  const __m512 lo = _mm512_set1_ps(stage ? stage->lo : 0.f), hi = _mm512_set1_ps(stage ? stage->hi : 0.f);
  #pragma GCC unroll 16
  for (int q = 0; q < 16; ++q) {
    const int64_t first = (q / 8) * 16 + (q % 8) / 2 + 8 * (q % 2), second = first + 4;
    __m512 v = columns[q];
    if (accumulate) v = _mm512_add_ps(v, loadPair(c + first * ldc, c + second * ldc, rows));
    if (stage && stage->residual) {
      const float* z = stage->residual;
      v = _mm512_add_ps(v, loadPair(z + first * stage->residualStride, z + second * stage->residualStride, rows));
    }
    // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
    if (clampLo) v = _mm512_max_ps(lo, v);
    if (clampHi) v = _mm512_min_ps(hi, v);
    storePair(c + first * ldc, c + second * ldc, rows, v);
  }
}

// The first kRows rows start from the stage's column bias (rows past kRows from 0).
template <int kRows>
__attribute__((always_inline)) inline void columnBiasRows(const GemmOutputStage* stage, __m512* acc0, __m512* acc1) {
  const float* bias = stage ? stage->columnBias : nullptr;
  const __m512 bias0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
  const __m512 bias1 = bias ? _mm512_loadu_ps(bias + 16) : _mm512_setzero_ps();
  #pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) {
    acc0[r] = r < kRows ? bias0 : _mm512_setzero_ps();
    acc1[r] = r < kRows ? bias1 : _mm512_setzero_ps();
  }
}

// kRows x 32, element (r, col) stored at c[col * ldc + r]; the stage's bias is per column and its
// residual laid out as C (column col at residual + col * residualStride).
template <int kRows>
void gemmRowsX32Planes(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                       int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  __m512 acc0[8], acc1[8];
  columnBiasRows<kRows>(stage, acc0, acc1);
  gemmSumsX32<kRows, BStream::kPackedB>(kc, a, aRowStride, aColStride, b, ldb, acc0, acc1);
  storePlanes<kRows>(acc0, acc1, c, ldc, accumulate, stage);
}

// The same block summed over taps: row r of tap t's A is at a + offsets[t] + r, its channel ch
// channelStride further on, and B's rows follow tap by tap (t * channels + ch), 32 floats each.
// B is packed weights, prefetched 4 KiB ahead (stride-2 3x3 of 128 channels on 56x56, six in a
// model, per-op minimums at two threads: -6.5 to -7% over three alternating runs).
template <int kRows>
void gemmTapsX32Planes(int64_t taps, const int64_t* offsets, int64_t channels, const float* a,
                       int64_t channelStride, const float* b, float* c, int64_t ldc, const GemmOutputStage* stage) {
  __m512 acc0[8], acc1[8];
  columnBiasRows<kRows>(stage, acc0, acc1);
  for (int64_t t = 0; t < taps; ++t)
    gemmSumsX32<kRows, BStream::kPackedB>(channels, a + offsets[t], 1, channelStride, b + t * channels * 32, 32, acc0,
                                          acc1);
  storePlanes<kRows>(acc0, acc1, c, ldc, false, stage);
}

}  // namespace

void f32_gemm_8x32_planes__avx512f(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride,
                                   const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                   const GemmOutputStage* stage) {
  gemmRowsX32Planes<8>(kc, a, aRowStride, aColStride, b, ldb, c, ldc, accumulate, stage);
}

const GemmMicroKernel kAvx512PlanesTailKernels[8] = {
    nullptr,                 gemmRowsX32Planes<1>, gemmRowsX32Planes<2>, gemmRowsX32Planes<3>,
    gemmRowsX32Planes<4>, gemmRowsX32Planes<5>, gemmRowsX32Planes<6>, gemmRowsX32Planes<7>};

const GemmTapsKernel kAvx512TapsKernels[9] = {
    nullptr,                 gemmTapsX32Planes<1>, gemmTapsX32Planes<2>, gemmTapsX32Planes<3>, gemmTapsX32Planes<4>,
    gemmTapsX32Planes<5>, gemmTapsX32Planes<6>, gemmTapsX32Planes<7>, gemmTapsX32Planes<8>};

}  // namespace osprey

#endif
