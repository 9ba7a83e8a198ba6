// The ONNX messages, decoded on the bounds-checked wire layer in proto_wire.h: one table of
// field numbers per message, one small parser per message, and the checks that turn wire
// values into a consistent TensorProto (which field holds the data, how many bytes).
#include "converter/onnx/onnx_proto.h"
#include "core/low_precision.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>

#include "converter/proto_wire.h"

namespace osprey::onnx {
namespace {

using namespace wire;  // NOLINT: the parsers below are written in the wire layer's terms

static_assert(std::endian::native == std::endian::little,
              "tensor bytes are copied as-is; a big-endian host would need byte swapping");

// Field numbers of the ONNX messages read here, as published in onnx.proto.
namespace model_f {  // ModelProto
enum : uint32_t { kIrVersion = 1, kProducerName = 2, kProducerVersion = 3, kGraph = 7, kOpsetImport = 8 };
}
namespace opset_f {  // OperatorSetIdProto
enum : uint32_t { kDomain = 1, kVersion = 2 };
}
namespace graph_f {  // GraphProto
enum : uint32_t { kNode = 1, kName = 2, kInitializer = 5, kInput = 11, kOutput = 12, kValueInfo = 13 };
}
namespace node_f {  // NodeProto
enum : uint32_t { kInput = 1, kOutput = 2, kName = 3, kOpType = 4, kAttribute = 5, kDomain = 7 };
}
namespace attr_f {  // AttributeProto
enum : uint32_t {
  kName = 1, kF = 2, kI = 3, kS = 4, kT = 5, kG = 6, kFloats = 7, kInts = 8, kStrings = 9,
  kTensors = 10, kGraphs = 11, kTp = 14, kTypeProtos = 15, kType = 20, kRefAttrName = 21,
  kSparseTensor = 22, kSparseTensors = 23,
};
}
namespace tensor_f {  // TensorProto
enum : uint32_t {
  kDims = 1, kDataType = 2, kSegment = 3, kFloatData = 4, kInt32Data = 5, kStringData = 6,
  kInt64Data = 7, kName = 8, kRawData = 9, kDoubleData = 10, kUint64Data = 11,
  kExternalData = 13, kDataLocation = 14,
};
}
namespace entry_f {  // StringStringEntryProto (external_data)
enum : uint32_t { kKey = 1, kValue = 2 };
}
namespace vinfo_f {  // ValueInfoProto
enum : uint32_t { kName = 1, kType = 2 };
}
namespace type_f {  // TypeProto: a oneof of the kinds below
enum : uint32_t { kTensor = 1, kSequence = 4, kMap = 5, kOpaque = 7, kSparseTensor = 8, kOptional = 9 };
}
namespace ttype_f {  // TypeProto.Tensor and TypeProto.SparseTensor share these
enum : uint32_t { kElemType = 1, kShape = 2 };
}
namespace wrap_f {  // TypeProto.Sequence and TypeProto.Optional: one nested TypeProto
enum : uint32_t { kElemType = 1 };
}
namespace shape_f {  // TensorShapeProto
enum : uint32_t { kDim = 1 };
}
namespace dim_f {  // TensorShapeProto.Dimension: a oneof of value and symbol
enum : uint32_t { kValue = 1, kParam = 2 };
}
namespace seq_f {  // SequenceProto and OptionalProto share their numbers (one value or repeated)
enum : uint32_t { kName = 1, kElemType = 2, kTensor = 3, kSparseTensor = 4, kSequence = 5, kMap = 6, kOptional = 7 };
enum : int32_t { kElemTensor = 1, kElemSequence = 3 };  // SequenceProto.DataType / OptionalProto.DataType
}
constexpr int32_t kDataLocationExternal = 1;
constexpr size_t kMaxTensorRank = 1024;  // far above any real tensor

#define OSPREY_MESSAGE(var, name, ...)          \
  constexpr FieldSpec var##Fields[] = __VA_ARGS__; \
  constexpr MessageSpec var{name, var##Fields, std::size(var##Fields)}

OSPREY_MESSAGE(kModelMsg, "ModelProto",
               {{model_f::kIrVersion, "ir_version", kVarint},
                {model_f::kProducerName, "producer_name", kLen},
                {model_f::kProducerVersion, "producer_version", kLen},
                {model_f::kGraph, "graph", kLen},
                {model_f::kOpsetImport, "opset_import", kLen}});
OSPREY_MESSAGE(kOpsetMsg, "OperatorSetIdProto",
               {{opset_f::kDomain, "domain", kLen}, {opset_f::kVersion, "version", kVarint}});
OSPREY_MESSAGE(kGraphMsg, "GraphProto",
               {{graph_f::kNode, "node", kLen},
                {graph_f::kName, "name", kLen},
                {graph_f::kInitializer, "initializer", kLen},
                {graph_f::kInput, "input", kLen},
                {graph_f::kOutput, "output", kLen},
                {graph_f::kValueInfo, "value_info", kLen}});
OSPREY_MESSAGE(kNodeMsg, "NodeProto",
               {{node_f::kInput, "input", kLen},
                {node_f::kOutput, "output", kLen},
                {node_f::kName, "name", kLen},
                {node_f::kOpType, "op_type", kLen},
                {node_f::kAttribute, "attribute", kLen},
                {node_f::kDomain, "domain", kLen}});
OSPREY_MESSAGE(kAttrMsg, "AttributeProto",
               {{attr_f::kName, "name", kLen},
                {attr_f::kF, "f", kFixed32},
                {attr_f::kI, "i", kVarint},
                {attr_f::kS, "s", kLen},
                {attr_f::kT, "t", kLen},
                {attr_f::kG, "g", kLen},
                {attr_f::kFloats, "floats", kFixed32, true},
                {attr_f::kInts, "ints", kVarint, true},
                {attr_f::kStrings, "strings", kLen},
                {attr_f::kTensors, "tensors", kLen},
                {attr_f::kGraphs, "graphs", kLen},
                {attr_f::kTp, "tp", kLen},
                {attr_f::kTypeProtos, "type_protos", kLen},
                {attr_f::kType, "type", kVarint},
                {attr_f::kRefAttrName, "ref_attr_name", kLen},
                {attr_f::kSparseTensor, "sparse_tensor", kLen},
                {attr_f::kSparseTensors, "sparse_tensors", kLen}});
OSPREY_MESSAGE(kTensorMsg, "TensorProto",
               {{tensor_f::kDims, "dims", kVarint, true},
                {tensor_f::kDataType, "data_type", kVarint},
                {tensor_f::kSegment, "segment", kLen},
                {tensor_f::kFloatData, "float_data", kFixed32, true},
                {tensor_f::kInt32Data, "int32_data", kVarint, true},
                {tensor_f::kStringData, "string_data", kLen},
                {tensor_f::kInt64Data, "int64_data", kVarint, true},
                {tensor_f::kName, "name", kLen},
                {tensor_f::kRawData, "raw_data", kLen},
                {tensor_f::kDoubleData, "double_data", kFixed64, true},
                {tensor_f::kUint64Data, "uint64_data", kVarint, true},
                {tensor_f::kExternalData, "external_data", kLen},
                {tensor_f::kDataLocation, "data_location", kVarint}});
OSPREY_MESSAGE(kEntryMsg, "StringStringEntryProto",
               {{entry_f::kKey, "key", kLen}, {entry_f::kValue, "value", kLen}});
OSPREY_MESSAGE(kValueInfoMsg, "ValueInfoProto",
               {{vinfo_f::kName, "name", kLen}, {vinfo_f::kType, "type", kLen}});
OSPREY_MESSAGE(kTypeMsg, "TypeProto",
               {{type_f::kTensor, "tensor_type", kLen},
                {type_f::kSequence, "sequence_type", kLen},
                {type_f::kMap, "map_type", kLen},
                {type_f::kOpaque, "opaque_type", kLen},
                {type_f::kSparseTensor, "sparse_tensor_type", kLen},
                {type_f::kOptional, "optional_type", kLen}});
OSPREY_MESSAGE(kTensorTypeMsg, "TypeProto.Tensor",
               {{ttype_f::kElemType, "elem_type", kVarint}, {ttype_f::kShape, "shape", kLen}});
OSPREY_MESSAGE(kWrapTypeMsg, "TypeProto.Sequence", {{wrap_f::kElemType, "elem_type", kLen}});
OSPREY_MESSAGE(kShapeMsg, "TensorShapeProto", {{shape_f::kDim, "dim", kLen}});
OSPREY_MESSAGE(kDimMsg, "TensorShapeProto.Dimension",
               {{dim_f::kValue, "dim_value", kVarint}, {dim_f::kParam, "dim_param", kLen}});
OSPREY_MESSAGE(kSequenceMsg, "SequenceProto",
               {{seq_f::kName, "name", kLen},
                {seq_f::kElemType, "elem_type", kVarint},
                {seq_f::kTensor, "tensor_values", kLen},
                {seq_f::kSparseTensor, "sparse_tensor_values", kLen},
                {seq_f::kSequence, "sequence_values", kLen},
                {seq_f::kMap, "map_values", kLen},
                {seq_f::kOptional, "optional_values", kLen}});
OSPREY_MESSAGE(kOptionalMsg, "OptionalProto",
               {{seq_f::kName, "name", kLen},
                {seq_f::kElemType, "elem_type", kVarint},
                {seq_f::kTensor, "tensor_value", kLen},
                {seq_f::kSparseTensor, "sparse_tensor_value", kLen},
                {seq_f::kSequence, "sequence_value", kLen},
                {seq_f::kMap, "map_value", kLen},
                {seq_f::kOptional, "optional_value", kLen}});
#undef OSPREY_MESSAGE

Status parseGraph(Ctx& c, size_t begin, size_t end, GraphProto* g);
Status parseTypeProto(Ctx& c, size_t begin, size_t end, ValueInfo* vi);

// ---- TensorProto ----

// Values as they appeared on the wire; packed into TensorProto::data once data_type is known.
struct TensorWire {
  int32_t dataType = 0;
  int32_t dataLocation = 0;
  bool hasRaw = false, hasSegment = false;
  size_t rawBegin = 0, rawEnd = 0;
  std::vector<float> floats;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;
  std::vector<double> doubles;
  std::vector<uint64_t> uint64s;
};

Status parseEntry(Ctx& c, size_t begin, size_t end, std::pair<std::string, std::string>* kv) {
  Reader r(c, kEntryMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    (f.spec->number == entry_f::kKey ? kv->first : kv->second) = c.str(f.begin, f.end);
  }
}

std::string describeTensor(const TensorProto& t) {
  std::string n = t.name.empty() ? "unnamed tensor" : "tensor '" + t.name + "'";
  return n + " (" + dataTypeName(t.dtype) + " " + shapeToString(t.dims) + ")";
}

void unpackData(TensorProto* t, int64_t n) {
  std::vector<uint8_t> unpacked(static_cast<size_t>(n));
  unpackSubByte(t->dtype, t->data.data(), n, unpacked.data());
  t->data.swap(unpacked);
}

// Turns the wire values into packed bytes and checks they fill exactly the declared shape.
Status finishTensor(const Ctx& c, TensorWire& w, TensorProto* t) {
  t->rawType = w.dataType;
  t->dtype = isKnownDataType(w.dataType) ? static_cast<DataType>(w.dataType) : DataType::Undefined;
  t->external = w.dataLocation == kDataLocationExternal;
  // Checked before any message prints the shape: hostile input can declare millions of dims.
  if (t->dims.size() > kMaxTensorRank)
    return Status::invalidModel(std::string(c.what) + ": tensor '" + t->name + "' has " + std::to_string(t->dims.size()) +
                                " dimensions, more than " + std::to_string(kMaxTensorRank));
  auto fail = [&](const std::string& m) { return Status::invalidModel(std::string(c.what) + ": " + describeTensor(*t) + " " + m); };
  if (w.dataType == 0) return fail("has no data_type");  // UNDEFINED is never valid on a tensor
  for (int64_t d : t->dims)
    if (d < 0) return fail("has a negative dimension");
  int64_t n = shapeElements(t->dims);
  if (n < 0) return fail("has more elements than fit in 64 bits");
  if (w.hasSegment) return Status::unsupported(std::string(c.what) + ": " + describeTensor(*t) + " is split into segments, which Osprey does not read");
  if (t->external || t->dtype == DataType::Undefined) {
    // External bytes are loaded by the converter; unknown types are reported by it, per op.
    t->strings.clear();
    return Status::ok();
  }

  // ONNX keeps the values in exactly one field, and which one depends on data_type.
  const char* sources[2] = {nullptr, nullptr};
  int count = 0;
  auto note = [&](bool present, const char* field) {
    if (present && count++ < 2) sources[count - 1] = field;
  };
  note(w.hasRaw, "raw_data");
  note(!w.floats.empty(), "float_data");
  note(!w.int32s.empty(), "int32_data");
  note(!t->strings.empty(), "string_data");
  note(!w.int64s.empty(), "int64_data");
  note(!w.doubles.empty(), "double_data");
  note(!w.uint64s.empty(), "uint64_data");
  if (count > 1) return fail(std::string("stores values in both ") + sources[0] + " and " + sources[1]);
  std::string source = count ? sources[0] : "";

  if (t->dtype == DataType::String) {
    if (!source.empty() && source != "string_data") return fail("keeps strings in " + source + " instead of string_data");
    if (static_cast<int64_t>(t->strings.size()) != n)
      return fail("has " + std::to_string(t->strings.size()) + " strings, expected " + std::to_string(n));
    return Status::ok();
  }
  size_t es = dataTypeSize(t->dtype);
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / es) return fail("is too large to hold in memory");
  // 4- and 2-bit types are packed in the file and unpacked to a byte per element in memory.
  const int64_t stored = packedBytes(t->dtype, n);
  size_t bytes = static_cast<size_t>(stored) * es;
  const bool subByte = stored != n;

  // The typed field each data_type uses (int32_data also carries the narrow types' bit patterns).
  const char* expected = "raw_data";
  switch (t->dtype) {
    case DataType::Float32: expected = "float_data"; break;
    case DataType::Int64: expected = "int64_data"; break;
    case DataType::Float64: expected = "double_data"; break;
    case DataType::UInt32:
    case DataType::UInt64: expected = "uint64_data"; break;
    default: expected = "int32_data"; break;
  }
  if (!source.empty() && source != "raw_data" && source != expected)
    return fail("keeps values in " + source + ", but its type stores them in " + expected + " or raw_data");

  size_t have = 0;
  if (source == "raw_data") {
    have = w.rawEnd - w.rawBegin;
    if (have != bytes) return fail("has " + std::to_string(have) + " bytes of raw_data, expected " + std::to_string(bytes));
    t->data.assign(c.buf + w.rawBegin, c.buf + w.rawEnd);
    if (subByte) unpackData(t, n);
    return Status::ok();
  }
  have = w.floats.size() + w.int32s.size() + w.int64s.size() + w.doubles.size() + w.uint64s.size();
  if (have != static_cast<size_t>(stored))
    return fail("has " + std::to_string(have) + " values in " + (source.empty() ? expected : source) +
                ", expected " + std::to_string(n));
  t->data.resize(bytes);
  uint8_t* out = t->data.data();
  // Little-endian host: the low `es` bytes of each wide value are the narrow element.
  auto pack = [&](const auto& values) {
    for (size_t i = 0; i < values.size(); ++i) std::memcpy(out + i * es, &values[i], es);
  };
  pack(w.floats);
  pack(w.int32s);
  pack(w.int64s);
  pack(w.doubles);
  pack(w.uint64s);
  if (subByte) unpackData(t, n);
  return Status::ok();
}

Status parseTensorMsg(Ctx& c, size_t begin, size_t end, TensorProto* t) {
  *t = TensorProto();
  TensorWire w;
  Reader r(c, kTensorMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) break;
    switch (f.spec->number) {
      case tensor_f::kDims:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { t->dims.push_back(static_cast<int64_t>(v)); }));
        break;
      case tensor_f::kDataType: w.dataType = static_cast<int32_t>(f.bits); break;
      case tensor_f::kSegment: w.hasSegment = true; break;
      case tensor_f::kFloatData:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { w.floats.push_back(bitsToFloat(v)); }));
        break;
      case tensor_f::kInt32Data:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { w.int32s.push_back(static_cast<int32_t>(v)); }));
        break;
      case tensor_f::kStringData: t->strings.push_back(c.str(f.begin, f.end)); break;
      case tensor_f::kInt64Data:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { w.int64s.push_back(static_cast<int64_t>(v)); }));
        break;
      case tensor_f::kName: t->name = c.str(f.begin, f.end); break;
      case tensor_f::kRawData:
        w.hasRaw = true;
        w.rawBegin = f.begin;
        w.rawEnd = f.end;
        break;
      case tensor_f::kDoubleData:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { w.doubles.push_back(bitsToDouble(v)); }));
        break;
      case tensor_f::kUint64Data:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { w.uint64s.push_back(v); }));
        break;
      case tensor_f::kExternalData: {
        std::pair<std::string, std::string> kv;
        OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseEntry(c, b, e, &kv); }));
        t->externalData.push_back(std::move(kv));
        break;
      }
      case tensor_f::kDataLocation: w.dataLocation = static_cast<int32_t>(f.bits); break;
    }
  }
  return finishTensor(c, w, t);
}

