// Conversions for the one-byte low-precision types (float8 variants, float4e2m1, float8e8m0,
// 4- and 2-bit integers) to and from float, as ONNX Cast defines them.
#pragma once
#include <cstdint>
#include <string>

#include "osprey/types.h"

namespace osprey {

// Value of one stored element (a bit pattern for the float types, a value for the integers).
double decodeLowPrecision(DataType t, uint8_t stored);
// Nearest representable element of the float types (round to nearest even); the 4- and 2-bit
// integers truncate toward zero and wrap, like Cast to wider integers. `saturate` clamps out-of-range
// values of the float8 types to their largest finite value instead of inf/NaN. `roundMode`
// ("up", "down", "nearest") applies to float8e8m0 only.
uint8_t encodeLowPrecision(DataType t, double value, bool saturate = true, const std::string& roundMode = "up");

// Unpacks ONNX's packed storage (two 4-bit or four 2-bit elements per byte, low bits first)
// into one byte per element; `n` is the element count.
void unpackSubByte(DataType t, const uint8_t* packed, int64_t n, uint8_t* out);
// Bytes ONNX's packed storage takes for n elements of t (n itself for one-byte types).
int64_t packedBytes(DataType t, int64_t n);

}  // namespace osprey
