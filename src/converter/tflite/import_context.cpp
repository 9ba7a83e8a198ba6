#include "converter/tflite/import_context.h"

#include <cstring>

#include "converter/tflite/layout.h"

namespace osprey::tfl {

ImportContext::ImportContext(Graph* graph, const tflite::Model* model, const tflite::SubGraph* subgraph,
                             const uint8_t* file, size_t fileSize)
    : graph_(graph), model_(model), subgraph_(subgraph), file_(file), fileSize_(fileSize) {}

namespace {

Status readQuantization(const tflite::QuantizationParameters* q, TfliteTensor* t) {
  if (!q || !q->scale() || q->scale()->size() == 0) return Status::ok();
  t->quantized = true;
  t->scales.assign(q->scale()->begin(), q->scale()->end());
  if (q->zero_point() && q->zero_point()->size() > 0) {
    if (q->zero_point()->size() != q->scale()->size())
      return Status::invalidModel("tensor '" + t->name + "' has " + std::to_string(q->scale()->size()) + " scales but " +
                                  std::to_string(q->zero_point()->size()) + " zero points");
    t->zeroPoints.assign(q->zero_point()->begin(), q->zero_point()->end());
  } else {
    t->zeroPoints.assign(t->scales.size(), 0);
  }
  t->quantizedDimension = q->quantized_dimension();
  if (t->scales.size() > 1 && (t->quantizedDimension < 0 || t->quantizedDimension >= static_cast<int>(t->shape.size()) ||
                               t->shape[t->quantizedDimension] != static_cast<int64_t>(t->scales.size())))
    return Status::invalidModel("tensor '" + t->name + "' has " + std::to_string(t->scales.size()) +
                                " scales along quantized_dimension " + std::to_string(t->quantizedDimension) +
                                " of shape " + shapeToString(t->shape));
  return Status::ok();
}

}  // namespace

Status ImportContext::readTensors() {
  const auto* list = subgraph_->tensors();
  const size_t count = list ? list->size() : 0;
  tensors_.resize(count);
  values_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const tflite::Tensor* src = list->Get(static_cast<flatbuffers::uoffset_t>(i));
    TfliteTensor& t = tensors_[i];
    t.name = src && src->name() && src->name()->size() ? src->name()->str() : "tensor_" + std::to_string(i);
    if (!src) return Status::invalidModel("tensor " + std::to_string(i) + " is null");
    t.tfliteType = src->type();
    t.dtype = dataTypeOf(src->type());
    if (src->shape())
      for (int32_t d : *src->shape()) {
        if (d < 0) return Status::invalidModel("tensor '" + t.name + "' has a negative dimension " + std::to_string(d));
        t.shape.push_back(d);
      }
    if (src->shape_signature() && src->shape_signature()->size() == t.shape.size())
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (src->shape_signature()->Get(static_cast<flatbuffers::uoffset_t>(d)) < 0) t.shape[d] = -1;
    if (src->sparsity())
      return Status::unsupported("tensor '" + t.name + "' is sparse, which Osprey does not import yet");
    OSPREY_RETURN_IF_ERROR(readQuantization(src->quantization(), &t));
    BufferBytes bytes;
    OSPREY_RETURN_IF_ERROR_IN(bufferBytes(*model_, src->buffer(), file_, fileSize_, &bytes), "tensor '" + t.name + "'");
    if (bytes.size == 0 || src->is_variable()) continue;
    if (t.dtype == DataType::Undefined)
      return Status::unsupported("constant tensor '" + t.name + "' has TFLite type " + tensorTypeName(t.tfliteType) +
                                 ", which Osprey does not import");
    for (int64_t d : t.shape)
      if (d < 0) return Status::invalidModel("constant tensor '" + t.name + "' has an unknown dimension");
    if (!shapeBytesFit(t.shape, dataTypeSize(t.dtype)) ||
        static_cast<size_t>(shapeElements(t.shape)) * dataTypeSize(t.dtype) != bytes.size)
      return Status::invalidModel("constant tensor '" + t.name + "' of shape " + shapeToString(t.shape) + " and type " +
                                  tensorTypeName(t.tfliteType) + " has " + std::to_string(bytes.size) +
                                  " bytes of data");
    t.constant = addConstant(t.name, t.dtype, t.shape, bytes.data, bytes.size);
    values_[i].index = t.constant;
  }
  return Status::ok();
}

