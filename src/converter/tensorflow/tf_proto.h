// TensorFlow's GraphDef, read by hand on the protobuf wire decoder (converter/proto_wire.h):
// the parts of graph.proto, node_def.proto, attr_value.proto, tensor.proto and
// tensor_shape.proto that the importer uses. Field numbers are those of TensorFlow's .proto files.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"

namespace osprey::tf {

// TensorFlow's DataType enum (types.proto), the values Osprey maps.
enum TfType : int32_t {
  DT_INVALID = 0, DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 5, DT_INT8 = 6,
  DT_STRING = 7, DT_INT64 = 9, DT_BOOL = 10, DT_BFLOAT16 = 14, DT_UINT16 = 17, DT_HALF = 19,
  DT_RESOURCE = 20, DT_UINT32 = 22, DT_UINT64 = 23,
};
// Undefined for types Osprey does not hold.
DataType dataTypeOf(int32_t tfType);
std::string tfTypeName(int32_t tfType);

struct TensorShape {
  bool unknownRank = false;
  std::vector<int64_t> dims;  // -1: unknown
};

// A TensorProto's value, decoded into Osprey's packed little-endian form.
struct TfTensor {
  int32_t tfType = DT_INVALID;
  Shape shape;
  std::vector<uint8_t> bytes;
  std::vector<std::string> strings;
};

struct AttrValue {
  enum class Kind : int8_t { None, S, I, F, B, Type, Shape, Tensor, List, Func };
  Kind kind = Kind::None;
  std::string s;
  int64_t i = 0;
  float f = 0.f;
  bool b = false;
  int32_t type = 0;
  TensorShape shape;
  std::shared_ptr<TfTensor> tensor;
  std::string func;  // a function's name
  // list: each repeated field that was present
  std::vector<std::string> listS;
  std::vector<int64_t> listI;
  std::vector<float> listF;
  std::vector<int32_t> listType;
  std::vector<TensorShape> listShape;
};

struct NodeDef {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;  // "node", "node:1", "^control"
  std::map<std::string, AttrValue> attrs;

  const AttrValue* attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it == attrs.end() ? nullptr : &it->second;
  }
};

// A function of the graph's library (function.proto): what StatefulPartitionedCall, While and
// If name. Its nodes read arguments by name and other nodes' outputs as "node:out_arg:index".
struct FunctionDef {
  std::string name;
  std::vector<std::string> inputArgs;   // the signature's input_arg names, in order
  std::vector<std::string> outputArgs;  // the signature's output_arg names, in order
  std::vector<NodeDef> nodes;
  std::map<std::string, std::string> ret;  // output arg -> the value it returns
};

struct GraphDef {
  std::vector<NodeDef> nodes;
  std::vector<FunctionDef> library;
  // The library holds only the inlined branches of If nodes (inlineFunctions made the graph),
  // which the importer makes subgraphs; a library as parsed is not imported.
  bool branchesInlined = false;
};

// Parses a serialized GraphDef (the caller names the file in errors).
Status parseGraphDef(const uint8_t* data, size_t size, GraphDef* out);
// Parses a serialized TensorShapeProto; `what` names the message in errors.
Status parseTensorShape(const uint8_t* data, size_t size, const char* what, TensorShape* out);

}  // namespace osprey::tf
