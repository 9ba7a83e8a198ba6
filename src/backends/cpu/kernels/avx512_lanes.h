// Lane masks and the 16x16 transpose shared by the AVX-512 kernel files (each compiled with
// -mavx512f; include only there).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace osprey {
namespace {

// The first n of 16 lanes (none for n <= 0, all for n >= 16).
inline __mmask16 firstLanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1);
}

// r[i] lane j -> r[j] lane i: pairs of rows interleaved, then pairs of pairs, then 128-bit
// quarters twice.
inline void transpose16x16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i)
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]), t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k) {
      t[8 * h + k] = _mm512_shuffle_f32x4(r[8 * h + k], r[8 * h + 4 + k], 0x88);
      t[8 * h + 4 + k] = _mm512_shuffle_f32x4(r[8 * h + k], r[8 * h + 4 + k], 0xdd);
    }
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);
  }
}

}  // namespace
}  // namespace osprey
