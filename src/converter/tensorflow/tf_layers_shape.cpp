// Ops that move or pick data: reshape, transpose, concat, pack, split, slice, gather, pad, tile,
// shape queries, top-k, one-hot, einsum, and the identities. Concat, split, pad, slice and
// transpose of a value held NCHW remap their axes instead of transposing it back.
#include <algorithm>
#include <climits>
#include <cstring>

#include "converter/tensorflow/tf_layers.h"

namespace osprey::tf {

Status normalizeAxis(const NodeView& node, int64_t axis, int rank, int64_t* out) {
  if (axis < -rank || axis >= rank)
    return node.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

std::string str(const std::vector<int64_t>& v) { return shapeToString(v); }

namespace {

constexpr int64_t kMaxIndex = INT64_MAX;
constexpr int64_t kMinIndex = INT64_MIN;

// a + b, held at the int64 range (an end past any dimension reads to the end anyway).
int64_t plus(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? kMaxIndex : kMinIndex) : r;
}

bool nchw(ImportContext& ctx, const std::string& ref) { return ctx.heldAs(ref) == Held::Nchw; }

int int64Input(ImportContext& ctx, int index, const NodeView& node, const char* what) {
  return ctx.asInt64(index, node.name() + "_" + what);
}

Status importIdentity(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  return ctx.alias(node, 0, node.input(0));
}

Status importIdentityN(ImportContext& ctx, const NodeView& node) {
  for (size_t k = 0; k < node.inputs.size(); ++k)
    OSPREY_RETURN_IF_ERROR(ctx.alias(node, static_cast<int>(k), node.input(k)));
  return Status::ok();
}

Status importReshape(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  int x, shape;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &shape));
  std::vector<int64_t> dims;
  const int rank = ctx.constantInts(node.input(1), &dims).isOk() ? static_cast<int>(dims.size()) : -1;
  if (rank == 4 && dims[1] == 1 && dims[2] == 1 && dims[0] != 0 && dims[3] != 0 && !ctx.constant(node.input(0))) {
    // [N, 1, 1, C] (a squeeze-excite block's pooled vector on its way to a Conv2D) is the
    // same bytes as its NCHW form [N, C, 1, 1]: make that, held NCHW, instead of a Transpose.
    ctx.addNode(OpType::Reshape, node.name(), {x, ctx.addInt64Constant(node.name() + "_nchw", {dims[0], dims[3], 1, 1})},
                {ctx.define(node, 0, Held::Nchw, 4)});
    return Status::ok();
  }
  // allowzero: a 0 in TensorFlow's shape is an empty dimension, not "copy the input's".
  ctx.addNode(OpType::Reshape, node.name(), {x, int64Input(ctx, shape, node, "shape")},
              {ctx.define(node, 0, Held::AsTf, rank)})
      .setInt("allowzero", 1);
  return Status::ok();
}

Status importSqueeze(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  const std::vector<int64_t> dims = node.attrInts("squeeze_dims");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  const int rank = ctx.rank(node.input(0));
  std::vector<int> ins = {x};
  if (!dims.empty()) ins.push_back(ctx.addInt64Constant(node.name() + "_axes", dims));
  ctx.addNode(OpType::Squeeze, node.name(), ins,
              {ctx.define(node, 0, Held::AsTf, dims.empty() || rank < 0 ? -1 : rank - static_cast<int>(dims.size()))});
  return Status::ok();
}

Status importExpandDims(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  std::vector<int64_t> axis;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(1), &axis).withContext(node.label + " axis"));
  if (axis.size() != 1) return node.error("axis must hold one value");
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  const int rank = ctx.rank(node.input(0));
  ctx.addNode(OpType::Unsqueeze, node.name(), {x, ctx.addInt64Constant(node.name() + "_axes", axis)},
              {ctx.define(node, 0, Held::AsTf, rank < 0 ? -1 : rank + 1)});
  return Status::ok();
}

