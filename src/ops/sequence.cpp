// ONNX sequences and optionals. A sequence is a host value (Tensor::sequence, DataType::Sequence)
// and an absent optional an empty Tensor, so every op here runs on the host between planned
// stages (OpDef::hostOnly) on whole values: a sequence input arrives as TensorView::value, an
// absent optional as a view that is not present. Items entering a sequence are copied (the
// sequence may outlive the memory they came from); items taken out share the sequence's.
#include <cstring>

#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status sequenceInput(const TensorViews& in, size_t i, const char* what, const Tensor** out) {
  if (i >= in.size() || !in[i].present || !in[i].value || !in[i].value->isSequence())
    return Status::invalidArgument("input " + std::to_string(i) + " (" + what + ") must be a sequence");
  *out = in[i].value;
  return Status::ok();
}

// An owned copy of a tensor input.
Tensor copyTensor(const TensorView& v) {
  Tensor t = Tensor::uninitialized(v.dtype, v.shape);
  if (v.dtype == DataType::String) {
    if (v.strings) t.strings() = *v.strings;
  } else if (v.bytes()) {
    std::memcpy(t.data(), v.data, v.bytes());
  }
  return t;
}

Status tensorInput(const TensorViews& in, size_t i, const char* what) {
  if (!in[i].present || (in[i].value && (in[i].value->isSequence() || in[i].value->empty())) ||
      in[i].dtype == DataType::Sequence)
    return Status::invalidArgument("input " + std::to_string(i) + " (" + what + ") must be a tensor");
  if (!in[i].data && in[i].bytes()) return Status::internal("input " + std::to_string(i) + " has no value");
  return Status::ok();
}

// A scalar position in [-n, n - 1], or [-n, n] where `end` allows one past the last item.
Status position(const TensorView& v, int64_t n, bool end, int64_t* out) {
  std::vector<int64_t> p;
  OSPREY_RETURN_IF_ERROR(v.readInts(&p, "position"));
  if (p.size() != 1) return Status::invalidArgument("position must be one value");
  const int64_t hi = end ? n : n - 1;
  if (p[0] < -n || p[0] > hi)
    return Status::invalidArgument("position " + std::to_string(p[0]) + " is outside [" +
                                   std::to_string(-n) + ", " + std::to_string(hi) + "] for a sequence of " +
                                   std::to_string(n));
  *out = p[0] < 0 ? p[0] + n : p[0];
  return Status::ok();
}

Status checkItemType(DataType elementType, DataType dtype) {
  if (elementType != DataType::Undefined && dtype != elementType)
    return Status::invalidArgument(std::string("a ") + dataTypeName(dtype) + " tensor cannot join a sequence of " +
                                   dataTypeName(elementType));
  return Status::ok();
}

Status sequenceEmpty(const Node& node, const TensorViews&, std::vector<Tensor>* out) {
  const int64_t dtype = node.getInt("dtype", static_cast<int64_t>(DataType::Float32));
  if (!isKnownDataType(static_cast<int32_t>(dtype)))
    return Status::invalidModel("dtype " + std::to_string(dtype) + " is not a tensor element type");
  *out = {Tensor::sequence(static_cast<DataType>(dtype), {})};
  return Status::ok();
}

Status sequenceConstruct(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < in.size(); ++i) {
    OSPREY_RETURN_IF_ERROR(tensorInput(in, i, "item"));
    OSPREY_RETURN_IF_ERROR(checkItemType(in[0].dtype, in[i].dtype));
    items.push_back(copyTensor(in[i]));
  }
  *out = {Tensor::sequence(in[0].dtype, std::move(items))};
  return Status::ok();
}

Status sequenceInsert(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  const Tensor* seq = nullptr;
  OSPREY_RETURN_IF_ERROR(sequenceInput(in, 0, "input_sequence", &seq));
  OSPREY_RETURN_IF_ERROR(tensorInput(in, 1, "tensor"));
  OSPREY_RETURN_IF_ERROR(checkItemType(seq->elementType(), in[1].dtype));
  std::vector<Tensor> items = seq->items();
  int64_t at = static_cast<int64_t>(items.size());
  if (in.size() > 2 && in[2].present) OSPREY_RETURN_IF_ERROR(position(in[2], at, true, &at));
  items.insert(items.begin() + at, copyTensor(in[1]));
  *out = {Tensor::sequence(in[1].dtype, std::move(items))};
  return Status::ok();
}

