// Ops that move data: reshapes and transposes (which need TFLite's order), and concat, split,
// slice, reverse, gather, pad and tile, whose axes are remapped to keep NCHW values NCHW.
#include <limits>

#include "converter/tflite/layout.h"
#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinIndex = std::numeric_limits<int64_t>::min();

bool heldNchw(ImportContext& ctx, int t) { return ctx.heldAs(t) == Held::Nchw && ctx.rank(t) == 4; }

Status axisOf(const OpView& op, int64_t axis, int rank, int64_t* out) {
  if (!normalizeTfliteAxis(axis, rank, out))
    return Status::invalidModel(op.name + ": axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return Status::ok();
}

Status importReshape(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  int x, shape;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  const auto* o = op.op->builtin_options_as_ReshapeOptions();
  if (op.input(1) >= 0 && ctx.rank(op.input(1)) == 1) {
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &shape));
    shape = ctx.asInt64(shape, op.name + "_shape");
  } else if (o && o->new_shape()) {
    shape = ctx.addInt64Constant(op.name + "_shape", std::vector<int64_t>(o->new_shape()->begin(), o->new_shape()->end()));
  } else {
    shape = ctx.addInt64Constant(op.name + "_shape", ctx.tensor(op.outputs[0]).shape);
  }
  // TFLite has no "copy this dimension" 0: a 0 is an empty dimension.
  ctx.addNode(OpType::Reshape, op.name, {x, shape}, {ctx.define(op.outputs[0], Held::AsTflite)}).setInt("allowzero", 1);
  return Status::ok();
}

Status importSqueeze(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  std::vector<int> ins = {x};
  const auto* o = op.op->builtin_options_as_SqueezeOptions();
  if (o && o->squeeze_dims() && o->squeeze_dims()->size() > 0)
    ins.push_back(ctx.addInt64Constant(op.name + "_axes", std::vector<int64_t>(o->squeeze_dims()->begin(), o->squeeze_dims()->end())));
  ctx.addNode(OpType::Squeeze, op.name, ins, {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

Status importExpandDims(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  int x, axis;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &axis));
  int axes = ctx.temp(op.name + "_axes");
  ctx.addNode(OpType::Reshape, op.name + "_axes", {ctx.asInt64(axis, op.name + "_axis"), ctx.addInt64Constant(op.name + "_one", {1})}, {axes});
  ctx.addNode(OpType::Unsqueeze, op.name, {x, axes}, {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

// A TFLite permutation of a value held NCHW composes with the NCHW -> NHWC one.
Status importTranspose(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  std::vector<int64_t> perm;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &perm).withContext(op.name + " perm"));
  const int rank = ctx.rank(op.input(0));
  if (static_cast<int>(perm.size()) != rank)
    return Status::invalidModel(op.name + ": perm has " + std::to_string(perm.size()) + " values for rank " + std::to_string(rank));
  for (int64_t& p : perm) OSPREY_RETURN_IF_ERROR(axisOf(op, p, rank, &p));
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(op.input(0), &x, &held));
  if (heldNchw(ctx, op.input(0)))
    for (int64_t& p : perm) p = kNhwcAxisInNchw[p];
  else
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  ctx.addNode(OpType::Transpose, op.name, {x}, {ctx.define(op.outputs[0], Held::AsTflite)}).setInts("perm", perm);
  return Status::ok();
}

Status importConcatenation(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_ConcatenationOptions();
  if (!o) return missingOptions(op, "ConcatenationOptions");
  const int rank = ctx.rank(op.input(0));
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(axisOf(op, o->axis(), rank, &axis));
  bool nchw = false;
  for (int t : op.inputs) {
    if (t < 0) return Status::invalidModel(op.name + " has an omitted input");
    nchw |= heldNchw(ctx, t);
  }
  for (int t : op.inputs) nchw &= ctx.rank(t) == 4;
  std::vector<int> ins(op.inputs.size());
  for (size_t i = 0; i < op.inputs.size(); ++i)
    OSPREY_RETURN_IF_ERROR(nchw ? ctx.asNchw(op.inputs[i], &ins[i]) : ctx.asTflite(op.inputs[i], &ins[i]));
  const auto act = o->fused_activation_function();
  const int out = ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite);
  const int produced = outputFor(ctx, act, out);
  ctx.addNode(OpType::Concat, op.name, ins, {produced}).setInt("axis", nchw ? kNhwcAxisInNchw[axis] : axis);
  return applyActivation(ctx, op, act, produced, out);
}

