#include "converter/onnx/import_context.h"

namespace osprey::onnx {

int ImportContext::tensor(const std::string& name) {
  if (name.empty()) return -1;
  auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  TensorInfo t;
  t.name = name;
  t.hasShape = false;
  int idx = graph_->addTensor(std::move(t));
  index_[name] = idx;
  return idx;
}

std::string ImportContext::uniqueName(const std::string& hint) {
  std::string name;
  do {
    name = hint + "__" + std::to_string(counter_++);
  } while (index_.count(name));
  return name;
}

int ImportContext::addConstant(const std::string& hint, DataType dtype, const Shape& shape, const void* data,
                               size_t bytes) {
  TensorInfo t;
  t.name = uniqueName(hint);
  t.dtype = dtype;
  t.shape = shape;
  t.isConstant = true;
  t.data = ConstantData::copyOf(data, bytes);
  int idx = graph_->addTensor(t);
  index_[t.name] = idx;
  return idx;
}

int ImportContext::addInt64Constant(const std::string& hint, const std::vector<int64_t>& values, bool scalar) {
  Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  return addConstant(hint, DataType::Int64, shape, values.data(), values.size() * sizeof(int64_t));
}

int ImportContext::addFloatConstant(const std::string& hint, const std::vector<float>& values, bool scalar) {
  Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  return addConstant(hint, DataType::Float32, shape, values.data(), values.size() * sizeof(float));
}

const TensorInfo* ImportContext::constantOf(int index) const {
  if (index < 0) return nullptr;
  const TensorInfo& t = graph_->tensors[index];
  return t.isConstant ? &t : nullptr;
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

namespace {

// Everything of a constant tensor but its values.
Status describeConstant(const TensorProto& t, TensorInfo* out) {
  out->name = t.name;
  if (t.external)
    return Status::invalidModel("tensor '" + t.name + "' keeps its data in an external file that was not loaded");
  if (t.dtype == DataType::Undefined)
    return Status::unsupported("tensor '" + t.name + "' has ONNX data type " + std::to_string(t.rawType) +
                               ", which Osprey does not support");
  out->dtype = t.dtype;
  out->shape = t.dims;
  out->hasShape = true;
  out->isConstant = true;
  return Status::ok();
}

}  // namespace

Status convertTensor(const TensorProto& t, TensorInfo* out) {
  OSPREY_RETURN_IF_ERROR(describeConstant(t, out));
  if (t.dtype == DataType::String) {
    out->data.strings = t.strings;
  } else {
    out->data = ConstantData::copyOf(t.data.data(), t.data.size());
  }
  return Status::ok();
}

Status adoptTensor(TensorProto* t, TensorInfo* out) {
  OSPREY_RETURN_IF_ERROR(describeConstant(*t, out));
  if (t->dtype == DataType::String) {
    out->data.strings = std::move(t->strings);
  } else {
    out->data = ConstantData::adopt(std::move(t->data));
  }
  return Status::ok();
}

Status convertAttribute(const AttributeProto& a, Attribute* out) {
  out->name = a.name;
  switch (a.type) {
    case kAttrFloat: out->kind = Attribute::Kind::Float; out->f = a.f; break;
    case kAttrInt: out->kind = Attribute::Kind::Int; out->i = a.i; break;
    case kAttrString: out->kind = Attribute::Kind::String; out->s = a.s; break;
    case kAttrFloats: out->kind = Attribute::Kind::Floats; out->floats = a.floats; break;
    case kAttrInts: out->kind = Attribute::Kind::Ints; out->ints = a.ints; break;
    case kAttrStrings: out->kind = Attribute::Kind::Strings; out->strings = a.strings; break;
    case kAttrTensor:
      out->kind = Attribute::Kind::Tensor;
      out->tensor = std::make_shared<TensorInfo>();
      OSPREY_RETURN_IF_ERROR(convertTensor(a.t, out->tensor.get()).withContext("attribute '" + a.name + "'"));
      break;
    default:
      return Status::unsupported("attribute '" + a.name + "' has ONNX attribute type " + std::to_string(a.type) +
                                 ", which Osprey does not import yet");
  }
  return Status::ok();
}

Status importDirect(ImportContext& ctx, const NodeProto& node, OpType type) {
  std::vector<int> ins;
  for (auto& name : node.inputs) ins.push_back(ctx.tensor(name));
  return importWithInputs(ctx, node, type, std::move(ins));
}

Status importWithInputs(ImportContext& ctx, const NodeProto& node, OpType type, std::vector<int> ins) {
  std::vector<int> outs;
  while (!ins.empty() && ins.back() == -1) ins.pop_back();
  for (auto& name : node.outputs) outs.push_back(ctx.tensor(name));
  while (!outs.empty() && outs.back() == -1) outs.pop_back();
  Node& n = ctx.addNode(type, node.name, ins, outs);
  for (auto& a : node.attributes) {
    Attribute attr;
    OSPREY_RETURN_IF_ERROR(convertAttribute(a, &attr));
    n.attrs.push_back(std::move(attr));
  }
  return Status::ok();
}

}  // namespace osprey::onnx
