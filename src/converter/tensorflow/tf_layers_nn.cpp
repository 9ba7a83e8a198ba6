// Convolutions, pools, batch norm, dense layers, softmax, resizing and space/depth moves. Image
// ops read and write NCHW; their weights are moved into Osprey's layouts once, here.
#include <cstring>

#include "converter/tensorflow/tf_layers.h"
#include "converter/tflite/layout.h"

namespace osprey::tf {

namespace {

// An NHWC op's layout: data_format "NHWC" (held NCHW by Osprey) or "NCHW" (TensorFlow's own
// order is then Osprey's).
Status imageFormat(const NodeView& node, bool* nhwc) {
  const std::string f = node.attrString("data_format", "NHWC");
  if (f != "NHWC" && f != "NCHW") return Status::unsupported("data_format " + f);
  *nhwc = f == "NHWC";
  return Status::ok();
}

Status imageInput(ImportContext& ctx, const NodeView& node, bool nhwc, int* x) {
  return nhwc ? ctx.asNchw(node.input(0), x) : ctx.asTf(node.input(0), x);
}

int imageOutput(ImportContext& ctx, const NodeView& node, bool nhwc) {
  return ctx.define(node, 0, nhwc ? Held::Nchw : Held::AsTf, 4);
}

// Strides, dilations or ksize (4 values in data_format order) -> {h, w}.
Status spatial(const NodeView& node, const char* key, bool nhwc, std::vector<int64_t>* out) {
  std::vector<int64_t> v = node.attrInts(key);
  if (v.empty()) v = {1, 1, 1, 1};
  if (v.size() != 4) return node.error(std::string(key) + " has " + std::to_string(v.size()) + " values, not 4");
  *out = nhwc ? std::vector<int64_t>{v[1], v[2]} : std::vector<int64_t>{v[2], v[3]};
  for (int64_t s : *out)
    if (s < 1) return node.error(std::string(key) + " must be >= 1");
  return Status::ok();
}

// TensorFlow's SAME puts the odd padding pixel at the end, as ONNX's SAME_UPPER does.
Status setPadding(const NodeView& node, bool nhwc, Node& n) {
  const std::string p = node.attrString("padding", "VALID");
  if (p == "SAME") n.setString("auto_pad", "SAME_UPPER");
  else if (p == "VALID") n.setString("auto_pad", "VALID");
  else if (p == "EXPLICIT") {
    const std::vector<int64_t> e = node.attrInts("explicit_paddings");
    if (e.size() != 8) return node.error("explicit_paddings has " + std::to_string(e.size()) + " values, not 8");
    const int h = nhwc ? 1 : 2, w = nhwc ? 2 : 3;
    n.setInts("pads", {e[2 * h], e[2 * w], e[2 * h + 1], e[2 * w + 1]});
  } else {
    return node.error("padding '" + p + "' is not SAME, VALID or EXPLICIT");
  }
  return Status::ok();
}

// A weight moved by `perm`: constants at import, other values by a Transpose.
Status weights(ImportContext& ctx, const NodeView& node, const std::string& ref, const std::vector<int64_t>& perm,
               Shape* shape, int* index) {
  if (const TensorInfo* c = ctx.constant(ref)) {
    if (c->shape.size() != perm.size())
      return node.error("filter " + shapeToString(c->shape) + " must have " + std::to_string(perm.size()) + " dimensions");
    *shape = c->shape;
    std::vector<uint8_t> moved;
    tfl::permuteBytes(c->data.bytes.get(), c->shape, dataTypeSize(c->dtype), perm, &moved);
    const DataType dtype = c->dtype;
    *index = ctx.addConstant(c->name + ".osprey", dtype, tfl::permuteShape(*shape, perm), moved.data(), moved.size());
    return Status::ok();
  }
  return Status::unsupported("a filter that is not a constant");
}

Status importConv(ImportContext& ctx, const NodeView& node, bool depthwise) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  bool nhwc;
  OSPREY_RETURN_IF_ERROR(imageFormat(node, &nhwc));
  std::vector<int64_t> strides, dilations;
  OSPREY_RETURN_IF_ERROR(spatial(node, "strides", nhwc, &strides));
  OSPREY_RETURN_IF_ERROR(spatial(node, "dilations", nhwc, &dilations));
  int x, w;
  Shape ws;
  OSPREY_RETURN_IF_ERROR(imageInput(ctx, node, nhwc, &x));
  // HWIO -> OIHW; depthwise [H, W, C, M] -> [C, M, H, W] read as [C*M, 1, H, W]: output
  // channel c*M + m reads input channel c in both.
  OSPREY_RETURN_IF_ERROR(weights(ctx, node, node.input(1), depthwise ? std::vector<int64_t>{2, 3, 0, 1}
                                                                     : std::vector<int64_t>{3, 2, 0, 1}, &ws, &w));
  if (depthwise) ctx.graph().tensors[w].shape = {ws[2] * ws[3], 1, ws[0], ws[1]};
  const int out = imageOutput(ctx, node, nhwc);
  Node& n = ctx.addNode(OpType::Conv, node.name(), {x, w}, {out});
  n.setInts("kernel_shape", {ws[0], ws[1]});
  n.setInts("strides", strides);
  n.setInts("dilations", dilations);
  if (depthwise) n.setInt("group", ws[2]);
  if (nhwc) ctx.markFoldableConv(out);
  return setPadding(node, nhwc, n);
}

}  // namespace

