// The GraphDef reader (tf_proto.h).
#include "converter/tensorflow/tf_proto.h"

#include <cstring>

#include "converter/proto_wire.h"

namespace osprey::tf {

DataType dataTypeOf(int32_t t) {
  switch (t) {
    case DT_FLOAT: return DataType::Float32;
    case DT_DOUBLE: return DataType::Float64;
    case DT_INT32: return DataType::Int32;
    case DT_UINT8: return DataType::UInt8;
    case DT_INT16: return DataType::Int16;
    case DT_INT8: return DataType::Int8;
    case DT_STRING: return DataType::String;
    case DT_INT64: return DataType::Int64;
    case DT_BOOL: return DataType::Bool;
    case DT_BFLOAT16: return DataType::BFloat16;
    case DT_UINT16: return DataType::UInt16;
    case DT_HALF: return DataType::Float16;
    case DT_UINT32: return DataType::UInt32;
    case DT_UINT64: return DataType::UInt64;
    default: return DataType::Undefined;
  }
}

std::string tfTypeName(int32_t t) {
  static const char* names[] = {"DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16",
                                "DT_INT8", "DT_STRING", "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8",
                                "DT_QUINT8", "DT_QINT32", "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16", "DT_UINT16",
                                "DT_COMPLEX128", "DT_HALF", "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64"};
  if (t >= 0 && t < static_cast<int32_t>(std::size(names))) return names[t];
  return "DataType " + std::to_string(t);
}

namespace {

using wire::Ctx;
using wire::Field;
using wire::FieldSpec;
using wire::MessageSpec;
using wire::Reader;

constexpr FieldSpec kGraphFields[] = {{1, "node", wire::kLen}, {2, "library", wire::kLen}};
constexpr MessageSpec kGraph = {"GraphDef", kGraphFields, 2};
constexpr FieldSpec kLibraryFields[] = {{1, "function", wire::kLen}};
constexpr MessageSpec kLibrary = {"FunctionDefLibrary", kLibraryFields, 1};
constexpr FieldSpec kFunctionFields[] = {{1, "signature", wire::kLen}, {3, "node_def", wire::kLen}, {4, "ret", wire::kLen}};
constexpr MessageSpec kFunction = {"FunctionDef", kFunctionFields, 3};
constexpr FieldSpec kOpDefFields[] = {{1, "name", wire::kLen}, {2, "input_arg", wire::kLen}, {3, "output_arg", wire::kLen}};
constexpr MessageSpec kOpDef = {"OpDef", kOpDefFields, 3};
constexpr FieldSpec kArgDefFields[] = {{1, "name", wire::kLen}};
constexpr MessageSpec kArgDef = {"OpDef.ArgDef", kArgDefFields, 1};
constexpr FieldSpec kRetFields[] = {{1, "key", wire::kLen}, {2, "value", wire::kLen}};
constexpr MessageSpec kRet = {"FunctionDef.RetEntry", kRetFields, 2};
constexpr FieldSpec kNodeFields[] = {{1, "name", wire::kLen}, {2, "op", wire::kLen}, {3, "input", wire::kLen},
                                     {5, "attr", wire::kLen}};
constexpr MessageSpec kNode = {"NodeDef", kNodeFields, 4};
constexpr FieldSpec kEntryFields[] = {{1, "key", wire::kLen}, {2, "value", wire::kLen}};
constexpr MessageSpec kEntry = {"NodeDef.AttrEntry", kEntryFields, 2};
constexpr FieldSpec kAttrFields[] = {{1, "list", wire::kLen},     {2, "s", wire::kLen},     {3, "i", wire::kVarint},
                                     {4, "f", wire::kFixed32},    {5, "b", wire::kVarint},  {6, "type", wire::kVarint},
                                     {7, "shape", wire::kLen},    {8, "tensor", wire::kLen}, {10, "func", wire::kLen}};
constexpr MessageSpec kAttr = {"AttrValue", kAttrFields, 9};
constexpr FieldSpec kListFields[] = {{2, "s", wire::kLen},
                                     {3, "i", wire::kVarint, true},
                                     {4, "f", wire::kFixed32, true},
                                     {5, "b", wire::kVarint, true},
                                     {6, "type", wire::kVarint, true},
                                     {7, "shape", wire::kLen}};
constexpr MessageSpec kList = {"AttrValue.ListValue", kListFields, 6};
constexpr FieldSpec kNameAttrFields[] = {{1, "name", wire::kLen}};
constexpr MessageSpec kNameAttr = {"NameAttrList", kNameAttrFields, 1};
constexpr FieldSpec kShapeFields[] = {{2, "dim", wire::kLen}, {3, "unknown_rank", wire::kVarint}};
constexpr MessageSpec kShape = {"TensorShapeProto", kShapeFields, 2};
constexpr FieldSpec kDimFields[] = {{1, "size", wire::kVarint}};
constexpr MessageSpec kDim = {"TensorShapeProto.Dim", kDimFields, 1};
constexpr FieldSpec kTensorFields[] = {
    {1, "dtype", wire::kVarint},          {2, "tensor_shape", wire::kLen},    {4, "tensor_content", wire::kLen},
    {5, "float_val", wire::kFixed32, true}, {6, "double_val", wire::kFixed64, true}, {7, "int_val", wire::kVarint, true},
    {8, "string_val", wire::kLen},        {10, "int64_val", wire::kVarint, true}, {11, "bool_val", wire::kVarint, true},
    {13, "half_val", wire::kVarint, true}, {16, "uint32_val", wire::kVarint, true},
    {17, "uint64_val", wire::kVarint, true}};
constexpr MessageSpec kTensor = {"TensorProto", kTensorFields, 12};

// A constant given by fewer values than its shape holds repeats the last one; this bounds what
// such a splat may expand to, so that a few bytes of input cannot ask for gigabytes.
constexpr int64_t kMaxSplatElements = int64_t{1} << 26;
constexpr int64_t kMaxDim = int64_t{1} << 40;

template <class Fn>
Status eachField(Ctx& c, const MessageSpec& spec, size_t begin, size_t end, Fn&& fn) {
  Reader r(c, spec, begin, end);
  Field f;
  for (;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    OSPREY_RETURN_IF_ERROR(fn(f));
  }
}

Status parseShape(Ctx& c, size_t begin, size_t end, TensorShape* out) {
  return eachField(c, kShape, begin, end, [&](const Field& f) -> Status {
    if (f.spec->number == 3) {
      out->unknownRank = f.bits != 0;
      return Status::ok();
    }
    int64_t size = 0;
    OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) {
      return eachField(c, kDim, b, e, [&](const Field& d) {
        size = static_cast<int64_t>(d.bits);
        return Status::ok();
      });
    }));
    if (size < -1 || size > kMaxDim) return c.malformed("dimension " + std::to_string(size) + " is out of range", f.offset);
    out->dims.push_back(size);
    return Status::ok();
  });
}

