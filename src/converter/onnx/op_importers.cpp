// Per-op ONNX importers. Osprey ops follow the newest opset, so importers of older opsets move
// attributes that later became inputs into constant inputs, and spell out changed defaults.
#include <limits>
#include <unordered_map>

#include "converter/onnx/import_context.h"

namespace osprey::onnx {

namespace {

std::vector<int> inputIndices(ImportContext& ctx, const NodeProto& node) {
  std::vector<int> ins;
  for (auto& name : node.inputs) ins.push_back(ctx.tensor(name));
  return ins;
}

std::vector<int> outputIndices(ImportContext& ctx, const NodeProto& node) {
  std::vector<int> outs;
  for (auto& name : node.outputs) outs.push_back(ctx.tensor(name));
  while (!outs.empty() && outs.back() == -1) outs.pop_back();
  return outs;
}

void trimOptional(std::vector<int>& ins) {
  while (!ins.empty() && ins.back() == -1) ins.pop_back();
}

// Copies all attributes except those named in `skip`.
Status copyAttributes(const NodeProto& node, Node& n, std::initializer_list<const char*> skip = {}) {
  for (auto& a : node.attributes) {
    bool skipped = false;
    for (const char* s : skip) skipped |= a.name == s;
    if (skipped) continue;
    Attribute attr;
    OSPREY_RETURN_IF_ERROR(convertAttribute(a, &attr));
    n.attrs.push_back(std::move(attr));
  }
  return Status::ok();
}

// Imports with attribute `attr` (ints) moved to input position `position` when present.
Status importWithIntsAsInput(ImportContext& ctx, const NodeProto& node, OpType type, const char* attr, size_t position) {
  std::vector<int> ins = inputIndices(ctx, node);
  if (const AttributeProto* a = node.attr(attr)) {
    if (ins.size() < position) ins.resize(position, -1);
    ins.insert(ins.begin() + position, ctx.addInt64Constant(node.name + "_" + attr, a->ints));
  }
  trimOptional(ins);
  Node& n = ctx.addNode(type, node.name, ins, outputIndices(ctx, node));
  return copyAttributes(node, n, {attr});
}

Status importSqueezeLike(ImportContext& ctx, const NodeProto& node, int64_t opset, OpType type) {
  return importWithIntsAsInput(ctx, node, type, "axes", 1);
}


Status importReduce(ImportContext& ctx, const NodeProto& node, OpType type) {
  return importWithIntsAsInput(ctx, node, type, "axes", 1);
}

Status importClip(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 11) return importDirect(ctx, node, OpType::Clip);
  std::vector<int> ins = inputIndices(ctx, node);
  ins.resize(1);
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (auto* a = node.attr("min")) lo = a->f;
  if (auto* a = node.attr("max")) hi = a->f;
  ins.push_back(ctx.addFloatConstant(node.name + "_min", {lo}, true));
  ins.push_back(ctx.addFloatConstant(node.name + "_max", {hi}, true));
  ctx.addNode(OpType::Clip, node.name, ins, outputIndices(ctx, node));
  return Status::ok();
}

Status importPad(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 11) return importDirect(ctx, node, OpType::Pad);
  std::vector<int> ins = inputIndices(ctx, node);
  ins.resize(1);
  const AttributeProto* pads = node.attr(opset >= 2 ? "pads" : "paddings");
  if (!pads) return Status::invalidModel("Pad '" + node.name + "' has no pads attribute");
  ins.push_back(ctx.addInt64Constant(node.name + "_pads", pads->ints));
  float value = node.attr("value") ? node.attr("value")->f : 0.f;
  ins.push_back(ctx.addFloatConstant(node.name + "_value", {value}, true));
  Node& n = ctx.addNode(OpType::Pad, node.name, ins, outputIndices(ctx, node));
  return copyAttributes(node, n, {"pads", "paddings", "value"});
}

Status importSlice(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 10) return importDirect(ctx, node, OpType::Slice);
  std::vector<int> ins = inputIndices(ctx, node);
  ins.resize(1);
  for (const char* name : {"starts", "ends", "axes"}) {
    const AttributeProto* a = node.attr(name);
    if (!a) {
      if (std::string(name) == "axes") break;
      return Status::invalidModel("Slice '" + node.name + "' has no " + name + " attribute");
    }
    ins.push_back(ctx.addInt64Constant(node.name + "_" + name, a->ints));
  }
  ctx.addNode(OpType::Slice, node.name, ins, outputIndices(ctx, node));
  return Status::ok();
}

Status importSplit(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 13) return importDirect(ctx, node, OpType::Split);
  return importWithIntsAsInput(ctx, node, OpType::Split, "split", 1);
}

Status importReshape(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 5) return importDirect(ctx, node, OpType::Reshape);
  return importWithIntsAsInput(ctx, node, OpType::Reshape, "shape", 1);
}

