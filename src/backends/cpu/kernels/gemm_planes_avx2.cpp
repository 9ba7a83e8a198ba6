// The AVX2 GEMM micro-kernels that store their block of C transposed (the AVX-512 ones are in
// gemm_planes_avx512.cpp): a convolution on a small map multiplies with output positions as the
// GEMM's rows and channels as its columns (conv.cpp), and each channel's positions land in its
// plane straight from the registers. Compiled with -mavx2 -mfma (CMakeLists.txt); runs only
// where cpu_features.cpp found both.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <limits>

#include "backends/cpu/kernels/gemm_avx2.h"

namespace osprey {

namespace {

// The first kN (1-4) floats at p into the low lanes (the rest 0), and back.
template <int kN>
inline __m128 loadFirst(const float* p) {
  if constexpr (kN == 4) return _mm_loadu_ps(p);
  if constexpr (kN == 1) return _mm_load_ss(p);
  const __m128 pair = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(p));
  if constexpr (kN == 2) return pair;
  return _mm_movelh_ps(pair, _mm_load_ss(p + 2));
}

template <int kN>
inline void storeFirst(float* p, __m128 v) {
  if constexpr (kN == 4) {
    _mm_storeu_ps(p, v);
  } else if constexpr (kN == 1) {
    _mm_store_ss(p, v);
  } else {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), v);
    if constexpr (kN == 3) _mm_store_ss(p + 2, _mm_movehl_ps(v, v));
  }
}

// A block's rows 4-5 (kN of them) of two columns: [first's | second's], two lanes each.
template <int kN>
inline __m128 loadTailPair(const float* first, const float* second) {
  if constexpr (kN == 1) return _mm_movelh_ps(_mm_load_ss(first), _mm_load_ss(second));
  return _mm_loadh_pi(_mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(first)),
                      reinterpret_cast<const __m64*>(second));
}

template <int kN>
inline void storeTailPair(float* first, float* second, __m128 v) {
  if constexpr (kN == 1) {
    _mm_store_ss(first, v);
    _mm_store_ss(second, _mm_movehl_ps(v, v));
  } else {
    _mm_storel_pi(reinterpret_cast<__m64*>(first), v);
    _mm_storeh_pi(reinterpret_cast<__m64*>(second), v);
  }
}

// Where the pieces of one transposed group of 8 columns go (see transposeRows): piece q < 4 is a
// head (rows 0-3) of columns q and q + 4; piece 4 + h the tails (rows 4-5) of columns 2h, 2h + 1
// in its low lane and 2h + 4, 2h + 5 in its high lane.
template <int kRows>
struct PlanesPiece {
  static constexpr int kHeadRows = kRows < 4 ? kRows : 4, kTailRows = kRows - kHeadRows;

  static __m256 load(const float* c, int64_t ldc, int q) {
    if (q < 4)
      return _mm256_set_m128(loadFirst<kHeadRows>(c + (q + 4) * ldc), loadFirst<kHeadRows>(c + q * ldc));
    const int col = 2 * (q - 4);
    const float* p = c + 4;
    return _mm256_set_m128(loadTailPair<kTailRows>(p + (col + 4) * ldc, p + (col + 5) * ldc),
                           loadTailPair<kTailRows>(p + col * ldc, p + (col + 1) * ldc));
  }

  static void store(float* c, int64_t ldc, int q, __m256 v) {
    const __m128 low = _mm256_castps256_ps128(v), high = _mm256_extractf128_ps(v, 1);
    if (q < 4) {
      storeFirst<kHeadRows>(c + q * ldc, low);
      storeFirst<kHeadRows>(c + (q + 4) * ldc, high);
      return;
    }
    const int col = 2 * (q - 4);
    float* p = c + 4;
    storeTailPair<kTailRows>(p + col * ldc, p + (col + 1) * ldc, low);
    storeTailPair<kTailRows>(p + (col + 4) * ldc, p + (col + 5) * ldc, high);
  }
};

// Rows 0-5 of 8 columns into pieces (PlanesPiece): 4 heads of two columns' rows 0-3 from 4
// unpacks and 4 shuffles, and 2 tails of four columns' rows 4-5 from 2 unpacks; 10 shuffles per
// 8 columns, where a whole 8x8 transpose takes 24. Rows past kRows hold 0.
template <int kRows>
__attribute__((always_inline)) inline int transposeRows(const __m256* r, __m256* pieces) {
  const __m256 t01lo = _mm256_unpacklo_ps(r[0], r[1]), t01hi = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t23lo = _mm256_unpacklo_ps(r[2], r[3]), t23hi = _mm256_unpackhi_ps(r[2], r[3]);
  pieces[0] = _mm256_shuffle_ps(t01lo, t23lo, _MM_SHUFFLE(1, 0, 1, 0));
  pieces[1] = _mm256_shuffle_ps(t01lo, t23lo, _MM_SHUFFLE(3, 2, 3, 2));
  pieces[2] = _mm256_shuffle_ps(t01hi, t23hi, _MM_SHUFFLE(1, 0, 1, 0));
  pieces[3] = _mm256_shuffle_ps(t01hi, t23hi, _MM_SHUFFLE(3, 2, 3, 2));
  if constexpr (kRows <= 4) return 4;
  pieces[4] = _mm256_unpacklo_ps(r[4], r[5]);
  pieces[5] = _mm256_unpackhi_ps(r[4], r[5]);
  return 6;
}

