// The byte lookup with AVX-512 VBMI (byte_lookup.h): vpermt2b looks 64 bytes up in 128 table
// entries at once, so two of them cover the table and the top bit of each byte picks one.
#include "backends/cpu/kernels/byte_lookup.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace osprey {

namespace {

struct Table512 {
  __m512i t0, t1, t2, t3;  // entries 0-63, 64-127, 128-191, 192-255

  explicit Table512(const uint8_t* table)
      : t0(_mm512_loadu_si512(table)),
        t1(_mm512_loadu_si512(table + 64)),
        t2(_mm512_loadu_si512(table + 128)),
        t3(_mm512_loadu_si512(table + 192)) {}

  // vpermt2b reads the low 7 bits of each index, so both halves see the same index.
  __m512i operator()(__m512i x) const {
    const __m512i low = _mm512_permutex2var_epi8(t0, x, t1), high = _mm512_permutex2var_epi8(t2, x, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), low, high);
  }
};

}  // namespace

void byte_lookup__avx512vbmi(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y) {
  const Table512 lookup(table);
  int64_t i = 0;
  // Two vectors a step: both loads come before both stores, which keeps in-place runs right.
  for (; i + 128 <= n; i += 128) {
    const __m512i a = _mm512_loadu_si512(x + i), b = _mm512_loadu_si512(x + i + 64);
    _mm512_storeu_si512(y + i, lookup(a));
    _mm512_storeu_si512(y + i + 64, lookup(b));
  }
  for (; i < n; i += 64) {
    // Masked-off bytes are neither read nor written, so the tail stays inside both buffers.
    const int64_t left = n - i;
    const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    _mm512_mask_storeu_epi8(y + i, mask, lookup(_mm512_maskz_loadu_epi8(mask, x + i)));
  }
}

}  // namespace osprey

#endif
