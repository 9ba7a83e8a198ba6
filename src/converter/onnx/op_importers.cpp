// Per-op ONNX importers. Osprey ops follow the newest opset, so importers of older opsets move
// attributes that later became inputs into constant inputs, and spell out changed defaults.
#include <cstring>
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

// TopK-1 took k as an attribute; later opsets take it as input 1.
Status importTopK(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  const AttributeProto* k = node.attr("k");
  if (opset >= 10 || !k) return importDirect(ctx, node, OpType::TopK);
  std::vector<int> ins = inputIndices(ctx, node);
  ins.resize(1);
  ins.push_back(ctx.addInt64Constant(node.name + "_k", {k->i}));
  Node& n = ctx.addNode(OpType::TopK, node.name, ins, outputIndices(ctx, node));
  return copyAttributes(node, n, {"k"});
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

// Before opset 13 Softmax, LogSoftmax and Hardmax worked over all dimensions from `axis` on:
// flatten to 2-D there, apply the op to the rows, and restore the shape.
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

// DFT before opset 20 took `axis` as an attribute (default 1); since then it is input 2.
Status importDft(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 20) return importDirect(ctx, node, OpType::DFT);
  std::vector<int> ins = inputIndices(ctx, node);
  ins.resize(2, -1);
  const AttributeProto* axis = node.attr("axis");
  ins.push_back(ctx.addInt64Constant(node.name + "_axis", {axis ? axis->i : 1}, true));
  Node& n = ctx.addNode(OpType::DFT, node.name, ins, outputIndices(ctx, node));
  return copyAttributes(node, n, {"axis"});
}

// FlexAttention's score_mod and prob_mod are subgraphs of one input (the scores or the
// probabilities) and one output; Osprey keeps them as Graph attributes.
Status importFlexAttention(ImportContext& ctx, const NodeProto& node, int64_t) {
  std::vector<Attribute> graphs;
  for (const char* name : {"score_mod", "prob_mod"}) {
    const AttributeProto* a = node.attr(name);
    if (!a) continue;
    if (!a->g) return Status::invalidModel(std::string("FlexAttention attribute ") + name + " is not a graph");
    Attribute attr;
    attr.name = name;
    attr.kind = Attribute::Kind::Graph;
    std::vector<std::string> captured;
    OSPREY_RETURN_IF_ERROR(ctx.importSubgraph(*a->g, &attr.graph, &captured).withContext(name));
    if (!captured.empty())
      return Status::unsupported(std::string("FlexAttention ") + name + " reads '" + captured[0] + "' of the enclosing graph");
    graphs.push_back(std::move(attr));
  }
  std::vector<int> ins = inputIndices(ctx, node);
  trimOptional(ins);
  Node& n = ctx.addNode(OpType::FlexAttention, node.name, ins, outputIndices(ctx, node));
  for (Attribute& g : graphs) n.setAttr(std::move(g));
  return copyAttributes(node, n, {"score_mod", "prob_mod"});
}

// Before opset 7 PRelu's slope was per channel (axis 1) rather than numpy-broadcast: a constant
// [C] slope becomes [C, 1, ..., 1] for the input's spatial rank (taken from the model's
// declared input shape where known, else rank 4).
Status importPRelu(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 7 || node.inputs.size() < 2) return importDirect(ctx, node, OpType::PRelu);
  int slope = ctx.tensor(node.inputs[1]);
  const TensorInfo* c = ctx.constantOf(slope);
  int x = ctx.tensor(node.inputs[0]);
  const TensorInfo& xi = ctx.graph().tensors[x];
  if (c && c->shape.size() == 1 && c->shape[0] > 1) {
    size_t rank = xi.hasShape && xi.shape.size() >= 2 ? xi.shape.size() : 4;
    Shape s(rank - 1, 1);
    s[0] = c->shape[0];
    slope = ctx.addConstant(node.name + "_slope", c->dtype, s, c->data.bytes.get(), c->data.size);
  }
  ctx.addNode(OpType::PRelu, node.name, {x, slope}, outputIndices(ctx, node));
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

// RoiAlign before opset 16 had no coordinate_transformation_mode and sampled as
// output_half_pixel does (no half-pixel shift).
Status importRoiAlign(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  OSPREY_RETURN_IF_ERROR(importDirect(ctx, node, OpType::RoiAlign));
  Node& n = ctx.graph().nodes.back();
  if (opset < 16 && !n.hasAttr("coordinate_transformation_mode"))
    n.setString("coordinate_transformation_mode", "output_half_pixel");
  return Status::ok();
}

