// SSD's heads. PriorBox depends only on shapes (its feature map's and the image's), so it is
// composed from Shape, Range and arithmetic on those: with static input shapes the converter's
// constant folding leaves one constant, and with dynamic ones the same ops compute the priors
// at run time. DetectionOutput becomes the one op of that name (src/ops/detection_output.cpp).
#include <cmath>

#include "converter/caffe/caffe_layers.h"

namespace osprey::caffe {

namespace {

// A float value, given (given > 0) or the scalar a / b of two float [1] tensors.
int givenOr(CaffeContext& ctx, const std::string& name, double given, int a, int b) {
  if (given > 0) return ctx.constant(name, {1}, {static_cast<float>(given)});
  const int q = ctx.temp(name, 1);
  ctx.node(OpType::Div, name, {a, b}, {q});
  return q;
}

// Dim `axis` of x as a float [1] tensor.
int floatDim(CaffeContext& ctx, const std::string& name, int x, int64_t axis) {
  const int d = shapeSlice(ctx, name + "_int", x, axis, axis + 1), f = ctx.temp(name, 1);
  ctx.node(OpType::Cast, name, {d}, {f}).setInt("to", static_cast<int64_t>(DataType::Float32));
  return f;
}

// Centers (i + offset) * step for i in [0, count), as a rank-4 tensor shaped `shape` (-1: count).
int centers(CaffeContext& ctx, const std::string& name, int count, int step, float offset, std::vector<int64_t> shape) {
  const int scalar = ctx.temp(name + "/count", 0), limit = ctx.temp(name + "/limit", 0);
  const int range = ctx.temp(name + "/range", 1), scaled = ctx.temp(name + "/scaled", 1), out = ctx.temp(name, 4);
  ctx.node(OpType::Reshape, name + "/count", {count, ctx.ints(name + "/scalar", {})}, {scalar});
  const int start = ctx.constant(name + "/offset", {}, {offset});
  ctx.node(OpType::Add, name + "/limit", {scalar, start}, {limit});
  ctx.node(OpType::Range, name + "/range", {start, limit, ctx.constant(name + "/delta", {}, {1.f})}, {range});
  ctx.node(OpType::Mul, name + "/scaled", {range, step}, {scaled});
  ctx.node(OpType::Reshape, name, {scaled, ctx.ints(name + "/shape", shape)}, {out});
  return out;
}

struct PriorParams {
  std::vector<double> minSizes, maxSizes, ratios = {1.0}, variances;
  double imgH = 0, imgW = 0, stepH = 0, stepW = 0, offset = 0.5;
  bool flip = true, clip = false;
};

// Two values given as `name` for both, or as name_h and name_w.
Status hw(const TextMessage& p, const std::string& name, double* h, double* w) {
  double both = 0;
  OSPREY_RETURN_IF_ERROR(p.getFloat(name == "img" ? "img_size" : name, 0, &both));
  OSPREY_RETURN_IF_ERROR(p.getFloat(name + "_h", both, h));
  return p.getFloat(name + "_w", both, w);
}

Status readPriors(const Layer& layer, PriorParams* q) {
  const TextMessage& p = paramOf(layer, "prior_box_param");
  std::vector<double> ratios;
  OSPREY_RETURN_IF_ERROR(p.getFloats("min_size", &q->minSizes));
  OSPREY_RETURN_IF_ERROR(p.getFloats("max_size", &q->maxSizes));
  OSPREY_RETURN_IF_ERROR(p.getFloats("aspect_ratio", &ratios));
  OSPREY_RETURN_IF_ERROR(p.getFloats("variance", &q->variances));
  OSPREY_RETURN_IF_ERROR(p.getBool("flip", true, &q->flip));
  OSPREY_RETURN_IF_ERROR(p.getBool("clip", false, &q->clip));
  OSPREY_RETURN_IF_ERROR(p.getFloat("offset", 0.5, &q->offset));
  OSPREY_RETURN_IF_ERROR(hw(p, "img", &q->imgH, &q->imgW));
  OSPREY_RETURN_IF_ERROR(hw(p, "step", &q->stepH, &q->stepW));
  if (q->minSizes.empty()) return layerError(layer, "needs a min_size");
  for (double s : q->minSizes)
    if (!(s > 0)) return layerError(layer, "min_size must be positive");
  if (!q->maxSizes.empty() && q->maxSizes.size() != q->minSizes.size())
    return layerError(layer, "needs one max_size per min_size");
  for (size_t i = 0; i < q->maxSizes.size(); ++i)
    if (!(q->maxSizes[i] > q->minSizes[i])) return layerError(layer, "max_size must exceed its min_size");
  for (double r : ratios) {  // Caffe keeps each ratio once (and 1 always), adding 1 / r under flip
    if (!(r > 0)) return layerError(layer, "aspect_ratio must be positive");
    bool seen = false;
    for (double k : q->ratios) seen = seen || std::fabs(r - k) < 1e-6;
    if (seen) continue;
    q->ratios.push_back(r);
    if (q->flip) q->ratios.push_back(1 / r);
  }
  if (q->variances.empty()) q->variances = {0.1};
  if (q->variances.size() == 1) q->variances.assign(4, q->variances[0]);
  if (q->variances.size() != 4) return layerError(layer, "takes one variance or four");
  if ((q->imgH > 0) != (q->imgW > 0) || (q->stepH > 0) != (q->stepW > 0))
    return layerError(layer, "img_h / img_w and step_h / step_w come in pairs");
  return Status::ok();
}

}  // namespace

// Caffe's order per location: for each min_size its square box, the sqrt(min * max) square box,
// then one box per aspect ratio other than 1; each box [xmin, ymin, xmax, ymax] over the image size.
Status importPriorBox(CaffeContext& ctx, const Layer& layer) {
  PriorParams q;
  OSPREY_RETURN_IF_ERROR(readPriors(layer, &q));
  if (layer.bottoms.size() != 2 || layer.tops.size() != 1) return layerError(layer, "takes two bottoms (feature map, image) and one top");
  int x = -1, image = -1;
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[0], &x));
  OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[1], &image));
  if (ctx.rank(x) != 4 || ctx.rank(image) != 4) return layerError(layer, "needs 4-D (N, C, H, W) bottoms of known rank");
  std::vector<float> halves, variances;  // per prior: -w/2, -h/2, w/2, h/2 and the four variances
  auto add = [&](double w, double h) {
    const float fw = static_cast<float>(w), fh = static_cast<float>(h);
    halves.insert(halves.end(), {-fw / 2, -fh / 2, fw / 2, fh / 2});
    for (double v : q.variances) variances.push_back(static_cast<float>(v));
  };
  for (size_t i = 0; i < q.minSizes.size(); ++i) {
    const float m = static_cast<float>(q.minSizes[i]);
    add(m, m);
    if (!q.maxSizes.empty()) add(std::sqrt(m * static_cast<float>(q.maxSizes[i])), std::sqrt(m * static_cast<float>(q.maxSizes[i])));
    for (double r : q.ratios)
      if (std::fabs(r - 1) >= 1e-6) add(m * std::sqrt(static_cast<float>(r)), m / std::sqrt(static_cast<float>(r)));
  }
  const int64_t k = static_cast<int64_t>(halves.size() / 4);
  const std::string n = layer.name;
  const int layerH = floatDim(ctx, n + "/layer_h", x, 2), layerW = floatDim(ctx, n + "/layer_w", x, 3);
  const int imgH = q.imgH > 0 ? ctx.constant(n + "/img_h", {1}, {static_cast<float>(q.imgH)}) : floatDim(ctx, n + "/img_h", image, 2);
  const int imgW = q.imgW > 0 ? ctx.constant(n + "/img_w", {1}, {static_cast<float>(q.imgW)}) : floatDim(ctx, n + "/img_w", image, 3);
  const int stepH = givenOr(ctx, n + "/step_h", q.stepH, imgH, layerH), stepW = givenOr(ctx, n + "/step_w", q.stepW, imgW, layerW);
  const float offset = static_cast<float>(q.offset);
  const int cy = centers(ctx, n + "/cy", layerH, stepH, offset, {-1, 1, 1, 1});
  const int cx = centers(ctx, n + "/cx", layerW, stepW, offset, {1, -1, 1, 1});
  // (cx, cy, cx, cy) + halves over (w, h, w, h): [H, W, K, 4]
  const int xs = ctx.temp(n + "/xs", 4), ys = ctx.temp(n + "/ys", 4), grid = ctx.temp(n + "/grid", 4);
  const int corners = ctx.temp(n + "/corners", 4), size = ctx.temp(n + "/image_size", 1), boxes = ctx.temp(n + "/boxes", 4);
  ctx.node(OpType::Mul, n + "/xs", {cx, ctx.constant(n + "/x_mask", {4}, {1, 0, 1, 0})}, {xs});
  ctx.node(OpType::Mul, n + "/ys", {cy, ctx.constant(n + "/y_mask", {4}, {0, 1, 0, 1})}, {ys});
  ctx.node(OpType::Add, n + "/grid", {xs, ys}, {grid});
  ctx.node(OpType::Add, n + "/corners", {grid, ctx.constant(n + "/halves", {k, 4}, halves)}, {corners});
  ctx.node(OpType::Concat, n + "/image_size", {imgW, imgH, imgW, imgH}, {size}).setInt("axis", 0);
  ctx.node(OpType::Div, n + "/boxes", {corners, size}, {boxes});
  int final = boxes;
  if (q.clip) {
    final = ctx.temp(n + "/clipped", 4);
    ctx.node(OpType::Clip, n + "/clip", {boxes, ctx.constant(n + "/zero", {}, {0.f}), ctx.constant(n + "/one", {}, {1.f})}, {final});
  }
  const int flat = ctx.temp(n + "/flat", 3), shape = ctx.temp(n + "/boxes_shape", 1);
  const int spread = ctx.temp(n + "/variances", 4), varFlat = ctx.temp(n + "/variances_flat", 3);
  const int rowShape = ctx.ints(n + "/row", {1, 1, -1});
  ctx.node(OpType::Reshape, n + "/flat", {final, rowShape}, {flat});
  ctx.node(OpType::Shape, n + "/boxes_shape", {boxes}, {shape});
  ctx.node(OpType::Expand, n + "/variances", {ctx.constant(n + "/variance", {k, 4}, variances), shape}, {spread});
  ctx.node(OpType::Reshape, n + "/variances_flat", {spread, rowShape}, {varFlat});
  const int y = ctx.top(layer.tops[0]);
  ctx.setRank(y, 3);
  ctx.node(OpType::Concat, n, {flat, varFlat}, {y}).setInt("axis", 1);
  return Status::ok();
}

