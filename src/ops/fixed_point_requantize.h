// TFLite's integer requantization (its quantization_util and gemmlowp's fixed-point helpers),
// which LiteRT's builtin int8 kernels (BATCH_MATMUL of two activations among them) apply to
// their int32 sums: the real multiplier becomes a 31-bit mantissa (rounded half away from zero)
// and a shift, and y = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left, M),
// right) rounds twice. A float multiply rounding once lands one step away where the value lies
// near a .5 boundary.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace osprey {

struct QuantizedMultiplier {
  int32_t fixed = 0;  // in [2^30, 2^31), or 0
  int shift = 0;      // > 0: left shift before the multiply; < 0: rounding right shift after it
};

inline QuantizedMultiplier quantizeMultiplier(double real) {
  QuantizedMultiplier m;
  if (real == 0) return m;
  const double mantissa = std::frexp(real, &m.shift);
  int64_t fixed = static_cast<int64_t>(std::round(mantissa * static_cast<double>(int64_t{1} << 31)));
  if (fixed == (int64_t{1} << 31)) fixed /= 2, ++m.shift;
  if (m.shift < -31) fixed = 0, m.shift = 0;
  m.fixed = static_cast<int32_t>(fixed);
  return m;
}

// TFLite's GetQuantizedConvolutionMultipler: the input scales multiplied in float, divided in double.
inline QuantizedMultiplier productMultiplier(float scaleA, float scaleB, float scaleY) {
  return quantizeMultiplier(static_cast<double>(scaleA * scaleB) / static_cast<double>(scaleY));
}

inline int32_t saturatingRoundingDoublingHighMul(int32_t a, int32_t b) {
  if (a == std::numeric_limits<int32_t>::min() && b == a) return std::numeric_limits<int32_t>::max();
  const int64_t ab = int64_t{a} * b;
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
  return static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));  // C++ division: toward zero
}

// x / 2^exponent rounded to nearest, ties away from zero.
inline int32_t roundingDivideByPowerOfTwo(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1), remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

inline int32_t multiplyByQuantizedMultiplier(int32_t x, const QuantizedMultiplier& m) {
  const int left = m.shift > 0 ? m.shift : 0, right = m.shift > 0 ? 0 : -m.shift;
  const int64_t shifted = int64_t{x} * (int64_t{1} << left);
  const int32_t saturated = static_cast<int32_t>(
      std::min<int64_t>(std::max<int64_t>(shifted, std::numeric_limits<int32_t>::min()), std::numeric_limits<int32_t>::max()));
  return roundingDivideByPowerOfTwo(saturatingRoundingDoublingHighMul(saturated, m.fixed), right);
}

}  // namespace osprey