// Splits `data` (TFLite tensor) along TFLite axis `axis` into the op's outputs, with `sizes`
// (empty: equal parts).
Status splitInto(ImportContext& ctx, const OpView& op, int data, int64_t axis, const std::vector<int64_t>& sizes) {
  const bool nchw = heldNchw(ctx, data);
  int x;
  OSPREY_RETURN_IF_ERROR(nchw ? ctx.asNchw(data, &x) : ctx.asTflite(data, &x));
  std::vector<int> ins = {x};
  if (!sizes.empty()) ins.push_back(ctx.addInt64Constant(op.name + "_sizes", sizes));
  std::vector<int> outs;
  for (int t : op.outputs) outs.push_back(ctx.define(t, nchw ? Held::Nchw : Held::AsTflite));
  Node& n = ctx.addNode(OpType::Split, op.name, ins, outs);
  n.setInt("axis", nchw ? kNhwcAxisInNchw[axis] : axis);
  if (sizes.empty()) n.setInt("num_outputs", static_cast<int64_t>(outs.size()));
  return Status::ok();
}

Status importSplit(ImportContext& ctx, const OpView& op) {  // inputs: axis, data
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  std::vector<int64_t> axis;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(0), &axis).withContext(op.name + " axis"));
  if (axis.size() != 1) return Status::invalidModel(op.name + ": axis must be one value");
  int64_t a;
  OSPREY_RETURN_IF_ERROR(axisOf(op, axis[0], ctx.rank(op.input(1)), &a));
  return splitInto(ctx, op, op.input(1), a, {});
}

Status importSplitV(ImportContext& ctx, const OpView& op) {  // inputs: data, sizes, axis
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  std::vector<int64_t> sizes, axis;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &sizes).withContext(op.name + " size_splits"));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(2), &axis).withContext(op.name + " axis"));
  if (axis.size() != 1) return Status::invalidModel(op.name + ": axis must be one value");
  int64_t a;
  OSPREY_RETURN_IF_ERROR(axisOf(op, axis[0], ctx.rank(op.input(0)), &a));
  int64_t known = 0, unknownAt = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && unknownAt < 0) unknownAt = static_cast<int64_t>(i);
    else if (sizes[i] < 0) return Status::invalidModel(op.name + ": size_splits " + shapeToString(sizes) + " is malformed");
    else known += sizes[i];
  }
  if (unknownAt >= 0) {
    const int64_t dim = ctx.tensor(op.input(0)).shape[a];
    if (dim < 0 || dim < known) return Status::unsupported(op.name + ": a -1 split size needs a known dimension");
    sizes[unknownAt] = dim - known;
  }
  return splitInto(ctx, op, op.input(0), a, sizes);
}

Status importPack(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_PackOptions();
  if (!o) return missingOptions(op, "PackOptions");
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(axisOf(op, o->axis(), ctx.rank(op.input(0)) + 1, &axis));
  const int axes = ctx.addInt64Constant(op.name + "_axis", {axis});
  std::vector<int> parts;
  for (int t : op.inputs) {
    int x, part = ctx.temp(op.name + "_part");
    if (t < 0) return Status::invalidModel(op.name + " has an omitted input");
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(t, &x));
    ctx.addNode(OpType::Unsqueeze, op.name + "_part", {x, axes}, {part});
    parts.push_back(part);
  }
  ctx.addNode(OpType::Concat, op.name, parts, {ctx.define(op.outputs[0], Held::AsTflite)}).setInt("axis", axis);
  return Status::ok();
}

Status importUnpack(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_UnpackOptions();
  if (!o) return missingOptions(op, "UnpackOptions");
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(axisOf(op, o->axis(), ctx.rank(op.input(0)), &axis));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  std::vector<int> parts;
  for (size_t i = 0; i < op.outputs.size(); ++i) parts.push_back(ctx.temp(op.name + "_part"));
  ctx.addNode(OpType::Split, op.name + "_split", {x}, parts).setInt("axis", axis);
  ctx.graph().nodes.back().setInt("num_outputs", static_cast<int64_t>(parts.size()));
  const int axes = ctx.addInt64Constant(op.name + "_axis", {axis});
  for (size_t i = 0; i < op.outputs.size(); ++i)
    ctx.addNode(OpType::Squeeze, op.name, {parts[i], axes}, {ctx.define(op.outputs[i], Held::AsTflite)});
  return Status::ok();
}

