#include "osprey/types.h"

#include <limits>

namespace osprey {

size_t dataTypeSize(DataType t) {
  switch (t) {
    case DataType::Float32: return 4;
    case DataType::UInt8: return 1;
    case DataType::Int8: return 1;
    case DataType::UInt16: return 2;
    case DataType::Int16: return 2;
    case DataType::Int32: return 4;
    case DataType::Int64: return 8;
    case DataType::Bool: return 1;
    case DataType::Float16: return 2;
    case DataType::Float64: return 8;
    case DataType::UInt32: return 4;
    case DataType::UInt64: return 8;
    case DataType::BFloat16: return 2;
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::UInt4:
    case DataType::Int4:
    case DataType::Float4E2M1:
    case DataType::Float8E8M0:
    case DataType::UInt2:
    case DataType::Int2: return 1;
    case DataType::String:
    case DataType::Sequence:
    case DataType::Map:
    case DataType::Undefined: return 0;
  }
  return 0;  // a value cast from an unchecked int
}

const char* dataTypeName(DataType t) {
  switch (t) {
    case DataType::Undefined: return "undefined";
    case DataType::Float32: return "float32";
    case DataType::UInt8: return "uint8";
    case DataType::Int8: return "int8";
    case DataType::UInt16: return "uint16";
    case DataType::Int16: return "int16";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::String: return "string";
    case DataType::Bool: return "bool";
    case DataType::Float16: return "float16";
    case DataType::Float64: return "float64";
    case DataType::UInt32: return "uint32";
    case DataType::UInt64: return "uint64";
    case DataType::BFloat16: return "bfloat16";
    case DataType::Float8E4M3FN: return "float8e4m3fn";
    case DataType::Float8E4M3FNUZ: return "float8e4m3fnuz";
    case DataType::Float8E5M2: return "float8e5m2";
    case DataType::Float8E5M2FNUZ: return "float8e5m2fnuz";
    case DataType::UInt4: return "uint4";
    case DataType::Int4: return "int4";
    case DataType::Float4E2M1: return "float4e2m1";
    case DataType::Float8E8M0: return "float8e8m0";
    case DataType::UInt2: return "uint2";
    case DataType::Int2: return "int2";
    case DataType::Sequence: return "sequence";
    case DataType::Map: return "map";
  }
  return "unknown";
}

// "Known" means a concrete type Osprey can hold: Undefined (0) and the ONNX types Osprey
// does not model (complex) are not, so a caller can cast only after this.
bool isKnownDataType(int32_t v) {
  return (v >= static_cast<int32_t>(DataType::Float32) && v <= static_cast<int32_t>(DataType::UInt64)) ||
         (v >= static_cast<int32_t>(DataType::BFloat16) && v <= static_cast<int32_t>(DataType::Int2));
}

bool isLowPrecisionType(DataType t) {
  return static_cast<int32_t>(t) >= static_cast<int32_t>(DataType::Float8E4M3FN) &&
         static_cast<int32_t>(t) <= static_cast<int32_t>(DataType::Int2);
}

const char* layoutName(Layout l) {
  switch (l) {
    case Layout::NCHW: return "NCHW";
    case Layout::NHWC: return "NHWC";
    case Layout::NC4HW4: return "NC4HW4";
    case Layout::NC8HW8: return "NC8HW8";
  }
  return "unknown";
}

// The empty shape is a scalar (1 element). A negative (unknown) dim or an overflowing
// product gives -1, so callers cannot mistake a bogus shape for a small one.
int64_t shapeElements(const Shape& s) {
  bool zero = false;
  for (int64_t d : s) {
    if (d < 0) return -1;
    zero = zero || d == 0;
  }
  if (zero) return 0;  // checked first: [huge, huge, 0] is empty, not an overflow
  int64_t n = 1;
  for (int64_t d : s) {
    if (n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string shapeToString(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  r += "]";
  return r;
}

}  // namespace osprey
