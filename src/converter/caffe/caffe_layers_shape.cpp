// Caffe's data movement and reduction layers: Concat, Slice, Split, Flatten, Reshape, Permute,
// Dropout, Crop, Interp, Upsample, Tile, ArgMax, Reduction, Silence, ShuffleChannel.
#include <limits>

#include "converter/caffe/caffe_layers.h"

namespace osprey::caffe {

int shapeSlice(CaffeContext& ctx, const std::string& name, int x, int64_t begin, int64_t end) {
  const int shape = ctx.temp(name + "_shape", 1), part = ctx.temp(name, 1);
  ctx.node(OpType::Shape, name + "_shape", {x}, {shape});
  ctx.node(OpType::Slice, name, {shape, ctx.ints(name + "_begin", {begin}), ctx.ints(name + "_end", {end})}, {part});
  return part;
}

namespace {

Status knownRank(const Layer& layer, const CaffeContext& ctx, int x, int* rank) {
  *rank = ctx.rank(x);
  if (*rank < 0) return layerError(layer, "needs its input's rank, which is not known here");
  return Status::ok();
}

}  // namespace

Status importConcat(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "concat_param");
  int64_t axis = 1;
  OSPREY_RETURN_IF_ERROR(p.getInt("concat_dim", 1, &axis));
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", axis, &axis));
  if (layer.bottoms.empty() || layer.tops.size() != 1) return layerError(layer, "takes bottoms and one top");
  std::vector<int> xs;
  for (const std::string& b : layer.bottoms) {
    int x = -1;
    OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, b, &x));
    xs.push_back(x);
  }
  const int y = ctx.top(layer.tops[0]);
  ctx.setRank(y, ctx.rank(xs[0]));
  ctx.node(OpType::Concat, layer.name, xs, {y}).setInt("axis", axis);
  return Status::ok();
}

Status importSlice(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "slice_param");
  int64_t axis = 1;
  std::vector<int64_t> points;
  OSPREY_RETURN_IF_ERROR(p.getInt("slice_dim", 1, &axis));
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", axis, &axis));
  OSPREY_RETURN_IF_ERROR(p.getInts("slice_point", &points));
  if (layer.bottoms.size() != 1 || layer.tops.empty()) return layerError(layer, "takes one bottom and tops");
  if (!points.empty() && points.size() + 1 != layer.tops.size())
    return layerError(layer, std::to_string(points.size()) + " slice points for " + std::to_string(layer.tops.size()) + " tops");
  int x = -1;
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[0], &x));
  if (points.empty()) {  // equal parts
    std::vector<int> tops;
    for (const std::string& t : layer.tops) tops.push_back(ctx.top(t)), ctx.setRank(tops.back(), ctx.rank(x));
    Node& n = ctx.node(OpType::Split, layer.name, {x}, tops);
    n.setInt("axis", axis);
    n.setInt("num_outputs", static_cast<int64_t>(tops.size()));
    return Status::ok();
  }
  for (size_t i = 0; i < layer.tops.size(); ++i) {
    const int64_t begin = i == 0 ? 0 : points[i - 1];
    const int64_t end = i < points.size() ? points[i] : std::numeric_limits<int64_t>::max();
    if (i > 0 && i < points.size() && points[i] <= points[i - 1]) return layerError(layer, "slice points must increase");
    const int y = ctx.top(layer.tops[i]);
    ctx.setRank(y, ctx.rank(x));
    const std::string name = layer.name + "/" + std::to_string(i);
    ctx.node(OpType::Slice, name,
             {x, ctx.ints(name + "_begin", {begin}), ctx.ints(name + "_end", {end}), ctx.ints(name + "_axis", {axis})}, {y});
  }
  return Status::ok();
}

Status importSplit(CaffeContext& ctx, const Layer& layer) {
  if (layer.bottoms.size() != 1) return layerError(layer, "takes one bottom");
  int x = -1;
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[0], &x));
  for (const std::string& t : layer.tops) {
    const int y = ctx.top(t);
    ctx.setRank(y, ctx.rank(x));
    ctx.node(OpType::Identity, layer.name, {x}, {y});
  }
  return Status::ok();
}

Status importDropout(CaffeContext& ctx, const Layer& layer) {
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  ctx.node(OpType::Identity, layer.name, {x}, {y});  // inference: Caffe scales at training time
  return Status::ok();
}

Status importSilence(CaffeContext& ctx, const Layer& layer) { return Status::ok(); }

Status importFlatten(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "flatten_param");
  int64_t axis = 1, endAxis = -1;
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 1, &axis));
  OSPREY_RETURN_IF_ERROR(p.getInt("end_axis", -1, &endAxis));
  int x = -1, y = -1, rank = 0, a = 0, e = 0;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  OSPREY_RETURN_IF_ERROR(knownRank(layer, ctx, x, &rank));
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, rank, &a));
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, endAxis, rank, &e));
  if (e < a) return layerError(layer, "end_axis comes before axis");
  std::vector<int> parts = {shapeSlice(ctx, layer.name + "/head", x, 0, a), ctx.ints(layer.name + "/flat", {-1}),
                            shapeSlice(ctx, layer.name + "/tail", x, e + 1, rank)};
  const int shape = ctx.temp(layer.name + "/shape", 1);
  ctx.node(OpType::Concat, layer.name + "/shape", parts, {shape}).setInt("axis", 0);
  ctx.node(OpType::Reshape, layer.name, {x, shape}, {y});
  ctx.setRank(y, rank - (e - a));
  return Status::ok();
}