// Values given in a typed field, stored as `T` in the tensor's bytes.
template <class T>
void pushValue(TfTensor* t, T v) {
  const size_t at = t->bytes.size();
  t->bytes.resize(at + sizeof(T));
  std::memcpy(t->bytes.data() + at, &v, sizeof(T));
}

Status parseTensor(Ctx& c, size_t begin, size_t end, TfTensor* out) {
  TensorShape shape;
  bool content = false;
  size_t typedCount = 0;
  std::vector<uint64_t> raw;  // typed values, converted once the dtype is known
  std::vector<double> reals;
  OSPREY_RETURN_IF_ERROR(eachField(c, kTensor, begin, end, [&](const Field& f) -> Status {
    const uint32_t n = f.spec->number;
    if (n == 1) out->tfType = static_cast<int32_t>(f.bits);
    else if (n == 2) return wire::nested(c, f, [&](size_t b, size_t e) { return parseShape(c, b, e, &shape); });
    else if (n == 4) {
      content = true;
      out->bytes.assign(c.buf + f.begin, c.buf + f.end);
    } else if (n == 8) out->strings.push_back(c.str(f.begin, f.end));
    else if (n == 5) return wire::forEachScalar(c, f, [&](uint64_t v) { reals.push_back(wire::bitsToFloat(v)); });
    else if (n == 6) return wire::forEachScalar(c, f, [&](uint64_t v) { reals.push_back(wire::bitsToDouble(v)); });
    else return wire::forEachScalar(c, f, [&](uint64_t v) { raw.push_back(v); });
    return Status::ok();
  }));
  if (shape.unknownRank) return c.malformed("a constant tensor has an unknown rank", begin);
  int64_t elements = 1;
  for (int64_t d : shape.dims) {
    if (d < 0) return c.malformed("a constant tensor has an unknown dimension", begin);
    out->shape.push_back(d);
    elements = d == 0 ? 0 : elements;
    if (d > 0 && elements > (int64_t{1} << 40) / d) return c.malformed("a constant tensor has too many elements", begin);
    elements *= d;
  }
  const DataType dt = dataTypeOf(out->tfType);
  // Products of dimensions (strides, a filter's channels) must fit, even beside a zero.
  if (!shapeBytesFit(out->shape, dt == DataType::Undefined || dt == DataType::String ? 1 : dataTypeSize(dt)))
    return c.malformed("a constant of shape " + shapeToString(out->shape) + " is too large", begin);
  if (out->tfType == DT_STRING) {
    if (static_cast<int64_t>(out->strings.size()) == elements) return Status::ok();
    if (out->strings.size() == 1 && elements <= kMaxSplatElements) {
      out->strings.resize(static_cast<size_t>(elements), out->strings[0]);
      return Status::ok();
    }
    return c.malformed("a string constant of " + std::to_string(elements) + " elements has " +
                           std::to_string(out->strings.size()) + " values",
                       begin);
  }
  if (dt == DataType::Undefined) return Status::ok();  // kept for the importer to name the op
  const size_t width = dataTypeSize(dt);
  if (content) {
    if (out->bytes.size() != static_cast<size_t>(elements) * width)
      return c.malformed("tensor_content of " + std::to_string(out->bytes.size()) + " bytes does not fit " +
                             tfTypeName(out->tfType) + " " + shapeToString(out->shape),
                         begin);
    return Status::ok();
  }
  typedCount = dt == DataType::Float32 || dt == DataType::Float64 ? reals.size() : raw.size();
  if (typedCount > static_cast<size_t>(elements))
    return c.malformed("a constant of " + std::to_string(elements) + " elements has " + std::to_string(typedCount) +
                           " values",
                       begin);
  if (typedCount < static_cast<size_t>(elements) && elements > kMaxSplatElements)
    return c.malformed("a constant of " + std::to_string(elements) + " elements is given by " +
                           std::to_string(typedCount) + " values",
                       begin);
  out->bytes.clear();
  out->bytes.reserve(static_cast<size_t>(elements) * width);
  for (int64_t i = 0; i < elements; ++i) {
    // Missing values repeat the last one given (zero when none is), as TensorFlow reads them.
    const size_t k = typedCount == 0 ? 0 : std::min(static_cast<size_t>(i), typedCount - 1);
    const uint64_t v = k < raw.size() ? raw[k] : 0;
    const double r = k < reals.size() ? reals[k] : 0.0;
    switch (dt) {
      case DataType::Float32: pushValue(out, static_cast<float>(r)); break;
      case DataType::Float64: pushValue(out, r); break;
      case DataType::Int32: pushValue(out, static_cast<int32_t>(v)); break;
      case DataType::Int64: pushValue(out, static_cast<int64_t>(v)); break;
      case DataType::UInt32: pushValue(out, static_cast<uint32_t>(v)); break;
      case DataType::UInt64: pushValue(out, v); break;
      case DataType::Int16: pushValue(out, static_cast<int16_t>(v)); break;
      case DataType::UInt16:
      case DataType::Float16:
      case DataType::BFloat16: pushValue(out, static_cast<uint16_t>(v)); break;
      case DataType::Int8: pushValue(out, static_cast<int8_t>(v)); break;
      case DataType::UInt8: pushValue(out, static_cast<uint8_t>(v)); break;
      case DataType::Bool: pushValue(out, static_cast<uint8_t>(v != 0)); break;
      default: return Status::unsupported("constant of type " + tfTypeName(out->tfType));
    }
  }
  return Status::ok();
}