// ---- AttributeProto, NodeProto ----

Status parseAttribute(Ctx& c, size_t begin, size_t end, AttributeProto* a) {
  uint32_t present = 0;  // bit per AttributeType whose value field appeared
  auto mark = [&](int type) { present |= 1u << type; };
  Reader r(c, kAttrMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) break;
    auto sub = [&](auto parse) { return nested(c, f, parse); };
    switch (f.spec->number) {
      case attr_f::kName: a->name = c.str(f.begin, f.end); break;
      case attr_f::kF: a->f = bitsToFloat(f.bits); mark(kAttrFloat); break;
      case attr_f::kI: a->i = static_cast<int64_t>(f.bits); mark(kAttrInt); break;
      case attr_f::kS: a->s = c.str(f.begin, f.end); mark(kAttrString); break;
      case attr_f::kT:
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseTensorMsg(c, b, e, &a->t); }));
        mark(kAttrTensor);
        break;
      case attr_f::kG: {
        auto g = std::make_shared<GraphProto>();
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseGraph(c, b, e, g.get()); }));
        a->g = std::move(g);
        mark(kAttrGraph);
        break;
      }
      case attr_f::kFloats:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { a->floats.push_back(bitsToFloat(v)); }));
        mark(kAttrFloats);
        break;
      case attr_f::kInts:
        OSPREY_RETURN_IF_ERROR(forEachScalar(c, f, [&](uint64_t v) { a->ints.push_back(static_cast<int64_t>(v)); }));
        mark(kAttrInts);
        break;
      case attr_f::kStrings: a->strings.push_back(c.str(f.begin, f.end)); mark(kAttrStrings); break;
      case attr_f::kTensors:
        a->tensors.emplace_back();
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseTensorMsg(c, b, e, &a->tensors.back()); }));
        mark(kAttrTensors);
        break;
      case attr_f::kGraphs: {
        auto g = std::make_shared<GraphProto>();
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseGraph(c, b, e, g.get()); }));
        a->graphs.push_back(std::move(g));
        mark(kAttrGraphs);
        break;
      }
      // Not decoded (the converter rejects these attributes), only noted for type inference.
      case attr_f::kTp: mark(kAttrTypeProto); break;
      case attr_f::kTypeProtos: mark(kAttrTypeProtos); break;
      case attr_f::kSparseTensor: mark(kAttrSparseTensor); break;
      case attr_f::kSparseTensors: mark(kAttrSparseTensors); break;
      case attr_f::kType: a->type = static_cast<int32_t>(f.bits); break;
      case attr_f::kRefAttrName: a->refAttrName = c.str(f.begin, f.end); break;
    }
  }
  // Models from before the type field existed say what they hold only by which field is set.
  if (a->type == kAttrUndefined && present != 0) a->type = std::countr_zero(present);
  return Status::ok();
}

