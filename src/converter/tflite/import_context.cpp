#include "converter/tflite/import_context.h"

#include <climits>
#include <cmath>
#include <cstring>

#include "converter/tflite/layout.h"
#include "converter/tflite/sparsity.h"

namespace osprey::tfl {

ImportContext::ImportContext(Graph* graph, const tflite::Model* model, const tflite::SubGraph* subgraph,
                             const uint8_t* file, size_t fileSize)
    : GraphWriter(graph, NodeNames::AsGiven), model_(model), subgraph_(subgraph), file_(file), fileSize_(fileSize) {}

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
  // Integer tensors with scales are read through DequantizeLinear; their scales must be usable.
  const bool bytes = t->dtype == DataType::Int8 || t->dtype == DataType::UInt8;
  if (bytes || t->dtype == DataType::Int32) {
    for (float s : t->scales)
      if (!(s > 0) || !std::isfinite(s))
        return Status::invalidModel("tensor '" + t->name + "' has quantization scale " + std::to_string(s) +
                                    "; scales must be positive and finite");
    const int64_t lo = t->dtype == DataType::Int8 ? -128 : t->dtype == DataType::UInt8 ? 0 : INT32_MIN;
    const int64_t hi = t->dtype == DataType::Int8 ? 127 : t->dtype == DataType::UInt8 ? 255 : INT32_MAX;
    for (int64_t z : t->zeroPoints)
      if (z < lo || z > hi)
        return Status::invalidModel("tensor '" + t->name + "' has zero point " + std::to_string(z) +
                                    ", outside its type's range");
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
    t.name = namePrefix_ + (src && src->name() && src->name()->size() ? src->name()->str() : "tensor_" + std::to_string(i));
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
    OSPREY_RETURN_IF_ERROR(readQuantization(src->quantization(), &t));
    BufferBytes bytes;
    OSPREY_RETURN_IF_ERROR_IN(bufferBytes(*model_, src->buffer(), file_, fileSize_, &bytes), "tensor '" + t.name + "'");
    t.variable = src->is_variable();
    if (bytes.size == 0 || src->is_variable()) continue;
    if (t.dtype == DataType::Undefined)
      return Status::unsupported("constant tensor '" + t.name + "' has TFLite type " + tensorTypeName(t.tfliteType) +
                                 ", which Osprey does not import");
    for (int64_t d : t.shape)
      if (d < 0) return Status::invalidModel("constant tensor '" + t.name + "' has an unknown dimension");
    if (src->sparsity()) {
      std::vector<uint8_t> dense;
      OSPREY_RETURN_IF_ERROR(
          densify(t.name, *src->sparsity(), t.shape, dataTypeSize(t.dtype), bytes.data, bytes.size, &dense));
      t.constant = addConstant(t.name, t.dtype, t.shape, dense.data(), dense.size());
      values_[i].index = t.constant;
      continue;
    }
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
  const TfliteTensor& q = tensors_[t];
  if (q.quantized && q.scales.size() == 1 && (c.dtype == DataType::Int8 || c.dtype == DataType::UInt8)) {
    out->resize(static_cast<size_t>(shapeElements(c.shape)));
    for (size_t i = 0; i < out->size(); ++i) {
      const uint8_t b = c.data.bytes.get()[i];
      const int64_t v = c.dtype == DataType::Int8 ? static_cast<int8_t>(b) : b;
      (*out)[i] = static_cast<float>(v - q.zeroPoints[0]) * q.scales[0];
    }
    return Status::ok();
  }
  if (c.dtype != DataType::Float32) return Status::invalidModel("tensor '" + tensors_[t].name + "' must hold float32 values");
  out->resize(static_cast<size_t>(shapeElements(c.shape)));
  std::memcpy(out->data(), c.data.bytes.get(), out->size() * 4);
  return Status::ok();
}

Status ImportContext::rawValue(int t, int* index, Held* held) {
  if (t < 0 || t >= tensorCount()) return Status::invalidModel("tensor index " + std::to_string(t) + " is out of range");
  if (values_[t].index < 0)
    return Status::invalidModel("tensor '" + tensors_[t].name + "' is read before any op produces it");
  *index = values_[t].index;
  *held = values_[t].held;
  return Status::ok();
}

Status ImportContext::value(int t, int* index, Held* held) {
  OSPREY_RETURN_IF_ERROR(rawValue(t, index, held));
  if (!readsQuantized(t)) return Status::ok();
  const TfliteTensor& q = tensors_[t];
  int axis = q.quantizedDimension;
  if (*held == Held::Nchw && q.scales.size() > 1) axis = kNhwcAxisInNchw[axis];
  *index = dequantized(t, *index, axis);
  return Status::ok();
}

Held ImportContext::heldAs(int t) const {
  return t >= 0 && t < tensorCount() ? values_[t].held : Held::AsTflite;
}

int ImportContext::rawTflite(int t) {
  Value& v = values_[t];
  if (v.held == Held::AsTflite) return v.index;
  if (v.tfliteCopy < 0) {
    v.tfliteCopy = temp(tensors_[t].name);
    addNode(OpType::Transpose, tensors_[t].name + "_to_nhwc", {v.index}, {v.tfliteCopy}).setInts("perm", kToNhwc);
  }
  return v.tfliteCopy;
}

Status ImportContext::asTflite(int t, int* index) {
  Held held;
  OSPREY_RETURN_IF_ERROR(rawValue(t, index, &held));
  *index = rawTflite(t);
  if (readsQuantized(t)) *index = dequantized(t, *index, tensors_[t].quantizedDimension);
  return Status::ok();
}

Status ImportContext::asNchw(int t, int* index) {
  Held held;
  OSPREY_RETURN_IF_ERROR(rawValue(t, index, &held));
  Value& v = values_[t];
  if (held != Held::Nchw && v.nchwCopy < 0) {
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
  }
  if (held != Held::Nchw) *index = v.nchwCopy;
  if (readsQuantized(t)) {
    const int padding = 4 - rank(t);
    const int qd = tensors_[t].quantizedDimension;
    const int axis = tensors_[t].scales.size() < 2 ? 0 : kNhwcAxisInNchw[qd + padding];
    *index = dequantized(t, *index, axis);
  }
  return Status::ok();
}

int ImportContext::permutedConstant(int t, const std::vector<int64_t>& perm, const std::string& hint) {
  const TensorInfo& c = graph_->tensors[tensors_[t].constant];
  std::vector<uint8_t> moved;
  permuteBytes(c.data.bytes.get(), c.shape, dataTypeSize(c.dtype), perm, &moved);
  const int raw = addConstant(hint, c.dtype, permuteShape(c.shape, perm), moved.data(), moved.size());
  if (!readsQuantized(t)) return raw;
  int axis = 0;
  for (size_t j = 0; j < perm.size(); ++j)
    if (perm[j] == tensors_[t].quantizedDimension) axis = static_cast<int>(j);
  return dequantized(t, raw, axis);
}

namespace {

bool integerWithScales(const TfliteTensor& q, bool constant) {
  if (!q.quantized) return false;
  // int32 tensors with scales are the biases of quantized convolutions and dense layers.
  return q.dtype == DataType::Int8 || q.dtype == DataType::UInt8 || (constant && q.dtype == DataType::Int32);
}

}  // namespace

void ImportContext::beginOp(const OpView& op) {
  op_ = &op;
  dequantizeInputs_ = op.code != tflite::BuiltinOperator_DEQUANTIZE;
  quantizeOutputs_ = op.code != tflite::BuiltinOperator_QUANTIZE;
}

void ImportContext::endOp() {
  for (const Pending& p : pending_) {
    const TfliteTensor& q = tensors_[p.t];
    const bool perAxis = q.scales.size() > 1;
    const Shape shape = perAxis ? Shape{static_cast<int64_t>(q.scales.size())} : Shape{};
    std::vector<int8_t> zeros(q.zeroPoints.size());
    for (size_t i = 0; i < zeros.size(); ++i) zeros[i] = static_cast<int8_t>(static_cast<uint8_t>(q.zeroPoints[i]));
    const int scale = addConstant(q.name + "_scale", DataType::Float32, shape, q.scales.data(), q.scales.size() * 4);
    const int zero = addConstant(q.name + "_zero_point", q.dtype, shape, zeros.data(), zeros.size());
    Node& n = addNode(OpType::QuantizeLinear, op_->name + "_quantize", {p.produced, scale, zero}, {p.quantized});
    if (perAxis) n.setInt("axis", values_[p.t].held == Held::Nchw ? kNhwcAxisInNchw[q.quantizedDimension] : q.quantizedDimension);
  }
  pending_.clear();
  op_ = nullptr;
  dequantizeInputs_ = quantizeOutputs_ = false;
}

Status ImportContext::codesAsNchw(int t, int* index) {
  const bool saved = dequantizeInputs_;
  dequantizeInputs_ = false;
  Status st = asNchw(t, index);
  dequantizeInputs_ = saved;
  return st;
}

Status ImportContext::codesAsTflite(int t, int* index) {
  const bool saved = dequantizeInputs_;
  dequantizeInputs_ = false;
  Status st = asTflite(t, index);
  dequantizeInputs_ = saved;
  return st;
}

Status ImportContext::codes(int t, int* index, Held* held) {
  const bool saved = dequantizeInputs_;
  dequantizeInputs_ = false;
  Status st = value(t, index, held);
  dequantizeInputs_ = saved;
  return st;
}

int ImportContext::defineCodes(int t, Held held) {
  const bool saved = quantizeOutputs_;
  quantizeOutputs_ = false;
  const int index = define(t, held);
  quantizeOutputs_ = saved;
  return index;
}

bool ImportContext::readsQuantized(int t) const {
  return dequantizeInputs_ && t >= 0 && integerWithScales(tensors_[t], isConstant(t));
}

bool ImportContext::writesQuantized(int t) const {
  return quantizeOutputs_ && t >= 0 && integerWithScales(tensors_[t], false);
}

bool ImportContext::activationIsSaturation(tflite::ActivationFunctionType act) const {
  if (!op_ || op_->outputs.empty() || !writesQuantized(op_->outputs[0])) return false;
  const TfliteTensor& q = tensors_[op_->outputs[0]];
  if (q.scales.size() != 1 || !(q.scales[0] > 0)) return false;
  const int64_t lowest = q.dtype == DataType::Int8 ? -128 : 0, highest = q.dtype == DataType::Int8 ? 127 : 255;
  float lo, hi;
  switch (act) {
    case tflite::ActivationFunctionType_RELU: lo = 0.f, hi = INFINITY; break;
    case tflite::ActivationFunctionType_RELU6: lo = 0.f, hi = 6.f; break;
    case tflite::ActivationFunctionType_RELU_N1_TO_1: lo = -1.f, hi = 1.f; break;
    default: return false;
  }
  // TFLite's CalculateActivationRangeQuantized: zero_point + round(bound / scale).
  const int64_t zp = q.zeroPoints[0];
  const bool low = zp + static_cast<int64_t>(std::round(lo / q.scales[0])) <= lowest;
  const bool high = std::isinf(hi) || zp + static_cast<int64_t>(std::round(hi / q.scales[0])) >= highest;
  return low && high;
}

int ImportContext::dequantized(int t, int raw, int axis) {
  auto it = dequantizedOf_.find(raw);
  if (it != dequantizedOf_.end()) return it->second;
  const TfliteTensor& q = tensors_[t];
  const bool perAxis = q.scales.size() > 1;
  const Shape shape = perAxis ? Shape{static_cast<int64_t>(q.scales.size())} : Shape{};
  const int scale = addConstant(q.name + "_scale", DataType::Float32, shape, q.scales.data(), q.scales.size() * 4);
  std::vector<uint8_t> zeros(q.zeroPoints.size() * dataTypeSize(q.dtype));
  for (size_t i = 0; i < q.zeroPoints.size(); ++i) {
    if (q.dtype == DataType::Int32) {
      const int32_t z = static_cast<int32_t>(q.zeroPoints[i]);
      std::memcpy(zeros.data() + i * 4, &z, 4);
    } else {
      zeros[i] = static_cast<uint8_t>(q.zeroPoints[i]);
    }
  }
  const int zero = addConstant(q.name + "_zero_point", q.dtype, shape, zeros.data(), zeros.size());
  const int out = temp(graph_->tensors[raw].name + ".float");
  Node& n = addNode(OpType::DequantizeLinear, graph_->tensors[raw].name + "_dequantize", {raw, scale, zero}, {out});
  if (perAxis) n.setInt("axis", axis);
  dequantizedOf_[raw] = out;
  return out;
}

void ImportContext::bindConstant(int t, int constantIndex) {
  tensors_[t].constant = constantIndex;
  values_[t] = Value();
  values_[t].index = constantIndex;
}

void ImportContext::bindValue(int t, int index) {
  values_[t] = Value();
  values_[t].index = index;
}

void ImportContext::nestIn(const ImportContext& caller, int subgraphIndex, const std::string& prefix) {
  shareNamesWith(caller);
  namePrefix_ = prefix;
  callers_ = caller.callers_;
  callers_.push_back(subgraphIndex);
}

bool ImportContext::isDefined(int t) const { return values_[t].index >= 0; }

int ImportContext::define(int t, Held held) {
  const std::string& base = tensors_[t].name;
  int index = temp(held == Held::Nchw ? base + ".nchw" : base);
  values_[t].index = index;
  values_[t].held = held;
  if (!writesQuantized(t)) return index;
  const int produced = temp(graph_->tensors[index].name + ".float");
  pending_.push_back({t, produced, index});
  return produced;
}

Status applyActivation(ImportContext& ctx, const OpView& op, tflite::ActivationFunctionType act, int produced, int out) {
  const std::string name = op.name + "_activation";
  if (ctx.activationIsSaturation(act)) return Status::ok();
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