// Slice over TFLite axes `axes` of `data`; on a value held NCHW the axes are remapped.
// A Slice node `name` of the graph tensor x into out.
void addSlice(ImportContext& ctx, const std::string& name, int x, const std::vector<int64_t>& axes,
              const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& steps,
              int out) {
  ctx.addNode(OpType::Slice, name, {x, ctx.addInt64Constant(name + "_starts", starts), ctx.addInt64Constant(name + "_ends", ends),
                                    ctx.addInt64Constant(name + "_axes", axes), ctx.addInt64Constant(name + "_steps", steps)},
              {out});
}

Status sliceInto(ImportContext& ctx, const OpView& op, int data, std::vector<int64_t> axes, const std::vector<int64_t>& starts,
                 const std::vector<int64_t>& ends, const std::vector<int64_t>& steps, int out) {
  int x;
  if (heldNchw(ctx, data)) {
    OSPREY_RETURN_IF_ERROR(ctx.asNchw(data, &x));
    for (int64_t& a : axes) a = kNhwcAxisInNchw[a];
  } else {
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(data, &x));
  }
  addSlice(ctx, op.name, x, axes, starts, ends, steps, out);
  return Status::ok();
}

// SLICE with begin or size computed (TensorList reads and writes in rolled loops): ends =
// begin + size, or the end where size is -1.
Status importComputedSlice(ImportContext& ctx, const OpView& op) {
  int x, begin, size;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &begin));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(2), &size));
  begin = ctx.asInt64(begin, op.name + "_begin");
  size = ctx.asInt64(size, op.name + "_size");
  const int sum = ctx.temp(op.name + "_sum"), all = ctx.temp(op.name + "_all"), ends = ctx.temp(op.name + "_ends");
  ctx.addNode(OpType::Add, op.name + "_sum", {begin, size}, {sum});
  ctx.addNode(OpType::Equal, op.name + "_all", {size, ctx.addInt64Constant(op.name + "_minus_one", {-1}, true)}, {all});
  ctx.addNode(OpType::Where, op.name + "_ends", {all, ctx.addInt64Constant(op.name + "_max", {kMaxIndex}, true), sum}, {ends});
  ctx.addNode(OpType::Slice, op.name, {x, begin, ends}, {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

Status importSlice(ImportContext& ctx, const OpView& op) {  // data, begin, size (-1: to the end)
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  if (!ctx.isConstant(op.input(1)) || !ctx.isConstant(op.input(2))) return importComputedSlice(ctx, op);
  std::vector<int64_t> begin, size;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &begin).withContext(op.name + " begin"));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(2), &size).withContext(op.name + " size"));
  const int rank = ctx.rank(op.input(0));
  if (static_cast<int>(begin.size()) != rank || size.size() != begin.size())
    return Status::invalidModel(op.name + ": begin and size need one value per dimension");
  std::vector<int64_t> axes, ends, steps(begin.size(), 1);
  for (int d = 0; d < rank; ++d) {
    axes.push_back(d);
    if (begin[d] < 0 || size[d] < -1) return Status::invalidModel(op.name + ": begin and size must be >= 0 (size -1: all)");
    ends.push_back(size[d] == -1 ? kMaxIndex : begin[d] + size[d]);
  }
  const bool nchw = heldNchw(ctx, op.input(0));
  return sliceInto(ctx, op, op.input(0), axes, begin, ends, steps, ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite));
}

// REVERSE_V2(x, axes): ONNX has no Reverse; a Slice stepping -1 from the end reverses an axis.
Status importReverse(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  std::vector<int64_t> axes;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &axes).withContext(op.name + " axis"));
  const int rank = ctx.rank(op.input(0));
  for (int64_t& a : axes) OSPREY_RETURN_IF_ERROR(axisOf(op, a, rank, &a));
  const size_t n = axes.size();
  const bool nchw = heldNchw(ctx, op.input(0));
  return sliceInto(ctx, op, op.input(0), axes, std::vector<int64_t>(n, -1), std::vector<int64_t>(n, kMinIndex),
                   std::vector<int64_t>(n, -1), ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite));
}

bool bit(int mask, size_t i) { return i < 31 && ((mask >> i) & 1); }