Status importTranspose(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  std::vector<int64_t> perm;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(1), &perm).withContext(node.label + " perm"));
  int x;
  if (nchw(ctx, node.input(0)) && perm.size() == 4) {
    // The value held is TensorFlow's permuted by [0, 3, 1, 2]: compose the two permutations.
    for (int64_t& p : perm) {
      if (p < 0 || p > 3) return node.error("perm " + str(perm) + " is not a permutation of 4 axes");
      p = kToNhwc[static_cast<size_t>(p)];
    }
    OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x));
  } else {
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  }
  ctx.addNode(OpType::Transpose, node.name(), {x}, {ctx.define(node, 0, Held::AsTf, static_cast<int>(perm.size()))})
      .setInts("perm", perm);
  return Status::ok();
}

Status importConcat(ImportContext& ctx, const NodeView& node) {
  if (node.inputs.size() < 2) return node.error("needs at least one value and the axis");
  const size_t n = node.inputs.size() - 1;
  std::vector<int64_t> axis;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(n), &axis).withContext(node.label + " axis"));
  if (axis.size() != 1) return node.error("axis must hold one value");
  int rank = -1;
  bool anyNchw = false, allFit = true;
  for (size_t i = 0; i < n; ++i) {
    const std::string& r = node.input(i);
    if (ctx.rank(r) >= 0) rank = ctx.rank(r);
    if (nchw(ctx, r)) anyNchw = true;
    else if (ctx.rank(r) != 4) allFit = false;
  }
  const bool asNchw = anyNchw && allFit;
  int64_t a = axis[0];
  if (rank >= 0) OSPREY_RETURN_IF_ERROR(normalizeAxis(node, a, rank, &a));
  std::vector<int> ins;
  for (size_t i = 0; i < n; ++i) {
    int v;
    OSPREY_RETURN_IF_ERROR(asNchw ? ctx.asNchw(node.input(i), &v) : ctx.asTf(node.input(i), &v));
    ins.push_back(v);
  }
  ctx.addNode(OpType::Concat, node.name(), ins, {ctx.define(node, 0, asNchw ? Held::Nchw : Held::AsTf, rank)})
      .setInt("axis", asNchw ? nchwAxis(a) : a);
  return Status::ok();
}

Status importPack(ImportContext& ctx, const NodeView& node) {
  if (node.inputs.empty()) return node.error("has no inputs");
  const int64_t axis = node.attrInt("axis", 0);
  const int rank = ctx.rank(node.input(0));
  std::vector<int> ins;
  const int axes = ctx.addInt64Constant(node.name() + "_axes", {axis});
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int v;
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(i), &v));
    const int u = ctx.temp(node.name() + "_item");
    ctx.addNode(OpType::Unsqueeze, node.name() + "_item", {v, axes}, {u});
    ins.push_back(u);
  }
  ctx.addNode(OpType::Concat, node.name(), ins, {ctx.define(node, 0, Held::AsTf, rank < 0 ? -1 : rank + 1)})
      .setInt("axis", axis);
  return Status::ok();
}

Status importUnpack(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  const int64_t num = node.attrInt("num", -1);
  if (num < 1 || num > 65536) return node.error("num " + std::to_string(num) + " is out of range");
  const int64_t axis = node.attrInt("axis", 0);
  const int rank = ctx.rank(node.input(0));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  std::vector<int> parts;
  for (int64_t k = 0; k < num; ++k) parts.push_back(ctx.temp(node.name() + "_part"));
  ctx.addNode(OpType::Split, node.name() + "_split", {x}, parts).setInt("axis", axis);
  ctx.graph().nodes.back().setInt("num_outputs", num);
  const int axes = ctx.addInt64Constant(node.name() + "_axes", {axis});
  for (int64_t k = 0; k < num; ++k)
    ctx.addNode(OpType::Squeeze, node.name(), {parts[k], axes},
                {ctx.define(node, static_cast<int>(k), Held::AsTf, rank < 0 ? -1 : rank - 1)});
  return Status::ok();
}

