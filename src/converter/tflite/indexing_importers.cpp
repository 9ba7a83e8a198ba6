// Indexing, sorting and filling ops: GATHER_ND, SCATTER_ND, EMBEDDING_LOOKUP, TOPK_V2, CUMSUM,
// BROADCAST_TO, ZEROS_LIKE, SELECT (v1), RANGE and ONE_HOT. They read and write TFLite's own layout.
#include <limits>

#include "converter/tflite/layout.h"
#include "converter/tflite/op_importers.h"
#include "core/dtype.h"

namespace osprey::tfl {

namespace {

Status importGatherNd(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  int params, indices;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &params));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &indices));
  indices = ctx.asInt64(indices, op.name + "_indices");
  ctx.addNode(OpType::GatherND, op.name, {params, indices}, {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

// EMBEDDING_LOOKUP(ids, table): rows of the table, as Gather on axis 0.
Status importEmbeddingLookup(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  if (ctx.tensor(op.input(1)).quantized)
    return Status::unsupported("a quantized table (its per-row scales are not read)");
  int ids, table;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &ids));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &table));
  ctx.addNode(OpType::Gather, op.name, {table, ids}, {ctx.define(op.outputs[0], Held::AsTflite)}).setInt("axis", 0);
  return Status::ok();
}

// TOPK_V2(x, k): the k largest along the last axis, sorted, ties to the lower index (as ONNX's
// TopK); the indices come out int32 as TFLite declares them.
Status importTopK(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  if (op.outputs.size() != 2) return Status::invalidModel(op.name + " needs two outputs (values, indices)");
  int x, k;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &k));
  if (ctx.rank(op.input(1)) == 0) {
    const int vector = ctx.temp(op.name + "_k");
    ctx.addNode(OpType::Reshape, op.name + "_k", {ctx.asInt64(k, op.name + "_k64"), ctx.addInt64Constant(op.name + "_k_shape", {1})},
                {vector});
    k = vector;
  } else {
    k = ctx.asInt64(k, op.name + "_k64");
  }
  const int values = ctx.define(op.outputs[0], Held::AsTflite);
  const int indices = ctx.define(op.outputs[1], Held::AsTflite);
  const DataType indexType = ctx.tensor(op.outputs[1]).dtype;
  const int wide = indexType == DataType::Int64 ? indices : ctx.temp(op.name + "_indices64");
  Node& n = ctx.addNode(OpType::TopK, op.name, {x, k}, {values, wide});
  n.setInt("axis", -1);
  n.setInt("largest", 1);
  n.setInt("sorted", 1);
  if (wide != indices)
    ctx.addNode(OpType::Cast, op.name + "_indices", {wide}, {indices}).setInt("to", static_cast<int64_t>(indexType));
  return Status::ok();
}

Status importCumsum(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const auto* o = op.op->builtin_options_as_CumsumOptions();
  int x, axis;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &axis));
  Node& n = ctx.addNode(OpType::CumSum, op.name, {x, ctx.asInt64(axis, op.name + "_axis")},
                        {ctx.define(op.outputs[0], Held::AsTflite)});
  n.setInt("exclusive", o && o->exclusive() ? 1 : 0);
  n.setInt("reverse", o && o->reverse() ? 1 : 0);
  return Status::ok();
}

Status importBroadcastTo(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  int x, shape;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &shape));
  ctx.addNode(OpType::Expand, op.name, {x, ctx.asInt64(shape, op.name + "_shape")},
              {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

// A scalar 0 of `type`.
int zeroOfType(ImportContext& ctx, const std::string& name, DataType type) {
  const uint8_t zeros[8] = {};
  return ctx.addConstant(name, type, {}, zeros, dataTypeSize(type));
}

// The op's three inputs, held as TFLite holds them.
Status threeInputs(ImportContext& ctx, const OpView& op, int* a, int* b, int* c) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), a));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), b));
  return ctx.asTflite(op.input(2), c);
}

