// The AVX2 twin of f32_transpose_to_planes__avx512f: a result with positions as rows moved into
// channel planes with bias, residual and clamp (Winograd with tiles as the GEMM's rows). Compiled
// with -mavx2 -mfma (CMakeLists.txt); runs only where cpu_features.cpp found both.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <algorithm>

namespace osprey {

namespace {

// Lanes [0, count) of 8 set, for maskload / maskstore.
inline __m256i firstLanes8(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// r[i] (row i, 8 lanes) -> r[j] holding lane j of every row: 24 shuffles.
inline void transpose8x8(__m256* r) {
  __m256 t[8];
  #pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m256 u[8];
  #pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {  // rows 4 * half .. + 3, lanes 4l + m within each 128-bit half
    const __m256 *lo = t + 4 * half, *hi = lo + 2;
    u[4 * half + 0] = _mm256_shuffle_ps(lo[0], hi[0], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * half + 1] = _mm256_shuffle_ps(lo[0], hi[0], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * half + 2] = _mm256_shuffle_ps(lo[1], hi[1], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * half + 3] = _mm256_shuffle_ps(lo[1], hi[1], _MM_SHUFFLE(3, 2, 3, 2));
  }
  #pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    r[m] = _mm256_permute2f128_ps(u[m], u[m + 4], 0x20);
    r[m + 4] = _mm256_permute2f128_ps(u[m], u[m + 4], 0x31);
  }
}

}  // namespace

// Eight positions by eight channels at a time: 8 loads, one 8x8 transpose and 8 stores, where the
// scalar loop stored each value on its own.
void f32_transpose_to_planes__avx2_fma(const float* src, int64_t lds, int64_t positions, int64_t channels,
                                       const float* bias, const float* residual, float lo, float hi, float* y,
                                       int64_t ldy) {
  const __m256 loV = _mm256_set1_ps(lo), hiV = _mm256_set1_ps(hi);
  for (int64_t c0 = 0; c0 < channels; c0 += 8) {
    const int64_t count = std::min<int64_t>(8, channels - c0);
    const __m256i channelLanes = firstLanes8(count);
    for (int64_t p0 = 0; p0 < positions; p0 += 8) {
      const int64_t rows = std::min<int64_t>(8, positions - p0);
      __m256 r[8];
      #pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        r[i] = i < rows ? _mm256_maskload_ps(src + (p0 + i) * lds + c0, channelLanes) : _mm256_setzero_ps();
      transpose8x8(r);
      const __m256i positionLanes = firstLanes8(rows);
      for (int64_t c = 0; c < count; ++c) {
        float* out = y + (c0 + c) * ldy + p0;
        __m256 v = bias ? _mm256_add_ps(r[c], _mm256_set1_ps(bias[c0 + c])) : r[c];
        if (residual) {
          const float* z = residual + (c0 + c) * ldy + p0;
          v = _mm256_add_ps(v, rows == 8 ? _mm256_loadu_ps(z) : _mm256_maskload_ps(z, positionLanes));
        }
        // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
        v = _mm256_min_ps(hiV, _mm256_max_ps(loV, v));
        if (rows == 8)
          _mm256_storeu_ps(out, v);
        else
          _mm256_maskstore_ps(out, positionLanes, v);
      }
    }
  }
}

}  // namespace osprey

#endif