// Split(axis, value) into num_split equal parts; SplitV(value, size_splits, axis).
Status importSplit(ImportContext& ctx, const NodeView& node, bool sized) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(sized ? 3 : 2));
  const std::string& value = node.input(sized ? 0 : 1);
  std::vector<int64_t> axis, sizes;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(sized ? 2 : 0), &axis).withContext(node.label + " axis"));
  if (axis.size() != 1) return node.error("axis must hold one value");
  const int rank = ctx.rank(value);
  int64_t a = axis[0];
  if (rank >= 0) OSPREY_RETURN_IF_ERROR(normalizeAxis(node, a, rank, &a));
  else if (a < 0) return Status::unsupported("a negative axis on a value of unknown rank");
  int64_t count = node.attrInt("num_split", 0);
  if (sized) {
    OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(1), &sizes).withContext(node.label + " size_splits"));
    if (std::count(sizes.begin(), sizes.end(), -1) > 0) return Status::unsupported("size_splits with -1");
    count = static_cast<int64_t>(sizes.size());
  }
  if (count < 1 || count > 65536) return node.error("splits into " + std::to_string(count) + " parts");
  const bool held = nchw(ctx, value);
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.value(value, &x));
  std::vector<int> outs;
  for (int64_t k = 0; k < count; ++k)
    outs.push_back(ctx.define(node, static_cast<int>(k), held ? Held::Nchw : Held::AsTf, rank));
  std::vector<int> ins = {x};
  if (sized) ins.push_back(ctx.addInt64Constant(node.name() + "_sizes", sizes));
  Node& n = ctx.addNode(OpType::Split, node.name(), ins, outs);
  n.setInt("axis", held ? nchwAxis(a) : a);
  if (!sized) n.setInt("num_outputs", count);
  return Status::ok();
}

Status sliceInto(ImportContext& ctx, const NodeView& node, int x, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& steps, int out) {
  ctx.addNode(OpType::Slice, node.name(),
              {x, ctx.addInt64Constant(node.name() + "_starts", starts), ctx.addInt64Constant(node.name() + "_ends", ends),
               ctx.addInt64Constant(node.name() + "_axes", axes), ctx.addInt64Constant(node.name() + "_steps", steps)},
              {out});
  return Status::ok();
}

// Slice(x, begin, size): size -1 reads to the end.
Status importSlice(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(3));
  std::vector<int64_t> begin, size;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(1), &begin).withContext(node.label + " begin"));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(2), &size).withContext(node.label + " size"));
  if (begin.size() != size.size()) return node.error("begin and size differ in length");
  const bool held = nchw(ctx, node.input(0)) && begin.size() == 4;
  std::vector<int64_t> axes, ends;
  for (size_t i = 0; i < begin.size(); ++i) {
    if (size[i] < -1 || begin[i] < 0) return node.error("begin " + str(begin) + " or size " + str(size) + " is negative");
    axes.push_back(held ? nchwAxis(static_cast<int64_t>(i)) : static_cast<int64_t>(i));
    ends.push_back(size[i] == -1 ? kMaxIndex : plus(begin[i], size[i]));
  }
  int x;
  OSPREY_RETURN_IF_ERROR(held ? ctx.value(node.input(0), &x) : ctx.asTf(node.input(0), &x));
  return sliceInto(ctx, node, x, axes, begin, ends, std::vector<int64_t>(begin.size(), 1),
                   ctx.define(node, 0, held ? Held::Nchw : Held::AsTf, static_cast<int>(begin.size())));
}

bool bit(int64_t mask, size_t i) { return i < 63 && ((mask >> i) & 1) != 0; }

