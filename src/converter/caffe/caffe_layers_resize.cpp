// Caffe's resizing, tiling and index layers: Interp (bilinear, corners aligned), Upsample
// (nearest), Tile, ArgMax, Reduction, ShuffleChannel.
#include "converter/caffe/caffe_layers.h"

namespace osprey::caffe {

namespace {

int shapeOf(CaffeContext& ctx, const std::string& name, int x) {
  const int s = ctx.temp(name, 1);
  ctx.node(OpType::Shape, name, {x}, {s});
  return s;
}

}  // namespace

// Output size: height / width, or from the input by zoom_factor (in + (in - 1) * (zoom - 1)) or
// shrink_factor ((in - 1) / shrink + 1); bilinear with the corners aligned, as Caffe's Interp.
Status importInterp(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "interp_param");
  int64_t height = 0, width = 0, zoom = 1, shrink = 1;
  OSPREY_RETURN_IF_ERROR(p.getInt("height", 0, &height));
  OSPREY_RETURN_IF_ERROR(p.getInt("width", 0, &width));
  OSPREY_RETURN_IF_ERROR(p.getInt("zoom_factor", 1, &zoom));
  OSPREY_RETURN_IF_ERROR(p.getInt("shrink_factor", 1, &shrink));
  if (p.has("pad_beg") || p.has("pad_end")) return Status::unsupported("layer '" + layer.name + "' (Interp): pad_beg / pad_end");
  if (zoom < 1 || shrink < 1) return layerError(layer, "zoom_factor and shrink_factor must be positive");
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  if (ctx.rank(x) != 4) return layerError(layer, "takes a 4-D input");
  int sizes = -1;
  const int shape = shapeOf(ctx, layer.name + "/in_shape", x);
  const int batchChannels = ctx.temp(layer.name + "/nc", 1), hw = ctx.temp(layer.name + "/hw", 1);
  ctx.node(OpType::Slice, layer.name + "/nc", {shape, ctx.ints(layer.name + "/0", {0}), ctx.ints(layer.name + "/2", {2})},
           {batchChannels});
  int outHw = -1;
  if (height > 0 && width > 0) {
    outHw = ctx.ints(layer.name + "/out_hw", {height, width});
  } else {
    ctx.node(OpType::Slice, layer.name + "/hw", {shape, ctx.ints(layer.name + "/2b", {2}), ctx.ints(layer.name + "/4", {4})}, {hw});
    const int minusOne = ctx.temp(layer.name + "/hw_minus_one", 1), step = ctx.temp(layer.name + "/step", 1);
    ctx.node(OpType::Sub, layer.name + "/minus_one", {hw, ctx.ints(layer.name + "/one", {1})}, {minusOne});
    if (zoom > 1) ctx.node(OpType::Mul, layer.name + "/zoom", {minusOne, ctx.ints(layer.name + "/zoom_by", {zoom})}, {step});
    else ctx.node(OpType::Div, layer.name + "/shrink", {minusOne, ctx.ints(layer.name + "/shrink_by", {shrink})}, {step});
    outHw = ctx.temp(layer.name + "/out_hw", 1);
    ctx.node(OpType::Add, layer.name + "/out_hw", {step, ctx.ints(layer.name + "/one_more", {1})}, {outHw});
  }
  sizes = ctx.temp(layer.name + "/sizes", 1);
  ctx.node(OpType::Concat, layer.name + "/sizes", {batchChannels, outHw}, {sizes}).setInt("axis", 0);
  Node& n = ctx.node(OpType::Resize, layer.name, {x, -1, -1, sizes}, {y});
  n.setString("mode", "linear");
  n.setString("coordinate_transformation_mode", "align_corners");
  return Status::ok();
}

Status importUpsample(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "upsample_param");
  double scale = 2, sh = 0, sw = 0;
  OSPREY_RETURN_IF_ERROR(p.getFloat("scale", 2, &scale));
  OSPREY_RETURN_IF_ERROR(p.getFloat("scale_h", scale, &sh));
  OSPREY_RETURN_IF_ERROR(p.getFloat("scale_w", scale, &sw));
  if (!(sh > 0 && sw > 0)) return layerError(layer, "scales must be positive");
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  if (ctx.rank(x) != 4) return layerError(layer, "takes a 4-D input");
  Node& n = ctx.node(OpType::Resize, layer.name,
                     {x, -1, ctx.constant(layer.name + "/scales", {4}, {1.f, 1.f, static_cast<float>(sh), static_cast<float>(sw)})},
                     {y});
  n.setString("mode", "nearest");
  n.setString("coordinate_transformation_mode", "asymmetric");
  n.setString("nearest_mode", "floor");
  return Status::ok();
}

Status importTile(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "tile_param");
  int64_t axis = 1, tiles = 1;
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 1, &axis));
  OSPREY_RETURN_IF_ERROR(p.getInt("tiles", 1, &tiles));
  int x = -1, y = -1, a = 0;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  const int rank = ctx.rank(x);
  if (rank < 0) return layerError(layer, "needs its input's rank, which is not known here");
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, rank, &a));
  if (tiles < 1) return layerError(layer, "tiles must be positive");
  std::vector<int64_t> repeats(static_cast<size_t>(rank), 1);
  repeats[a] = tiles;
  ctx.node(OpType::Tile, layer.name, {x, ctx.ints(layer.name + "/repeats", repeats)}, {y});
  return Status::ok();
}

