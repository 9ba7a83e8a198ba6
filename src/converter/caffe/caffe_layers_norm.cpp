// Caffe's normalizations and combining layers: BatchNorm, Scale, Bias, Eltwise, Softmax, LRN,
// Normalize (SSD's L2 normalization).
#include <cmath>

#include "converter/caffe/caffe_layers.h"

namespace osprey::caffe {

namespace {

int scalar(CaffeContext& ctx, const std::string& hint, double v) { return ctx.constant(hint, {}, {static_cast<float>(v)}); }

int apply(CaffeContext& ctx, const std::string& name, OpType type, std::vector<int> inputs, int rank) {
  const int y = ctx.temp(name, rank);
  ctx.node(type, name, std::move(inputs), {y});
  return y;
}

// The operand of Scale and Bias over dims from `axis`: bottom 1 (fromBottom) or blob `blobIndex`,
// shaped with trailing 1s to broadcast.
Status operand(CaffeContext& ctx, const Layer& layer, bool fromBottom, size_t blobIndex, int axis, int rank,
               const char* what, int* out) {
  if (fromBottom) {
    int t = -1;
    OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[1], &t));
    const int r = ctx.rank(t);
    if (r < 0 || rank < 0) return layerError(layer, std::string("its ") + what + " from a bottom needs known ranks");
    std::vector<int64_t> shape(static_cast<size_t>(r), 0);
    for (int i = axis + r; i < rank; ++i) shape.push_back(1);
    const int reshaped = ctx.temp(layer.name + "/" + what);
    ctx.node(OpType::Reshape, layer.name + "/" + what + "_reshape", {t, ctx.ints(layer.name + "/shape", shape)}, {reshaped});
    *out = reshaped;
    return Status::ok();
  }
  const Blob* b = layer.blob(blobIndex);
  if (!b || b->data.empty()) return layerError(layer, std::string("has no ") + what + " in the caffemodel");
  *out = broadcastConstant(ctx, layer.name + "/" + what, *b, axis, rank);
  return Status::ok();
}

}  // namespace

Status importBatchNorm(CaffeContext& ctx, const Layer& layer) {
  double eps = 1e-5;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "batch_norm_param").getFloat("eps", 1e-5, &eps));
  const Blob *mean = layer.blob(0), *var = layer.blob(1), *factor = layer.blob(2);
  if (!mean || !var || mean->data.size() != var->data.size() || mean->data.empty())
    return layerError(layer, "needs mean and variance blobs of one value per channel");
  // Caffe keeps running sums: the statistics are the blobs divided by the moving-average factor.
  const float f = factor && !factor->data.empty() ? factor->data[0] : 1.f;
  const float inv = f == 0.f ? 0.f : 1.f / f;
  const int64_t C = static_cast<int64_t>(mean->data.size());
  std::vector<float> m(mean->data), v(var->data);
  for (float& x : m) x *= inv;
  for (float& x : v) x *= inv;
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  ctx.node(OpType::BatchNormalization, layer.name,
           {x, ctx.constant(layer.name + "/scale", {C}, std::vector<float>(static_cast<size_t>(C), 1.f)),
            ctx.constant(layer.name + "/bias", {C}, std::vector<float>(static_cast<size_t>(C), 0.f)),
            ctx.constant(layer.name + "/mean", {C}, m), ctx.constant(layer.name + "/var", {C}, v)},
           {y})
      .setFloat("epsilon", static_cast<float>(eps));
  return Status::ok();
}

