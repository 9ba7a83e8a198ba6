// The scalar byte lookup (any CPU) and the choice among the ISA kernels (byte_lookup.h).
#include "backends/cpu/kernels/byte_lookup.h"

#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#endif

namespace osprey {

void byte_lookup__scalar(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

namespace {

#if defined(__x86_64__) || defined(_M_X64)
// CPUID leaf 7 names the features (clang 14's __builtin_cpu_supports lacks "avx512vbmi"); XCR0
// says whether the OS saves the opmask and ZMM registers, without which they fault.
bool cpuRunsAvx512Vbmi() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return false;  // OSXSAVE
  unsigned xcr0 = 0, xcr0High = 0;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0High) : "c"(0));
  constexpr unsigned kZmmState = 0xe6;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  if ((xcr0 & kZmmState) != kZmmState) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool f = ebx & (1u << 16), bw = ebx & (1u << 30), vbmi = ecx & (1u << 1);
  return f && bw && vbmi;
}
#endif

}  // namespace

ByteLookupKernel byteLookupKernel(const char* isa) {
#if defined(__x86_64__) || defined(_M_X64)
  if (!isa) return byte_lookup__scalar;
  const bool avx512 = std::strcmp(isa, "avx512f") == 0;
  static const bool vbmi = cpuRunsAvx512Vbmi();
  if (avx512 && vbmi) return byte_lookup__avx512vbmi;
  if (avx512 || std::strcmp(isa, "avx2_fma") == 0) return byte_lookup__avx2;
#else
  (void)isa;
#endif
  return byte_lookup__scalar;
}

}  // namespace osprey