Status parseNode(Ctx& c, size_t begin, size_t end, NodeProto* n) {
  Reader r(c, kNodeMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    switch (f.spec->number) {
      case node_f::kInput: n->inputs.push_back(c.str(f.begin, f.end)); break;
      case node_f::kOutput: n->outputs.push_back(c.str(f.begin, f.end)); break;
      case node_f::kName: n->name = c.str(f.begin, f.end); break;
      case node_f::kOpType: n->opType = c.str(f.begin, f.end); break;
      case node_f::kDomain: n->domain = c.str(f.begin, f.end); break;
      case node_f::kAttribute: {
        AttributeProto& a = n->attributes.emplace_back();
        Status s = nested(c, f, [&](size_t b, size_t e) { return parseAttribute(c, b, e, &a); });
        if (!s) return s.withContext("attribute '" + a.name + "' of node '" + n->name + "' (" + n->opType + ")");
        break;
      }
    }
  }
}

// ---- ValueInfoProto and its TypeProto ----

Status parseDim(Ctx& c, size_t begin, size_t end, int64_t* value, std::string* param) {
  *value = -1;  // neither set: an unknown, anonymous dim
  param->clear();
  Reader r(c, kDimMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    if (f.spec->number == dim_f::kValue) {
      *value = static_cast<int64_t>(f.bits);
      param->clear();
    } else {  // a oneof: the last one written wins
      *param = c.str(f.begin, f.end);
      *value = -1;
    }
  }
}