bool foldIntoConv(ImportContext& ctx, const NodeView& node, OpType type, const std::string& x, const std::string& c) {
  int xi;
  Held held;
  if (!ctx.value(x, &xi, &held).isOk() || held != Held::Nchw || ctx.readers(x) != 1 || !ctx.isFoldableConv(xi))
    return false;
  const TensorInfo* k = ctx.constant(c);
  if (!k || k->dtype != DataType::Float32) return false;
  for (size_t d = 0; d + 1 < k->shape.size(); ++d)
    if (k->shape[d] != 1) return false;
  Graph& g = ctx.graph();
  long at = static_cast<long>(g.nodes.size()) - 1;
  while (at >= 0 && !(g.nodes[at].type == OpType::Conv && g.nodes[at].outputs[0] == xi)) --at;
  if (at < 0) return false;
  const std::vector<int> convInputs = g.nodes[at].inputs;
  const TensorInfo& w = g.tensors[convInputs[1]];
  if (!w.isConstant || w.dtype != DataType::Float32 || w.shape.empty()) return false;
  const int64_t channels = w.shape[0], n = shapeElements(k->shape);
  if (n != channels && n != 1) return false;
  const float* cv = reinterpret_cast<const float*>(k->data.bytes.get());
  auto perChannel = [&](int64_t o) { return cv[n == 1 ? 0 : o]; };
  std::vector<float> bias(static_cast<size_t>(channels), 0.f);
  if (convInputs.size() > 2) {
    const TensorInfo& b = g.tensors[convInputs[2]];
    if (!b.isConstant || b.dtype != DataType::Float32 || shapeElements(b.shape) != channels) return false;
    std::memcpy(bias.data(), b.data.bytes.get(), bias.size() * 4);
  }
  if (type == OpType::Mul) {
    const int64_t inner = shapeElements(w.shape) / channels;
    std::vector<float> scaled(static_cast<size_t>(channels * inner));
    std::memcpy(scaled.data(), w.data.bytes.get(), scaled.size() * 4);
    for (int64_t o = 0; o < channels; ++o) {
      for (int64_t j = 0; j < inner; ++j) scaled[o * inner + j] *= perChannel(o);
      bias[o] *= perChannel(o);
    }
    const Shape shape = w.shape;
    const std::string name = w.name;
    g.nodes[at].inputs[1] = ctx.addConstant(name, DataType::Float32, shape, scaled.data(), scaled.size() * 4);
  } else {
    for (int64_t o = 0; o < channels; ++o) bias[o] += type == OpType::Sub ? -perChannel(o) : perChannel(o);
  }
  const int b = ctx.addConstant(node.name() + "_bias", DataType::Float32, {channels}, bias.data(), bias.size() * 4);
  Node& conv = g.nodes[at];
  if (conv.inputs.size() > 2) conv.inputs[2] = b;
  else conv.inputs.push_back(b);
  ctx.bind(node, 0, xi, Held::Nchw, 4);
  return true;
}

