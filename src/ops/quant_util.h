// Helpers of the quantized contrib ops (qlinear_contrib.cpp): per-tensor scale and zero-point
// checks that name the tensor, byte loads and stores, and MLAS's float-to-int conversions.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ops/op_util.h"

namespace osprey::quant {

inline bool isByte(DataType t) { return t == DataType::UInt8 || t == DataType::Int8; }

inline int32_t lowOf(DataType t) { return t == DataType::Int8 ? -128 : 0; }
inline int32_t highOf(DataType t) { return t == DataType::Int8 ? 127 : 255; }

// _mm_cvtps_epi32: round half to even; NaN and values outside int32 give INT32_MIN.
inline int32_t cvtps(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(std::nearbyint(v));
}

inline int32_t saturate(int32_t v, DataType t) { return std::min(highOf(t), std::max(lowOf(t), v)); }

inline int32_t loadByte(const TensorView& t, int64_t i) {
  return t.dtype == DataType::Int8 ? static_cast<int32_t>(t.as<const int8_t>()[i])
                                   : static_cast<int32_t>(t.as<const uint8_t>()[i]);
}

inline void storeByte(const TensorView& t, int64_t i, int32_t v) {
  if (t.dtype == DataType::Int8)
    t.as<int8_t>()[i] = static_cast<int8_t>(v);
  else
    t.as<uint8_t>()[i] = static_cast<uint8_t>(v);
}

// MlasQuantizeLinear of one value: clamp(v / scale, lo - zp, hi - zp) rounded, plus zp.
inline int32_t quantizeMlas(float v, float scale, int32_t zp, DataType t) {
  float q = v / scale;
  const float lo = static_cast<float>(lowOf(t) - zp), hi = static_cast<float>(highOf(t) - zp);
  q = q > lo ? q : lo;  // _mm_max_ps(q, lo): lo when q is NaN
  q = q < hi ? q : hi;
  return cvtps(q) + zp;
}

inline Status requireByteTensor(const TensorView& v, const std::string& what) {
  if (!isByte(v.dtype))
    return Status::unsupported(what + " has dtype " + dataTypeName(v.dtype) + "; expected uint8 or int8");
  return Status::ok();
}

// A per-tensor scale: float32, one element.
inline Status checkScale(const TensorViews& in, size_t i, const std::string& what) {
  if (i >= in.size() || !in[i].present) return Status::invalidModel(what + " is required");
  const TensorView& s = in[i];
  if (s.dtype != DataType::Float32)
    return Status::unsupported(what + " has dtype " + dataTypeName(s.dtype) + "; expected float32");
  if (s.elements() != 1)
    return Status::invalidModel(what + " " + shapeToString(s.shape) +
                                " must be a scalar or hold one value (per-tensor)");
  return Status::ok();
}

// A per-tensor zero point of dtype `type` (that of the data it belongs to), or absent.
inline Status checkZeroPoint(const TensorViews& in, size_t i, DataType type, const std::string& what,
                             const std::string& owner) {
  if (i >= in.size() || !in[i].present) return Status::ok();
  const TensorView& z = in[i];
  if (z.dtype != type)
    return Status::invalidModel(what + " has dtype " + dataTypeName(z.dtype) + " but " + owner + " has " +
                                dataTypeName(type));
  if (z.elements() != 1)
    return Status::invalidModel(what + " " + shapeToString(z.shape) +
                                " must be a scalar or hold one value (per-tensor)");
  return Status::ok();
}

inline float scaleAt(const TensorViews& in, size_t i) { return in[i].as<const float>()[0]; }
inline int32_t zeroPointAt(const TensorViews& in, size_t i) {
  return i < in.size() && in[i].present ? loadByte(in[i], 0) : 0;
}

// Quantized tensor `x` at input `i` with its scale at i+1 and zero point at i+2.
inline Status checkQuantized(const TensorViews& in, size_t i, const char* name) {
  if (i >= in.size() || !in[i].present) return Status::invalidModel(std::string(name) + " is required");
  OSPREY_RETURN_IF_ERROR(requireByteTensor(in[i], name));
  OSPREY_RETURN_IF_ERROR(checkScale(in, i + 1, std::string(name) + "_scale"));
  return checkZeroPoint(in, i + 2, in[i].dtype, std::string(name) + "_zero_point", name);
}

inline const TensorView* optional(const TensorViews& in, size_t i) {
  return i < in.size() && in[i].present ? &in[i] : nullptr;
}

}  // namespace osprey::quant