Status parseShape(Ctx& c, size_t begin, size_t end, ValueInfo* vi) {
  Reader r(c, kShapeMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    int64_t v = -1;
    std::string p;
    OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseDim(c, b, e, &v, &p); }));
    vi->dims.push_back(v);
    vi->dimParams.push_back(std::move(p));
  }
}

Status parseTensorType(Ctx& c, size_t begin, size_t end, ValueInfo* vi) {
  Reader r(c, kTensorTypeMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    if (f.spec->number == ttype_f::kElemType) {
      vi->elemType = static_cast<int32_t>(f.bits);
    } else {
      vi->hasShape = true;
      vi->dims.clear();
      vi->dimParams.clear();
      OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseShape(c, b, e, vi); }));
    }
  }
}

// Sequence and Optional wrap one TypeProto; keep the element type of the tensor inside.
Status parseWrappedType(Ctx& c, size_t begin, size_t end, ValueInfo* vi) {
  Reader r(c, kWrapTypeMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    ValueInfo inner;
    OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseTypeProto(c, b, e, &inner); }));
    vi->elemType = inner.elemType;
    // Nestings beyond optional(sequence(tensor)) are reported as maps are: not supported.
    vi->innerKind = inner.kind == ValueInfo::kOptional || (inner.kind == ValueInfo::kSequence && inner.innerKind != ValueInfo::kTensor)
                        ? ValueInfo::kOther
                        : inner.kind == ValueInfo::kMap && vi->kind == ValueInfo::kSequence ? ValueInfo::kMapOfTensors
                                                                                              : inner.kind;
  }
}