// StridedSlice with computed begin or end (x[i] in a loop body): the masks pick between them and
// constant defaults at run time. Constant strides; no ellipsis or new axis.
Status importDynamicStridedSlice(ImportContext& ctx, const NodeView& node) {
  std::vector<int64_t> strides;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(3), &strides).withContext(node.label + " strides"));
  if (node.attrInt("ellipsis_mask", 0) || node.attrInt("new_axis_mask", 0))
    return Status::unsupported("an ellipsis or new axis with computed begin or end");
  const size_t n = strides.size();
  const int64_t beginMask = node.attrInt("begin_mask", 0), endMask = node.attrInt("end_mask", 0);
  const int64_t shrinkMask = node.attrInt("shrink_axis_mask", 0);
  int x, begin, end;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &begin));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(2), &end));
  begin = int64Input(ctx, begin, node, "begin");
  end = int64Input(ctx, end, node, "end");
  std::vector<uint8_t> useBegin(n), useEnd(n), shrink(n);
  std::vector<int64_t> beginDefault(n), endDefault(n), axes(n), shrunk;
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] == 0) return node.error("stride 0");
    useBegin[i] = bit(beginMask, i);
    useEnd[i] = bit(endMask, i);
    shrink[i] = bit(shrinkMask, i);
    beginDefault[i] = strides[i] > 0 ? 0 : kMaxIndex;
    endDefault[i] = strides[i] > 0 ? kMaxIndex : kMinIndex;
    axes[i] = static_cast<int64_t>(i);
    if (shrink[i]) {
      shrunk.push_back(static_cast<int64_t>(i));
      strides[i] = 1;
    }
  }
  const std::string base = node.name();
  auto mask = [&](const std::vector<uint8_t>& m, const char* what) {
    return ctx.addConstant(base + what, DataType::Bool, {static_cast<int64_t>(n)}, m.data(), n);
  };
  auto where = [&](int cond, int a, int b, const char* what) {
    const int out = ctx.temp(base + what);
    ctx.addNode(OpType::Where, base + what, {cond, a, b}, {out});
    return out;
  };
  auto binary = [&](OpType type, int a, int b, const char* what) {
    const int out = ctx.temp(base + what);
    ctx.addNode(type, base + what, {a, b}, {out});
    return out;
  };
  const int starts = where(mask(useBegin, "_use_begin"), ctx.addInt64Constant(base + "_begin0", beginDefault), begin, "_starts");
  // A shrunk axis reads [begin, begin + 1), and begin -1 reads the last element.
  const int last = binary(OpType::Equal, begin, ctx.addInt64Constant(base + "_minus1", {-1}, true), "_is_last");
  const int next = binary(OpType::Add, begin, ctx.addInt64Constant(base + "_one", {1}, true), "_next");
  const int shrinkEnds = where(last, ctx.addInt64Constant(base + "_max", {kMaxIndex}, true), next, "_shrink_end");
  const int givenEnds = where(mask(useEnd, "_use_end"), ctx.addInt64Constant(base + "_end0", endDefault), end, "_given_end");
  const int ends = where(mask(shrink, "_shrink"), shrinkEnds, givenEnds, "_ends");
  const int rank = ctx.rank(node.input(0));
  const int outRank = rank < 0 ? -1 : rank - static_cast<int>(shrunk.size());
  const int sliced = shrunk.empty() ? ctx.define(node, 0, Held::AsTf, outRank) : ctx.temp(base + "_sliced");
  ctx.addNode(OpType::Slice, base, {x, starts, ends, ctx.addInt64Constant(base + "_axes", axes), ctx.addInt64Constant(base + "_steps", strides)},
              {sliced});
  if (!shrunk.empty())
    ctx.addNode(OpType::Squeeze, base + "_shrink", {sliced, ctx.addInt64Constant(base + "_shrunk", shrunk)},
                {ctx.define(node, 0, Held::AsTf, outRank)});
  return Status::ok();
}

