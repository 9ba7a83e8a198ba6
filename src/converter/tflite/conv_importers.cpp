// Convolutions, pools, dense layers, resizing and space/depth moves. Image ops read and write
// NCHW; their weights are moved into Osprey's layouts once, here.
#include <algorithm>
#include <cstring>

#include "converter/tflite/layout.h"
#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

// TFLite's SAME puts the odd padding pixel at the end, as ONNX's SAME_UPPER does.
Status autoPad(const OpView& op, tflite::Padding padding, std::string* out) {
  if (padding != tflite::Padding_SAME && padding != tflite::Padding_VALID)
    return Status::invalidModel(op.name + ": padding " + std::to_string(static_cast<int>(padding)) + " is neither SAME nor VALID");
  *out = padding == tflite::Padding_VALID ? "VALID" : "SAME_UPPER";
  return Status::ok();
}

// A weight in Osprey's layout: constants are moved at import, other values by a Transpose.
Status weightsIn(ImportContext& ctx, const OpView& op, int t, const std::vector<int64_t>& perm, int* index) {
  if (ctx.rank(t) != static_cast<int>(perm.size()))
    return Status::invalidModel(op.name + ": weights '" + ctx.tensor(t).name + "' have shape " +
                                shapeToString(ctx.tensor(t).shape) + "; expected " + std::to_string(perm.size()) +
                                " dimensions");
  if (ctx.isConstant(t)) {
    *index = ctx.permutedConstant(t, perm, ctx.tensor(t).name + ".osprey");
    return Status::ok();
  }
  int v;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(t, &v));
  *index = ctx.temp(ctx.tensor(t).name + ".osprey");
  ctx.addNode(OpType::Transpose, op.name + "_weights", {v}, {*index}).setInts("perm", perm);
  return Status::ok();
}

Status checkWindow(const OpView& op, std::initializer_list<int> values) {
  for (int v : values)
    if (v < 1) return Status::invalidModel(op.name + ": strides, dilations and filter sizes must be >= 1");
  return Status::ok();
}

Status optionalBias(ImportContext& ctx, const OpView& op, size_t position, std::vector<int>* ins) {
  if (op.input(position) < 0) return Status::ok();
  int b;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(position), &b));
  ins->push_back(b);
  return Status::ok();
}

Status importConv(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const auto* o = op.op->builtin_options_as_Conv2DOptions();
  if (!o) return missingOptions(op, "Conv2DOptions");
  OSPREY_RETURN_IF_ERROR(checkWindow(op, {o->stride_h(), o->stride_w(), o->dilation_h_factor(), o->dilation_w_factor()}));
  std::string pad;
  OSPREY_RETURN_IF_ERROR(autoPad(op, o->padding(), &pad));
  int x, w;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  OSPREY_RETURN_IF_ERROR(weightsIn(ctx, op, op.input(1), kToNchw, &w));  // OHWI -> OIHW
  const Shape& ws = ctx.tensor(op.input(1)).shape;
  const Shape& xs = ctx.tensor(op.input(0)).shape;
  int64_t group = 1;
  if (xs.size() == 4 && xs[3] > 0 && ws[3] > 0 && xs[3] != ws[3]) {
    if (xs[3] % ws[3] != 0)
      return Status::invalidModel(op.name + ": input channels " + std::to_string(xs[3]) +
                                  " are not a multiple of the filter's " + std::to_string(ws[3]));
    group = xs[3] / ws[3];
  }
  std::vector<int> ins = {x, w};
  OSPREY_RETURN_IF_ERROR(optionalBias(ctx, op, 2, &ins));
  const int out = ctx.define(op.outputs[0], Held::Nchw);
  const int produced = outputFor(ctx, o->fused_activation_function(), out);
  Node& n = ctx.addNode(OpType::Conv, op.name, ins, {produced});
  n.setInts("kernel_shape", {ws[1], ws[2]});
  n.setInts("strides", {o->stride_h(), o->stride_w()});
  n.setInts("dilations", {o->dilation_h_factor(), o->dilation_w_factor()});
  n.setInt("group", group);
  n.setString("auto_pad", pad);
  return applyActivation(ctx, op, o->fused_activation_function(), produced, out);
}

