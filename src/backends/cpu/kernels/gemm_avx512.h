// The K loop of the AVX-512 GEMM micro-kernels (8 x 32 blocks and their row tails), shared by the
// kernel that stores C as it is (kernels_avx512.cpp) and the one that stores it transposed into
// channel planes (gemm_planes_avx512.cpp). Include only in files compiled with -mavx512f.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace osprey {
namespace {

// How the K loop prefetches B: the next-but-one column block of each row of an activation read
// in place (kInPlaceB), or a panel of packed weights further along its one stream (kPackedB).
enum class BStream { kInPlaceB, kPackedB };

// acc0[r] / acc1[r] (columns 0-15 / 16-31 of row r) += A[r][k] * B[k][0..31] for k < kc, r < kRows.
template <int kRows, BStream kB = BStream::kInPlaceB>
__attribute__((always_inline)) inline void gemmSumsX32(int64_t kc, const float* a, int64_t aRowStride,
                                                       int64_t aColStride, const float* b, int64_t ldb, __m512* acc0,
                                                       __m512* acc1) {
  if (aRowStride == 1) {  // packed A, or positions as rows: the rows' values of step k are contiguous
    for (int64_t k = 0; k < kc; ++k) {
      if (kB == BStream::kPackedB) {
        // 32 steps (4 KiB) ahead: packed weights as B stream from memory once per panel, and a
        // prefetch two steps ahead arrived too late (1x1 convolutions 512 <-> 2048 on 7x7 with
        // cold weights, one thread, with the equal row blocks: 1.08-1.11 -> 1.00-1.04 ms each).
        _mm_prefetch(reinterpret_cast<const char*>(b + 1024), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(b + 1040), _MM_HINT_T0);
      } else {
        // B in place (NCHW activations): the row's next-but-one column block, because on large
        // maps the K rows are as many separate streams (96x12544x16: 0.70 -> 0.51-0.63 ms).
        _mm_prefetch(reinterpret_cast<const char*>(b + 64), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(b + 80), _MM_HINT_T0);
        // 1 KiB ahead: packed weights stream from memory faster than the hardware prefetcher fetches them.
        _mm_prefetch(reinterpret_cast<const char*>(a + 256), _MM_HINT_T0);
      }
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
}

}  // namespace
}  // namespace osprey
