// The AVX2 6x16 GEMM micro-kernel's twins for exactly 1-5 rows (the table's gemmTail): the last
// rows of an A read in place, such as 49 output positions or a transformer's 197 tokens, run
// without being staged into a zero-padded block of 6 and without computing its padding rows.
// Compiled with -mavx2 -mfma (CMakeLists.txt); runs only where cpu_features.cpp found both.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <limits>

#include "backends/cpu/kernels/gemm_avx2.h"

namespace osprey {

namespace {

// kRows x 16 with the contract of GemmMicroKernel, as f32_gemm_6x16__avx2_fma computes it.
template <int kRows>
void gemmRowsX16(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b, int64_t ldb,
                 float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  __m256 acc0[kRows], acc1[kRows];
  #pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    acc0[r] = accumulate ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc1[r] = accumulate ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  // The next block's output and residual lines, as in the whole-block kernel (see the AVX-512 one).
  if (!accumulate) {
    #pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_ET0);
  }
  if (stage && stage->residual) {
    #pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r)
      _mm_prefetch(reinterpret_cast<const char*>(stage->residual + r * stage->residualStride + 16), _MM_HINT_T0);
  }
  gemmSumsX16<kRows, false>(kc, a, aRowStride, aColStride, b, ldb, acc0, acc1);
  if (stage) {
    #pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      if (stage->rowBias) {
        const __m256 bias = _mm256_broadcast_ss(stage->rowBias + r);
        acc0[r] = _mm256_add_ps(acc0[r], bias), acc1[r] = _mm256_add_ps(acc1[r], bias);
      }
      if (stage->residual) {
        const float* z = stage->residual + r * stage->residualStride;
        acc0[r] = _mm256_add_ps(acc0[r], _mm256_loadu_ps(z)), acc1[r] = _mm256_add_ps(acc1[r], _mm256_loadu_ps(z + 8));
      }
    }
    // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
    // An infinite bound clamps nothing and is skipped.
    if (stage->lo != -std::numeric_limits<float>::infinity()) {
      const __m256 lo = _mm256_set1_ps(stage->lo);
      #pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) acc0[r] = _mm256_max_ps(lo, acc0[r]), acc1[r] = _mm256_max_ps(lo, acc1[r]);
    }
    if (stage->hi != std::numeric_limits<float>::infinity()) {
      const __m256 hi = _mm256_set1_ps(stage->hi);
      #pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) acc0[r] = _mm256_min_ps(hi, acc0[r]), acc1[r] = _mm256_min_ps(hi, acc1[r]);
    }
  }
  #pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc0[r]);
    _mm256_storeu_ps(c + r * ldc + 8, acc1[r]);
  }
}

}  // namespace

const GemmMicroKernel kAvx2TailKernels[6] = {nullptr,        gemmRowsX16<1>, gemmRowsX16<2>,
                                             gemmRowsX16<3>, gemmRowsX16<4>, gemmRowsX16<5>};

}  // namespace osprey

#endif