Status importStridedSlice(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(4));
  std::vector<int64_t> begin, end, strides;
  if (!ctx.constant(node.input(1)) || !ctx.constant(node.input(2))) return importDynamicStridedSlice(ctx, node);
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(1), &begin).withContext(node.label + " begin"));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(2), &end).withContext(node.label + " end"));
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(3), &strides).withContext(node.label + " strides"));
  if (end.size() != begin.size() || strides.size() != begin.size())
    return node.error("begin, end and strides differ in length");
  const int64_t beginMask = node.attrInt("begin_mask", 0), endMask = node.attrInt("end_mask", 0);
  const int64_t ellipsisMask = node.attrInt("ellipsis_mask", 0), newAxisMask = node.attrInt("new_axis_mask", 0);
  const int64_t shrinkMask = node.attrInt("shrink_axis_mask", 0);
  const int rank = ctx.rank(node.input(0));
  size_t newAxesAfterEllipsis = 0;
  bool seenEllipsis = false;
  for (size_t i = 0; i < begin.size(); ++i) {
    if (bit(ellipsisMask, i)) seenEllipsis = true;
    else if (seenEllipsis && bit(newAxisMask, i)) ++newAxesAfterEllipsis;
  }
  if (seenEllipsis && rank < 0) return Status::unsupported("an ellipsis on a value of unknown rank");
  std::vector<int64_t> axes, starts, ends, steps, shrunk, newAxes;
  int dim = 0, outPos = 0;
  bool ellipsisDone = false;
  for (size_t i = 0; i < begin.size(); ++i) {
    if (bit(ellipsisMask, i)) {
      if (ellipsisDone) return node.error("has more than one ellipsis");
      ellipsisDone = true;
      const int remaining = static_cast<int>(begin.size() - i - 1 - newAxesAfterEllipsis);
      for (; dim < rank - remaining; ++dim) ++outPos;
      continue;
    }
    if (bit(newAxisMask, i)) {
      newAxes.push_back(outPos++);
      continue;
    }
    if (rank >= 0 && dim >= rank) return node.error("the slice spec has more dimensions than the input's " + std::to_string(rank));
    const int64_t step = strides[i];
    if (step == 0) return node.error("stride 0");
    if (bit(shrinkMask, i)) {
      axes.push_back(dim);
      starts.push_back(begin[i]);
      ends.push_back(begin[i] == -1 ? kMaxIndex : plus(begin[i], 1));
      steps.push_back(1);
      shrunk.push_back(dim++);
      continue;
    }
    axes.push_back(dim++);
    starts.push_back(bit(beginMask, i) ? (step > 0 ? 0 : kMaxIndex) : begin[i]);
    ends.push_back(bit(endMask, i) ? (step > 0 ? kMaxIndex : kMinIndex) : end[i]);
    steps.push_back(step);
    ++outPos;
  }
  const int outRank = rank < 0 ? -1 : rank - static_cast<int>(shrunk.size()) + static_cast<int>(newAxes.size());
  const bool plain = shrunk.empty() && newAxes.empty();
  if (plain && nchw(ctx, node.input(0))) {
    int x;
    OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x));
    for (int64_t& a : axes) a = nchwAxis(a);
    return sliceInto(ctx, node, x, axes, starts, ends, steps, ctx.define(node, 0, Held::Nchw, 4));
  }
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  if (plain) return sliceInto(ctx, node, x, axes, starts, ends, steps, ctx.define(node, 0, Held::AsTf, outRank));
  int sliced = ctx.temp(node.name() + "_sliced");
  OSPREY_RETURN_IF_ERROR(sliceInto(ctx, node, x, axes, starts, ends, steps, sliced));
  if (!shrunk.empty()) {
    const int squeezed = newAxes.empty() ? ctx.define(node, 0, Held::AsTf, outRank) : ctx.temp(node.name() + "_shrunk");
    ctx.addNode(OpType::Squeeze, node.name() + "_shrink", {sliced, ctx.addInt64Constant(node.name() + "_shrink", shrunk)},
                {squeezed});
    sliced = squeezed;
  }
  if (!newAxes.empty())
    ctx.addNode(OpType::Unsqueeze, node.name() + "_new_axes", {sliced, ctx.addInt64Constant(node.name() + "_new", newAxes)},
                {ctx.define(node, 0, Held::AsTf, outRank)});
  return Status::ok();
}