// Filters [1, H, W, C*M] become [C*M, 1, H, W] with one group per input channel: output
// channel c*M + m reads input channel c in both.
Status importDepthwiseConv(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const auto* o = op.op->builtin_options_as_DepthwiseConv2DOptions();
  if (!o) return missingOptions(op, "DepthwiseConv2DOptions");
  OSPREY_RETURN_IF_ERROR(checkWindow(op, {o->stride_h(), o->stride_w(), o->dilation_h_factor(), o->dilation_w_factor()}));
  std::string pad;
  OSPREY_RETURN_IF_ERROR(autoPad(op, o->padding(), &pad));
  const Shape& xs = ctx.tensor(op.input(0)).shape;
  if (xs.size() != 4 || xs[3] <= 0)
    return Status::unsupported(op.name + ": the input's channel count must be known (shape " + shapeToString(xs) + ")");
  int x, w;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  OSPREY_RETURN_IF_ERROR(weightsIn(ctx, op, op.input(1), {3, 0, 1, 2}, &w));
  const Shape& ws = ctx.tensor(op.input(1)).shape;
  if (ws[0] != 1 || ws[3] % xs[3] != 0)
    return Status::invalidModel(op.name + ": depthwise filter " + shapeToString(ws) + " does not fit input channels " +
                                std::to_string(xs[3]));
  std::vector<int> ins = {x, w};
  OSPREY_RETURN_IF_ERROR(optionalBias(ctx, op, 2, &ins));
  const int out = ctx.define(op.outputs[0], Held::Nchw);
  const int produced = outputFor(ctx, o->fused_activation_function(), out);
  Node& n = ctx.addNode(OpType::Conv, op.name, ins, {produced});
  n.setInts("kernel_shape", {ws[1], ws[2]});
  n.setInts("strides", {o->stride_h(), o->stride_w()});
  n.setInts("dilations", {o->dilation_h_factor(), o->dilation_w_factor()});
  n.setInt("group", xs[3]);
  n.setString("auto_pad", pad);
  return applyActivation(ctx, op, o->fused_activation_function(), produced, out);
}

// Inputs: output shape, filters [O, H, W, I], input, optional bias. TFLite pads SAME with
// floor(total / 2) at the start; the exact output size is kept with output_padding.
struct TransposeConvWindow {
  tflite::Padding padding;
  int64_t strides[2];
  tflite::ActivationFunctionType activation;
};

// TRANSPOSE_CONV and MediaPipe's Convolution2DTransposeBias: NHWC input, OHWI weights, an
// optional bias, the output's height and width given; pads as TFLite derives them from those.
Status emitTransposeConv(ImportContext& ctx, const OpView& op, int input, int weights, size_t biasPosition,
                         const std::vector<int64_t>& outShape, const TransposeConvWindow& window) {
  const Shape& xs = ctx.tensor(input).shape;
  const Shape& ws = ctx.tensor(weights).shape;
  if (outShape.size() != 4 || xs.size() != 4 || ws.size() != 4 || xs[1] <= 0 || xs[2] <= 0)
    return Status::unsupported(op.name + ": needs a 4-value output shape and a known input height and width");
  int x, w;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(input, &x));
  OSPREY_RETURN_IF_ERROR(weightsIn(ctx, op, weights, {3, 0, 1, 2}, &w));  // OHWI -> IOHW
  std::vector<int64_t> begin(2), end(2), extra(2, 0);
  for (int d = 0; d < 2; ++d) {
    const int64_t total = (xs[1 + d] - 1) * window.strides[d] + ws[1 + d] - outShape[1 + d];
    begin[d] = window.padding == tflite::Padding_SAME ? std::max<int64_t>(total, 0) / 2 : 0;
    end[d] = total - begin[d];
    if (end[d] < 0) {
      extra[d] = -end[d];
      end[d] = 0;
    }
  }
  std::vector<int> ins = {x, w};
  OSPREY_RETURN_IF_ERROR(optionalBias(ctx, op, biasPosition, &ins));
  const int out = ctx.define(op.outputs[0], Held::Nchw);
  const int produced = outputFor(ctx, window.activation, out);
  Node& n = ctx.addNode(OpType::ConvTranspose, op.name, ins, {produced});
  n.setInts("kernel_shape", {ws[1], ws[2]});
  n.setInts("strides", {window.strides[0], window.strides[1]});
  n.setInts("pads", {begin[0], begin[1], end[0], end[1]});
  n.setInts("output_padding", extra);
  return applyActivation(ctx, op, window.activation, produced, out);
}

Status importTransposeConv(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  const auto* o = op.op->builtin_options_as_TransposeConvOptions();
  if (!o) return missingOptions(op, "TransposeConvOptions");
  OSPREY_RETURN_IF_ERROR(checkWindow(op, {o->stride_h(), o->stride_w()}));
  std::string padMode;  // validated here; emitTransposeConv derives the pads
  OSPREY_RETURN_IF_ERROR(autoPad(op, o->padding(), &padMode));
  std::vector<int64_t> outShape;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(0), &outShape).withContext(op.name + " output shape"));
  return emitTransposeConv(ctx, op, op.input(2), op.input(1), 3, outShape,
                           {o->padding(), {o->stride_h(), o->stride_w()}, o->fused_activation_function()});
}

}  // namespace

