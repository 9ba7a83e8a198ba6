#include "core/half_arrays.h"

#include "core/dtype.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define OSPREY_HOST_F16C 1
#endif

namespace osprey {

namespace {

#ifdef OSPREY_HOST_F16C
// CPUID's F16C and AVX bits, and the OS saving the YMM registers (XCR0 bits 1 and 2). Read with
// cpuid/xgetbv rather than __builtin_cpu_supports, which clang does not know "f16c" for.
bool detectF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned osxsave = 1u << 27, avx = 1u << 28, f16c = 1u << 29;
  if ((c & (osxsave | avx | f16c)) != (osxsave | avx | f16c)) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6u) == 6u;
}

bool hostHasF16c() {
  static const bool has = detectF16c();
  return has;
}

// Each returns how many leading elements it converted (a multiple of 8).
__attribute__((target("avx,f16c"))) int64_t floatsToHalvesF16c(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}

__attribute__((target("avx,f16c"))) int64_t halvesToFloatsF16c(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  return i;
}
#endif

}  // namespace

void floatsToHalves(const float* src, uint16_t* dst, int64_t n, bool vectorised) {
  int64_t i = 0;
#ifdef OSPREY_HOST_F16C
  if (vectorised && hostHasF16c()) i = floatsToHalvesF16c(src, dst, n);
#endif
  for (; i < n; ++i) dst[i] = floatToHalf(src[i]);
}

void halvesToFloats(const uint16_t* src, float* dst, int64_t n, bool vectorised) {
  int64_t i = 0;
#ifdef OSPREY_HOST_F16C
  if (vectorised && hostHasF16c()) i = halvesToFloatsF16c(src, dst, n);
#endif
  for (; i < n; ++i) dst[i] = halfToFloat(src[i]);
}

}  // namespace osprey
