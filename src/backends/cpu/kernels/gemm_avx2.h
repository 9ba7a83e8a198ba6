// The K loop of the AVX2 GEMM kernels for a block of up to 6 rows by 16 columns, shared by the
// row-tail kernels (gemm_tail_avx2.cpp) and the kernels that store C transposed into channel
// planes (gemm_planes_avx2.cpp). Include only in files compiled with -mavx2 -mfma. Internal
// linkage, as in avx2_math.h.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstdint>

namespace osprey {
namespace {

constexpr int kAvx2Mr = 6, kAvx2Nr = 16;

// acc0[r] / acc1[r] (columns 0-7 / 8-15 of row r) += A[r][k] * B[k][0..15] for k < kc, r < kRows:
// 2 kRows accumulators, two registers of B and one broadcast, 15 of the 16 registers at 6 rows.
// kPrefetchB: B is one stream of packed weights (ldb 16), which the hardware prefetcher fetched
// from memory too late for the FMAs in the AVX-512 kernels; fetched 4 KiB ahead here as there.
template <int kRows, bool kPrefetchB>
__attribute__((always_inline)) inline void gemmSumsX16(int64_t kc, const float* a, int64_t aRowStride,
                                                       int64_t aColStride, const float* b, int64_t ldb, __m256* acc0,
                                                       __m256* acc1) {
  if (aRowStride == 1) {  // packed A, or positions as rows: the rows' values of step k are contiguous
    for (int64_t k = 0; k < kc; ++k) {
      if (kPrefetchB) _mm_prefetch(reinterpret_cast<const char*>(b + 1024), _MM_HINT_T0);
      const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
      #pragma GCC unroll 6
      for (int r = 0; r < kRows; ++r) {
        const __m256 av = _mm256_broadcast_ss(a + r);
        acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
        acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
      }
      a += aColStride;
      b += ldb;
    }
    return;
  }
  int64_t rowOffset[kRows];  // base + index addressing: no pointer of its own to advance per row
  #pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) rowOffset[r] = r * aRowStride;
  for (int64_t k = 0; k < kc; ++k) {
    if (kPrefetchB) _mm_prefetch(reinterpret_cast<const char*>(b + 1024), _MM_HINT_T0);
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    #pragma GCC unroll 6
    for (int r = 0; r < kRows; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + rowOffset[r]);
      acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
    }
    a += aColStride;
    b += ldb;
  }
}

}  // namespace
}  // namespace osprey

#endif