Status ImportContext::constantInts(int t, std::vector<int64_t>* out) const {
  if (!isConstant(t)) return Status::unsupported("tensor '" + tensors_.at(t).name + "' must be a constant");
  const TensorInfo& c = graph_->tensors[tensors_[t].constant];
  const size_t n = static_cast<size_t>(shapeElements(c.shape));
  out->resize(n);
  if (c.dtype == DataType::Int32) {
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, c.data.bytes.get() + i * 4, 4);
      (*out)[i] = v;
    }
  } else if (c.dtype == DataType::Int64) {
    std::memcpy(out->data(), c.data.bytes.get(), n * 8);
  } else {
    return Status::invalidModel("tensor '" + tensors_[t].name + "' must hold int32 or int64 values");
  }
  return Status::ok();
}

Status ImportContext::constantFloats(int t, std::vector<float>* out) const {
  if (!isConstant(t)) return Status::unsupported("tensor '" + tensors_.at(t).name + "' must be a constant");
  const TensorInfo& c = graph_->tensors[tensors_[t].constant];
  if (c.dtype != DataType::Float32) return Status::invalidModel("tensor '" + tensors_[t].name + "' must hold float32 values");
  out->resize(static_cast<size_t>(shapeElements(c.shape)));
  std::memcpy(out->data(), c.data.bytes.get(), out->size() * 4);
  return Status::ok();
}

Status ImportContext::value(int t, int* index, Held* held) {
  if (t < 0 || t >= tensorCount()) return Status::invalidModel("tensor index " + std::to_string(t) + " is out of range");
  if (values_[t].index < 0)
    return Status::invalidModel("tensor '" + tensors_[t].name + "' is read before any op produces it");
  *index = values_[t].index;
  *held = values_[t].held;
  return Status::ok();
}

Held ImportContext::heldAs(int t) const {
  return t >= 0 && t < tensorCount() ? values_[t].held : Held::AsTflite;
}

Status ImportContext::asTflite(int t, int* index) {
  Held held;
  OSPREY_RETURN_IF_ERROR(value(t, index, &held));
  if (held == Held::AsTflite) return Status::ok();
  Value& v = values_[t];
  if (v.tfliteCopy < 0) {
    v.tfliteCopy = temp(tensors_[t].name);
    addNode(OpType::Transpose, tensors_[t].name + "_to_nhwc", {v.index}, {v.tfliteCopy}).setInts("perm", kToNhwc);
  }
  *index = v.tfliteCopy;
  return Status::ok();
}

Status ImportContext::asNchw(int t, int* index) {
  Held held;
  OSPREY_RETURN_IF_ERROR(value(t, index, &held));
  if (held == Held::Nchw) return Status::ok();
  Value& v = values_[t];
  if (v.nchwCopy >= 0) {
    *index = v.nchwCopy;
    return Status::ok();
  }
  if (isConstant(t) && rank(t) <= 4) {
    Shape padded = tensors_[t].shape;
    padded.insert(padded.begin(), 4 - padded.size(), 1);
    const TensorInfo& c = graph_->tensors[tensors_[t].constant];
    std::vector<uint8_t> moved;
    permuteBytes(c.data.bytes.get(), padded, dataTypeSize(c.dtype), kToNchw, &moved);
    v.nchwCopy = addConstant(tensors_[t].name + ".nchw", c.dtype, permuteShape(padded, kToNchw), moved.data(), moved.size());
  } else {
    if (rank(t) != 4)
      return Status::invalidModel("tensor '" + tensors_[t].name + "' of shape " + shapeToString(tensors_[t].shape) +
                                  " feeds an NHWC image op, which needs 4 dimensions");
    v.nchwCopy = temp(tensors_[t].name + ".nchw");
    addNode(OpType::Transpose, tensors_[t].name + "_to_nchw", {v.index}, {v.nchwCopy}).setInts("perm", kToNchw);
  }
  *index = v.nchwCopy;
  return Status::ok();
}

int ImportContext::permutedConstant(int t, const std::vector<int64_t>& perm, const std::string& hint) {
  const TensorInfo& c = graph_->tensors[tensors_[t].constant];
  std::vector<uint8_t> moved;
  permuteBytes(c.data.bytes.get(), c.shape, dataTypeSize(c.dtype), perm, &moved);
  return addConstant(hint, c.dtype, permuteShape(c.shape, perm), moved.data(), moved.size());
}