// TensorFlow's sparse slice spec (begin/end/strides with masks, an ellipsis, new and shrunk
// axes) expanded over the input's dimensions: a Slice, then Squeeze of the shrunk dimensions,
// then Unsqueeze of the new ones.
Status importStridedSlice(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 3));
  const auto* o = op.op->builtin_options_as_StridedSliceOptions();
  if (!o) return missingOptions(op, "StridedSliceOptions");
  std::vector<int64_t> begin, end, strides;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), &begin).withContext(op.name + " begin"));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(2), &end).withContext(op.name + " end"));
  if (op.input(3) >= 0) OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(3), &strides).withContext(op.name + " strides"));
  else strides.assign(begin.size(), 1);
  if (end.size() != begin.size() || strides.size() != begin.size())
    return Status::invalidModel(op.name + ": begin, end and strides differ in length");
  const int rank = ctx.rank(op.input(0));
  size_t newAxesAfterEllipsis = 0;
  bool seenEllipsis = false;
  for (size_t i = 0; i < begin.size(); ++i) {
    if (bit(o->ellipsis_mask(), i)) seenEllipsis = true;
    else if (seenEllipsis && bit(o->new_axis_mask(), i)) ++newAxesAfterEllipsis;
  }
  std::vector<int64_t> axes, starts, ends, steps, shrunk, newAxes;
  int dim = 0, outPos = 0;
  auto fullDims = [&](int upTo) {
    for (; dim < upTo; ++dim) ++outPos;
  };
  for (size_t i = 0; i < begin.size(); ++i) {
    if (bit(o->ellipsis_mask(), i)) {
      const int remaining = static_cast<int>(begin.size() - i - 1 - newAxesAfterEllipsis);
      fullDims(rank - remaining);
      continue;
    }
    if (bit(o->new_axis_mask(), i)) {
      newAxes.push_back(outPos++);
      continue;
    }
    if (dim >= rank) return Status::invalidModel(op.name + ": the slice spec has more dimensions than the input's " + std::to_string(rank));
    const int64_t step = strides[i];
    if (step == 0) return Status::invalidModel(op.name + ": stride 0");
    if (bit(o->shrink_axis_mask(), i)) {
      axes.push_back(dim);
      starts.push_back(begin[i]);
      ends.push_back(begin[i] == -1 ? kMaxIndex : begin[i] + 1);
      steps.push_back(1);
      shrunk.push_back(dim++);
      continue;
    }
    int64_t e = o->offset() ? begin[i] + end[i] : end[i];
    axes.push_back(dim++);
    starts.push_back(bit(o->begin_mask(), i) ? (step > 0 ? 0 : kMaxIndex) : begin[i]);
    ends.push_back(bit(o->end_mask(), i) ? (step > 0 ? kMaxIndex : kMinIndex) : e);
    steps.push_back(step);
    ++outPos;
  }
  const bool plain = shrunk.empty() && newAxes.empty();
  const bool nchw = plain && heldNchw(ctx, op.input(0));
  if (plain) return sliceInto(ctx, op, op.input(0), axes, starts, ends, steps, ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite));
  int sliced = ctx.temp(op.name + "_sliced");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
  ctx.addNode(OpType::Slice, op.name, {x, ctx.addInt64Constant(op.name + "_starts", starts), ctx.addInt64Constant(op.name + "_ends", ends),
                                       ctx.addInt64Constant(op.name + "_axes", axes), ctx.addInt64Constant(op.name + "_steps", steps)},
              {sliced});
  if (!shrunk.empty()) {
    int squeezed = newAxes.empty() ? ctx.define(op.outputs[0], Held::AsTflite) : ctx.temp(op.name + "_shrunk");
    ctx.addNode(OpType::Squeeze, op.name + "_shrink", {sliced, ctx.addInt64Constant(op.name + "_shrink", shrunk)}, {squeezed});
    sliced = squeezed;
  }
  if (!newAxes.empty())
    ctx.addNode(OpType::Unsqueeze, op.name + "_new_axes", {sliced, ctx.addInt64Constant(op.name + "_new_axes", newAxes)},
                {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

Status importGather(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const auto* o = op.op->builtin_options_as_GatherOptions();
  if (o && o->batch_dims() != 0) return Status::unsupported("batch_dims " + std::to_string(o->batch_dims()));
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(axisOf(op, o ? o->axis() : 0, ctx.rank(op.input(0)), &axis));
  int x, indices;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &indices));
  // With 1-D indices the output keeps the input's rank and dimension order.
  const bool nchw = heldNchw(ctx, op.input(0)) && ctx.rank(op.input(1)) == 1;
  OSPREY_RETURN_IF_ERROR(nchw ? ctx.asNchw(op.input(0), &x) : ctx.asTflite(op.input(0), &x));
  ctx.addNode(OpType::Gather, op.name, {x, indices}, {ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite)})
      .setInt("axis", nchw ? kNhwcAxisInNchw[axis] : axis);
  return Status::ok();
}

