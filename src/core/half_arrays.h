// Float32 <-> Float16 over whole arrays on the host (rounding to nearest even), with the F16C
// instructions where the CPU has them: backends that store weights in fp16 narrow every weight
// at plan time (25 M for a ResNet-50), which one element at a time takes a good part of a second.
#pragma once
#include <cstddef>
#include <cstdint>

namespace osprey {

void floatsToHalves(const float* src, uint16_t* dst, size_t n);
void halvesToFloats(const uint16_t* src, float* dst, size_t n);

}  // namespace osprey