Status importGather(ImportContext& ctx, const NodeView& node) {
  const bool v2 = node.def->op == "GatherV2";
  OSPREY_RETURN_IF_ERROR(node.requireInputs(v2 ? 3 : 2));
  if (node.attrInt("batch_dims", 0) != 0) return Status::unsupported("batch_dims != 0");
  std::vector<int64_t> axis = {0};
  if (v2) OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(2), &axis).withContext(node.label + " axis"));
  if (axis.size() != 1) return node.error("axis must hold one value");
  int x, idx;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &idx));
  const int r = ctx.rank(node.input(0)), ri = ctx.rank(node.input(1));
  ctx.addNode(OpType::Gather, node.name(), {x, idx}, {ctx.define(node, 0, Held::AsTf, r < 0 || ri < 0 ? -1 : r + ri - 1)})
      .setInt("axis", axis[0]);
  return Status::ok();
}

Status importGatherNd(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  int x, idx;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &idx));
  ctx.addNode(OpType::GatherND, node.name(), {x, int64Input(ctx, idx, node, "indices")}, {ctx.define(node, 0, Held::AsTf, -1)});
  return Status::ok();
}

// Pad / PadV2 (constant value) / MirrorPad (REFLECT): paddings [rank, 2] -> ONNX pads.
Status importPad(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  std::string mode = "constant";
  if (node.def->op == "MirrorPad") {
    const std::string m = node.attrString("mode", "");
    if (m != "REFLECT") return Status::unsupported("mode " + m);
    mode = "reflect";
  }
  std::vector<int64_t> paddings;
  OSPREY_RETURN_IF_ERROR(ctx.constantInts(node.input(1), &paddings).withContext(node.label + " paddings"));
  if (paddings.size() % 2) return node.error("paddings must be [rank, 2]");
  const size_t rank = paddings.size() / 2;
  const bool held = nchw(ctx, node.input(0)) && rank == 4;
  std::vector<int64_t> pads(2 * rank);
  for (size_t i = 0; i < rank; ++i) {
    const size_t d = held ? static_cast<size_t>(nchwAxis(static_cast<int64_t>(i))) : i;
    pads[d] = paddings[2 * i];
    pads[rank + d] = paddings[2 * i + 1];
  }
  int x;
  OSPREY_RETURN_IF_ERROR(held ? ctx.value(node.input(0), &x) : ctx.asTf(node.input(0), &x));
  std::vector<int> ins = {x, ctx.addInt64Constant(node.name() + "_pads", pads)};
  if (node.def->op == "PadV2" && node.inputs.size() > 2) {
    int v;
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(2), &v));
    ins.push_back(v);
  }
  ctx.addNode(OpType::Pad, node.name(), ins, {ctx.define(node, 0, held ? Held::Nchw : Held::AsTf, static_cast<int>(rank))})
      .setString("mode", mode);
  return Status::ok();
}

Status importTile(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  std::vector<int64_t> reps;
  if (nchw(ctx, node.input(0)) && ctx.constantInts(node.input(1), &reps).isOk() && reps.size() == 4) {
    int x;
    OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x));
    const std::vector<int64_t> moved = {reps[0], reps[3], reps[1], reps[2]};
    ctx.addNode(OpType::Tile, node.name(), {x, ctx.addInt64Constant(node.name() + "_repeats", moved)},
                {ctx.define(node, 0, Held::Nchw, 4)});
    return Status::ok();
  }
  int x, r;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &r));
  ctx.addNode(OpType::Tile, node.name(), {x, int64Input(ctx, r, node, "repeats")},
              {ctx.define(node, 0, Held::AsTf, ctx.rank(node.input(0)))});
  return Status::ok();
}