// The constant paddings of a PAD-like op: [rank, 2] (before, after) of input 0.
Status readPaddings(ImportContext& ctx, const OpView& op, std::vector<int64_t>* paddings) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(op.input(1), paddings).withContext(op.name + " paddings"));
  const int rank = ctx.rank(op.input(0));
  if (static_cast<int>(paddings->size()) != 2 * rank)
    return Status::invalidModel(op.name + ": paddings need [" + std::to_string(rank) + ", 2] values");
  return Status::ok();
}

// PAD, PADV2 (with a constant value) and MIRROR_PAD in REFLECT mode.
Status importPad(ImportContext& ctx, const OpView& op, const char* mode) {
  std::vector<int64_t> paddings;
  OSPREY_RETURN_IF_ERROR(readPaddings(ctx, op, &paddings));
  const int rank = ctx.rank(op.input(0));
  const bool nchw = heldNchw(ctx, op.input(0));
  std::vector<int64_t> pads(2 * rank);
  for (int d = 0; d < rank; ++d) {
    const int at = nchw ? kNhwcAxisInNchw[d] : d;
    pads[at] = paddings[2 * d];
    pads[rank + at] = paddings[2 * d + 1];
  }
  int x;
  OSPREY_RETURN_IF_ERROR(nchw ? ctx.asNchw(op.input(0), &x) : ctx.asTflite(op.input(0), &x));
  std::vector<int> ins = {x, ctx.addInt64Constant(op.name + "_pads", pads)};
  if (op.input(2) >= 0) {
    int value;
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(2), &value));
    ins.push_back(value);
  }
  ctx.addNode(OpType::Pad, op.name, ins, {ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite)}).setString("mode", mode);
  return Status::ok();
}

// MIRROR_PAD in SYMMETRIC mode repeats the edge value (ONNX's Pad has no such mode): along each
// padded axis, the first `before` values reversed, x, and the last `after` reversed, concatenated;
// each reversal a Slice stepping -1, as REVERSE_V2's.
Status importSymmetricPad(ImportContext& ctx, const OpView& op) {
  std::vector<int64_t> paddings;
  OSPREY_RETURN_IF_ERROR(readPaddings(ctx, op, &paddings));
  const int rank = ctx.rank(op.input(0));
  const bool nchw = heldNchw(ctx, op.input(0));
  int x;
  OSPREY_RETURN_IF_ERROR(nchw ? ctx.asNchw(op.input(0), &x) : ctx.asTflite(op.input(0), &x));
  const Shape& shape = ctx.tensor(op.input(0)).shape;
  std::vector<int> padded;
  for (int d = 0; d < rank; ++d)
    if (paddings[2 * d] || paddings[2 * d + 1]) padded.push_back(d);
  if (padded.empty()) padded.push_back(0);  // nothing to pad: a Concat of x alone
  for (size_t i = 0; i < padded.size(); ++i) {
    const int d = padded[i];
    const int64_t before = paddings[2 * d], after = paddings[2 * d + 1];
    if (before < 0 || after < 0 || (d < static_cast<int>(shape.size()) && shape[d] >= 0 &&
                                    (before > shape[d] || after > shape[d])))
      return Status::invalidModel(op.name + ": SYMMETRIC paddings of axis " + std::to_string(d) +
                                  " must lie in [0, its size]");
    const int64_t axis = nchw ? kNhwcAxisInNchw[d] : d;
    const std::string name = op.name + "_axis" + std::to_string(d);
    auto reversed = [&](const char* part, int64_t start, int64_t end) {
      const int out = ctx.temp(name + part);
      addSlice(ctx, name + part, x, {axis}, {start}, {end}, {-1}, out);
      return out;
    };
    std::vector<int> parts;
    if (before > 0) parts.push_back(reversed("_before", before - 1, kMinIndex));
    parts.push_back(x);
    if (after > 0) parts.push_back(reversed("_after", -1, -after - 1));
    const bool last = i + 1 == padded.size();
    const int out = last ? ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite) : ctx.temp(name);
    ctx.addNode(OpType::Concat, last ? op.name : name, parts, {out}).setInt("axis", axis);
    x = out;
  }
  return Status::ok();
}