Status parseTypeProto(Ctx& c, size_t begin, size_t end, ValueInfo* vi) {
  vi->hasType = true;
  Reader r(c, kTypeMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    auto sub = [&](auto parse) { return nested(c, f, parse); };
    switch (f.spec->number) {
      case type_f::kTensor:
      case type_f::kSparseTensor:
        vi->kind = f.spec->number == type_f::kTensor ? ValueInfo::kTensor : ValueInfo::kSparseTensor;
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseTensorType(c, b, e, vi); }));
        break;
      case type_f::kSequence:
      case type_f::kOptional:
        vi->kind = f.spec->number == type_f::kSequence ? ValueInfo::kSequence : ValueInfo::kOptional;
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseWrappedType(c, b, e, vi); }));
        break;
      case type_f::kMap: vi->kind = ValueInfo::kMap; break;
      case type_f::kOpaque: vi->kind = ValueInfo::kOther; break;
    }
  }
}

Status parseValueInfo(Ctx& c, size_t begin, size_t end, ValueInfo* vi) {
  Reader r(c, kValueInfoMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    if (f.spec->number == vinfo_f::kName) {
      vi->name = c.str(f.begin, f.end);
    } else {
      Status s = nested(c, f, [&](size_t b, size_t e) { return parseTypeProto(c, b, e, vi); });
      if (!s) return s.withContext("type of value '" + vi->name + "'");
    }
  }
}

