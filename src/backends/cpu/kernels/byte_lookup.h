// A 256-entry byte table applied to a run of bytes: the whole of QLinearSigmoid and
// QLinearLeakyRelu once their table is built, and a third of an int8 EfficientNet's time as a
// scalar loop. One kernel per ISA, chosen once by the caller.
#pragma once
#include <cstdint>

namespace osprey {

// y[i] = table[x[i]] for n bytes; table holds 256 bytes. x and y may be the same buffer (in
// place) but do not otherwise overlap.
using ByteLookupKernel = void (*)(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y);

void byte_lookup__scalar(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y);
#if defined(__x86_64__) || defined(_M_X64)
void byte_lookup__avx2(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y);
void byte_lookup__avx512vbmi(const uint8_t* table, const uint8_t* x, int64_t n, uint8_t* y);
#endif

// The fastest kernel this CPU runs within the CPU table's ISA (CpuFunctions::isa: "avx512f",
// "avx2_fma", "scalar"; the table already proved the CPU runs that ISA). AVX-512 VBMI needs
// more than the "avx512f" table asks, so CPUID and the OS's ZMM state are checked for it.
ByteLookupKernel byteLookupKernel(const char* isa);

}  // namespace osprey
