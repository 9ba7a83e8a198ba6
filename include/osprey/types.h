// Basic value types shared by the public API, the runtime and the converter.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace osprey {

// Numbered as ONNX TensorProto.DataType so that importing a model is a cast, not a table.
enum class DataType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
  // Low-precision types. In memory each element takes one byte: float8/float4/e8m0 hold their
  // bit pattern, the 4- and 2-bit integers hold their (sign-extended) value. The ONNX importer
  // unpacks the packed sub-byte storage.
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
  // Not an element type: a value that is an ordered list of tensors of one element type (ONNX
  // seq(tensor)); it lives on the host (Tensor::sequence) and the ops that read or make it run there.
  Sequence = 100,
  // A map from keys (int64 or strings) to values (ONNX map(K, V)), as ZipMap makes for each row:
  // Tensor::map; it too lives on the host.
  Map = 101,
};

// True for the one-byte low-precision types above (Float8*, Float4E2M1, (U)Int4, (U)Int2).
bool isLowPrecisionType(DataType t);

// Bytes per element; 0 for types without a fixed size (String, Undefined).
size_t dataTypeSize(DataType t);
const char* dataTypeName(DataType t);  // "float32", "int64", ...
bool isKnownDataType(int32_t v);

// The layout a tensor's bytes are in. Users see NCHW or NHWC; backends may pack channels
// in groups of 4 or 8 (NC4HW4 / NC8HW8) so that one SIMD register holds one pixel's channels.
enum class Layout : int32_t { NCHW = 0, NHWC = 1, NC4HW4 = 2, NC8HW8 = 3 };
const char* layoutName(Layout l);

using Shape = std::vector<int64_t>;
int64_t shapeElements(const Shape& s);
std::string shapeToString(const Shape& s);  // "[1, 3, 224, 224]"

}  // namespace osprey