// MediaPipe's custom op: its options are the raw C struct TfLiteTransposeConvParams
// {padding (1 SAME, 2 VALID), stride_width, stride_height}, and the output size follows
// TFLite's rule for a convolution run backwards (SAME: stride x input; VALID: adds the filter).
Status importTransposeConvBias(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  const auto* bytes = op.op->custom_options();
  int32_t params[3];
  if (!bytes || bytes->size() < sizeof params)
    return Status::invalidModel(op.name + ": Convolution2DTransposeBias needs 12 bytes of options (padding, stride "
                                "width, stride height); it has " + std::to_string(bytes ? bytes->size() : 0));
  std::memcpy(params, bytes->data(), sizeof params);
  if (params[0] != 1 && params[0] != 2)
    return Status::invalidModel(op.name + ": padding " + std::to_string(params[0]) + " is neither SAME (1) nor VALID (2)");
  OSPREY_RETURN_IF_ERROR(checkWindow(op, {params[1], params[2]}));
  const tflite::Padding padding = params[0] == 1 ? tflite::Padding_SAME : tflite::Padding_VALID;
  const Shape& xs = ctx.tensor(op.input(0)).shape;
  const Shape& ws = ctx.tensor(op.input(1)).shape;
  if (xs.size() != 4 || ws.size() != 4)
    return Status::invalidModel(op.name + ": input and weights must have 4 dimensions");
  std::vector<int64_t> outShape = {xs[0], 0, 0, ws[0]};
  const int64_t strides[2] = {params[2], params[1]};
  for (int d = 0; d < 2; ++d)
    outShape[1 + d] = padding == tflite::Padding_SAME ? strides[d] * xs[1 + d] : strides[d] * (xs[1 + d] - 1) + ws[1 + d];
  return emitTransposeConv(ctx, op, op.input(0), op.input(1), 2, outShape,
                           {padding, {strides[0], strides[1]}, tflite::ActivationFunctionType_NONE});
}

namespace {

Status importPool(ImportContext& ctx, const OpView& op, OpType type) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_Pool2DOptions();
  if (!o) return missingOptions(op, "Pool2DOptions");
  OSPREY_RETURN_IF_ERROR(checkWindow(op, {o->stride_h(), o->stride_w(), o->filter_height(), o->filter_width()}));
  std::string pad;
  OSPREY_RETURN_IF_ERROR(autoPad(op, o->padding(), &pad));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  const int out = ctx.define(op.outputs[0], Held::Nchw);
  const int produced = outputFor(ctx, o->fused_activation_function(), out);
  Node& n = ctx.addNode(type, op.name, {x}, {produced});
  n.setInts("kernel_shape", {o->filter_height(), o->filter_width()});
  n.setInts("strides", {o->stride_h(), o->stride_w()});
  n.setString("auto_pad", pad);
  return applyActivation(ctx, op, o->fused_activation_function(), produced, out);
}

// Weights [N, K], input [..., K] (flattened to [-1, K] unless keep_num_dims), optional bias.
Status importFullyConnected(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const auto* o = op.op->builtin_options_as_FullyConnectedOptions();
  const auto act = o ? o->fused_activation_function() : tflite::ActivationFunctionType_NONE;
  if (o && o->weights_format() != tflite::FullyConnectedOptionsWeightsFormat_DEFAULT)
    return Status::unsupported("shuffled weights format");
  const Shape& ws = ctx.tensor(op.input(1)).shape;
  if (ws.size() != 2) return Status::invalidModel(op.name + ": weights must be 2-D, not " + shapeToString(ws));
  int x, w;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  const bool keepDims = o && o->keep_num_dims();
  // Quantized on rows: Gemm with transB keeps the weights' per-row scales on its axis 0, the
  // form that becomes QGemm with its int32 bias. (With keep_num_dims on 3-D input the MatMul
  // form stays: MatMulIntegerToFloat, then the bias and QuantizeLinear in float.)
  const bool gemm = ctx.readsQuantized(op.input(0)) && ctx.writesQuantized(op.outputs[0]) &&
                    (!keepDims || ctx.rank(op.input(0)) == 2);
  OSPREY_RETURN_IF_ERROR(weightsIn(ctx, op, op.input(1), gemm ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{1, 0}, &w));
  if (!keepDims && ctx.rank(op.input(0)) != 2) {
    int flat = ctx.temp(op.name + "_rows");
    ctx.addNode(OpType::Reshape, op.name + "_rows", {x, ctx.addInt64Constant(op.name + "_rows", {-1, ws[1]})}, {flat});
    x = flat;
  }
  const int out = ctx.define(op.outputs[0], Held::AsTflite);
  const int produced = outputFor(ctx, act, out);
  if (gemm) {
    std::vector<int> ins = {x, w};
    OSPREY_RETURN_IF_ERROR(optionalBias(ctx, op, 2, &ins));
    ctx.addNode(OpType::Gemm, op.name, ins, {produced}).setInt("transB", 1);
  } else if (op.input(2) >= 0) {
    int bias, product = ctx.temp(op.name + "_product");
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(2), &bias));
    ctx.addNode(OpType::MatMul, op.name, {x, w}, {product});
    ctx.addNode(OpType::Add, op.name + "_bias", {product, bias}, {produced});
  } else {
    ctx.addNode(OpType::MatMul, op.name, {x, w}, {produced});
  }
  return applyActivation(ctx, op, act, produced, out);
}

