#include "core/low_precision.h"

#include <cmath>
#include <limits>

namespace osprey {

namespace {

struct MiniFloat {
  int expBits, manBits, bias;
  bool hasInf;   // E5M2: IEEE-style infinities
  bool fnuz;     // one NaN (0x80), no negative zero
  bool signless; // float8e8m0
  double maxValue;
};

bool miniFloatFormat(DataType t, MiniFloat* f) {
  switch (t) {
    case DataType::Float8E4M3FN: *f = {4, 3, 7, false, false, false, 448.0}; return true;
    case DataType::Float8E4M3FNUZ: *f = {4, 3, 8, false, true, false, 240.0}; return true;
    case DataType::Float8E5M2: *f = {5, 2, 15, true, false, false, 57344.0}; return true;
    case DataType::Float8E5M2FNUZ: *f = {5, 2, 16, false, true, false, 57344.0}; return true;
    case DataType::Float4E2M1: *f = {2, 1, 1, false, false, false, 6.0}; return true;
    default: return false;
  }
}

uint8_t nanCode(DataType t, bool negative) {
  switch (t) {
    case DataType::Float8E4M3FN: return negative ? 0xFF : 0x7F;
    case DataType::Float8E5M2: return negative ? 0xFE : 0x7E;
    case DataType::Float4E2M1: return 0x8;  // no NaN: ONNX writes the pattern of -0
    default: return 0x80;                                   // the FNUZ types
  }
}

double decodeMini(const MiniFloat& f, DataType t, uint8_t code) {
  const int width = 1 + f.expBits + f.manBits;
  const bool negative = (code >> (width - 1)) & 1;
  const int exp = (code >> f.manBits) & ((1 << f.expBits) - 1);
  const int man = code & ((1 << f.manBits) - 1);
  if (f.fnuz && code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (t == DataType::Float8E4M3FN && exp == 15 && man == 7) return std::numeric_limits<double>::quiet_NaN();
  if (f.hasInf && exp == (1 << f.expBits) - 1) {
    if (man == 0) return negative ? -INFINITY : INFINITY;
    return std::numeric_limits<double>::quiet_NaN();
  }
  double v = exp == 0 ? std::ldexp(man, 1 - f.bias - f.manBits)
                      : std::ldexp(1.0 + std::ldexp(man, -f.manBits), exp - f.bias);
  return negative ? -v : v;
}

uint8_t encodeMini(const MiniFloat& f, DataType t, double x, bool saturate) {
  const int width = 1 + f.expBits + f.manBits;
  const bool negative = std::signbit(x);
  const uint8_t sign = negative ? static_cast<uint8_t>(1u << (width - 1)) : 0;
  if (std::isnan(x)) return nanCode(t, negative);
  const uint8_t maxCode = [&] {
    for (int c = (1 << (width - 1)) - 1; c >= 0; --c)
      if (decodeMini(f, t, static_cast<uint8_t>(c)) == f.maxValue) return static_cast<uint8_t>(c);
    return uint8_t(0);
  }();
  auto overflow = [&]() -> uint8_t {
    if (saturate || t == DataType::Float4E2M1) return maxCode | sign;
    if (f.hasInf) return static_cast<uint8_t>(sign | (((1 << f.expBits) - 1) << f.manBits));
    return nanCode(t, negative);
  };
  double a = std::fabs(x);
  if (std::isinf(a)) return overflow();
  const int emin = 1 - f.bias;
  int e = a > 0 ? std::ilogb(a) : emin;
  if (e < emin) e = emin;
  const double quantum = std::ldexp(1.0, e - f.manBits);
  const double rounded = std::nearbyint(a / quantum) * quantum;  // ties to even
  if (rounded > f.maxValue) return overflow();
  if (rounded == 0) return f.fnuz ? 0 : sign;
  int re = std::ilogb(rounded);
  int expField, man;
  if (re < emin) {
    expField = 0;
    man = static_cast<int>(rounded / std::ldexp(1.0, emin - f.manBits));
  } else {
    expField = re + f.bias;
    man = static_cast<int>((rounded / std::ldexp(1.0, re) - 1.0) * (1 << f.manBits) + 0.5);
  }
  return static_cast<uint8_t>(sign | (expField << f.manBits) | man);
}

// Like Cast to the wider integers: truncate toward zero, then keep the low `bits` (wrapping).
uint8_t wrapInt(double v, int bits, bool isSigned) {
  if (std::isnan(v)) return 0;
  int64_t i = v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v);
  uint8_t low = static_cast<uint8_t>(static_cast<uint64_t>(i) & ((1u << bits) - 1));
  if (isSigned && (low >> (bits - 1))) low = static_cast<uint8_t>(low | ~((1u << bits) - 1));
  return low;
}

}  // namespace

double decodeLowPrecision(DataType t, uint8_t stored) {
  MiniFloat f;
  if (miniFloatFormat(t, &f)) return decodeMini(f, t, stored);
  switch (t) {
    case DataType::Float8E8M0:
      return stored == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, static_cast<int>(stored) - 127);
    case DataType::Int4:
    case DataType::Int2: return static_cast<int8_t>(stored);
    default: return stored;
  }
}

uint8_t encodeLowPrecision(DataType t, double value, bool saturate, const std::string& roundMode) {
  MiniFloat f;
  if (miniFloatFormat(t, &f)) return encodeMini(f, t, value, saturate);
  switch (t) {
    case DataType::Float8E8M0: {
      if (std::isnan(value) || (std::isinf(value) && !saturate)) return 0xFF;
      if (value <= 0) return 0;
      if (std::isinf(value)) return 0xFE;
      int e;
      double m = std::frexp(value, &e);  // value = m * 2^e, m in [0.5, 1)
      int exact = e - 1;                  // value = (2m) * 2^(e-1), 2m in [1, 2)
      bool isPower = m == 0.5;
      int chosen = exact;
      if (!isPower) {
        if (roundMode == "up") chosen = exact + 1;
        else if (roundMode == "nearest") chosen = 2 * m >= 1.5 ? exact + 1 : exact;
      }
      int code = chosen + 127;
      if (code < 0) code = 0;
      if (code > 254) return saturate ? 0xFE : 0xFF;
      return static_cast<uint8_t>(code);
    }
    case DataType::Int4: return wrapInt(value, 4, true);
    case DataType::UInt4: return wrapInt(value, 4, false);
    case DataType::Int2: return wrapInt(value, 2, true);
    case DataType::UInt2: return wrapInt(value, 2, false);
    default: return 0;
  }
}

int64_t packedBytes(DataType t, int64_t n) {
  switch (t) {
    case DataType::Int4:
    case DataType::UInt4:
    case DataType::Float4E2M1: return n / 2 + n % 2;  // not (n + 1) / 2: n may be INT64_MAX
    case DataType::Int2:
    case DataType::UInt2: return n / 4 + (n % 4 != 0);
    default: return n;
  }
}

void unpackSubByte(DataType t, const uint8_t* packed, int64_t n, uint8_t* out) {
  const int bits = packedBytes(t, 4) == 2 ? 4 : packedBytes(t, 4) == 1 ? 2 : 8;
  const int perByte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  const bool signExtend = t == DataType::Int4 || t == DataType::Int2;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t v = static_cast<uint8_t>((packed[i / perByte] >> ((i % perByte) * bits)) & mask);
    if (signExtend && (v >> (bits - 1))) v = static_cast<uint8_t>(v | ~mask);
    out[i] = v;
  }
}

}  // namespace osprey