namespace {

// Conv3D (NDHWC, filters [D, H, W, I, O]): 5-D values are not held channels-first, so the
// input and output are transposed around an NCDHW Conv.
Status importConv3D(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  if (node.attrString("data_format", "NDHWC") != "NDHWC") return Status::unsupported("data_format NCDHW");
  std::vector<int64_t> strides = node.attrInts("strides"), dilations = node.attrInts("dilations");
  if (dilations.empty()) dilations = {1, 1, 1, 1, 1};
  if (strides.size() != 5 || dilations.size() != 5) return node.error("strides and dilations must have 5 values");
  for (int i = 1; i < 4; ++i)
    if (strides[i] < 1 || dilations[i] < 1) return node.error("strides and dilations must be >= 1");
  int x, w;
  Shape ws;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(weights(ctx, node, node.input(1), {4, 3, 0, 1, 2}, &ws, &w));
  const int xt = ctx.temp(node.name() + "_ncdhw");
  ctx.addNode(OpType::Transpose, node.name() + "_to_ncdhw", {x}, {xt}).setInts("perm", {0, 4, 1, 2, 3});
  const int y = ctx.temp(node.name() + "_conv");
  Node& n = ctx.addNode(OpType::Conv, node.name(), {xt, w}, {y});
  n.setInts("kernel_shape", {ws[0], ws[1], ws[2]});
  n.setInts("strides", {strides[1], strides[2], strides[3]});
  n.setInts("dilations", {dilations[1], dilations[2], dilations[3]});
  const std::string p = node.attrString("padding", "VALID");
  if (p != "SAME" && p != "VALID") return Status::unsupported("padding " + p);
  n.setString("auto_pad", p == "SAME" ? "SAME_UPPER" : "VALID");
  ctx.addNode(OpType::Transpose, node.name() + "_to_ndhwc", {y}, {ctx.define(node, 0, Held::AsTf, 5)})
      .setInts("perm", {0, 2, 3, 4, 1});
  return Status::ok();
}

// Conv2DBackpropInput(output_sizes, filter [H, W, O, I], input): a transposed convolution whose
// padding is fixed by the output size TensorFlow asks for.
Status importConvTranspose(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(3));
  bool nhwc;
  OSPREY_RETURN_IF_ERROR(imageFormat(node, &nhwc));
  std::vector<int64_t> strides, dilations, outSize;
  OSPREY_RETURN_IF_ERROR(spatial(node, "strides", nhwc, &strides));
  OSPREY_RETURN_IF_ERROR(spatial(node, "dilations", nhwc, &dilations));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(0), &outSize).withContext(node.label + " output sizes"));
  if (outSize.size() != 4) return node.error("output sizes must have 4 values");
  const int64_t oh = nhwc ? outSize[1] : outSize[2], ow = nhwc ? outSize[2] : outSize[3];
  int x, w;
  Shape ws;
  OSPREY_RETURN_IF_ERROR(nhwc ? ctx.asNchw(node.input(2), &x) : ctx.asTf(node.input(2), &x));
  OSPREY_RETURN_IF_ERROR(weights(ctx, node, node.input(1), {3, 2, 0, 1}, &ws, &w));  // -> [I, O, H, W]
  Node& n = ctx.addNode(OpType::ConvTranspose, node.name(), {x, w}, {imageOutput(ctx, node, nhwc)});
  n.setInts("kernel_shape", {ws[0], ws[1]});
  n.setInts("strides", strides);
  n.setInts("dilations", dilations);
  n.setInts("output_shape", {oh, ow});
  const std::string p = node.attrString("padding", "VALID");
  n.setString("auto_pad", p == "SAME" ? "SAME_UPPER" : "VALID");
  if (p != "SAME" && p != "VALID") return Status::unsupported("padding " + p);
  return Status::ok();
}