Status sequenceErase(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  const Tensor* seq = nullptr;
  OSPREY_RETURN_IF_ERROR(sequenceInput(in, 0, "input_sequence", &seq));
  std::vector<Tensor> items = seq->items();
  const int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) return Status::invalidArgument("the sequence is empty; there is nothing to erase");
  int64_t at = n - 1;
  if (in.size() > 1 && in[1].present) OSPREY_RETURN_IF_ERROR(position(in[1], n, false, &at));
  items.erase(items.begin() + at);
  *out = {Tensor::sequence(seq->elementType(), std::move(items))};
  return Status::ok();
}

Status sequenceAt(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  const Tensor* seq = nullptr;
  OSPREY_RETURN_IF_ERROR(sequenceInput(in, 0, "input_sequence", &seq));
  int64_t at = 0;
  OSPREY_RETURN_IF_ERROR(position(in[1], static_cast<int64_t>(seq->items().size()), false, &at));
  *out = {seq->items()[at]};
  return Status::ok();
}

Status sequenceLength(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  const Tensor* seq = nullptr;
  OSPREY_RETURN_IF_ERROR(sequenceInput(in, 0, "input_sequence", &seq));
  Tensor length(DataType::Int64, {});
  length.data<int64_t>()[0] = static_cast<int64_t>(seq->items().size());
  *out = {length};
  return Status::ok();
}

// Joins the items along `axis` (new_axis = 0) or stacks them along a new one.
Status concatFromSequence(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  const Tensor* seq = nullptr;
  OSPREY_RETURN_IF_ERROR(sequenceInput(in, 0, "input_sequence", &seq));
  const std::vector<Tensor>& items = seq->items();
  if (items.empty()) return Status::invalidArgument("the sequence is empty; there is nothing to concatenate");
  const bool newAxis = node.getInt("new_axis", 0) != 0;
  if (!node.hasAttr("axis")) return Status::invalidModel("attribute 'axis' is required");
  const Shape& first = items[0].shape();
  const int64_t rank = static_cast<int64_t>(first.size());
  int64_t axis = 0;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), newAxis ? rank + 1 : rank, &axis)
                             );
  const DataType dtype = items[0].dtype();
  Shape shape = first;
  if (newAxis) shape.insert(shape.begin() + axis, 0);
  shape[axis] = 0;
  for (const Tensor& t : items) {
    Shape s = t.shape();
    if (t.dtype() != dtype || static_cast<int64_t>(s.size()) != rank)
      return Status::invalidArgument("the items differ in dtype or rank");
    if (newAxis) s.insert(s.begin() + axis, 1);
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != shape[d])
        return Status::invalidArgument("item of shape " + shapeToString(t.shape()) +
                                       " does not join items of shape " + shapeToString(first) + " along axis " +
                                       std::to_string(axis));
    shape[axis] += s[axis];
  }
  if (dtype == DataType::String) return Status::unsupported("string sequences");
  Tensor result = Tensor::uninitialized(dtype, shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const size_t es = dataTypeSize(dtype);
  const size_t rowBytes = static_cast<size_t>(shape[axis] * inner) * es;
  size_t at = 0;
  for (const Tensor& t : items) {
    const size_t partBytes = t.bytes() / static_cast<size_t>(outer ? outer : 1);
    for (int64_t o = 0; o < outer && partBytes; ++o)
      std::memcpy(static_cast<uint8_t*>(result.data()) + o * rowBytes + at,
                  static_cast<const uint8_t*>(t.data()) + o * partBytes, partBytes);
    at += partBytes;
  }
  *out = {result};
  return Status::ok();
}