// Zeros of the op's output type in `shape` (int64) into `out`, as Expand of one zero.
Status zerosOfOutputType(ImportContext& ctx, const OpView& op, int shape, const std::string& name, int out) {
  const DataType type = ctx.tensor(op.outputs[0]).dtype;
  if (dataTypeSize(type) > 8 || dataTypeSize(type) == 0)
    return Status::unsupported("output type " + tensorTypeName(ctx.tensor(op.outputs[0]).tfliteType));
  ctx.addNode(OpType::Expand, name, {zeroOfType(ctx, name + "_zero", type), shape}, {out});
  return Status::ok();
}

// ZEROS_LIKE: the input's shape filled with zeros of its type (Mul by zero would keep NaN and
// infinity).
Status importZerosLike(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(op.input(0), &x, &held));
  const int shape = ctx.temp(op.name + "_shape");
  ctx.addNode(OpType::Shape, op.name + "_shape", {x}, {shape});
  return zerosOfOutputType(ctx, op, shape, op.name, ctx.define(op.outputs[0], held));
}

// SCATTER_ND(indices, updates, shape): zeros of `shape` with the updates added at the indices
// (TFLite sums the updates of repeated indices), as ScatterND with reduction add over zeros.
Status importScatterNd(ImportContext& ctx, const OpView& op) {
  int indices, updates, shape;
  OSPREY_RETURN_IF_ERROR(threeInputs(ctx, op, &indices, &updates, &shape));
  const int zeros = ctx.temp(op.name + "_zeros");
  OSPREY_RETURN_IF_ERROR(zerosOfOutputType(ctx, op, ctx.asInt64(shape, op.name + "_shape"), op.name + "_zeros", zeros));
  ctx.addNode(OpType::ScatterND, op.name, {zeros, ctx.asInt64(indices, op.name + "_indices"), updates},
              {ctx.define(op.outputs[0], Held::AsTflite)})
      .setString("reduction", "add");
  return Status::ok();
}

// SELECT (v1): like SELECT_V2, except that a 1-D condition over a higher-rank x picks whole
// rows (its first dimension).
Status importSelectV1(ImportContext& ctx, const OpView& op) {
  int cond, x, y;
  OSPREY_RETURN_IF_ERROR(threeInputs(ctx, op, &cond, &x, &y));
  const int rank = ctx.rank(op.input(1));
  if (ctx.rank(op.input(0)) == 1 && rank > 1) {
    std::vector<int64_t> shape(rank, 1);
    shape[0] = -1;
    const int rows = ctx.temp(op.name + "_rows");
    ctx.addNode(OpType::Reshape, op.name + "_rows", {cond, ctx.addInt64Constant(op.name + "_rows_shape", shape)}, {rows});
    cond = rows;
  }
  ctx.addNode(OpType::Where, op.name, {cond, x, y}, {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

// RANGE(start, limit, delta), scalars of one type. Integers are ONNX's Range, exact. For floats
// TFLite counts ceil(|(limit - start) / delta|) in float32 and accumulates value += delta, where
// Range counts in double and computes start + i·delta (2 to -1.5 by -0.7: 5 values against 6;
// 0.1 to 1000 by 0.1: values 0.097 apart). So floats are imported as TFLite computes them:
// the count from float32 ops, and a CumSum of [start, delta, delta, ...].
Status importRange(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  int start, limit, delta;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &start));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &limit));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(2), &delta));
  const int out = ctx.define(op.outputs[0], Held::AsTflite);
  if (!dispatchFloat(ctx.tensor(op.input(0)).dtype, [](auto) {})) {
    ctx.addNode(OpType::Range, op.name, {start, limit, delta}, {out});
    return Status::ok();
  }
  const std::string& n = op.name;
  const int span = ctx.temp(n + "_span"), ratio = ctx.temp(n + "_ratio"), steps = ctx.temp(n + "_steps");
  const int countFloat = ctx.temp(n + "_count_float"), count = ctx.temp(n + "_count");
  ctx.addNode(OpType::Sub, n + "_span", {limit, start}, {span});
  ctx.addNode(OpType::Div, n + "_ratio", {span, delta}, {ratio});
  ctx.addNode(OpType::Abs, n + "_steps", {ratio}, {steps});
  ctx.addNode(OpType::Ceil, n + "_count_float", {steps}, {countFloat});
  ctx.addNode(OpType::Cast, n + "_count", {countFloat}, {count}).setInt("to", static_cast<int64_t>(DataType::Int64));
  const int axis0 = ctx.addInt64Constant(n + "_axis0", {0});
  const int countShape = ctx.temp(n + "_count_shape"), deltas = ctx.temp(n + "_deltas"), first = ctx.temp(n + "_first");
  const int terms = ctx.temp(n + "_terms"), sums = ctx.temp(n + "_sums");
  ctx.addNode(OpType::Unsqueeze, n + "_count_shape", {count, axis0}, {countShape});
  ctx.addNode(OpType::Expand, n + "_deltas", {delta, countShape}, {deltas});
  ctx.addNode(OpType::Unsqueeze, n + "_first", {start, axis0}, {first});
  ctx.addNode(OpType::Concat, n + "_terms", {first, deltas}, {terms}).setInt("axis", 0);
  ctx.addNode(OpType::CumSum, n + "_sums", {terms, ctx.addInt64Constant(n + "_axis", {0}, true)}, {sums});
  // count + 1 sums, the last one past the end.
  ctx.addNode(OpType::Slice, n, {sums, ctx.addInt64Constant(n + "_begin", {0}), countShape}, {out});
  return Status::ok();
}