Status importPool(ImportContext& ctx, const NodeView& node, OpType type) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  bool nhwc;
  OSPREY_RETURN_IF_ERROR(imageFormat(node, &nhwc));
  std::vector<int64_t> strides, ksize;
  OSPREY_RETURN_IF_ERROR(spatial(node, "strides", nhwc, &strides));
  OSPREY_RETURN_IF_ERROR(spatial(node, "ksize", nhwc, &ksize));
  int x;
  OSPREY_RETURN_IF_ERROR(imageInput(ctx, node, nhwc, &x));
  Node& n = ctx.addNode(type, node.name(), {x}, {imageOutput(ctx, node, nhwc)});
  n.setInts("kernel_shape", ksize);
  n.setInts("strides", strides);
  return setPadding(node, nhwc, n);  // AveragePool leaves padding out of the count, as TensorFlow does
}

// Inference FusedBatchNorm: y = (x - mean) / sqrt(var + epsilon) * scale + offset.
Status importFusedBatchNorm(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(5));
  if (node.attrBool("is_training", true)) return Status::unsupported("is_training=true");
  bool nhwc;
  OSPREY_RETURN_IF_ERROR(imageFormat(node, &nhwc));
  int x;
  OSPREY_RETURN_IF_ERROR(imageInput(ctx, node, nhwc, &x));
  std::vector<int> ins = {x};
  for (size_t i = 1; i < 5; ++i) {
    int v;
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(i), &v));
    ins.push_back(v);
  }
  Node& n = ctx.addNode(OpType::BatchNormalization, node.name(), ins, {imageOutput(ctx, node, nhwc)});
  n.setFloat("epsilon", node.attrFloat("epsilon", 1e-4f));
  return Status::ok();
}

Status importBiasAdd(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  const std::string f = node.attrString("data_format", "NHWC");
  int x, b;
  Held held = ctx.heldAs(node.input(0));
  if (f == "NCHW") {
    if (ctx.rank(node.input(0)) != 4) return Status::unsupported("data_format NCHW of a value not known to be 4-D");
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
    OSPREY_RETURN_IF_ERROR(ctx.asNchw(node.input(1), &b));  // [C] -> [1, C, 1, 1]
    held = Held::AsTf;
  } else if (held == Held::Nchw) {
    if (foldIntoConv(ctx, node, OpType::Add, node.input(0), node.input(1))) return Status::ok();
    OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x));
    OSPREY_RETURN_IF_ERROR(ctx.asNchw(node.input(1), &b));
  } else {
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &b));
  }
  ctx.addNode(OpType::Add, node.name(), {x, b}, {ctx.define(node, 0, held, ctx.rank(node.input(0)))});
  return Status::ok();
}

Status transposedLast2(ImportContext& ctx, const NodeView& node, const std::string& ref, int* index) {
  const int r = ctx.rank(ref);
  if (r < 2) return Status::unsupported("an adjoint operand of unknown rank");
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) perm[i] = i;
  std::swap(perm[r - 1], perm[r - 2]);
  if (const TensorInfo* c = ctx.constant(ref)) {
    std::vector<uint8_t> moved;
    tfl::permuteBytes(c->data.bytes.get(), c->shape, dataTypeSize(c->dtype), perm, &moved);
    const DataType dtype = c->dtype;
    *index = ctx.addConstant(c->name + ".t", dtype, tfl::permuteShape(c->shape, perm), moved.data(), moved.size());
    return Status::ok();
  }
  int v;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(ref, &v));
  *index = ctx.temp(node.name() + "_t");
  ctx.addNode(OpType::Transpose, node.name() + "_t", {v}, {*index}).setInts("perm", perm);
  return Status::ok();
}

Status importMatMul(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  const bool batch = node.def->op != "MatMul";
  const bool ta = batch ? node.attrBool("adj_x", false) : node.attrBool("transpose_a", false);
  const bool tb = batch ? node.attrBool("adj_y", false) : node.attrBool("transpose_b", false);
  int a, b;
  if (ta) OSPREY_RETURN_IF_ERROR(transposedLast2(ctx, node, node.input(0), &a));
  else OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &a));
  if (tb) OSPREY_RETURN_IF_ERROR(transposedLast2(ctx, node, node.input(1), &b));
  else OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &b));
  const int ra = ctx.rank(node.input(0)), rb = ctx.rank(node.input(1));
  ctx.addNode(OpType::MatMul, node.name(), {a, b}, {ctx.define(node, 0, Held::AsTf, ra < 0 || rb < 0 ? -1 : std::max(ra, rb))});
  return Status::ok();
}

