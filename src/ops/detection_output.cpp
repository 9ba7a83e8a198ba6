// DetectionOutput: the detection head of Caffe's SSD (its DetectionOutputLayer, CPU path).
//
// Inputs: loc (N, priors * loc_classes * 4) box offsets, laid out [prior][loc class][4]; conf
// (N, priors * num_classes) scores, [prior][class]; prior (1, 2, priors * 4): the prior boxes as
// [xmin, ymin, xmax, ymax], then their four variances. loc_classes is 1 under share_location,
// else num_classes. The offsets decode against the priors (CORNER, CENTER_SIZE or CORNER_SIZE,
// the variances applied unless variance_encoded_in_target), unclipped as Caffe's CPU forward
// leaves them. Per image and class but background_label_id, boxes scoring above
// confidence_threshold go, best first and at most top_k of them, through NMS with Caffe's own IoU
// (normalized boxes: no +1 on sides) and its adaptive threshold (times eta after each kept box
// while above 0.5). Over all classes of an image only the keep_top_k best survive. Output
// (1, 1, rows, 7): [image, label, score, xmin, ymin, xmax, ymax], by image, label, then score;
// with no detection at all, one row [image, -1, -1, -1, -1, -1, -1] per image, as Caffe writes.
// Computed in float, as Caffe does. The row count depends on the values, so the op is marked
// data dependent.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/run_limits.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

struct DetectionParams {
  int64_t classes = 0, background = 0, topK = -1, keepTopK = -1, priors = 0, images = 0;
  enum Code { Corner, CenterSize, CornerSize } code = CenterSize;
  bool shareLocation = true, varianceInTarget = false;
  float nmsThreshold = 0.3f, eta = 1.f, confidence = -std::numeric_limits<float>::max();
};

Status setupDetection(const Node& node, const TensorViews& in, DetectionParams* p) {
  const TensorView &loc = in[0], &conf = in[1], &prior = in[2];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(loc, "loc"));
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(conf, "conf"));
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(prior, "prior"));
  p->classes = node.getInt("num_classes", 0);
  p->background = node.getInt("background_label_id", 0);
  p->topK = node.getInt("top_k", -1);
  p->keepTopK = node.getInt("keep_top_k", -1);
  p->shareLocation = node.getInt("share_location", 1) != 0;
  p->varianceInTarget = node.getInt("variance_encoded_in_target", 0) != 0;
  p->nmsThreshold = node.getFloat("nms_threshold", 0.3f);
  p->eta = node.getFloat("eta", 1.f);
  p->confidence = node.getFloat("confidence_threshold", p->confidence);
  const std::string code = node.getString("code_type", "CENTER_SIZE");
  if (code == "CORNER") p->code = DetectionParams::Corner;
  else if (code == "CORNER_SIZE") p->code = DetectionParams::CornerSize;
  else if (code != "CENTER_SIZE") return Status::invalidModel("code_type '" + code + "' is not CORNER, CENTER_SIZE or CORNER_SIZE");
  if (p->classes < 1) return Status::invalidModel("num_classes must be positive, got " + std::to_string(p->classes));
  if (!(p->nmsThreshold >= 0) || !(p->eta > 0 && p->eta <= 1))
    return Status::invalidModel("nms_threshold must not be negative and eta must be in (0, 1]");
  if (prior.rank() != 3 || prior.shape[1] != 2 || prior.shape[2] % 4 != 0)
    return Status::invalidModel("prior " + shapeToString(prior.shape) + " must have shape (1, 2, priors * 4)");
  p->priors = prior.shape[2] / 4;
  if (loc.rank() < 1 || conf.rank() < 1 || loc.shape[0] != conf.shape[0])
    return Status::invalidModel("loc " + shapeToString(loc.shape) + " and conf " + shapeToString(conf.shape) +
                                " must share their first (image) dimension");
  p->images = loc.shape[0];
  const int64_t locClasses = p->shareLocation ? 1 : p->classes;
  if (p->images > 0 && (loc.elements() / p->images != p->priors * locClasses * 4 ||
                        conf.elements() / p->images != p->priors * p->classes))
    return Status::invalidModel("loc " + shapeToString(loc.shape) + " and conf " + shapeToString(conf.shape) + " do not hold " +
                                std::to_string(p->priors) + " priors' offsets and " + std::to_string(p->classes) +
                                " class scores per image");
  return Status::ok();
}

