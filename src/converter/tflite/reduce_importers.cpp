// Reductions, softmax, L2 and local response normalisation, and arg max/min. On a value held
// NCHW their axes are remapped; without keep_dims the result stays NCHW-free only when the kept
// dimensions are in TFLite's order anyway (reducing over H and W, or over C), else the input is
// transposed first.
#include <algorithm>

#include "converter/tflite/layout.h"
#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

struct AxisPlan {
  int input = -1;
  std::vector<int64_t> axes;  // in the layout of `input`
  Held outputHeld = Held::AsTflite;
};

Status planAxes(ImportContext& ctx, const OpView& op, std::vector<int64_t> axes, bool keepDims, AxisPlan* plan,
                bool codes = false) {
  const int data = op.input(0);
  const int rank = ctx.rank(data);
  for (int64_t& a : axes)
    if (!normalizeTfliteAxis(a, rank, &a))
      return Status::invalidModel(op.name + ": axis out of range for rank " + std::to_string(rank));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const bool nchw = ctx.heldAs(data) == Held::Nchw && rank == 4 && (keepDims || dropKeepsTfliteOrder(axes));
  if (nchw) {
    OSPREY_RETURN_IF_ERROR(codes ? ctx.codesAsNchw(data, &plan->input) : ctx.asNchw(data, &plan->input));
    for (int64_t& a : axes) a = kNhwcAxisInNchw[a];
    plan->outputHeld = keepDims ? Held::Nchw : Held::AsTflite;
  } else {
    OSPREY_RETURN_IF_ERROR(codes ? ctx.codesAsTflite(data, &plan->input) : ctx.asTflite(data, &plan->input));
  }
  plan->axes = axes;
  return Status::ok();
}

// A quantized MEAN on the codes: their float sum (exact) indexes the table of LiteRT's results.
Status importQuantizedMean(ImportContext& ctx, const OpView& op, const std::vector<int64_t>& axes, bool keepDims,
                           bool* done) {
  *done = false;
  const int data = op.input(0), out = op.outputs[0];
  if (!ctx.readsQuantized(data) || !ctx.writesQuantized(out)) return Status::ok();
  const TfliteTensor &x = ctx.tensor(data), &y = ctx.tensor(out);
  const int rank = static_cast<int>(x.shape.size());
  int64_t count = 1;
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t axis;
    if (!normalizeTfliteAxis(a, rank, &axis)) return Status::ok();  // importReduce names the error
    reduced[static_cast<size_t>(axis)] = true;
  }
  for (int d = 0; d < rank; ++d)
    if (reduced[static_cast<size_t>(d)]) {
      if (x.shape[d] <= 0) return Status::ok();
      count *= x.shape[d];
    }
  std::vector<int32_t> table;
  if (!quantizedMeanTable(x, y, count, &table)) return Status::ok();
  AxisPlan plan;
  OSPREY_RETURN_IF_ERROR(planAxes(ctx, op, axes, keepDims, &plan, true));
  const int sum = ctx.temp(op.name + "_sum"), index = ctx.temp(op.name + "_sum_index");
  Node& n = ctx.addNode(OpType::ReduceSum, op.name + "_sum",
                        {codesAsFloat(ctx, op.name + "_codes", plan.input), ctx.addInt64Constant(op.name + "_axes", plan.axes)},
                        {sum});
  n.setInt("keepdims", keepDims ? 1 : 0);
  const float lowestSum = static_cast<float>(count * (y.dtype == DataType::Int8 ? -128 : 0));
  ctx.addNode(OpType::Sub, op.name + "_sum_index", {sum, ctx.addFloatConstant(op.name + "_lowest", {lowestSum}, true)},
              {index});
  quantizedTableLookup(ctx, op.name, y.dtype, table, index, ctx.defineCodes(out, plan.outputHeld));
  *done = true;
  return Status::ok();
}

Status importReduce(ImportContext& ctx, const OpView& op, OpType type) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const auto* o = op.op->builtin_options_as_ReducerOptions();
  const bool keepDims = o && o->keep_dims();
  std::vector<int64_t> axes;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &axes).withContext(op.name + " axes"));
  if (type == OpType::ReduceMean) {
    bool done;
    OSPREY_RETURN_IF_ERROR(importQuantizedMean(ctx, op, axes, keepDims, &done));
    if (done) return Status::ok();
  }
  AxisPlan plan;
  OSPREY_RETURN_IF_ERROR(planAxes(ctx, op, axes, keepDims, &plan));
  Node& n = ctx.addNode(type, op.name, {plan.input, ctx.addInt64Constant(op.name + "_axes", plan.axes)},
                        {ctx.define(op.outputs[0], plan.outputHeld)});
  n.setInt("keepdims", keepDims ? 1 : 0);
  return Status::ok();
}

// Over the last axis, which is C (axis 1) of a value held NCHW.
Status lastAxisOp(ImportContext& ctx, const OpView& op, int* x, int64_t* axis, Held* held) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const int data = op.input(0);
  if (ctx.rank(data) < 1) return Status::invalidModel(op.name + " needs an input of rank >= 1");
  OSPREY_RETURN_IF_ERROR(ctx.value(data, x, held));
  *axis = *held == Held::Nchw && ctx.rank(data) == 4 ? 1 : -1;
  if (*held == Held::Nchw && ctx.rank(data) != 4) {
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(data, x));
    *held = Held::AsTflite;
  }
  return Status::ok();
}