// Fill(dims, value): the scalar broadcast to dims.
Status importFill(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  int dims, v;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &dims));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &v));
  std::vector<int64_t> known;
  const int rank = ctx.constantInts(node.input(0), &known).isOk() ? static_cast<int>(known.size()) : -1;
  ctx.addNode(OpType::Expand, node.name(), {v, int64Input(ctx, dims, node, "dims")}, {ctx.define(node, 0, Held::AsTf, rank)});
  return Status::ok();
}

// An int64 result made by `make(out)`, cast to the node's out_type where that is int32.
template <class Make>
void typedOutput(ImportContext& ctx, const NodeView& node, int rank, Make make) {
  const bool wide = node.attrType("out_type", DT_INT32) == DT_INT64;
  const int out = wide ? ctx.define(node, 0, Held::AsTf, rank) : ctx.temp(node.name() + "_i64");
  make(out);
  if (!wide)
    ctx.addNode(OpType::Cast, node.name() + "_i32", {out}, {ctx.define(node, 0, Held::AsTf, rank)})
        .setInt("to", static_cast<int64_t>(DataType::Int32));
}

// The shape of a value held NCHW is gathered back into TensorFlow's order.
Status importShape(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  int x;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x, &held));
  typedOutput(ctx, node, 1, [&](int out) {
    if (held == Held::AsTf) {
      ctx.addNode(OpType::Shape, node.name(), {x}, {out});
      return;
    }
    const int s = ctx.temp(node.name() + "_nchw");
    ctx.addNode(OpType::Shape, node.name() + "_nchw", {x}, {s});
    ctx.addNode(OpType::Gather, node.name(), {s, ctx.addInt64Constant(node.name() + "_order", kToNhwc)}, {out})
        .setInt("axis", 0);
  });
  return Status::ok();
}

Status importSize(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x));
  typedOutput(ctx, node, 0, [&](int out) { ctx.addNode(OpType::Size, node.name(), {x}, {out}); });
  return Status::ok();
}

Status importRank(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  int x;
  OSPREY_RETURN_IF_ERROR(ctx.value(node.input(0), &x));
  const int s = ctx.temp(node.name() + "_shape");
  ctx.addNode(OpType::Shape, node.name() + "_shape", {x}, {s});
  const int wide = ctx.temp(node.name() + "_i64");
  ctx.addNode(OpType::Size, node.name() + "_size", {s}, {wide});
  ctx.addNode(OpType::Cast, node.name(), {wide}, {ctx.define(node, 0, Held::AsTf, 0)})
      .setInt("to", static_cast<int64_t>(DataType::Int32));
  return Status::ok();
}

Status importRange(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(3));
  std::vector<int> ins;
  for (size_t i = 0; i < 3; ++i) {
    int v;
    OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(i), &v));
    ins.push_back(v);
  }
  ctx.addNode(OpType::Range, node.name(), ins, {ctx.define(node, 0, Held::AsTf, 1)});
  return Status::ok();
}

// TopKV2(input, k) over the last axis; indices are int32 in TensorFlow.
Status importTopK(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(2));
  int x, k;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &x));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &k));
  const int shape = ctx.addInt64Constant(node.name() + "_k_shape", {1});
  const int k1 = ctx.temp(node.name() + "_k");
  ctx.addNode(OpType::Reshape, node.name() + "_k", {int64Input(ctx, k, node, "k64"), shape}, {k1});
  const int rank = ctx.rank(node.input(0));
  const int wide = ctx.temp(node.name() + "_indices64");
  ctx.addNode(OpType::TopK, node.name(), {x, k1}, {ctx.define(node, 0, Held::AsTf, rank), wide})
      .setInt("sorted", node.attrBool("sorted", true) ? 1 : 0);
  ctx.addNode(OpType::Cast, node.name() + "_indices", {wide}, {ctx.define(node, 1, Held::AsTf, rank)})
      .setInt("to", static_cast<int64_t>(DataType::Int32));
  return Status::ok();
}