struct Box {
  float xmin, ymin, xmax, ymax;
};

float boxSize(const Box& b) { return b.xmax < b.xmin || b.ymax < b.ymin ? 0.f : (b.xmax - b.xmin) * (b.ymax - b.ymin); }

// Caffe's JaccardOverlap for normalized boxes.
float overlap(const Box& a, const Box& b) {
  if (b.xmin > a.xmax || b.xmax < a.xmin || b.ymin > a.ymax || b.ymax < a.ymin) return 0.f;
  const float w = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
  const float h = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
  if (!(w > 0 && h > 0)) return 0.f;
  const float inter = w * h;
  return inter / (boxSize(a) + boxSize(b) - inter);
}

Box decode(const DetectionParams& p, const Box& prior, const float* var, const Box& d) {
  const float v0 = p.varianceInTarget ? 1.f : var[0], v1 = p.varianceInTarget ? 1.f : var[1];
  const float v2 = p.varianceInTarget ? 1.f : var[2], v3 = p.varianceInTarget ? 1.f : var[3];
  if (p.code == DetectionParams::Corner)
    return {prior.xmin + v0 * d.xmin, prior.ymin + v1 * d.ymin, prior.xmax + v2 * d.xmax, prior.ymax + v3 * d.ymax};
  const float pw = prior.xmax - prior.xmin, ph = prior.ymax - prior.ymin;
  if (p.code == DetectionParams::CornerSize)  // corner offsets in units of the prior's size
    return {prior.xmin + v0 * d.xmin * pw, prior.ymin + v1 * d.ymin * ph, prior.xmax + v2 * d.xmax * pw,
            prior.ymax + v3 * d.ymax * ph};
  const float cx = v0 * d.xmin * pw + (prior.xmin + prior.xmax) / 2.f;
  const float cy = v1 * d.ymin * ph + (prior.ymin + prior.ymax) / 2.f;
  const float w = std::exp(v2 * d.xmax) * pw, h = std::exp(v3 * d.ymax) * ph;
  return {cx - w / 2.f, cy - h / 2.f, cx + w / 2.f, cy + h / 2.f};
}

