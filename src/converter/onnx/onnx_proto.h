// The parts of an ONNX model the converter needs, decoded straight from protobuf wire
// format so the converter does not depend on libprotobuf. Every read is bounds-checked:
// corrupt, truncated or hostile bytes give a Status, never a crash or a partial result.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "osprey/status.h"
#include "osprey/types.h"

namespace osprey::onnx {

struct GraphProto;

struct TensorProto {
  std::string name;
  // Undefined when rawType is not a type Osprey models (complex, float8, int4, ...): the
  // tensor still parses, with empty data, so the converter can name the op it cannot import.
  DataType dtype = DataType::Undefined;
  int32_t rawType = 0;  // data_type exactly as stored, for error messages
  std::vector<int64_t> dims;
  // Packed little-endian elements of dtype, whichever ONNX field they were stored in.
  // Size is checked: product(dims) * dataTypeSize(dtype).
  std::vector<uint8_t> data;
  std::vector<std::string> strings;  // dtype String only; one per element
  bool external = false;             // data lives in another file; data is empty
  // external_data key/value pairs ("location", "offset", "length", ...), in file order.
  std::vector<std::pair<std::string, std::string>> externalData;

  int64_t elementCount() const { return shapeElements(dims); }
};

// Numbered as ONNX AttributeProto.AttributeType.
enum AttributeType : int {
  kAttrUndefined = 0,
  kAttrFloat = 1,
  kAttrInt = 2,
  kAttrString = 3,
  kAttrTensor = 4,
  kAttrGraph = 5,
  kAttrFloats = 6,
  kAttrInts = 7,
  kAttrStrings = 8,
  kAttrTensors = 9,
  kAttrGraphs = 10,
  kAttrSparseTensor = 11,
  kAttrSparseTensors = 12,
  kAttrTypeProto = 13,
  kAttrTypeProtos = 14,
};

struct AttributeProto {
  std::string name;
  // An AttributeType. Models older than the type field leave it 0; the parser then infers it
  // from the value that is present. Sparse tensors and type protos set only the type.
  int type = kAttrUndefined;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;  // bytes, not necessarily UTF-8
  TensorProto t;
  std::shared_ptr<GraphProto> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorProto> tensors;
  std::vector<std::shared_ptr<GraphProto>> graphs;
  std::string refAttrName;  // set inside function bodies: the value comes from the caller
};

struct NodeProto {
  std::vector<std::string> inputs, outputs;  // "" marks an omitted optional input/output
  std::string name, opType, domain;
  std::vector<AttributeProto> attributes;

  const AttributeProto* attr(std::string_view attrName) const;  // nullptr if absent
};

struct ValueInfo {
  // kMapOfTensors: a map, as the element type of a sequence (ZipMap's output); any other map is kMap.
  enum Kind : int { kTensor = 0, kSequence = 1, kOptional = 2, kMap = 3, kSparseTensor = 4, kOther = 5, kMapOfTensors = 6 };

  std::string name;
  bool hasType = false;
  int kind = kTensor;
  // ONNX element type (may be one Osprey does not model). For sequence/optional, that of the
  // tensor inside; 0 when unknown.
  int32_t elemType = 0;
  int innerKind = kTensor;  // of an optional: what it wraps (a tensor or a sequence)
  bool hasShape = false;  // false: rank unknown. true with empty dims: a scalar
  std::vector<int64_t> dims;            // -1 where the dim is symbolic or unknown
  std::vector<std::string> dimParams;   // the symbol (dim_param), or "" when not symbolic
};

struct GraphProto {
  std::string name;
  std::vector<NodeProto> nodes;
  std::vector<TensorProto> initializers;
  std::vector<ValueInfo> inputs, outputs, valueInfo;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct ModelProto {
  int64_t irVersion = 0;
  std::vector<OpsetImport> opsets;  // IR < 3 without opset_import: {"", 1}, as ONNX implies
  std::string producerName, producerVersion;
  GraphProto graph;

  // "" and "ai.onnx" name the same domain. -1 if the domain is not imported.
  int64_t opsetFor(std::string_view domain) const;
};

// Message nesting deeper than this (graphs inside attributes inside graphs ...) is rejected,
// so hostile input cannot exhaust the stack. Real models nest a handful of levels.
constexpr int kMaxNestingDepth = 64;

// A sequence or optional value as ONNX's test data writes one (SequenceProto, OptionalProto).
// Only what Osprey holds: a sequence of tensors, an optional of a tensor or of such a sequence.
struct ValueProto {
  enum Kind : int { kTensor = 0, kSequence = 1, kOptional = 2 };
  int kind = kTensor;
  bool hasValue = true;  // an optional's; false: it holds nothing
  bool isSequence = false;  // what it holds (a sequence's items are tensors)
  std::vector<TensorProto> tensors;  // one for a tensor, the items of a sequence
};

Status parseModel(const uint8_t* data, size_t size, ModelProto* out);
// Parses a SequenceProto (kind kSequence) or an OptionalProto (kind kOptional).
Status parseValue(const uint8_t* data, size_t size, int kind, ValueProto* out);
Status parseTensor(const uint8_t* data, size_t size, TensorProto* out);
Status loadModelFile(const std::string& path, ModelProto* out);
Status loadTensorFile(const std::string& path, TensorProto* out);

}  // namespace osprey::onnx
