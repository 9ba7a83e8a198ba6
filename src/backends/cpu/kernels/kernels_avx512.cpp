// AVX-512F micro-kernels. This file alone is compiled with -mavx512f -mfma (see CMakeLists.txt);
// nothing here runs unless cpu_features.cpp found AVX-512F on the CPU.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace osprey {

// 16 accumulators (8 rows x 2 vectors of 16), 2 registers of B, one broadcast of A: each step
// issues 16 FMAs against 10 loads, so the FMA ports, not the loads, set the pace. Every row
// loop is unrolled so that the accumulator arrays live in registers: otherwise GCC zeroes them
// on the stack (rep stos) and spills them, which costs more than a short-K block itself.
void f32_gemm_8x32__avx512f(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                            int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  constexpr int kRows = 8;
  __m512 acc0[kRows], acc1[kRows];
  #pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    acc0[r] = accumulate ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc1[r] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  if (aRowStride == 1) {  // packed A: the eight values of step k are contiguous
    for (int64_t k = 0; k < kc; ++k) {
      // B in place (NCHW activations): the row's next-but-one column block, because on large
      // maps the K rows are as many separate streams (96x12544x16: 0.70 -> 0.51-0.63 ms).
      _mm_prefetch(reinterpret_cast<const char*>(b + 64), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + 80), _MM_HINT_T0);
      // 1 KiB ahead: packed weights stream from memory faster than the hardware prefetcher fetches them.
      _mm_prefetch(reinterpret_cast<const char*>(a + 256), _MM_HINT_T0);
      const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
      #pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m512 av = _mm512_set1_ps(a[r]);
        acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
        acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
      }
      a += aColStride;
      b += ldb;
    }
  } else {
    for (int64_t k = 0; k < kc; ++k) {
      const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
      #pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m512 av = _mm512_set1_ps(a[r * aRowStride]);
        acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
        acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
      }
      a += aColStride;
      b += ldb;
    }
  }
  if (stage) {
    const __m512 lo = _mm512_set1_ps(stage->lo), hi = _mm512_set1_ps(stage->hi);
    #pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      if (stage->rowBias) {
        const __m512 bias = _mm512_set1_ps(stage->rowBias[r]);
        acc0[r] = _mm512_add_ps(acc0[r], bias), acc1[r] = _mm512_add_ps(acc1[r], bias);
      }
      // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
      acc0[r] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc0[r]));
      acc1[r] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc1[r]));
    }
  }
  #pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc0[r]);
    _mm512_storeu_ps(c + r * ldc + 16, acc1[r]);
  }
}

}  // namespace osprey

#endif