std::vector<float> loadFloats(const TensorView& v) {
  std::vector<float> out(static_cast<size_t>(v.elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(loadAsDouble(v.dtype, v.data, static_cast<int64_t>(i)));
  return out;
}

// Caffe's ApplyNMSFast: indices of the kept boxes, best first. Its work grows with how many boxes
// the values keep (up to priors^2 overlaps), so the run's time limit is looked at as it goes;
// past it, *stopped is set and the result is partial.
std::vector<int64_t> nmsFast(const DetectionParams& p, const std::vector<Box>& boxes, const float* scores, int64_t stride,
                             int64_t* work, bool* stopped) {
  std::vector<std::pair<float, int64_t>> order;
  for (int64_t i = 0; i < p.priors; ++i)
    if (scores[i * stride] > p.confidence) order.push_back({scores[i * stride], i});
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (p.topK > -1 && p.topK < static_cast<int64_t>(order.size())) order.resize(static_cast<size_t>(p.topK));
  std::vector<int64_t> kept;
  float threshold = p.nmsThreshold;
  for (const auto& [score, i] : order) {
    *work += static_cast<int64_t>(kept.size()) + 1;
    if (*work > (int64_t{1} << 22)) {
      *work = 0;
      if ((*stopped = RunDeadline::passed())) break;
    }
    bool keep = true;
    for (int64_t k : kept)
      if (!(keep = overlap(boxes[i], boxes[k]) <= threshold)) break;
    if (!keep) continue;
    kept.push_back(i);
    if (p.eta < 1 && threshold > 0.5f) threshold *= p.eta;
  }
  return kept;
}

using Rows = std::vector<std::array<float, 7>>;

Status detect(const Node& node, const DetectionParams& p, const TensorViews& in, Rows* out) {
  const std::vector<float> loc = loadFloats(in[0]), conf = loadFloats(in[1]), prior = loadFloats(in[2]);
  const int64_t locClasses = p.shareLocation ? 1 : p.classes;
  Rows& rows = *out;
  int64_t work = 0;
  bool stopped = false;
  std::vector<std::vector<Box>> boxes(static_cast<size_t>(locClasses), std::vector<Box>(static_cast<size_t>(p.priors)));
  for (int64_t n = 0; n < p.images; ++n) {
    for (int64_t c = 0; c < locClasses; ++c)
      for (int64_t i = 0; i < p.priors; ++i) {
        const float* d = loc.data() + ((n * p.priors + i) * locClasses + c) * 4;
        const float* b = prior.data() + i * 4;
        boxes[c][i] = decode(p, {b[0], b[1], b[2], b[3]}, prior.data() + (p.priors + i) * 4, {d[0], d[1], d[2], d[3]});
      }
    const float* scores = conf.data() + n * p.priors * p.classes;
    // (score, label, prior) of every kept box, by label then NMS order.
    std::vector<std::array<float, 3>> found;
    for (int64_t c = 0; c < p.classes; ++c) {
      if (c == p.background) continue;
      const std::vector<Box>& bs = boxes[p.shareLocation ? 0 : c];
      for (int64_t i : nmsFast(p, bs, scores + c, p.classes, &work, &stopped))
        found.push_back({scores[i * p.classes + c], static_cast<float>(c), static_cast<float>(i)});
    }
    if (p.keepTopK > -1 && static_cast<int64_t>(found.size()) > p.keepTopK) {
      std::vector<std::array<float, 3>> best = found;
      std::stable_sort(best.begin(), best.end(), [](const auto& a, const auto& b) { return a[0] > b[0]; });
      best.resize(static_cast<size_t>(p.keepTopK));
      std::stable_sort(best.begin(), best.end(), [](const auto& a, const auto& b) { return a[1] < b[1]; });
      found = best;
    }
    if (stopped) return RunDeadline::error(node.describe());
    for (const auto& [score, label, i] : found) {
      const Box& b = boxes[p.shareLocation ? 0 : static_cast<int64_t>(label)][static_cast<int64_t>(i)];
      rows.push_back({static_cast<float>(n), label, score, b.xmin, b.ymin, b.xmax, b.ymax});
    }
  }
  if (rows.empty())
    for (int64_t n = 0; n < p.images; ++n) rows.push_back({static_cast<float>(n), -1, -1, -1, -1, -1, -1});
  return Status::ok();
}

Status detectionShape(const Node& node, const TensorViews& in, TensorViews& out) {
  DetectionParams p;
  OSPREY_RETURN_IF_ERROR(setupDetection(node, in, &p));
  Rows rows;
  OSPREY_RETURN_IF_ERROR(detect(node, p, in, &rows));
  out[0].dtype = DataType::Float32;
  out[0].shape = {1, 1, static_cast<int64_t>(rows.size()), 7};
  return Status::ok();
}

Status detectionKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  DetectionParams p;
  OSPREY_RETURN_IF_ERROR(setupDetection(node, in, &p));
  Rows rows;
  OSPREY_RETURN_IF_ERROR(detect(node, p, in, &rows));
  if (static_cast<int64_t>(rows.size() * 7) != out[0].elements())
    return Status::internal("DetectionOutput found a different number of boxes than at shape time");
  float* y = out[0].as<float>();
  for (const auto& r : rows) y = std::copy(r.begin(), r.end(), y);
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_DetectionOutput = {
    OpType::DetectionOutput, "DetectionOutput", 3, 3, 1, 1, detectionShape, detectionKernel, nullptr, 0, true};

}  // namespace osprey