Status importReshape(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "reshape_param");
  int64_t axis = 0, numAxes = -1;
  std::vector<int64_t> dims;
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 0, &axis));
  OSPREY_RETURN_IF_ERROR(p.getInt("num_axes", -1, &numAxes));
  if (const TextMessage* shape = p.message("shape")) OSPREY_RETURN_IF_ERROR(shape->getInts("dim", &dims));
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  if (axis == 0 && numAxes == -1) {  // Caffe's 0 (copy) and -1 (infer) are ONNX Reshape's
    ctx.node(OpType::Reshape, layer.name, {x, ctx.ints(layer.name + "/shape", dims)}, {y});
    ctx.setRank(y, static_cast<int>(dims.size()));
    return Status::ok();
  }
  int rank = 0, a = 0;
  OSPREY_RETURN_IF_ERROR(knownRank(layer, ctx, x, &rank));
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, rank + 1, &a));
  const int end = numAxes < 0 ? rank : a + static_cast<int>(numAxes);
  if (end > rank) return layerError(layer, "axis + num_axes runs past the input's rank");
  // Caffe's 0 copies input dim a + i; Reshape's copies dim i of the new shape's own index.
  for (int64_t d : dims)
    if (d == 0 && a != 0) return Status::unsupported("layer '" + layer.name + "' (Reshape): dim 0 with a non-zero axis");
  std::vector<int> parts = {shapeSlice(ctx, layer.name + "/head", x, 0, a), ctx.ints(layer.name + "/dims", dims),
                            shapeSlice(ctx, layer.name + "/tail", x, end, rank)};
  const int shape = ctx.temp(layer.name + "/shape", 1);
  ctx.node(OpType::Concat, layer.name + "/shape", parts, {shape}).setInt("axis", 0);
  ctx.node(OpType::Reshape, layer.name, {x, shape}, {y});
  ctx.setRank(y, a + static_cast<int>(dims.size()) + (rank - end));
  return Status::ok();
}

Status importPermute(CaffeContext& ctx, const Layer& layer) {
  std::vector<int64_t> order;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "permute_param").getInts("order", &order));
  int x = -1, y = -1, rank = 0;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  OSPREY_RETURN_IF_ERROR(knownRank(layer, ctx, x, &rank));
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (int64_t o : order) {
    if (o < 0 || o >= rank || used[o]) return layerError(layer, "order is not a permutation of the input's axes");
    used[o] = true;
  }
  for (int64_t d = 0; d < rank; ++d)  // unnamed axes follow in their order
    if (!used[d]) order.push_back(d);
  ctx.node(OpType::Transpose, layer.name, {x}, {y}).setInts("perm", order);
  return Status::ok();
}

// Crop bottom 0 to bottom 1's shape from `axis` on, starting at `offset` (one, or one per axis).
Status importCrop(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "crop_param");
  int64_t axis = 2;
  std::vector<int64_t> offsets;
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 2, &axis));
  OSPREY_RETURN_IF_ERROR(p.getInts("offset", &offsets));
  if (layer.bottoms.size() != 2 || layer.tops.size() != 1) return layerError(layer, "takes two bottoms and one top");
  int x = -1, ref = -1, rank = 0, a = 0;
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[0], &x));
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[1], &ref));
  OSPREY_RETURN_IF_ERROR(knownRank(layer, ctx, x, &rank));
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, rank, &a));
  const size_t count = static_cast<size_t>(rank - a);
  if (offsets.size() > 1 && offsets.size() != count)
    return layerError(layer, std::to_string(offsets.size()) + " offsets for " + std::to_string(count) + " cropped axes");
  std::vector<int64_t> starts(count, offsets.empty() ? 0 : offsets[0]), axes;
  for (size_t i = 0; i < count; ++i) {
    if (offsets.size() > 1) starts[i] = offsets[i];
    axes.push_back(a + static_cast<int64_t>(i));
  }
  const int begin = ctx.ints(layer.name + "/begin", starts);
  const int sizes = shapeSlice(ctx, layer.name + "/sizes", ref, a, rank);
  const int end = ctx.temp(layer.name + "/end", 1);
  ctx.node(OpType::Add, layer.name + "/end", {begin, sizes}, {end});
  const int y = ctx.top(layer.tops[0]);
  ctx.setRank(y, rank);
  ctx.node(OpType::Slice, layer.name, {x, begin, end, ctx.ints(layer.name + "/axes", axes)}, {y});
  return Status::ok();
}

}  // namespace osprey::caffe
