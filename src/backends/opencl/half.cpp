#include "backends/opencl/half.h"

#include <cstring>

namespace osprey::opencl {

namespace {

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absBits = x & 0x7fffffffu;
  if (absBits >= 0x7f800000u) return sign | (absBits > 0x7f800000u ? 0x7e00 : 0x7c00);  // NaN, inf
  if (absBits >= 0x477ff000u) return sign | 0x7c00;  // rounds past the largest half: inf
  if (absBits < 0x38800000u) {                       // below the smallest normal half: subnormal
    if (absBits < 0x33000000u) return sign;          // rounds to zero
    const uint32_t exponent = absBits >> 23;
    const uint32_t mantissa = (absBits & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24: value = mantissa * 2^-shift half-ulps
    uint32_t value = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (value & 1))) ++value;
    return sign | static_cast<uint16_t>(value);
  }
  uint32_t value = ((absBits >> 13) - (112u << 10));
  const uint32_t rest = absBits & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (value & 1))) ++value;
  return sign | static_cast<uint16_t>(value);
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400u));
      bits = sign | ((112u - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

void floatsToHalves(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = floatToHalf(src[i]);
}

void halvesToFloats(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = halfToFloat(src[i]);
}

}  // namespace osprey::opencl