// y = x * scale (+ bias), scale over dims [axis, axis + num_axes) broadcast over the rest.
Status importScale(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "scale_param");
  int64_t axis = 1;
  bool bias = false;
  OSPREY_RETURN_IF_ERROR(p.getInt("axis", 1, &axis));
  OSPREY_RETURN_IF_ERROR(p.getBool("bias_term", false, &bias));
  if (layer.bottoms.empty() || layer.tops.size() != 1) return layerError(layer, "takes one or two bottoms and one top");
  int x = -1, a = 0;
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[0], &x));
  const int rank = ctx.rank(x);
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, rank, &a));
  int scale = -1;
  const bool twoBottoms = layer.bottoms.size() > 1;  // the scale is bottom 1, the bias blob 0
  OSPREY_RETURN_IF_ERROR(operand(ctx, layer, twoBottoms, 0, a, rank, "scale", &scale));
  int biasTensor = -1;
  if (bias) OSPREY_RETURN_IF_ERROR(operand(ctx, layer, false, twoBottoms ? 0 : 1, a, rank, "bias", &biasTensor));
  const int y = ctx.top(layer.tops[0]);
  ctx.setRank(y, rank);
  if (!bias) {
    ctx.node(OpType::Mul, layer.name, {x, scale}, {y});
  } else {
    const int scaled = apply(ctx, layer.name + "/scaled", OpType::Mul, {x, scale}, rank);
    ctx.node(OpType::Add, layer.name, {scaled, biasTensor}, {y});
  }
  return Status::ok();
}

Status importBias(CaffeContext& ctx, const Layer& layer) {
  int64_t axis = 1;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "bias_param").getInt("axis", 1, &axis));
  if (layer.bottoms.empty() || layer.tops.size() != 1) return layerError(layer, "takes one or two bottoms and one top");
  int x = -1, a = 0, b = -1;
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[0], &x));
  OSPREY_RETURN_IF_ERROR(normalizeAxis(layer, axis, ctx.rank(x), &a));
  OSPREY_RETURN_IF_ERROR(operand(ctx, layer, layer.bottoms.size() > 1, 0, a, ctx.rank(x), "bias", &b));
  const int y = ctx.top(layer.tops[0]);
  ctx.setRank(y, ctx.rank(x));
  ctx.node(OpType::Add, layer.name, {x, b}, {y});
  return Status::ok();
}

Status importEltwise(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "eltwise_param");
  std::string op;
  std::vector<double> coeff;
  OSPREY_RETURN_IF_ERROR(p.getString("operation", "SUM", &op));
  OSPREY_RETURN_IF_ERROR(p.getFloats("coeff", &coeff));
  if (layer.bottoms.size() < 2 || layer.tops.size() != 1) return layerError(layer, "takes two or more bottoms and one top");
  if (!coeff.empty() && coeff.size() != layer.bottoms.size())
    return layerError(layer, "has " + std::to_string(coeff.size()) + " coefficients for " +
                                 std::to_string(layer.bottoms.size()) + " bottoms");
  std::vector<int> xs;
  for (size_t i = 0; i < layer.bottoms.size(); ++i) {
    int x = -1;
    OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[i], &x));
    if (!coeff.empty() && coeff[i] != 1 && (op == "SUM" || op == "1"))
      x = apply(ctx, layer.name + "/coeff" + std::to_string(i), OpType::Mul,
                {x, scalar(ctx, layer.name + "/coeff_value", coeff[i])}, ctx.rank(x));
    xs.push_back(x);
  }
  const OpType type = op == "PROD" || op == "0" ? OpType::Mul : op == "MAX" || op == "2" ? OpType::Max : OpType::Add;
  if (op != "SUM" && op != "1" && type == OpType::Add) return layerError(layer, "operation " + op + " is not SUM, PROD or MAX");
  const int rank = ctx.rank(xs[0]);
  int acc = xs[0];
  for (size_t i = 1; i + 1 < xs.size(); ++i) acc = apply(ctx, layer.name + "/" + std::to_string(i), type, {acc, xs[i]}, rank);
  const int y = ctx.top(layer.tops[0]);
  ctx.setRank(y, rank);
  ctx.node(type, layer.name, {acc, xs.back()}, {y});
  return Status::ok();
}

Status importSoftmax(CaffeContext& ctx, const Layer& layer) {
  int64_t axis = 1;
  OSPREY_RETURN_IF_ERROR(paramOf(layer, "softmax_param").getInt("axis", 1, &axis));
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  ctx.node(OpType::Softmax, layer.name, {x}, {y}).setInt("axis", axis);
  return Status::ok();
}