// LiteRT multiplies two quantized activations in integers and requantizes the int32 sums in
// TFLite's fixed point (ops/fixed_point_requantize.h); the float form rounds a few sums the
// other way. QLinearMatMul on the codes with requantize = "fixed_point" computes LiteRT's.
bool integerActivationProduct(const ImportContext& ctx, const OpView& op) {
  const int a = op.input(0), b = op.input(1), y = op.outputs[0];
  if (ctx.isConstant(a) || ctx.isConstant(b)) return false;
  if (!ctx.readsQuantized(a) || !ctx.readsQuantized(b) || !ctx.writesQuantized(y)) return false;
  for (int t : {a, b, y})
    if (ctx.tensor(t).scales.size() != 1 || ctx.tensor(t).zeroPoints.size() != 1) return false;
  // int8 only: LiteRT runs no uint8 BATCH_MATMUL to match.
  return ctx.tensor(a).dtype == DataType::Int8 && ctx.tensor(b).dtype == DataType::Int8 &&
         ctx.tensor(y).dtype == DataType::Int8;
}

Status importBatchMatMul(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const auto* o = op.op->builtin_options_as_BatchMatMulOptions();
  const bool integer = integerActivationProduct(ctx, op);
  int operands[2];
  for (int i = 0; i < 2; ++i) {
    if (integer)
      OSPREY_RETURN_IF_ERROR(ctx.codesAsTflite(op.input(i), &operands[i]));
    else
      OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(i), &operands[i]));
    const bool adjoint = o && (i == 0 ? o->adj_x() : o->adj_y());
    const int rank = ctx.rank(op.input(i));
    if (!adjoint) continue;
    if (rank < 2) return Status::invalidModel(op.name + ": an adjoint operand needs 2 or more dimensions");
    std::vector<int64_t> perm(rank);
    for (int d = 0; d < rank; ++d) perm[d] = d;
    std::swap(perm[rank - 1], perm[rank - 2]);
    int moved = ctx.temp(op.name + "_adjoint");
    ctx.addNode(OpType::Transpose, op.name + "_adjoint", {operands[i]}, {moved}).setInts("perm", perm);
    operands[i] = moved;
  }
  if (!integer) {
    ctx.addNode(OpType::MatMul, op.name, {operands[0], operands[1]}, {ctx.define(op.outputs[0], Held::AsTflite)});
    return Status::ok();
  }
  std::vector<int> ins;
  for (int t : {op.input(0), op.input(1), op.outputs[0]}) {
    const TfliteTensor& q = ctx.tensor(t);
    const float scale = q.scales[0];
    const int8_t zeroPoint = static_cast<int8_t>(q.zeroPoints[0]);
    if (t != op.outputs[0]) ins.push_back(t == op.input(0) ? operands[0] : operands[1]);
    ins.push_back(ctx.addConstant(op.name + "_scale", DataType::Float32, {}, &scale, sizeof scale));
    ins.push_back(ctx.addConstant(op.name + "_zero_point", q.dtype, {}, &zeroPoint, 1));
  }
  ctx.addNode(OpType::QLinearMatMul, op.name, ins, {ctx.defineCodes(op.outputs[0], Held::AsTflite)})
      .setString("requantize", "fixed_point");
  return Status::ok();
}