// GroupNormalization-18 took one scale and bias per group, opset 21 one per channel. Constant
// per-group values are repeated over each group's channels when X's channel count is known.
Status importGroupNormalization(ImportContext& ctx, const NodeProto& node, int64_t opset) {
  if (opset >= 21) return importDirect(ctx, node, OpType::GroupNormalization);
  std::vector<int> ins = inputIndices(ctx, node);
  const AttributeProto* groupsAttr = node.attr("num_groups");
  if (!groupsAttr || ins.size() != 3 || ins[0] < 0)
    return Status::invalidModel("GroupNormalization '" + node.name + "' needs num_groups and inputs X, scale, bias");
  const int64_t groups = groupsAttr->i;
  const TensorInfo& x = ctx.graph().tensors[ins[0]];
  const int64_t channels = x.hasShape && x.shape.size() >= 2 ? x.shape[1] : -1;
  const TensorInfo* scale = ctx.constantOf(ins[1]);
  const TensorInfo* bias = ctx.constantOf(ins[2]);
  if (channels <= 0 || groups <= 0 || channels % groups != 0 || !scale || !bias ||
      shapeElements(scale->shape) != groups || shapeElements(bias->shape) != groups)
    return Status::unsupported("GroupNormalization-" + std::to_string(opset) + " '" + node.name +
                               "': its per-group scale and bias are upgraded to opset 21's per-channel form only "
                               "when they are constants of num_groups values and X's channel count is known");
  for (int i : {1, 2}) {
    const TensorInfo& t = *ctx.constantOf(ins[i]);
    const size_t elem = dataTypeSize(t.dtype);
    if (elem == 0 || t.data.size < elem * static_cast<size_t>(groups))
      return Status::invalidModel("GroupNormalization '" + node.name + "' has a malformed scale or bias constant");
    std::vector<uint8_t> perChannel(elem * static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c)
      std::memcpy(perChannel.data() + c * elem, t.data.bytes.get() + (c / (channels / groups)) * elem, elem);
    ins[i] = ctx.addConstant(node.name + (i == 1 ? "_scale" : "_bias"), t.dtype, {channels}, perChannel.data(),
                             perChannel.size());
  }
  Node& n = ctx.addNode(OpType::GroupNormalization, node.name, ins, outputIndices(ctx, node));
  return copyAttributes(node, n);
}

// Osprey's Conv takes a residual as input 3 and its MatMul a bias as input 2, both added by the
// converter's fusions; an ONNX node with more inputs than ONNX allows is malformed, not fused.
Status importOnnxArity(ImportContext& ctx, const NodeProto& node, OpType type, size_t maxInputs) {
  size_t count = node.inputs.size();
  while (count > 0 && node.inputs[count - 1].empty()) --count;
  if (count > maxInputs)
    return Status::invalidModel("ONNX " + node.opType + " '" + node.name + "' has " + std::to_string(count) +
                                " inputs; ONNX " + node.opType + " takes at most " + std::to_string(maxInputs));
  return importDirect(ctx, node, type);
}

const std::unordered_map<std::string, NodeImporter>& importers() {
  static const std::unordered_map<std::string, NodeImporter> table = {
      {"Constant", importConstant},
      {"Conv", [](ImportContext& c, const NodeProto& n, int64_t) { return importOnnxArity(c, n, OpType::Conv, 3); }},
      {"MatMul", [](ImportContext& c, const NodeProto& n, int64_t) { return importOnnxArity(c, n, OpType::MatMul, 2); }},
      {"If", importIf},
      {"PRelu", importPRelu},
      {"Loop", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLoopOrScan(c, n, o, OpType::Loop); }},
      {"Scan", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLoopOrScan(c, n, o, OpType::Scan); }},
      {"SequenceMap", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLoopOrScan(c, n, o, OpType::SequenceMap); }},
      {"Optional", importOptional},
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
      {"ReduceMin", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceMin); }},
      {"ReduceProd", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceProd); }},
      {"ReduceL1", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceL1); }},
      {"ReduceL2", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceL2); }},
      {"ReduceLogSum", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceLogSum); }},
      {"ReduceLogSumExp", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceLogSumExp); }},
      {"ReduceSumSquare", [](ImportContext& c, const NodeProto& n, int64_t) { return importReduce(c, n, OpType::ReduceSumSquare); }},
      {"TopK", importTopK},
      // Scatter (opset 9-10, deprecated) is ScatterElements without a reduction.
      {"Scatter", [](ImportContext& c, const NodeProto& n, int64_t) { return importDirect(c, n, OpType::ScatterElements); }},
      {"Softmax", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacySoftmax(c, n, o, OpType::Softmax); }},
      {"LogSoftmax", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacySoftmax(c, n, o, OpType::LogSoftmax); }},
      {"Hardmax", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacySoftmax(c, n, o, OpType::Hardmax); }},
      {"Resize", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacyResize(c, n, o, false); }},
      {"Upsample", [](ImportContext& c, const NodeProto& n, int64_t o) { return importLegacyResize(c, n, o, true); }},
      {"DFT", importDft},
      {"FlexAttention", importFlexAttention},
      {"RoiAlign", importRoiAlign},
      {"GroupNormalization", importGroupNormalization},
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