// Softmax over the last axis; a value held NCHW keeps its layout with the axis remapped.
Status importSoftmax(ImportContext& ctx, const NodeView& node, OpType type) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x, &held));
  Node& n = ctx.addNode(type, node.name(), {x}, {ctx.define(node, 0, held, ctx.rank(node.input(0)))});
  n.setInt("axis", held == Held::Nchw ? 1 : -1);
  return Status::ok();
}

Status importResize(ImportContext& ctx, const NodeView& node, bool bilinear) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  const bool alignCorners = node.attrBool("align_corners", false);
  const bool halfPixel = node.attrBool("half_pixel_centers", false);
  int x, size;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &size));
  size = ctx.asInt64(size, node.name() + "_size");
  Node& n = ctx.addNode(OpType::Resize, node.name(), {x, -1, -1, size}, {ctx.define(node, 0, Held::Nchw, 4)});
  n.setInts("axes", {2, 3});
  n.setString("mode", bilinear ? "linear" : "nearest");
  n.setString("coordinate_transformation_mode", alignCorners ? "align_corners" : halfPixel ? "half_pixel" : "asymmetric");
  // Nearest neighbour: floor(out * scale) without options, round() with align_corners,
  // floor((out + 0.5) * scale) with half_pixel_centers (ONNX's half_pixel rounded half up).
  n.setString("nearest_mode", alignCorners || halfPixel ? "round_prefer_ceil" : "floor");
  return Status::ok();
}

Status importSpaceDepth(ImportContext& ctx, const NodeView& node, OpType type) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  const int64_t block = node.attrInt("block_size", 0);
  if (block < 1) return node.error("block_size must be >= 1");
  bool nhwc;
  OSPREY_RETURN_IF_ERROR(imageFormat(node, &nhwc));
  if (!nhwc) return Status::unsupported("data_format NCHW");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(node.input(0), &x));
  // TensorFlow's channel order is ONNX's DCR.
  Node& n = ctx.addNode(type, node.name(), {x}, {ctx.define(node, 0, Held::Nchw, 4)});
  n.setInt("blocksize", block);
  if (type == OpType::DepthToSpace) n.setString("mode", "DCR");
  return Status::ok();
}

}  // namespace

void addNnImporters(ImporterTable& t) {
  t["Conv2D"] = [](ImportContext& c, const NodeView& n) { return importConv(c, n, false); };
  t["DepthwiseConv2dNative"] = [](ImportContext& c, const NodeView& n) { return importConv(c, n, true); };
  t["Conv2DBackpropInput"] = importConvTranspose;
  t["Conv3D"] = importConv3D;
  t["MaxPool"] = [](ImportContext& c, const NodeView& n) { return importPool(c, n, OpType::MaxPool); };
  t["AvgPool"] = [](ImportContext& c, const NodeView& n) { return importPool(c, n, OpType::AveragePool); };
  t["FusedBatchNorm"] = importFusedBatchNorm;
  t["FusedBatchNormV2"] = importFusedBatchNorm;
  t["FusedBatchNormV3"] = importFusedBatchNorm;
  t["BiasAdd"] = importBiasAdd;
  t["MatMul"] = importMatMul;
  t["BatchMatMul"] = importMatMul;
  t["BatchMatMulV2"] = importMatMul;
  t["BatchMatMulV3"] = importMatMul;
  t["Softmax"] = [](ImportContext& c, const NodeView& n) { return importSoftmax(c, n, OpType::Softmax); };
  t["LogSoftmax"] = [](ImportContext& c, const NodeView& n) { return importSoftmax(c, n, OpType::LogSoftmax); };
  t["ResizeBilinear"] = [](ImportContext& c, const NodeView& n) { return importResize(c, n, true); };
  t["ResizeNearestNeighbor"] = [](ImportContext& c, const NodeView& n) { return importResize(c, n, false); };
  t["SpaceToDepth"] = [](ImportContext& c, const NodeView& n) { return importSpaceDepth(c, n, OpType::SpaceToDepth); };
  t["DepthToSpace"] = [](ImportContext& c, const NodeView& n) { return importSpaceDepth(c, n, OpType::DepthToSpace); };
}

}  // namespace osprey::tf
