// Element types for kernels: half/bfloat16 storage types and dtype dispatch.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
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

// Reads element i of a numeric buffer as double / writes a double into it (conversion helpers
// for Cast, constant folding and tests; not for hot loops).
double loadAsDouble(DataType dtype, const void* data, int64_t i);
void storeFromDouble(DataType dtype, void* data, int64_t i, double v);

}  // namespace osprey