// The index of the maximum along `axis` (or over each sample's values), as float as Caffe gives it.
Status importArgMax(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "argmax_param");
  bool outMaxVal = false;
  int64_t topK = 1, axis = 0;
  OSPREY_RETURN_IF_ERROR(p.getBool("out_max_val", false, &outMaxVal));
  OSPREY_RETURN_IF_ERROR(p.getInt("top_k", 1, &topK));
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 0, &axis));
  if (outMaxVal || topK != 1)
    return Status::unsupported("layer '" + layer.name + "' (ArgMax): out_max_val and top_k other than 1");
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  int source = x;
  const bool perSample = !p.has("axis");
  if (perSample) {  // Caffe's output is then [N, 1, 1]
    source = ctx.temp(layer.name + "/flat", 2);
    ctx.node(OpType::Reshape, layer.name + "/flat", {x, ctx.ints(layer.name + "/flat_shape", {0, -1})}, {source});
    axis = 1;
  }
  const int index = ctx.temp(layer.name + "/index", ctx.rank(source));
  Node& arg = ctx.node(OpType::ArgMax, layer.name + "/argmax", {source}, {index});
  arg.setInt("axis", axis);
  arg.setInt("keepdims", 1);
  const int asFloat = perSample ? ctx.temp(layer.name + "/float", 2) : y;
  ctx.node(OpType::Cast, layer.name + "/cast", {index}, {asFloat}).setInt("to", static_cast<int64_t>(DataType::Float32));
  if (perSample) {
    ctx.node(OpType::Reshape, layer.name, {asFloat, ctx.ints(layer.name + "/out_shape", {0, 1, 1})}, {y});
    ctx.setRank(y, 3);
  }
  return Status::ok();
}

// Reduction over every dim from `axis` on: SUM, ASUM, SUMSQ or MEAN, times coeff.
Status importReduction(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "reduction_param");
  std::string op;
  int64_t axis = 0;
  double coeff = 1;
  OSPREY_RETURN_IF_ERROR(p.getString("operation", "SUM", &op));
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 0, &axis));
  OSPREY_RETURN_IF_ERROR(p.getFloat("coeff", 1, &coeff));
  const OpType type = op == "SUM" || op == "1" ? OpType::ReduceSum : op == "ASUM" || op == "2" ? OpType::ReduceL1
                      : op == "SUMSQ" || op == "3" ? OpType::ReduceSumSquare : op == "MEAN" || op == "4" ? OpType::ReduceMean
                                                                                             : OpType::Invalid;
  if (type == OpType::Invalid) return layerError(layer, "operation " + op + " is not SUM, ASUM, SUMSQ or MEAN");
  int x = -1, y = -1, a = 0;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, ctx.rank(x), &a));
  std::vector<int64_t> shape(static_cast<size_t>(a), 0);
  shape.push_back(-1);
  const int flat = ctx.temp(layer.name + "/flat", a + 1), reduced = coeff != 1 ? ctx.temp(layer.name + "/reduced", a) : y;
  ctx.node(OpType::Reshape, layer.name + "/flat", {x, ctx.ints(layer.name + "/shape", shape)}, {flat});
  ctx.node(type, layer.name + "/reduce", {flat, ctx.ints(layer.name + "/axes", {a})}, {reduced}).setInt("keepdims", 0);
  if (coeff != 1)
    ctx.node(OpType::Mul, layer.name, {reduced, ctx.constant(layer.name + "/coeff", {}, {static_cast<float>(coeff)})}, {y});
  ctx.setRank(y, a);
  return Status::ok();
}

// [N, C, H, W] as [N, group, C / group, H, W], the two channel dims swapped, and back.
Status importShuffleChannel(CaffeContext& ctx, const Layer& layer) {
  int64_t group = 1;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "shuffle_channel_param").getInt("group", 1, &group));
  if (group < 1) return layerError(layer, "group must be positive");
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  if (ctx.rank(x) != 4) return layerError(layer, "takes a 4-D input");
  const int shape = shapeOf(ctx, layer.name + "/shape", x);
  const int n = ctx.temp(layer.name + "/n", 1), hw = ctx.temp(layer.name + "/hw", 1), split = ctx.temp(layer.name + "/split", 1);
  ctx.node(OpType::Slice, layer.name + "/n", {shape, ctx.ints(layer.name + "/0", {0}), ctx.ints(layer.name + "/1", {1})}, {n});
  ctx.node(OpType::Slice, layer.name + "/hw", {shape, ctx.ints(layer.name + "/2", {2}), ctx.ints(layer.name + "/4", {4})}, {hw});
  ctx.node(OpType::Concat, layer.name + "/split", {n, ctx.ints(layer.name + "/groups", {group, -1}), hw}, {split}).setInt("axis", 0);
  const int grouped = ctx.temp(layer.name + "/grouped", 5), swapped = ctx.temp(layer.name + "/swapped", 5);
  ctx.node(OpType::Reshape, layer.name + "/group", {x, split}, {grouped});
  ctx.node(OpType::Transpose, layer.name + "/swap", {grouped}, {swapped}).setInts("perm", {0, 2, 1, 3, 4});
  ctx.node(OpType::Reshape, layer.name, {swapped, shape}, {y});
  return Status::ok();
}

}  // namespace osprey::caffe
