// Element types for kernels: half/bfloat16 storage types and dtype dispatch.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "osprey/types.h"

namespace osprey {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);  // round to nearest even
inline float bfloat16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t floatToBfloat16(float f);  // round to nearest even

// Storage types whose arithmetic goes through float.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  float16_t(float f) : bits(floatToHalf(f)) {}
  operator float() const { return halfToFloat(bits); }
};
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(floatToBfloat16(f)) {}
  operator float() const { return bfloat16ToFloat(bits); }
};

template <class T>
inline constexpr bool isFloatLike = std::is_floating_point_v<T> || std::is_same_v<T, float16_t> ||
                                    std::is_same_v<T, bfloat16_t>;

// Compute type for elementwise math: float for the 16-bit floats, T otherwise.
template <class T>
using ComputeType = std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, T>;

template <class T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) for the C++ type of dtype; returns false when dtype is not numeric.
template <class Fn>
bool dispatchNumeric(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::Float32: fn(TypeTag<float>{}); return true;
    case DataType::Float64: fn(TypeTag<double>{}); return true;
    case DataType::Float16: fn(TypeTag<float16_t>{}); return true;
    case DataType::BFloat16: fn(TypeTag<bfloat16_t>{}); return true;
    case DataType::Int8: fn(TypeTag<int8_t>{}); return true;
    case DataType::Int16: fn(TypeTag<int16_t>{}); return true;
    case DataType::Int32: fn(TypeTag<int32_t>{}); return true;
    case DataType::Int64: fn(TypeTag<int64_t>{}); return true;
    case DataType::UInt8: fn(TypeTag<uint8_t>{}); return true;
    case DataType::UInt16: fn(TypeTag<uint16_t>{}); return true;
    case DataType::UInt32: fn(TypeTag<uint32_t>{}); return true;
    case DataType::UInt64: fn(TypeTag<uint64_t>{}); return true;
    case DataType::Bool: fn(TypeTag<bool>{}); return true;
    default: return false;
  }
}

template <class Fn>
bool dispatchFloat(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::Float32: fn(TypeTag<float>{}); return true;
    case DataType::Float64: fn(TypeTag<double>{}); return true;
    case DataType::Float16: fn(TypeTag<float16_t>{}); return true;
    case DataType::BFloat16: fn(TypeTag<bfloat16_t>{}); return true;
    default: return false;
  }
}

template <class T>
constexpr DataType dataTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DataType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DataType::Float64;
  else if constexpr (std::is_same_v<T, float16_t>) return DataType::Float16;
  else if constexpr (std::is_same_v<T, bfloat16_t>) return DataType::BFloat16;
  else if constexpr (std::is_same_v<T, int8_t>) return DataType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>) return DataType::Int16;
  else if constexpr (std::is_same_v<T, int32_t>) return DataType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>) return DataType::Int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DataType::UInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DataType::UInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DataType::UInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DataType::UInt64;
  else if constexpr (std::is_same_v<T, bool>) return DataType::Bool;
  else return DataType::Undefined;
}

// The one float -> integer conversion every op uses. In range it truncates toward zero, as C
// and ONNX Cast do. ONNX leaves NaN and out-of-range values undefined (C makes them UB), so
// here NaN gives 0 and everything else saturates to To's range (-inf and -1.5 -> 0 for
// unsigned, 300 -> 255 for uint8, 1e30 -> INT64_MAX for int64).
template <class To>
To saturatingCast(double v) {
  static_assert(std::is_integral_v<To>);
  if constexpr (std::is_same_v<To, bool>) {
    return v != 0.0;  // ONNX: only +-0 is false; NaN is true
  } else {
    if (std::isnan(v)) return To(0);
    // The limits' doubles are exact or round up to 2^n, so no out-of-range value reaches the cast.
    if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  }
}

// Unsigned arithmetic of at least 32 bits: integer ops wrap through it (two's complement)
// without the undefined behaviour of signed overflow or of uint16 * uint16 promoting to int.
template <class T>
using WrapType = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
template <class T>
T wrappingAdd(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
}
template <class T>
T wrappingMul(T a, T b) {
  return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
}

// Reads element i of a numeric buffer as double / writes a double into it (conversion helpers
// for Cast, constant folding and tests; not for hot loops). Integer targets go through
// saturatingCast. loadAsDouble rounds int64 values beyond 2^53: integer operands (counts,
// indices, shapes) are read with loadAsInt64 instead.
double loadAsDouble(DataType dtype, const void* data, int64_t i);
void storeFromDouble(DataType dtype, void* data, int64_t i, double v);
// Element i as int64: integers exactly (uint64 beyond INT64_MAX saturates), floats through
// saturatingCast. False for a non-numeric dtype.
bool loadAsInt64(DataType dtype, const void* data, int64_t i, int64_t* out);

}  // namespace osprey
