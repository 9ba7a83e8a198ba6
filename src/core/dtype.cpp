#include "core/dtype.h"

#include "core/low_precision.h"

namespace osprey {

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {  // subnormal or zero in half
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t e = absx >> 23;
    uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14 + (127-15) - e + ... aligns the mantissa to half subnormal
    uint32_t r = m >> (shift - 1 + 0);
    // r holds the result with one extra rounding bit at the bottom.
    uint32_t half = r >> 1;
    uint32_t roundBit = r & 1u;
    bool sticky = (m & ((1u << (shift - 1)) - 1)) != 0;
    if (roundBit && (sticky || (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t e = (absx >> 23) - 127 + 15;
  uint32_t m = absx & 0x7fffffu;
  uint32_t h = (e << 10) | (m >> 13);
  uint32_t rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

uint16_t floatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

double loadAsDouble(DataType dtype, const void* data, int64_t i) {
  if (isLowPrecisionType(dtype)) return decodeLowPrecision(dtype, static_cast<const uint8_t*>(data)[i]);
  double v = 0;
  dispatchNumeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = static_cast<double>(static_cast<ComputeType<T>>(static_cast<const T*>(data)[i]));
  });
  return v;
}

void storeFromDouble(DataType dtype, void* data, int64_t i, double v) {
  if (isLowPrecisionType(dtype)) {
    static_cast<uint8_t*>(data)[i] = encodeLowPrecision(dtype, v);
    return;
  }
  dispatchNumeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
      static_cast<T*>(data)[i] = T(static_cast<float>(v));
    } else if constexpr (std::is_integral_v<T>) {
      static_cast<T*>(data)[i] = saturatingCast<T>(v);
    } else {
      static_cast<T*>(data)[i] = static_cast<T>(v);
    }
  });
}

bool loadAsInt64(DataType dtype, const void* data, int64_t i, int64_t* out) {
  if (isLowPrecisionType(dtype)) {
    *out = saturatingCast<int64_t>(decodeLowPrecision(dtype, static_cast<const uint8_t*>(data)[i]));
    return true;
  }
  return dispatchNumeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = static_cast<const T*>(data)[i];
    if constexpr (std::is_same_v<T, uint64_t>) {
      *out = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                            : static_cast<int64_t>(v);
    } else if constexpr (std::is_integral_v<T>) {
      *out = static_cast<int64_t>(v);
    } else {
      *out = saturatingCast<int64_t>(static_cast<double>(static_cast<ComputeType<T>>(v)));
    }
  });
}

}  // namespace osprey