// ---- GraphProto, ModelProto ----

Status parseGraph(Ctx& c, size_t begin, size_t end, GraphProto* g) {
  Reader r(c, kGraphMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    auto sub = [&](auto parse) { return nested(c, f, parse); };
    switch (f.spec->number) {
      case graph_f::kNode: {
        NodeProto& n = g->nodes.emplace_back();
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseNode(c, b, e, &n); }));
        break;
      }
      case graph_f::kName: g->name = c.str(f.begin, f.end); break;
      case graph_f::kInitializer: {
        TensorProto& t = g->initializers.emplace_back();
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseTensorMsg(c, b, e, &t); }));
        break;
      }
      case graph_f::kInput:
      case graph_f::kOutput:
      case graph_f::kValueInfo: {
        auto& list = f.spec->number == graph_f::kInput ? g->inputs : f.spec->number == graph_f::kOutput ? g->outputs : g->valueInfo;
        ValueInfo& vi = list.emplace_back();
        OSPREY_RETURN_IF_ERROR(sub([&](size_t b, size_t e) { return parseValueInfo(c, b, e, &vi); }));
        break;
      }
    }
  }
}

Status parseOpset(Ctx& c, size_t begin, size_t end, OpsetImport* o) {
  Reader r(c, kOpsetMsg, begin, end);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    if (f.spec->number == opset_f::kDomain)
      o->domain = c.str(f.begin, f.end);
    else
      o->version = static_cast<int64_t>(f.bits);
  }
}

