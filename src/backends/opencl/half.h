// IEEE half <-> float on the host, for fp16 device storage (round to nearest even).
#pragma once
#include <cstdint>

namespace osprey::opencl {

void floatsToHalves(const float* src, uint16_t* dst, int64_t n);
void halvesToFloats(const uint16_t* src, float* dst, int64_t n);

}  // namespace osprey::opencl
