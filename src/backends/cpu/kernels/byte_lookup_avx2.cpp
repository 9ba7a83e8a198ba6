// The byte lookup with AVX2 (byte_lookup.h). vpshufb sees 16 entries, so the table is 16
// slices of 16; rather than picking a slice by compares, each lookup yields 0 where it does not
// apply and the slices are stored so that XORing the ones that do gives the entry.
//
// With idx_h = x - 16h (h = 0..7, bytes wrap), vpshufb returns slice[x & 15] where bit 7 of
// idx_h is clear and 0 where it is set. For x < 128 that holds for h <= x / 16: the lower half's
// slices, stored as row_h ^ row_{h-1}, telescope to row_{x/16}. For x >= 128 it holds for
// h > x / 16 - 8: the upper half's slices, stored as row_{h+7} ^ row_{h+8} on top of row 15
// (looked up by x & 15), telescope to row_{x/16} as well. The top bit of x picks the half.
// Sharing the indexes makes it 39 vector instructions per 32 bytes (47 with an index per slice):
// 0.10 ns/byte on Zen 4, against 0.15 with an index per slice and 0.16 for compare-and-blend.
#include "backends/cpu/kernels/byte_lookup.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstring>

namespace osprey {

namespace {

struct Table256 {
  __m256i low[8], high[8];

  explicit Table256(const uint8_t* table) {
    auto row = [table](int h) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * h)); };
    low[0] = _mm256_broadcastsi128_si256(row(0));
    high[0] = _mm256_broadcastsi128_si256(row(15));
    for (int h = 1; h < 8; ++h) {
      low[h] = _mm256_broadcastsi128_si256(_mm_xor_si128(row(h), row(h - 1)));
      high[h] = _mm256_broadcastsi128_si256(_mm_xor_si128(row(h + 7), row(h + 8)));
    }
  }

  __m256i operator()(__m256i x) const {
    const __m256i step = _mm256_set1_epi8(16);
    __m256i idx = x, lo = _mm256_shuffle_epi8(low[0], x);
    __m256i hi = _mm256_shuffle_epi8(high[0], _mm256_and_si256(x, _mm256_set1_epi8(15)));
    for (int h = 1; h < 8; ++h) {
      idx = _mm256_sub_epi8(idx, step);
      lo = _mm256_xor_si256(lo, _mm256_shuffle_epi8(low[h], idx));
      hi = _mm256_xor_si256(hi, _mm256_shuffle_epi8(high[h], idx));
#if defined(__GNUC__)
      // Left alone, GCC and clang rewrite the chains as x - 16h with seven constants and as XOR
      // trees, whose loads and spills measured 25-30% slower on Zen 4.
      __asm__("" : "+x"(idx), "+x"(lo), "+x"(hi));
#endif
    }
    return _mm256_blendv_epi8(lo, hi, x);
  }
};

}  // namespace

void byte_lookup__avx2(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y) {
  const Table256 lookup(table);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), lookup(v));
  }
  if (i < n) {
    // The tail through a buffer: no read or write past n, and the same vector code.
    alignas(32) uint8_t tail[32] = {};
    std::memcpy(tail, x + i, static_cast<size_t>(n - i));
    const __m256i v = lookup(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(tail), v);
    std::memcpy(y + i, tail, static_cast<size_t>(n - i));
  }
}

}  // namespace osprey

#endif