Status importLRN(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "lrn_param");
  int64_t size = 5;
  double alpha = 1, beta = 0.75, k = 1;
  std::string region;
  OSPREY_RETURN_IF_ERROR(p.getInt("local_size", 5, &size));
  OSPREY_RETURN_IF_ERROR(p.getFloat("alpha", 1, &alpha));
  OSPREY_RETURN_IF_ERROR(p.getFloat("beta", 0.75, &beta));
  OSPREY_RETURN_IF_ERROR(p.getFloat("k", 1, &k));
  OSPREY_RETURN_IF_ERROR(p.getString("norm_region", "ACROSS_CHANNELS", &region));
  if (size < 1 || size % 2 == 0) return layerError(layer, "local_size must be odd and positive");
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  if (region == "ACROSS_CHANNELS" || region == "0") {
    Node& n = ctx.node(OpType::LRN, layer.name, {x}, {y});
    n.setInt("size", size);
    n.setFloat("alpha", static_cast<float>(alpha));
    n.setFloat("beta", static_cast<float>(beta));
    n.setFloat("bias", static_cast<float>(k));
    return Status::ok();
  }
  // Within a channel: x / (1 + alpha / size^2 * sum over the size x size window of x^2) ^ beta.
  const int rank = ctx.rank(x);
  const int squared = apply(ctx, layer.name + "/square", OpType::Mul, {x, x}, rank);
  const int mean = ctx.temp(layer.name + "/window_mean");
  Node& pool = ctx.node(OpType::AveragePool, layer.name + "/window", {squared}, {mean});
  const int64_t pad = (size - 1) / 2;
  pool.setInts("kernel_shape", {size, size});
  pool.setInts("pads", {pad, pad, pad, pad});
  pool.setInt("count_include_pad", 1);
  const int scaled = apply(ctx, layer.name + "/alpha", OpType::Mul, {mean, scalar(ctx, layer.name + "/alpha_value", alpha)}, rank);
  const int shifted = apply(ctx, layer.name + "/one", OpType::Add, {scaled, scalar(ctx, layer.name + "/one_value", 1)}, rank);
  const int denominator =
      apply(ctx, layer.name + "/beta", OpType::Pow, {shifted, scalar(ctx, layer.name + "/beta_value", beta)}, rank);
  ctx.node(OpType::Div, layer.name, {x, denominator}, {y});
  return Status::ok();
}

// SSD's Normalize: x / sqrt(sum of x^2 + eps) over the channels (or over C, H, W), times a
// scale per channel (or one).
Status importNormalize(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "norm_param");
  bool acrossSpatial = true;
  double eps = 1e-10;
  OSPREY_RETURN_IF_ERROR(p.getBool("across_spatial", true, &acrossSpatial));
  OSPREY_RETURN_IF_ERROR(p.getFloat("eps", 1e-10, &eps));
  int x = -1, y = -1;
  OSPREY_RETURN_IF_ERROR(oneToOne(ctx, layer, &x, &y));
  const int rank = ctx.rank(x);
  if (rank != 4) return layerError(layer, "takes a 4-D input");
  const int sum = ctx.temp(layer.name + "/sum_squares");
  ctx.node(OpType::ReduceSumSquare, layer.name + "/sum_squares",
           {x, ctx.ints(layer.name + "/axes", acrossSpatial ? std::vector<int64_t>{1, 2, 3} : std::vector<int64_t>{1})},
           {sum})
      .setInt("keepdims", 1);
  const int plusEps = apply(ctx, layer.name + "/eps", OpType::Add, {sum, scalar(ctx, layer.name + "/eps_value", eps)}, rank);
  const int norm = apply(ctx, layer.name + "/norm", OpType::Sqrt, {plusEps}, rank);
  const int normalized = apply(ctx, layer.name + "/normalized", OpType::Div, {x, norm}, rank);
  const Blob* scale = layer.blob(0);
  if (!scale || scale->data.empty()) return layerError(layer, "has no scale in the caffemodel");
  const int s = scale->data.size() == 1 ? ctx.constant(layer.name + "/scale", {}, scale->data)
                                        : broadcastConstant(ctx, layer.name + "/scale", *scale, 1, rank);
  ctx.node(OpType::Mul, layer.name, {normalized, s}, {y});
  return Status::ok();
}

}  // namespace osprey::caffe