// Before opset 13 Softmax normalised over all dimensions from `axis` on: flatten to 2-D there,
// take the softmax of the rows, and restore the shape.
Status importLegacySoftmax(ImportContext& ctx, const NodeProto& node, int64_t opset, OpType type) {
  if (opset >= 13) return importDirect(ctx, node, type);
  int64_t axis = node.attr("axis") ? node.attr("axis")->i : 1;
  int x = ctx.tensor(node.inputs.at(0));
  int shape = ctx.tensor(ctx.uniqueName(node.name + "_shape"));
  int flat = ctx.tensor(ctx.uniqueName(node.name + "_flat"));
  int soft = ctx.tensor(ctx.uniqueName(node.name + "_rows"));
  ctx.addNode(OpType::Shape, node.name + "_shape", {x}, {shape});
  ctx.addNode(OpType::Flatten, node.name + "_flatten", {x}, {flat}).setInt("axis", axis);
  ctx.addNode(type, node.name, {flat}, {soft}).setInt("axis", -1);
  ctx.addNode(OpType::Reshape, node.name + "_restore", {soft, shape}, outputIndices(ctx, node));
  return Status::ok();
}

// Resize-10 and Upsample: scales only, asymmetric coordinates, floor for nearest.
Status importLegacyResize(ImportContext& ctx, const NodeProto& node, int64_t opset, bool upsample) {
  if (!upsample && opset >= 11) return importDirect(ctx, node, OpType::Resize);
  std::vector<int> ins = inputIndices(ctx, node);
  int scales = -1;
  if (ins.size() >= 2) {
    scales = ins[1];
  } else if (const AttributeProto* a = node.attr("scales")) {
    scales = ctx.addFloatConstant(node.name + "_scales", a->floats);
  } else {
    return Status::invalidModel("'" + node.name + "' has no scales");
  }
  Node& n = ctx.addNode(OpType::Resize, node.name, {ins[0], -1, scales}, outputIndices(ctx, node));
  std::string mode = node.attr("mode") ? node.attr("mode")->s : "nearest";
  n.setString("mode", mode == "bilinear" ? "linear" : mode);
  n.setString("coordinate_transformation_mode", "asymmetric");
  n.setString("nearest_mode", "floor");
  return Status::ok();
}

Status importConstant(ImportContext& ctx, const NodeProto& node, int64_t) {
  if (node.outputs.empty()) return Status::invalidModel("Constant '" + node.name + "' has no output");
  TensorInfo t;
  if (auto* a = node.attr("value")) {
    OSPREY_RETURN_IF_ERROR(convertTensor(a->t, &t).withContext("Constant '" + node.name + "'"));
  } else if (auto* a = node.attr("value_float")) {
    t.dtype = DataType::Float32;
    t.data = ConstantData::copyOf(&a->f, 4);
  } else if (auto* a = node.attr("value_floats")) {
    t.dtype = DataType::Float32;
    t.shape = {static_cast<int64_t>(a->floats.size())};
    t.data = ConstantData::copyOf(a->floats.data(), a->floats.size() * 4);
  } else if (auto* a = node.attr("value_int")) {
    t.dtype = DataType::Int64;
    t.data = ConstantData::copyOf(&a->i, 8);
  } else if (auto* a = node.attr("value_ints")) {
    t.dtype = DataType::Int64;
    t.shape = {static_cast<int64_t>(a->ints.size())};
    t.data = ConstantData::copyOf(a->ints.data(), a->ints.size() * 8);
  } else if (auto* a = node.attr("value_string")) {
    t.dtype = DataType::String;
    t.data.strings = {a->s};
  } else if (auto* a = node.attr("value_strings")) {
    t.dtype = DataType::String;
    t.shape = {static_cast<int64_t>(a->strings.size())};
    t.data.strings = a->strings;
  } else {
    return Status::unsupported("Constant '" + node.name + "' uses a value attribute Osprey does not import (sparse_value)");
  }
  int idx = ctx.tensor(node.outputs[0]);
  TensorInfo& dst = ctx.graph().tensors[idx];
  dst.dtype = t.dtype;
  dst.shape = t.shape;
  dst.hasShape = true;
  dst.isConstant = true;
  dst.data = t.data;
  return Status::ok();
}

const std::unordered_map<std::string, NodeImporter>& importers() {
  static const std::unordered_map<std::string, NodeImporter> table = {
      {"Constant", importConstant},
      {"Clip", importClip},
      {"Pad", importPad},
      {"Slice", importSlice},
      {"Split", importSplit},
      {"Reshape", importReshape},
      {"Squeeze", [](ImportContext& c, const NodeProto& n, int64_t o) { return importSqueezeLike(c, n, o, OpType::Squeeze); }},
      {"Unsqueeze", [](ImportContext& c, const NodeProto& n, int64_t o) { return importSqueezeLike(c, n, o, OpType::Unsqueeze); }},
      {"ReduceMean", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceMean); }},
      {"ReduceSum", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceSum); }},
      {"ReduceMax", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceMax); }},
      {"Softmax", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacySoftmax(c, n, o, OpType::Softmax); }},
      {"LogSoftmax", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacySoftmax(c, n, o, OpType::LogSoftmax); }},
      {"Resize", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacyResize(c, n, o, false); }},
      {"Upsample", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacyResize(c, n, o, true); }},
  };
  return table;
}

}  // namespace

NodeImporter findImporter(const std::string& opType) {
  auto it = importers().find(opType);
  if (it != importers().end()) return it->second;
  return nullptr;
}

}  // namespace osprey::onnx
