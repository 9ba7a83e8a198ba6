// The integer requantization of a quantized Add that LiteRT runs (through XNNPACK) for TFLite
// models, which the TFLite importer asks for with QLinearAdd's attribute requantize =
// "fixed_point": each operand's scale ratio to the output becomes a multiplier of 21 bits under
// one shift, so that y = ((bias + a * mA + b * mB) >> shift) + zC, the shift rounding half up.
// Float requantization (ONNX Runtime's QLinearAdd) rounds half to even after a float sum, which
// differs in the last step for a few elements, and residual networks amplify those.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace osprey {

struct FixedPointAdd {
  int64_t bias = 0, multiplierA = 0, multiplierB = 0;
  int shift = 0;
  // The ratios must lie in [2^-10, 2^8), where the multipliers keep their precision (XNNPACK
  // declines other Adds and TFLite's own kernel, with another rounding, runs them).
  bool valid = false;

  int32_t apply(int32_t a, int32_t b) const {
    return static_cast<int32_t>((bias + a * multiplierA + b * multiplierB) >> shift);
  }
};

inline FixedPointAdd fixedPointAdd(float scaleA, float scaleB, float scaleC, int32_t zeroA, int32_t zeroB) {
  FixedPointAdd p;
  const float ratioA = scaleA / scaleC, ratioB = scaleB / scaleC;
  const float largest = std::fmax(std::fabs(ratioA), std::fabs(ratioB));
  if (!(std::fabs(ratioA) >= 0x1.0p-10f && std::fabs(ratioB) >= 0x1.0p-10f && largest < 0x1.0p+8f)) return p;
  uint32_t bits;
  std::memcpy(&bits, &largest, sizeof bits);
  const int exponent = static_cast<int>(bits >> 23) - 127;
  p.shift = 20 - exponent;  // in [12, 30]
  p.multiplierA = std::lrint(std::ldexp(static_cast<double>(ratioA), p.shift));
  p.multiplierB = std::lrint(std::ldexp(static_cast<double>(ratioB), p.shift));
  p.bias = (int64_t{1} << (p.shift - 1)) - p.multiplierA * zeroA - p.multiplierB * zeroB;
  p.valid = true;
  return p;
}

}  // namespace osprey