void ImportContext::bindConstant(int t, int constantIndex) {
  tensors_[t].constant = constantIndex;
  values_[t] = Value();
  values_[t].index = constantIndex;
}

bool ImportContext::isDefined(int t) const { return values_[t].index >= 0; }

int ImportContext::define(int t, Held held) {
  const std::string& base = tensors_[t].name;
  int index = temp(held == Held::Nchw ? base + ".nchw" : base);
  values_[t].index = index;
  values_[t].held = held;
  return index;
}

std::string ImportContext::uniqueName(const std::string& hint) {
  std::string name = hint;
  while (names_.count(name)) name = hint + "__" + std::to_string(counter_++);
  names_.insert(name);
  return name;
}

int ImportContext::temp(const std::string& hint) {
  TensorInfo t;
  t.name = uniqueName(hint);
  t.hasShape = false;
  return graph_->addTensor(std::move(t));
}

int ImportContext::addConstant(const std::string& hint, DataType dtype, const Shape& shape, const void* data,
                               size_t bytes) {
  TensorInfo t;
  t.name = uniqueName(hint);
  t.dtype = dtype;
  t.shape = shape;
  t.isConstant = true;
  t.data = ConstantData::copyOf(data, bytes);
  return graph_->addTensor(std::move(t));
}

int ImportContext::addInt64Constant(const std::string& hint, const std::vector<int64_t>& values, bool scalar) {
  Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  return addConstant(hint, DataType::Int64, shape, values.data(), values.size() * sizeof(int64_t));
}

int ImportContext::addFloatConstant(const std::string& hint, const std::vector<float>& values, bool scalar) {
  Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  return addConstant(hint, DataType::Float32, shape, values.data(), values.size() * sizeof(float));
}

Node& ImportContext::addNode(OpType type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs) {
  Node n;
  n.type = type;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  graph_->nodes.push_back(std::move(n));
  return graph_->nodes.back();
}

int ImportContext::asInt64(int index, const std::string& hint) {
  const TensorInfo& t = graph_->tensors[index];
  if (t.isConstant && t.dtype == DataType::Int64) return index;
  if (t.isConstant && t.dtype == DataType::Int32) {
    std::vector<int64_t> wide(static_cast<size_t>(shapeElements(t.shape)));
    for (size_t i = 0; i < wide.size(); ++i) {
      int32_t v;
      std::memcpy(&v, t.data.bytes.get() + i * 4, 4);
      wide[i] = v;
    }
    return addConstant(hint, DataType::Int64, t.shape, wide.data(), wide.size() * 8);
  }
  int out = temp(hint);
  addNode(OpType::Cast, hint + "_int64", {index}, {out}).setInt("to", static_cast<int64_t>(DataType::Int64));
  return out;
}

Status applyActivation(ImportContext& ctx, const OpView& op, tflite::ActivationFunctionType act, int produced, int out) {
  const std::string name = op.name + "_activation";
  switch (act) {
    case tflite::ActivationFunctionType_NONE: return Status::ok();
    case tflite::ActivationFunctionType_RELU: ctx.addNode(OpType::Relu, name, {produced}, {out}); return Status::ok();
    // TFLite's float kernels clamp to an activation range, which TANH does not have: they
    // leave a fused TANH out, and so does Osprey, to give the same results.
    case tflite::ActivationFunctionType_TANH: ctx.addNode(OpType::Identity, name, {produced}, {out}); return Status::ok();
    case tflite::ActivationFunctionType_RELU6:
    case tflite::ActivationFunctionType_RELU_N1_TO_1: {
      const bool six = act == tflite::ActivationFunctionType_RELU6;
      int lo = ctx.addFloatConstant(name + "_min", {six ? 0.f : -1.f}, true);
      int hi = ctx.addFloatConstant(name + "_max", {six ? 6.f : 1.f}, true);
      ctx.addNode(OpType::Clip, name, {produced, lo, hi}, {out});
      return Status::ok();
    }
    default:
      return Status::unsupported("fused activation " + std::to_string(static_cast<int>(act)));
  }
}

}  // namespace osprey::tfl