// Parts of `input` along `axis`: of the sizes in `split` (1-D), of `split` each with a shorter last
// one (a scalar), or of 1 each without split, squeezed when keepdims is 0.
Status splitToSequence(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  OSPREY_RETURN_IF_ERROR(tensorInput(in, 0, "input"));
  const TensorView& x = in[0];
  if (x.dtype == DataType::String) return Status::unsupported("string tensors");
  int64_t axis = 0;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), x.rank(), &axis));
  const int64_t length = x.shape[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (in.size() > 1 && in[1].present) {
    OSPREY_RETURN_IF_ERROR(in[1].readInts(&sizes, "split"));
    if (in[1].rank() == 0) {
      const int64_t chunk = sizes[0];
      if (chunk <= 0) return Status::invalidArgument("split must be positive");
      sizes.clear();
      for (int64_t left = length; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
    } else {
      int64_t sum = 0;
      for (int64_t s : sizes) {
        if (s < 0) return Status::invalidArgument("split sizes must not be negative");
        sum += s;
      }
      if (sum != length)
        return Status::invalidArgument("split sizes add up to " + std::to_string(sum) + ", not the " +
                                       std::to_string(length) + " of axis " + std::to_string(axis));
    }
  } else {
    sizes.assign(static_cast<size_t>(length), 1);
    squeeze = node.getInt("keepdims", 1) == 0;
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const size_t es = dataTypeSize(x.dtype);
  std::vector<Tensor> items;
  int64_t start = 0;
  for (int64_t size : sizes) {
    Shape s = x.shape;
    s[axis] = size;
    if (squeeze) s.erase(s.begin() + axis);
    Tensor part = Tensor::uninitialized(x.dtype, s);
    const size_t partBytes = static_cast<size_t>(size * inner) * es;
    for (int64_t o = 0; o < outer && partBytes; ++o)
      std::memcpy(static_cast<uint8_t*>(part.data()) + o * partBytes,
                  static_cast<const uint8_t*>(x.data) + (static_cast<size_t>((o * length + start) * inner)) * es, partBytes);
    items.push_back(std::move(part));
    start += size;
  }
  *out = {Tensor::sequence(x.dtype, std::move(items))};
  return Status::ok();
}

Status optionalOp(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  *out = {in.empty() ? Tensor() : hostValueOf(in[0])};
  return Status::ok();
}

Status optionalHasElement(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  Tensor has(DataType::Bool, {});
  has.data<bool>()[0] = !in.empty() && in[0].present && !(in[0].value && in[0].value->empty());
  *out = {has};
  return Status::ok();
}

Status optionalGetElement(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  if (!in[0].present || (in[0].value && in[0].value->empty()))
    return Status::invalidArgument("the optional input holds no value");
  *out = {hostValueOf(in[0])};
  return Status::ok();
}

}  // namespace

Tensor hostValueOf(const TensorView& v) {
  if (!v.present) return Tensor();
  if (v.value && (v.value->isSequence() || v.value->empty())) return *v.value;
  return copyTensor(v);
}

// Identity on the host passes any value through (a sequence, an absent optional).
Status identityOnHost(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  *out = {hostValueOf(in[0])};
  return Status::ok();
}

#define OSPREY_HOST_OP(op, minIn, maxIn, minOut, maxOut, fn)                                                    \
  const OpDef kOpDef_##op = {OpType::op, #op,   minIn, maxIn, minOut, maxOut, nullptr, nullptr, nullptr, 0, true, \
                             false,       0,     fn,    true}
OSPREY_HOST_OP(SequenceEmpty, 0, 0, 1, 1, sequenceEmpty);
OSPREY_HOST_OP(SequenceConstruct, 1, -1, 1, 1, sequenceConstruct);
OSPREY_HOST_OP(SequenceInsert, 2, 3, 1, 1, sequenceInsert);
OSPREY_HOST_OP(SequenceErase, 1, 2, 1, 1, sequenceErase);
OSPREY_HOST_OP(SequenceAt, 2, 2, 1, 1, sequenceAt);
OSPREY_HOST_OP(SequenceLength, 1, 1, 1, 1, sequenceLength);
OSPREY_HOST_OP(ConcatFromSequence, 1, 1, 1, 1, concatFromSequence);
OSPREY_HOST_OP(SplitToSequence, 1, 2, 1, 1, splitToSequence);
OSPREY_HOST_OP(Optional, 0, 1, 1, 1, optionalOp);
OSPREY_HOST_OP(OptionalHasElement, 0, 1, 1, 1, optionalHasElement);
OSPREY_HOST_OP(OptionalGetElement, 1, 1, 1, 1, optionalGetElement);
#undef OSPREY_HOST_OP

}  // namespace osprey