// OneHot(indices, depth, on_value, off_value) with constant on and off values.
Status importOneHot(ImportContext& ctx, const NodeView& node) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(4));
  const TensorInfo* on = ctx.constant(node.input(2));
  const TensorInfo* off = ctx.constant(node.input(3));
  if (!on || !off || on->dtype != off->dtype || shapeElements(on->shape) != 1 || shapeElements(off->shape) != 1)
    return Status::unsupported("on_value and off_value that are not scalar constants of one type");
  const size_t width = dataTypeSize(on->dtype);
  std::vector<uint8_t> both(2 * width);
  std::memcpy(both.data(), off->data.bytes.get(), width);
  std::memcpy(both.data() + width, on->data.bytes.get(), width);
  const DataType dtype = on->dtype;
  const int values = ctx.addConstant(node.name() + "_values", dtype, {2}, both.data(), both.size());
  int idx, depth;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(0), &idx));
  OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(1), &depth));
  const int rank = ctx.rank(node.input(0));
  ctx.addNode(OpType::OneHot, node.name(), {idx, depth, values}, {ctx.define(node, 0, Held::AsTf, rank < 0 ? -1 : rank + 1)})
      .setInt("axis", node.attrInt("axis", -1));
  return Status::ok();
}

Status importEinsum(ImportContext& ctx, const NodeView& node) {
  if (node.inputs.empty()) return node.error("has no inputs");
  std::vector<int> ins;
  for (const std::string& r : node.inputs) {
    int v;
    OSPREY_RETURN_IF_ERROR(ctx.asTf(r, &v));
    ins.push_back(v);
  }
  const std::string eq = node.attrString("equation", "");
  const size_t arrow = eq.find("->");
  const int rank = arrow == std::string::npos || eq.find("...") != std::string::npos
                       ? -1
                       : static_cast<int>(eq.size() - arrow - 2);
  ctx.addNode(OpType::Einsum, node.name(), ins, {ctx.define(node, 0, Held::AsTf, rank)}).setString("equation", eq);
  return Status::ok();
}

}  // namespace

void addShapeImporters(ImporterTable& t) {
  for (const char* name : {"Identity", "StopGradient", "PreventGradient", "Snapshot", "PlaceholderWithDefault",
                           "EnsureShape", "CheckNumerics"})
    t[name] = importIdentity;
  t["IdentityN"] = importIdentityN;
  t["Reshape"] = importReshape;
  t["Squeeze"] = importSqueeze;
  t["ExpandDims"] = importExpandDims;
  t["Transpose"] = importTranspose;
  t["ConcatV2"] = importConcat;
  t["Pack"] = importPack;
  t["Unpack"] = importUnpack;
  t["Split"] = [](ImportContext& c, const NodeView& n) { return importSplit(c, n, false); };
  t["SplitV"] = [](ImportContext& c, const NodeView& n) { return importSplit(c, n, true); };
  t["Slice"] = importSlice;
  t["StridedSlice"] = importStridedSlice;
  t["Gather"] = importGather;
  t["GatherV2"] = importGather;
  t["GatherNd"] = importGatherNd;
  t["Pad"] = importPad;
  t["PadV2"] = importPad;
  t["MirrorPad"] = importPad;
  t["Tile"] = importTile;
  t["Fill"] = importFill;
  t["Shape"] = importShape;
  t["Size"] = importSize;
  t["Rank"] = importRank;
  t["Range"] = importRange;
  t["TopKV2"] = importTopK;
  t["OneHot"] = importOneHot;
  t["Einsum"] = importEinsum;
}

}  // namespace osprey::tf