Status importSoftmax(ImportContext& ctx, const OpView& op, OpType type) {
  int x;
  int64_t axis;
  Held held;
  OSPREY_RETURN_IF_ERROR(lastAxisOp(ctx, op, &x, &axis, &held));
  if (type == OpType::Softmax) {
    const auto* o = op.op->builtin_options_as_SoftmaxOptions();
    const float beta = o ? o->beta() : 1.f;
    if (beta != 1.f) {
      int scaled = ctx.temp(op.name + "_beta");
      ctx.addNode(OpType::Mul, op.name + "_beta", {x, ctx.addFloatConstant(op.name + "_beta", {beta}, true)}, {scaled});
      x = scaled;
    }
  }
  ctx.addNode(type, op.name, {x}, {ctx.define(op.outputs[0], held)}).setInt("axis", axis);
  return Status::ok();
}

// x / max(||x||, 1e-6) over the last axis, as TFLite's kernel computes it.
Status importL2Normalization(ImportContext& ctx, const OpView& op) {
  int x;
  int64_t axis;
  Held held;
  OSPREY_RETURN_IF_ERROR(lastAxisOp(ctx, op, &x, &axis, &held));
  const int norm = ctx.temp(op.name + "_norm"), floored = ctx.temp(op.name + "_floored");
  ctx.addNode(OpType::ReduceL2, op.name + "_norm", {x, ctx.addInt64Constant(op.name + "_axes", {axis})}, {norm}).setInt("keepdims", 1);
  ctx.addNode(OpType::Max, op.name + "_floor", {norm, ctx.addFloatConstant(op.name + "_epsilon", {1e-6f}, true)}, {floored});
  ctx.addNode(OpType::Div, op.name, {x, floored}, {ctx.define(op.outputs[0], held)});
  return Status::ok();
}

// LOCAL_RESPONSE_NORMALIZATION over the channels of a 4-D value, as ONNX's LRN on the value
// held NCHW: TFLite's window is radius channels either side (ONNX size 2·radius + 1), and its
// alpha multiplies the sum of squares where ONNX's is divided by size first.
Status importLocalResponseNorm(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_LocalResponseNormalizationOptions();
  if (!o) return missingOptions(op, "LocalResponseNormalizationOptions");
  if (ctx.rank(op.input(0)) != 4) return Status::invalidModel(op.name + ": the input must be 4-D");
  if (o->radius() < 0) return Status::invalidModel(op.name + ": radius must be >= 0");
  const int64_t size = 2 * static_cast<int64_t>(o->radius()) + 1;
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
  Node& n = ctx.addNode(OpType::LRN, op.name, {x}, {ctx.define(op.outputs[0], Held::Nchw)});
  n.setInt("size", size);
  n.setFloat("alpha", o->alpha() * static_cast<float>(size));
  n.setFloat("beta", o->beta());
  n.setFloat("bias", o->bias());
  return Status::ok();
}

Status importArgExtreme(ImportContext& ctx, const OpView& op, OpType type) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  std::vector<int64_t> axis;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &axis).withContext(op.name + " axis"));
  if (axis.size() != 1) return Status::invalidModel(op.name + ": axis must be one value");
  AxisPlan plan;
  OSPREY_RETURN_IF_ERROR(planAxes(ctx, op, axis, false, &plan));
  const DataType to = ctx.tensor(op.outputs[0]).dtype;
  const int out = ctx.define(op.outputs[0], plan.outputHeld);
  const int index = to == DataType::Int64 ? out : ctx.temp(op.name + "_index");
  Node& n = ctx.addNode(type, op.name, {plan.input}, {index});
  n.setInt("axis", plan.axes[0]);
  n.setInt("keepdims", 0);
  if (index != out) ctx.addNode(OpType::Cast, op.name + "_cast", {index}, {out}).setInt("to", static_cast<int64_t>(to));
  return Status::ok();
}

}  // namespace

void addReduceImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_MEAN] = [](ImportContext& c, const OpView& o) { return importReduce(c, o, OpType::ReduceMean); };
  t[tflite::BuiltinOperator_SUM] = [](ImportContext& c, const OpView& o) { return importReduce(c, o, OpType::ReduceSum); };
  t[tflite::BuiltinOperator_REDUCE_MAX] = [](ImportContext& c, const OpView& o) { return importReduce(c, o, OpType::ReduceMax); };
  t[tflite::BuiltinOperator_REDUCE_MIN] = [](ImportContext& c, const OpView& o) { return importReduce(c, o, OpType::ReduceMin); };
  t[tflite::BuiltinOperator_REDUCE_PROD] = [](ImportContext& c, const OpView& o) { return importReduce(c, o, OpType::ReduceProd); };
  t[tflite::BuiltinOperator_SOFTMAX] = [](ImportContext& c, const OpView& o) { return importSoftmax(c, o, OpType::Softmax); };
  t[tflite::BuiltinOperator_LOG_SOFTMAX] = [](ImportContext& c, const OpView& o) { return importSoftmax(c, o, OpType::LogSoftmax); };
  t[tflite::BuiltinOperator_L2_NORMALIZATION] = importL2Normalization;
  t[tflite::BuiltinOperator_LOCAL_RESPONSE_NORMALIZATION] = importLocalResponseNorm;
  t[tflite::BuiltinOperator_ARG_MAX] = [](ImportContext& c, const OpView& o) { return importArgExtreme(c, o, OpType::ArgMax); };
  t[tflite::BuiltinOperator_ARG_MIN] = [](ImportContext& c, const OpView& o) { return importArgExtreme(c, o, OpType::ArgMin); };
}

}  // namespace osprey::tfl