Status parseList(Ctx& c, size_t begin, size_t end, AttrValue* a) {
  return eachField(c, kList, begin, end, [&](const Field& f) -> Status {
    switch (f.spec->number) {
      case 2: a->listS.push_back(c.str(f.begin, f.end)); return Status::ok();
      case 3: return wire::forEachScalar(c, f, [&](uint64_t v) { a->listI.push_back(static_cast<int64_t>(v)); });
      case 4: return wire::forEachScalar(c, f, [&](uint64_t v) { a->listF.push_back(wire::bitsToFloat(v)); });
      case 5: return wire::forEachScalar(c, f, [&](uint64_t v) { a->listI.push_back(v != 0); });
      case 6: return wire::forEachScalar(c, f, [&](uint64_t v) { a->listType.push_back(static_cast<int32_t>(v)); });
      default:
        a->listShape.emplace_back();
        return wire::nested(c, f, [&](size_t b, size_t e) { return parseShape(c, b, e, &a->listShape.back()); });
    }
  });
}

Status parseAttr(Ctx& c, size_t begin, size_t end, AttrValue* a) {
  return eachField(c, kAttr, begin, end, [&](const Field& f) -> Status {
    switch (f.spec->number) {
      case 1: a->kind = AttrValue::Kind::List; return wire::nested(c, f, [&](size_t b, size_t e) { return parseList(c, b, e, a); });
      case 2: a->kind = AttrValue::Kind::S; a->s = c.str(f.begin, f.end); return Status::ok();
      case 3: a->kind = AttrValue::Kind::I; a->i = static_cast<int64_t>(f.bits); return Status::ok();
      case 4: a->kind = AttrValue::Kind::F; a->f = wire::bitsToFloat(f.bits); return Status::ok();
      case 5: a->kind = AttrValue::Kind::B; a->b = f.bits != 0; return Status::ok();
      case 6: a->kind = AttrValue::Kind::Type; a->type = static_cast<int32_t>(f.bits); return Status::ok();
      case 7: a->kind = AttrValue::Kind::Shape; return wire::nested(c, f, [&](size_t b, size_t e) { return parseShape(c, b, e, &a->shape); });
      case 8:
        a->kind = AttrValue::Kind::Tensor;
        a->tensor = std::make_shared<TfTensor>();
        return wire::nested(c, f, [&](size_t b, size_t e) { return parseTensor(c, b, e, a->tensor.get()); });
      default:
        a->kind = AttrValue::Kind::Func;
        return wire::nested(c, f, [&](size_t b, size_t e) {
          return eachField(c, kNameAttr, b, e, [&](const Field& n) {
            a->func = c.str(n.begin, n.end);
            return Status::ok();
          });
        });
    }
  });
}