// ONE_HOT(indices, depth, on_value, off_value) as ONNX's OneHot, whose values are [off, on].
// ONNX counts a negative index from the end; TFLite gives it an all-off row, as ONNX does for
// an index past the end, so negative indices are moved there.
Status importOneHot(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 4));
  const auto* o = op.op->builtin_options_as_OneHotOptions();
  int indices, depth, on, off;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &indices));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &depth));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(2), &on));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(3), &off));
  const DataType indexType = ctx.tensor(op.input(0)).dtype;
  if (indexType != DataType::Int32 && indexType != DataType::Int64)
    return Status::unsupported("indices of type " + tensorTypeName(ctx.tensor(op.input(0)).tfliteType));
  const int32_t past32 = std::numeric_limits<int32_t>::max();
  const int64_t past64 = std::numeric_limits<int64_t>::max();
  const int pastEnd = indexType == DataType::Int32 ? ctx.addConstant(op.name + "_past_end", indexType, {}, &past32, 4)
                                                   : ctx.addConstant(op.name + "_past_end", indexType, {}, &past64, 8);
  const int negative = ctx.temp(op.name + "_negative"), kept = ctx.temp(op.name + "_indices");
  ctx.addNode(OpType::Less, op.name + "_negative", {indices, zeroOfType(ctx, op.name + "_zero", indexType)}, {negative});
  ctx.addNode(OpType::Where, op.name + "_indices", {negative, pastEnd, indices}, {kept});
  const int axis0 = ctx.addInt64Constant(op.name + "_axis0", {0});
  const int offRow = ctx.temp(op.name + "_off"), onRow = ctx.temp(op.name + "_on"), values = ctx.temp(op.name + "_values");
  ctx.addNode(OpType::Unsqueeze, op.name + "_off", {off, axis0}, {offRow});
  ctx.addNode(OpType::Unsqueeze, op.name + "_on", {on, axis0}, {onRow});
  ctx.addNode(OpType::Concat, op.name + "_values", {offRow, onRow}, {values}).setInt("axis", 0);
  ctx.addNode(OpType::OneHot, op.name, {kept, depth, values}, {ctx.define(op.outputs[0], Held::AsTflite)})
      .setInt("axis", o ? o->axis() : -1);
  return Status::ok();
}

}  // namespace

void addIndexingImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_GATHER_ND] = importGatherNd;
  t[tflite::BuiltinOperator_SCATTER_ND] = importScatterNd;
  t[tflite::BuiltinOperator_EMBEDDING_LOOKUP] = importEmbeddingLookup;
  t[tflite::BuiltinOperator_TOPK_V2] = importTopK;
  t[tflite::BuiltinOperator_CUMSUM] = importCumsum;
  t[tflite::BuiltinOperator_BROADCAST_TO] = importBroadcastTo;
  t[tflite::BuiltinOperator_ZEROS_LIKE] = importZerosLike;
  t[tflite::BuiltinOperator_SELECT] = importSelectV1;
  t[tflite::BuiltinOperator_RANGE] = importRange;
  t[tflite::BuiltinOperator_ONE_HOT] = importOneHot;
}

}  // namespace osprey::tfl
