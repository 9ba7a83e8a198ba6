#include "backends/cuda/host_narrow.h"

#include "core/dtype.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OSPREY_HOST_F16C 1
#endif

namespace osprey::cuda {

namespace {

#ifdef OSPREY_HOST_F16C
__attribute__((target("avx,f16c"))) size_t narrowToHalfF16c(uint16_t* dst, const float* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  return i;
}
#endif

}  // namespace

void narrowFloats(uint16_t* dst, const float* src, size_t n, DataType to) {
  size_t i = 0;
  if (to == DataType::BFloat16) {
    for (; i < n; ++i) dst[i] = floatToBfloat16(src[i]);
    return;
  }
#ifdef OSPREY_HOST_F16C
  static const bool hasF16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  if (hasF16c) i = narrowToHalfF16c(dst, src, n);
#endif
  for (; i < n; ++i) dst[i] = floatToHalf(src[i]);
}

}  // namespace osprey::cuda