Status importDetectionOutput(CaffeContext& ctx, const Layer& layer) {
  const TextMessage& p = paramOf(layer, "detection_output_param");
  static const TextMessage kEmpty;
  const TextMessage* nmsParam = p.message("nms_param");
  const TextMessage& nms = nmsParam ? *nmsParam : kEmpty;
  int64_t classes = 0, background = 0, keepTopK = -1, topK = -1;
  bool share = true, inTarget = false;
  double nmsThreshold = 0.3, eta = 1, confidence = 0;
  std::string code;
  OSPREY_RETURN_IF_ERROR(p.getInt("num_classes", 0, &classes));
  OSPREY_RETURN_IF_ERROR(p.getBool("share_location", true, &share));
  OSPREY_RETURN_IF_ERROR(p.getInt("background_label_id", 0, &background));
  OSPREY_RETURN_IF_ERROR(p.getInt("keep_top_k", -1, &keepTopK));
  OSPREY_RETURN_IF_ERROR(p.getBool("variance_encoded_in_target", false, &inTarget));
  OSPREY_RETURN_IF_ERROR(p.getString("code_type", "CORNER", &code));  // caffe.proto's default
  OSPREY_RETURN_IF_ERROR(nms.getFloat("nms_threshold", 0.3, &nmsThreshold));
  OSPREY_RETURN_IF_ERROR(nms.getInt("top_k", -1, &topK));
  OSPREY_RETURN_IF_ERROR(nms.getFloat("eta", 1, &eta));
  const char* kCodes[] = {"CORNER", "CENTER_SIZE", "CORNER_SIZE"};  // caffe.proto's numbers 1, 2, 3
  if (code.size() == 1 && code[0] >= '1' && code[0] <= '3') code = kCodes[code[0] - '1'];
  if (code != kCodes[0] && code != kCodes[1] && code != kCodes[2])
    return layerError(layer, "code_type " + code + " is not CORNER, CENTER_SIZE or CORNER_SIZE");
  if (classes < 1) return layerError(layer, "needs a positive num_classes");
  if (layer.bottoms.size() != 3 || layer.tops.size() != 1) return layerError(layer, "takes three bottoms (loc, conf, priors) and one top");
  std::vector<int> xs(3);
  for (int i = 0; i < 3; ++i) OSPREY_RETURN_IF_ERROR(ctx.bottom(layer.name, layer.bottoms[i], &xs[i]));
  const int y = ctx.top(layer.tops[0]);
  ctx.setRank(y, 4);
  Node& n = ctx.node(OpType::DetectionOutput, layer.name, xs, {y});
  n.setInt("num_classes", classes);
  n.setInt("share_location", share ? 1 : 0);
  n.setInt("background_label_id", background);
  n.setInt("keep_top_k", keepTopK);
  n.setInt("top_k", topK);
  n.setInt("variance_encoded_in_target", inTarget ? 1 : 0);
  n.setString("code_type", code);
  n.setFloat("nms_threshold", static_cast<float>(nmsThreshold));
  n.setFloat("eta", static_cast<float>(eta));
  if (p.has("confidence_threshold")) {  // absent: every score counts, as Caffe's -FLT_MAX
    OSPREY_RETURN_IF_ERROR(p.getFloat("confidence_threshold", 0, &confidence));
    n.setFloat("confidence_threshold", static_cast<float>(confidence));
  }
  return Status::ok();
}

}  // namespace osprey::caffe