Status importMirrorPad(ImportContext& ctx, const OpView& op) {
  const auto* o = op.op->builtin_options_as_MirrorPadOptions();
  if (o && o->mode() == tflite::MirrorPadMode_SYMMETRIC) return importSymmetricPad(ctx, op);
  return importPad(ctx, op, "reflect");
}

Status importTile(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  std::vector<int64_t> multiples;
  const bool nchw = heldNchw(ctx, op.input(0)) && ctx.constantInts(op.input(1), &multiples).isOk() && multiples.size() == 4;
  int x, repeats;
  if (nchw) {
    OSPREY_RETURN_IF_ERROR(ctx.asNchw(op.input(0), &x));
    repeats = ctx.addInt64Constant(op.name + "_repeats", permuteShape(multiples, kToNchw));
  } else {
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &x));
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &repeats));
    repeats = ctx.asInt64(repeats, op.name + "_repeats");
  }
  ctx.addNode(OpType::Tile, op.name, {x, repeats}, {ctx.define(op.outputs[0], nchw ? Held::Nchw : Held::AsTflite)});
  return Status::ok();
}

// FILL(dims, value): the scalar broadcast to the shape `dims`.
Status importFill(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  int dims, value;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &dims));
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(1), &value));
  if (ctx.rank(op.input(1)) != 0) return Status::invalidModel(op.name + ": the fill value must be a scalar");
  dims = ctx.asInt64(dims, op.name + "_dims");
  ctx.addNode(OpType::Expand, op.name, {value, dims}, {ctx.define(op.outputs[0], Held::AsTflite)});
  return Status::ok();
}

// The TFLite shape of a value held NCHW is its NCHW shape gathered back into NHWC order.
Status importShape(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(op.input(0), &x, &held));
  const DataType to = ctx.tensor(op.outputs[0]).dtype;
  const int out = ctx.define(op.outputs[0], Held::AsTflite);
  int shape = to == DataType::Int64 && !heldNchw(ctx, op.input(0)) ? out : ctx.temp(op.name + "_shape");
  ctx.addNode(OpType::Shape, op.name, {x}, {shape});
  if (heldNchw(ctx, op.input(0))) {
    int ordered = to == DataType::Int64 ? out : ctx.temp(op.name + "_nhwc");
    ctx.addNode(OpType::Gather, op.name + "_nhwc", {shape, ctx.addInt64Constant(op.name + "_nhwc", kToNhwc)}, {ordered}).setInt("axis", 0);
    shape = ordered;
  }
  if (shape != out) ctx.addNode(OpType::Cast, op.name + "_cast", {shape}, {out}).setInt("to", static_cast<int64_t>(to));
  return Status::ok();
}

}  // namespace

void addShapeImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_RESHAPE] = importReshape;
  t[tflite::BuiltinOperator_SQUEEZE] = importSqueeze;
  t[tflite::BuiltinOperator_EXPAND_DIMS] = importExpandDims;
  t[tflite::BuiltinOperator_TRANSPOSE] = importTranspose;
  t[tflite::BuiltinOperator_CONCATENATION] = importConcatenation;
  t[tflite::BuiltinOperator_SPLIT] = importSplit;
  t[tflite::BuiltinOperator_SPLIT_V] = importSplitV;
  t[tflite::BuiltinOperator_PACK] = importPack;
  t[tflite::BuiltinOperator_UNPACK] = importUnpack;
  t[tflite::BuiltinOperator_SLICE] = importSlice;
  t[tflite::BuiltinOperator_STRIDED_SLICE] = importStridedSlice;
  t[tflite::BuiltinOperator_REVERSE_V2] = importReverse;
  t[tflite::BuiltinOperator_GATHER] = importGather;
  t[tflite::BuiltinOperator_PAD] = [](ImportContext& c, const OpView& o) { return importPad(c, o, "constant"); };
  t[tflite::BuiltinOperator_PADV2] = [](ImportContext& c, const OpView& o) { return importPad(c, o, "constant"); };
  t[tflite::BuiltinOperator_MIRROR_PAD] = importMirrorPad;
  t[tflite::BuiltinOperator_TILE] = importTile;
  t[tflite::BuiltinOperator_SHAPE] = importShape;
  t[tflite::BuiltinOperator_FILL] = importFill;
}

}  // namespace osprey::tfl