Status importResize(ImportContext& ctx, const OpView& op, bool bilinear) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  bool alignCorners = false, halfPixel = false;
  if (bilinear) {
    if (const auto* o = op.op->builtin_options_as_ResizeBilinearOptions()) {
      alignCorners = o->align_corners();
      halfPixel = o->half_pixel_centers();
    }
  } else if (const auto* o = op.op->builtin_options_as_ResizeNearestNeighborOptions()) {
    alignCorners = o->align_corners();
    halfPixel = o->half_pixel_centers();
  }
  int x, size;
  // LiteRT's int8 bilinear resize (XNNPACK's) interpolates the codes and rounds half up; input
  // and output share their quantization, so the codes are resized directly, rounded the same way
  // (integer_rounding = "half_up"; exact for the power-of-two factors of upsampling layers).
  const TfliteTensor& in = ctx.tensor(op.input(0));
  const TfliteTensor& outInfo = ctx.tensor(op.outputs[0]);
  const bool codes = bilinear && ctx.readsQuantized(op.input(0)) && ctx.writesQuantized(op.outputs[0]) &&
                     in.dtype == outInfo.dtype && in.scales == outInfo.scales && in.zeroPoints == outInfo.zeroPoints;
  if (codes) {
    OSPREY_RETURN_IF_ERROR(ctx.codesAsNchw(op.input(0), &x));
  } else {
    OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  }
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &size));
  size = ctx.asInt64(size, op.name + "_size");
  const int resized = codes ? ctx.defineCodes(op.outputs[0], Held::Nchw) : ctx.define(op.outputs[0], Held::Nchw);
  Node& n = ctx.addNode(OpType::Resize, op.name, {x, -1, -1, size}, {resized});
  n.setInts("axes", {2, 3});
  n.setString("mode", bilinear ? "linear" : "nearest");
  n.setString("coordinate_transformation_mode", alignCorners ? "align_corners" : halfPixel ? "half_pixel" : "asymmetric");
  // TFLite's nearest neighbour: floor(out * scale) without options, round() with
  // align_corners, floor((out + 0.5) * scale) with half_pixel_centers, which is ONNX's
  // half_pixel coordinate rounded half up.
  n.setString("nearest_mode", alignCorners || halfPixel ? "round_prefer_ceil" : "floor");
  if (codes) n.setString("integer_rounding", "half_up");
  return Status::ok();
}

Status importSpaceDepth(ImportContext& ctx, const OpView& op, OpType type) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  int block = 0;
  if (type == OpType::SpaceToDepth) {
    if (const auto* o = op.op->builtin_options_as_SpaceToDepthOptions()) block = o->block_size();
  } else if (const auto* o = op.op->builtin_options_as_DepthToSpaceOptions()) {
    block = o->block_size();
  }
  if (block < 1) return Status::invalidModel(op.name + ": block_size must be >= 1");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  // TensorFlow's channel order is ONNX's DCR.
  Node& n = ctx.addNode(type, op.name, {x}, {ctx.define(op.outputs[0], Held::Nchw)});
  n.setInt("blocksize", block);
  if (type == OpType::DepthToSpace) n.setString("mode", "DCR");
  return Status::ok();
}

}  // namespace

void addConvImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_CONV_2D] = importConv;
  t[tflite::BuiltinOperator_DEPTHWISE_CONV_2D] = importDepthwiseConv;
  t[tflite::BuiltinOperator_TRANSPOSE_CONV] = importTransposeConv;
  t[tflite::BuiltinOperator_AVERAGE_POOL_2D] = [](ImportContext& c, const OpView& o) { return importPool(c, o, OpType::AveragePool); };
  t[tflite::BuiltinOperator_MAX_POOL_2D] = [](ImportContext& c, const OpView& o) { return importPool(c, o, OpType::MaxPool); };
  t[tflite::BuiltinOperator_FULLY_CONNECTED] = importFullyConnected;
  t[tflite::BuiltinOperator_BATCH_MATMUL] = importBatchMatMul;
  t[tflite::BuiltinOperator_RESIZE_BILINEAR] = [](ImportContext& c, const OpView& o) { return importResize(c, o, true); };
  t[tflite::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR] = [](ImportContext& c, const OpView& o) { return importResize(c, o, false); };
  t[tflite::BuiltinOperator_SPACE_TO_DEPTH] = [](ImportContext& c, const OpView& o) { return importSpaceDepth(c, o, OpType::SpaceToDepth); };
  t[tflite::BuiltinOperator_DEPTH_TO_SPACE] = [](ImportContext& c, const OpView& o) { return importSpaceDepth(c, o, OpType::DepthToSpace); };
}

}  // namespace osprey::tfl
