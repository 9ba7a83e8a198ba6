// Ops that make tensors from shapes and attributes: Shape, ConstantOfShape, Range, Constant.
// Their outputs depend on nothing but shapes and known values, so sessions fold them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/op_util.h"

namespace osprey {

namespace {

// Shape-15: start and end are clamped into [0, rank] after adding rank to negatives.
void shapeRange(const Node& node, int64_t rank, int64_t* start, int64_t* end) {
  auto clampAxis = [rank](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
  *start = clampAxis(node.getInt("start", 0));
  *end = node.hasAttr("end") ? clampAxis(node.getInt("end", rank)) : rank;
}

Status shapeShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  int64_t start, end;
  shapeRange(node, inputs[0].rank(), &start, &end);
  outputs[0].dtype = DataType::Int64;
  outputs[0].shape = {std::max<int64_t>(end - start, 0)};
  return Status::ok();
}

Status shapeReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool*) {
  int64_t start, end;
  shapeRange(node, inputs[0].rank(), &start, &end);
  for (int64_t d = start; d < end; ++d) outputs[0].as<int64_t>()[d - start] = inputs[0].shape[d];
  return Status::ok();
}

// The single element of a tensor attribute, checked against its dtype.
Status tensorAttribute(const Attribute& a, const TensorInfo** out) {
  if (a.kind != Attribute::Kind::Tensor || !a.tensor)
    return Status::invalidModel("attribute '" + a.name + "' must be a tensor");
  const TensorInfo& t = *a.tensor;
  if (t.dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  if (dataTypeSize(t.dtype) == 0) return Status::invalidModel("attribute '" + a.name + "' has dtype " + dataTypeName(t.dtype));
  for (int64_t d : t.shape)
    if (d < 0) return Status::invalidModel("attribute '" + a.name + "' has shape " + shapeToString(t.shape));
  const size_t bytes = static_cast<size_t>(shapeElements(t.shape)) * dataTypeSize(t.dtype);
  if (t.data.size != bytes || (bytes > 0 && !t.data.bytes))
    return Status::invalidModel("attribute '" + a.name + "' holds " + std::to_string(t.data.size) + " bytes; its shape " +
                                shapeToString(t.shape) + " needs " + std::to_string(bytes));
  *out = &t;
  return Status::ok();
}

Status constantOfShapeShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].rank() != 1) return Status::invalidModel("input must be 1-D, got shape " + shapeToString(inputs[0].shape));
  if (inputs[0].dtype != DataType::Int64) return Status::invalidModel("input must be int64, not " + std::string(dataTypeName(inputs[0].dtype)));
  std::vector<int64_t> shape;
  OSPREY_RETURN_IF_ERROR(inputs[0].readInts(&shape, "input"));
  for (int64_t d : shape)
    if (d < 0) return Status::invalidModel("shape " + shapeToString(shape) + " has a negative dimension");
  outputs[0].dtype = DataType::Float32;
  if (const Attribute* a = node.attr("value")) {
    const TensorInfo* t;
    OSPREY_RETURN_IF_ERROR(tensorAttribute(*a, &t));
    if (shapeElements(t->shape) != 1)
      return Status::invalidModel("value must hold exactly one element, got shape " + shapeToString(t->shape));
    outputs[0].dtype = t->dtype;
  }
  outputs[0].shape = shape;
  return Status::ok();
}

Status constantOfShapeReference(const Node& node, const TensorViews&, TensorViews& outputs, ThreadPool*) {
  const size_t elem = dataTypeSize(outputs[0].dtype);
  const Attribute* a = node.attr("value");
  if (!a) {  // the default: float 0
    std::memset(outputs[0].data, 0, outputs[0].bytes());
    return Status::ok();
  }
  const TensorInfo* t;
  OSPREY_RETURN_IF_ERROR(tensorAttribute(*a, &t));
  auto* dst = static_cast<uint8_t*>(outputs[0].data);
  for (int64_t i = 0; i < outputs[0].elements(); ++i) std::memcpy(dst + i * elem, t->data.bytes.get(), elem);
  return Status::ok();
}

// Range: start + i * delta for i in [0, ceil((limit - start) / delta)).
Status rangeShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  const DataType dt = inputs[0].dtype;
  for (int i = 0; i < 3; ++i) {
    if (!inputs[i].hasValue()) return Status::invalidArgument("input " + std::to_string(i) + " must be known when shapes are computed");
    if (inputs[i].elements() != 1)
      return Status::invalidModel("input " + std::to_string(i) + " must be a scalar, got shape " + shapeToString(inputs[i].shape));
    if (inputs[i].dtype != dt)
      return Status::invalidModel("start, limit and delta must share a dtype; input " + std::to_string(i) + " is " +
                                  dataTypeName(inputs[i].dtype) + ", start is " + dataTypeName(dt));
  }
  if (dt == DataType::Bool || dataTypeSize(dt) == 0) return Status::unsupported(dtypeError(inputs[0], "start"));
  int64_t count = 0;
  Status st = Status::ok();
  dispatchNumeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const C start = inputs[0].as<const T>()[0], limit = inputs[1].as<const T>()[0], delta = inputs[2].as<const T>()[0];
    if (delta == C(0)) {
      st = Status::invalidModel("delta is zero");
      return;
    }
    if constexpr (std::is_integral_v<C>) {
      // Exact integer count; __int128 keeps limit - start from overflowing.
      const __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start), d = delta;
      const __int128 n = (span > 0) == (d > 0) && span != 0 ? (span + d + (d > 0 ? -1 : 1)) / d : 0;
      if (n > std::numeric_limits<int64_t>::max()) {  // INT64_MIN to INT64_MAX by 1: 2^64 - 1 values
        st = Status::invalidModel("start, limit and delta give more than INT64_MAX values");
        return;
      }
      count = static_cast<int64_t>(n);
    } else {
      const double n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
      // 2^63 and beyond would not survive the cast to int64.
      if (!std::isfinite(n) || n >= 9223372036854775808.0) {
        st = Status::invalidModel("start, limit and delta do not give a length that int64 holds");
        return;
      }
      count = n > 0 ? static_cast<int64_t>(n) : 0;
    }
  });
  OSPREY_RETURN_IF_ERROR(st);
  outputs[0].dtype = dt;
  outputs[0].shape = {count};
  return Status::ok();
}