Status parseModelMsg(Ctx& c, ModelProto* m) {
  bool hasGraph = false, hasIrVersion = false;
  Reader r(c, kModelMsg, 0, c.size);
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) break;
    switch (f.spec->number) {
      case model_f::kIrVersion:
        m->irVersion = static_cast<int64_t>(f.bits);
        hasIrVersion = true;
        break;
      case model_f::kProducerName: m->producerName = c.str(f.begin, f.end); break;
      case model_f::kProducerVersion: m->producerVersion = c.str(f.begin, f.end); break;
      case model_f::kGraph:
        m->graph = GraphProto();
        OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseGraph(c, b, e, &m->graph); }));
        hasGraph = true;
        break;
      case model_f::kOpsetImport: {
        OpsetImport& o = m->opsets.emplace_back();
        OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseOpset(c, b, e, &o); }));
        break;
      }
    }
  }
  if (!hasGraph) return Status::invalidModel("not an ONNX model: no graph");
  if (!hasIrVersion) return Status::invalidModel("not an ONNX model: no ir_version");
  // As the ONNX checker rules: opset_import is required from IR version 3; before, opset 1 is implied.
  if (m->opsets.empty()) {
    if (m->irVersion >= 3)
      return Status::invalidModel("invalid ONNX model: no opset_import (required from IR version 3, model has " +
                                  std::to_string(m->irVersion) + ")");
    m->opsets.push_back({"", 1});
  }
  return Status::ok();
}

// Parsing allocates in proportion to the input; a huge input may still exhaust memory, and
// that must come back as a Status rather than escape as an exception.
template <class Fn>
Status guarded(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Status::outOfMemory(std::string("out of memory while reading ") + what);
  } catch (const std::exception& e) {
    return Status::internal(std::string("unexpected error while reading ") + what + ": " + e.what());
  }
}

Status readFile(const std::string& path, std::vector<uint8_t>* out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::notFound("cannot open '" + path + "': no such file");
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::invalidArgument("cannot read '" + path + "': " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::notFound("cannot open '" + path + "'");
  out->resize(static_cast<size_t>(size));
  if (size && !in.read(reinterpret_cast<char*>(out->data()), static_cast<std::streamsize>(size)))
    return Status::invalidArgument("cannot read '" + path + "': read failed");
  return Status::ok();
}

}  // namespace

const AttributeProto* NodeProto::attr(std::string_view attrName) const {
  for (const AttributeProto& a : attributes)
    if (a.name == attrName) return &a;
  return nullptr;
}

int64_t ModelProto::opsetFor(std::string_view domain) const {
  auto canonical = [](std::string_view d) { return d == "ai.onnx" ? std::string_view() : d; };
  for (const OpsetImport& o : opsets)
    if (canonical(o.domain) == canonical(domain)) return o.version;
  return -1;
}

Status parseModel(const uint8_t* data, size_t size, ModelProto* out) {
  if (!out) return Status::invalidArgument("parseModel: null output");
  *out = ModelProto();
  if (size == 0) return Status::invalidModel("not an ONNX model: empty buffer");
  if (!data) return Status::invalidArgument("parseModel: null data");
  return guarded("ONNX model", [&] {
    Ctx c{data, size, "ONNX model", kMaxNestingDepth};
    ModelProto m;  // filled aside so that a failure leaves *out empty, never half-parsed
    OSPREY_RETURN_IF_ERROR(parseModelMsg(c, &m));
    *out = std::move(m);
    return Status::ok();
  });
}

Status parseTensor(const uint8_t* data, size_t size, TensorProto* out) {
  if (!out) return Status::invalidArgument("parseTensor: null output");
  *out = TensorProto();
  // An empty TensorProto is valid protobuf, but an empty tensor file is always a mistake.
  if (size == 0) return Status::invalidModel("not an ONNX tensor: empty buffer");
  if (!data) return Status::invalidArgument("parseTensor: null data");
  return guarded("ONNX tensor", [&] {
    Ctx c{data, size, "ONNX tensor", kMaxNestingDepth};
    TensorProto t;
    OSPREY_RETURN_IF_ERROR(parseTensorMsg(c, 0, size, &t));
    *out = std::move(t);
    return Status::ok();
  });
}