Status parseNode(Ctx& c, size_t begin, size_t end, NodeDef* node) {
  return eachField(c, kNode, begin, end, [&](const Field& f) -> Status {
    switch (f.spec->number) {
      case 1: node->name = c.str(f.begin, f.end); return Status::ok();
      case 2: node->op = c.str(f.begin, f.end); return Status::ok();
      case 3: node->inputs.push_back(c.str(f.begin, f.end)); return Status::ok();
      default: {
        std::string key;
        AttrValue value;
        OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) {
          return eachField(c, kEntry, b, e, [&](const Field& k) -> Status {
            if (k.spec->number == 1) {
              key = c.str(k.begin, k.end);
              return Status::ok();
            }
            return wire::nested(c, k, [&](size_t vb, size_t ve) { return parseAttr(c, vb, ve, &value); });
          });
        }));
        node->attrs[key] = std::move(value);
        return Status::ok();
      }
    }
  });
}

Status parseFunction(Ctx& c, size_t begin, size_t end, FunctionDef* fn) {
  return eachField(c, kFunction, begin, end, [&](const Field& f) -> Status {
    if (f.spec->number == 1)
      return wire::nested(c, f, [&](size_t b, size_t e) {
        return eachField(c, kOpDef, b, e, [&](const Field& sig) -> Status {
          if (sig.spec->number == 1) {
            fn->name = c.str(sig.begin, sig.end);
            return Status::ok();
          }
          std::vector<std::string>& args = sig.spec->number == 2 ? fn->inputArgs : fn->outputArgs;
          args.emplace_back();
          return wire::nested(c, sig, [&](size_t ab, size_t ae) {
            return eachField(c, kArgDef, ab, ae, [&](const Field& name) {
              args.back() = c.str(name.begin, name.end);
              return Status::ok();
            });
          });
        });
      });
    if (f.spec->number == 3) {
      fn->nodes.emplace_back();
      return wire::nested(c, f, [&](size_t b, size_t e) { return parseNode(c, b, e, &fn->nodes.back()); });
    }
    std::string key, value;
    OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) {
      return eachField(c, kRet, b, e, [&](const Field& k) {
        (k.spec->number == 1 ? key : value) = c.str(k.begin, k.end);
        return Status::ok();
      });
    }));
    fn->ret[key] = value;
    return Status::ok();
  });
}

}  // namespace

Status parseGraphDef(const uint8_t* data, size_t size, GraphDef* out) {
  *out = GraphDef();
  Ctx c{data, size, "TensorFlow GraphDef", 24};
  return eachField(c, kGraph, 0, size, [&](const Field& f) -> Status {
    if (f.spec->number == 2)
      return wire::nested(c, f, [&](size_t b, size_t e) {
        return eachField(c, kLibrary, b, e, [&](const Field& fn) {
          out->library.emplace_back();
          return wire::nested(c, fn, [&](size_t fb, size_t fe) { return parseFunction(c, fb, fe, &out->library.back()); });
        });
      });
    NodeDef node;
    OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) { return parseNode(c, b, e, &node); }));
    out->nodes.push_back(std::move(node));
    return Status::ok();
  });
}

Status parseTensorShape(const uint8_t* data, size_t size, const char* what, TensorShape* out) {
  *out = TensorShape();
  Ctx c{data, size, what, 4};
  return parseShape(c, 0, size, out);
}

}  // namespace osprey::tf