Status rangeReference(const Node&, const TensorViews& inputs, TensorViews& outputs, ThreadPool*) {
  dispatchNumeric(inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    T* out = outputs[0].as<T>();
    if constexpr (std::is_integral_v<T>) {  // modular 64-bit arithmetic: i does not fit narrow types
      const auto start = static_cast<uint64_t>(inputs[0].as<const T>()[0]);
      const auto delta = static_cast<uint64_t>(inputs[2].as<const T>()[0]);
      for (int64_t i = 0; i < outputs[0].elements(); ++i) out[i] = static_cast<T>(start + static_cast<uint64_t>(i) * delta);
    } else {
      const C start = inputs[0].as<const T>()[0], delta = inputs[2].as<const T>()[0];
      for (int64_t i = 0; i < outputs[0].elements(); ++i) out[i] = static_cast<T>(start + static_cast<C>(i) * delta);
    }
  });
  return Status::ok();
}

// Constant: exactly one of value, value_float(s), value_int(s), value_string(s), sparse_value.
Status constantSource(const Node& node, const Attribute** out) {
  static const char* const kNames[] = {"value", "value_float", "value_floats", "value_int", "value_ints",
                                       "value_string", "value_strings", "sparse_value"};
  *out = nullptr;
  for (const char* name : kNames) {
    if (const Attribute* a = node.attr(name)) {
      if (*out) return Status::invalidModel("has both '" + (*out)->name + "' and '" + a->name + "'; exactly one is allowed");
      *out = a;
    }
  }
  if (!*out) return Status::invalidModel("needs one of the attributes value, value_float(s), value_int(s), value_string(s)");
  const std::string& name = (*out)->name;
  if (name == "sparse_value") return Status::unsupported("sparse_value is not supported");
  if (name == "value_string" || name == "value_strings") return Status::unsupported("string constants are not supported here yet");
  return Status::ok();
}

Status constantShape(const Node& node, const TensorViews&, TensorViews& outputs) {
  const Attribute* a;
  OSPREY_RETURN_IF_ERROR(constantSource(node, &a));
  if (a->name == "value") {
    const TensorInfo* t;
    OSPREY_RETURN_IF_ERROR(tensorAttribute(*a, &t));
    outputs[0].dtype = t->dtype;
    outputs[0].shape = t->shape;
  } else if (a->name == "value_float" || a->name == "value_floats") {
    outputs[0].dtype = DataType::Float32;
    outputs[0].shape = a->name == "value_float" ? Shape{} : Shape{static_cast<int64_t>(a->floats.size())};
  } else {
    outputs[0].dtype = DataType::Int64;
    outputs[0].shape = a->name == "value_int" ? Shape{} : Shape{static_cast<int64_t>(a->ints.size())};
  }
  return Status::ok();
}

Status constantReference(const Node& node, const TensorViews&, TensorViews& outputs, ThreadPool*) {
  const Attribute* a;
  OSPREY_RETURN_IF_ERROR(constantSource(node, &a));
  void* dst = outputs[0].data;
  if (a->name == "value") {
    const TensorInfo* t;
    OSPREY_RETURN_IF_ERROR(tensorAttribute(*a, &t));
    if (t->data.size) std::memcpy(dst, t->data.bytes.get(), t->data.size);
  } else if (a->name == "value_float") {
    *static_cast<float*>(dst) = node.getFloat("value_float", 0.f);
  } else if (a->name == "value_floats") {
    // An empty list has no data() to copy from (null), and its output no bytes to copy to.
    if (!a->floats.empty()) std::memcpy(dst, a->floats.data(), a->floats.size() * sizeof(float));
  } else if (a->name == "value_int") {
    *static_cast<int64_t*>(dst) = node.getInt("value_int", 0);
  } else if (!a->ints.empty()) {
    std::memcpy(dst, a->ints.data(), a->ints.size() * sizeof(int64_t));
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Shape = {OpType::Shape, "Shape", 1, 1, 1, 1, shapeShape, shapeReference, nullptr, 0, false, true};
const OpDef kOpDef_ConstantOfShape = {OpType::ConstantOfShape, "ConstantOfShape", 1, 1, 1, 1, constantOfShapeShape,
                                      constantOfShapeReference, nullptr, 1u << 0, false};
const OpDef kOpDef_Range = {OpType::Range, "Range", 3, 3, 1, 1, rangeShape, rangeReference, nullptr,
                            (1u << 0) | (1u << 1) | (1u << 2), false};
const OpDef kOpDef_Constant = {OpType::Constant, "Constant", 0, 0, 1, 1, constantShape, constantReference, nullptr, 0, false};

}  // namespace osprey