// Stores rows 0..kRows-1 of the block (acc0 / acc1: columns 0-7 / 8-15) transposed, element
// (r, col) at c[col * ldc + r]: + C when accumulating, then the stage's residual (laid out as C)
// and clamp. The bias is in the sums already (columnBiasRows).
template <int kRows>
__attribute__((always_inline)) inline void storePlanes(const __m256* acc0, const __m256* acc1, float* c, int64_t ldc,
                                                       bool accumulate, const GemmOutputStage* stage) {
  const bool clampLo = stage && stage->lo != -std::numeric_limits<float>::infinity();
  const bool clampHi = stage && stage->hi != std::numeric_limits<float>::infinity();
  const __m256 lo = _mm256_set1_ps(stage ? stage->lo : 0.f), hi = _mm256_set1_ps(stage ? stage->hi : 0.f);
  const float* z = stage ? stage->residual : nullptr;
  #pragma GCC unroll 2
  for (int group = 0; group < 2; ++group) {
    __m256 pieces[6];
    const int count = transposeRows<kRows>(group ? acc1 : acc0, pieces);
    float* cg = c + 8 * group * ldc;
    #pragma GCC unroll 6
    for (int q = 0; q < count; ++q) {
      __m256 v = pieces[q];
      if (accumulate) v = _mm256_add_ps(v, PlanesPiece<kRows>::load(cg, ldc, q));
      if (z) {
        const int64_t ldz = stage->residualStride;
        v = _mm256_add_ps(v, PlanesPiece<kRows>::load(z + 8 * group * ldz, ldz, q));
      }
      // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
      if (clampLo) v = _mm256_max_ps(lo, v);
      if (clampHi) v = _mm256_min_ps(hi, v);
      PlanesPiece<kRows>::store(cg, ldc, q, v);
    }
  }
}

// The first kRows rows start from the stage's column bias, the others (never stored) from 0.
template <int kRows>
__attribute__((always_inline)) inline void columnBiasRows(const GemmOutputStage* stage, __m256* acc0, __m256* acc1) {
  const float* bias = stage ? stage->columnBias : nullptr;
  const __m256 bias0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  const __m256 bias1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
  #pragma GCC unroll 6
  for (int r = 0; r < kAvx2Mr; ++r) {
    acc0[r] = r < kRows ? bias0 : _mm256_setzero_ps();
    acc1[r] = r < kRows ? bias1 : _mm256_setzero_ps();
  }
}

// kRows x 16, element (r, col) stored at c[col * ldc + r]; the stage's bias is per column and its
// residual laid out as C (column col at residual + col * residualStride).
template <int kRows>
void gemmRowsX16Planes(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                       int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  __m256 acc0[kAvx2Mr], acc1[kAvx2Mr];
  columnBiasRows<kRows>(stage, acc0, acc1);
  if (ldb == kAvx2Nr)
    gemmSumsX16<kRows, true>(kc, a, aRowStride, aColStride, b, ldb, acc0, acc1);
  else
    gemmSumsX16<kRows, false>(kc, a, aRowStride, aColStride, b, ldb, acc0, acc1);
  storePlanes<kRows>(acc0, acc1, c, ldc, accumulate, stage);
}

// The same block summed over taps (GemmTapsKernel): row r of tap t's A is at a + offsets[t] + r,
// its channel ch channelStride further on, and B's rows follow tap by tap (t * channels + ch), 16
// floats each, packed weights prefetched 4 KiB ahead as in the AVX-512 kernel.
template <int kRows>
void gemmTapsX16Planes(int64_t taps, const int64_t* offsets, int64_t channels, const float* a, int64_t channelStride,
                       const float* b, float* c, int64_t ldc, const GemmOutputStage* stage) {
  __m256 acc0[kAvx2Mr], acc1[kAvx2Mr];
  columnBiasRows<kRows>(stage, acc0, acc1);
  for (int64_t t = 0; t < taps; ++t)
    gemmSumsX16<kRows, true>(channels, a + offsets[t], 1, channelStride, b + t * channels * kAvx2Nr, kAvx2Nr, acc0,
                             acc1);
  storePlanes<kRows>(acc0, acc1, c, ldc, false, stage);
}

}  // namespace

void f32_gemm_6x16_planes__avx2_fma(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride,
                                    const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                    const GemmOutputStage* stage) {
  gemmRowsX16Planes<6>(kc, a, aRowStride, aColStride, b, ldb, c, ldc, accumulate, stage);
}

const GemmMicroKernel kAvx2PlanesTailKernels[6] = {nullptr,              gemmRowsX16Planes<1>, gemmRowsX16Planes<2>,
                                                   gemmRowsX16Planes<3>, gemmRowsX16Planes<4>, gemmRowsX16Planes<5>};

const GemmTapsKernel kAvx2TapsKernels[7] = {nullptr,              gemmTapsX16Planes<1>, gemmTapsX16Planes<2>,
                                            gemmTapsX16Planes<3>, gemmTapsX16Planes<4>, gemmTapsX16Planes<5>,
                                            gemmTapsX16Planes<6>};

}  // namespace osprey

#endif