namespace {

// A SequenceProto's tensors, or an OptionalProto's one value (a tensor or a sequence of them).
Status parseValueMsg(Ctx& c, size_t begin, size_t end, bool optional, ValueProto* v) {
  const char* what = optional ? "OptionalProto" : "SequenceProto";
  Reader r(c, optional ? kOptionalMsg : kSequenceMsg, begin, end);
  int32_t elemType = 0;
  bool held = false;
  for (Field f;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) break;
    switch (f.spec->number) {
      case seq_f::kElemType: elemType = static_cast<int32_t>(f.bits); break;
      case seq_f::kTensor:
        if (optional && held) return Status::invalidModel(std::string(what) + " holds more than one value");
        v->tensors.emplace_back();
        OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseTensorMsg(c, b, e, &v->tensors.back()); }));
        held = true;
        break;
      case seq_f::kSequence: {
        if (!optional) return Status::unsupported("a SequenceProto of sequences: Osprey holds sequences of tensors only");
        if (held) return Status::invalidModel(std::string(what) + " holds more than one value");
        ValueProto inner;
        OSPREY_RETURN_IF_ERROR(nested(c, f, [&](size_t b, size_t e) { return parseValueMsg(c, b, e, false, &inner); }));
        v->tensors = std::move(inner.tensors);
        v->isSequence = held = true;
        break;
      }
      case seq_f::kSparseTensor:
      case seq_f::kMap:
      case seq_f::kOptional:
        return Status::unsupported(std::string(what) + " field '" + f.spec->name + "': Osprey holds tensors and sequences of tensors only");
      default: break;
    }
  }
  if (!optional) {
    if (elemType != seq_f::kElemTensor && !(elemType == 0 && v->tensors.empty()))
      return Status::unsupported("SequenceProto of elem_type " + std::to_string(elemType) + ": Osprey holds sequences of tensors only");
    v->kind = ValueProto::kSequence;
    v->isSequence = true;
    return Status::ok();
  }
  v->kind = ValueProto::kOptional;
  v->hasValue = held;
  if (held && elemType != (v->isSequence ? seq_f::kElemSequence : seq_f::kElemTensor))
    return Status::invalidModel("OptionalProto's elem_type " + std::to_string(elemType) + " does not name the value it holds");
  return Status::ok();
}

}  // namespace

Status parseValue(const uint8_t* data, size_t size, int kind, ValueProto* out) {
  if (!out) return Status::invalidArgument("parseValue: null output");
  *out = ValueProto();
  if (kind != ValueProto::kSequence && kind != ValueProto::kOptional)
    return Status::invalidArgument("parseValue reads a SequenceProto or an OptionalProto");
  if (!data && size) return Status::invalidArgument("parseValue: null data");
  const char* what = kind == ValueProto::kSequence ? "ONNX sequence" : "ONNX optional";
  return guarded(what, [&] {
    Ctx c{data, size, what, kMaxNestingDepth};
    ValueProto v;
    OSPREY_RETURN_IF_ERROR(parseValueMsg(c, 0, size, kind == ValueProto::kOptional, &v));
    *out = std::move(v);
    return Status::ok();
  });
}

Status loadModelFile(const std::string& path, ModelProto* out) {
  if (!out) return Status::invalidArgument("loadModelFile: null output");
  *out = ModelProto();
  return guarded("ONNX model", [&] {
    std::vector<uint8_t> bytes;
    OSPREY_RETURN_IF_ERROR(readFile(path, &bytes));
    return parseModel(bytes.data(), bytes.size(), out).withContext(path);
  });
}

Status loadTensorFile(const std::string& path, TensorProto* out) {
  if (!out) return Status::invalidArgument("loadTensorFile: null output");
  *out = TensorProto();
  return guarded("ONNX tensor", [&] {
    std::vector<uint8_t> bytes;
    OSPREY_RETURN_IF_ERROR(readFile(path, &bytes));
    return parseTensor(bytes.data(), bytes.size(), out).withContext(path);
  });
}

}  // namespace osprey::onnx
