// Float32 <-> Float16 over whole arrays on the host (rounding to nearest even, as floatToHalf),
// with the F16C instructions where the CPU has them: the CPU backend's float16 Casts, and device
// backends that store weights in fp16 and narrow every weight at plan time (25 M for a ResNet-50,
// which one element at a time takes a good part of a second).
#pragma once
#include <cstddef>
#include <cstdint>

namespace osprey {

// `vectorised` false keeps to the scalar conversion: the CPU backend passes false under its
// process-wide ISA limit "scalar" (setCpuIsaLimit).
void floatsToHalves(const float* src, uint16_t* dst, int64_t n, bool vectorised = true);
void halvesToFloats(const uint16_t* src, float* dst, int64_t n, bool vectorised = true);

}  // namespace osprey
