// RoiAlign (opset 22) and NonMaxSuppression (opset 11).
//
// RoiAlign averages (or takes the maximum of) bilinear samples on a regular grid inside each
// bin of each region, as the ONNX reference and ONNX Runtime do: roi corners are scaled by
// spatial_scale and shifted by -0.5 under half_pixel; under output_half_pixel a region is at
// least 1x1; sampling_ratio 0 means ceil(roi size / output size) samples per bin; a sample
// more than one pixel outside the map reads 0. In max mode each sample contributes the largest
// of its four weighted corner values (the reference's definition).
//
// NonMaxSuppression keeps, per batch and class, boxes in descending score order (ties: lower
// index first) that do not overlap an already kept box with IoU > iou_threshold, stopping at
// max_output_boxes_per_class; with score_threshold only boxes scoring above it are candidates.
// Its output size depends on the values, so the op is marked data dependent.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/run_limits.h"
#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// ---- RoiAlign: X (N, C, H, W), rois (R, 4) as [x1, y1, x2, y2], batch_indices (R) ----

struct RoiSetup {
  int64_t outH = 1, outW = 1, samplingRatio = 0;
  float spatialScale = 1.f;
  bool halfPixel = true, maxMode = false;
};

Status setupRoiAlign(const Node& node, const TensorViews& in, RoiSetup* s) {
  const TensorView &x = in[0], &rois = in[1], &batch = in[2];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "X"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 1));
  if (x.rank() != 4) return Status::invalidModel("X " + shapeToString(x.shape) + " must be 4-D (N, C, H, W)");
  if (rois.rank() != 2 || rois.shape[1] != 4)
    return Status::invalidModel("rois " + shapeToString(rois.shape) + " must have shape (num_rois, 4)");
  if ((batch.dtype != DataType::Int64 && batch.dtype != DataType::Int32) || batch.shape != Shape{rois.shape[0]})
    return Status::invalidModel("batch_indices must be int64 of shape [" + std::to_string(rois.shape[0]) + "], got " +
                                dataTypeName(batch.dtype) + " " + shapeToString(batch.shape));
  s->outH = node.getInt("output_height", 1);
  s->outW = node.getInt("output_width", 1);
  s->samplingRatio = node.getInt("sampling_ratio", 0);
  s->spatialScale = node.getFloat("spatial_scale", 1.f);
  if (s->outH < 1 || s->outW < 1 || s->samplingRatio < 0)
    return Status::invalidModel("output_height and output_width must be positive and sampling_ratio not negative");
  const std::string mode = node.getString("mode", "avg");
  if (mode != "avg" && mode != "max") return Status::invalidModel("mode '" + mode + "' is not avg or max");
  s->maxMode = mode == "max";
  const std::string ct = node.getString("coordinate_transformation_mode", "half_pixel");
  if (ct != "half_pixel" && ct != "output_half_pixel")
    return Status::invalidModel("coordinate_transformation_mode '" + ct + "' is not half_pixel or output_half_pixel");
  s->halfPixel = ct == "half_pixel";
  return Status::ok();
}

Status roiAlignShape(const Node& node, const TensorViews& in, TensorViews& out) {
  RoiSetup s;
  OSPREY_RETURN_IF_ERROR(setupRoiAlign(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = {in[1].shape[0], in[0].shape[1], s.outH, s.outW};
  return Status::ok();
}

constexpr double kMaxSamplesPerRoi = 1 << 24;

struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

// The bilinear taps of point (y, x) in an h x w map.
Sample bilinearSample(double y, double x, int64_t h, int64_t w) {
  Sample s;
  // Written to be false for NaN too: a NaN coordinate reads nothing instead of an undefined cast.
  if (!(y >= -1.0 && y <= static_cast<double>(h) && x >= -1.0 && x <= static_cast<double>(w))) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<double>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<double>(x0);
  } else {
    x1 = x0 + 1;
  }
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * w + x0, s.pos[1] = y0 * w + x1, s.pos[2] = y1 * w + x0, s.pos[3] = y1 * w + x1;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

Status roiAlignKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  RoiSetup s;
  OSPREY_RETURN_IF_ERROR(setupRoiAlign(node, in, &s));
  const TensorView& x = in[0];
  const int64_t n = x.shape[0], channels = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t numRois = in[1].shape[0];
  std::vector<int64_t> batchIndex(static_cast<size_t>(numRois));
  for (int64_t r = 0; r < numRois; ++r) {
    if (!loadAsInt64(in[2].dtype, in[2].data, r, &batchIndex[r]))
      return Status::invalidModel(dtypeError(in[2], "batch_indices"));
    if (batchIndex[r] < 0 || batchIndex[r] >= n)
      return Status::invalidArgument("batch_indices[" + std::to_string(r) + "] = " + std::to_string(batchIndex[r]) +
                                     " is outside [0, " + std::to_string(n) + ")");
  }
  const RunDeadline::Watch deadline = RunDeadline::watch();
  std::atomic<bool> stopped{false};
  bool ok = dispatchFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xs = x.as<const T>();
    const T* rois = in[1].as<const T>();
    T* ys = out[0].as<T>();
    const int64_t bins = s.outH * s.outW;
    parallelFor(pool, numRois, [&](int64_t r0, int64_t r1) {
      // One row of a bin's sampling grid at a time, each row read by every channel: memory stays
      // O(grid width + channels) however large the data make the grid.
      std::vector<Sample> row;
      std::vector<double> acc(static_cast<size_t>(channels));
      int64_t readsSinceCheck = 0;
      for (int64_t r = r0; r < r1; ++r) {
        const double offset = s.halfPixel ? 0.5 : 0.0, scale = s.spatialScale;
        const double x0 = static_cast<double>(C(rois[r * 4 + 0])) * scale - offset;
        const double y0 = static_cast<double>(C(rois[r * 4 + 1])) * scale - offset;
        const double x1 = static_cast<double>(C(rois[r * 4 + 2])) * scale - offset;
        const double y1 = static_cast<double>(C(rois[r * 4 + 3])) * scale - offset;
        double roiW = x1 - x0, roiH = y1 - y0;
        if (!s.halfPixel) roiW = std::max(roiW, 1.0), roiH = std::max(roiH, 1.0);
        const double binH = roiH / static_cast<double>(s.outH), binW = roiW / static_cast<double>(s.outW);
        const double gh = s.samplingRatio > 0 ? static_cast<double>(s.samplingRatio) : std::ceil(binH);
        const double gw = s.samplingRatio > 0 ? static_cast<double>(s.samplingRatio) : std::ceil(binW);
        // A region of non-finite or absurd size would ask for unbounded samples, and an empty map
        // has no pixel to read: such a bin reads nothing (0) instead.
        const bool sane = gh * gw * static_cast<double>(bins) <= kMaxSamplesPerRoi && h > 0 && w > 0;
        const int64_t gridH = sane && gh > 0 ? static_cast<int64_t>(gh) : 0;
        const int64_t gridW = sane && gw > 0 ? static_cast<int64_t>(gw) : 0;
        const double count = static_cast<double>(std::max<int64_t>(gridH * gridW, 1));
        const T* planes = xs + batchIndex[r] * channels * h * w;
        for (int64_t b = 0; b < bins; ++b) {
          const int64_t ph = b / s.outW, pw = b % s.outW;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t iy = 0; iy < gridH; ++iy) {
            // The work grows with the box values, not the shapes: the run's time limit is
            // looked at every million reads or so.
            readsSinceCheck += gridW * channels;
            if (readsSinceCheck > (int64_t{1} << 20)) {
              readsSinceCheck = 0;
              if (stopped.load(std::memory_order_relaxed) || deadline.passed()) {
                stopped = true;
                return;
              }
            }
            const double yy = y0 + static_cast<double>(ph) * binH +
                              (static_cast<double>(iy) + 0.5) * binH / static_cast<double>(gridH);
            row.clear();
            for (int64_t ix = 0; ix < gridW; ++ix) {
              const double xx = x0 + static_cast<double>(pw) * binW +
                                (static_cast<double>(ix) + 0.5) * binW / static_cast<double>(gridW);
              row.push_back(bilinearSample(yy, xx, h, w));
            }
            for (int64_t c = 0; c < channels; ++c) {
              const T* plane = planes + c * h * w;
              double v = acc[c];
              for (int64_t ix = 0; ix < gridW; ++ix) {
                const Sample& sm = row[ix];
                if (s.maxMode) {
                  double best = sm.w[0] * static_cast<double>(C(plane[sm.pos[0]]));
                  for (int t = 1; t < 4; ++t)
                    best = std::max(best, sm.w[t] * static_cast<double>(C(plane[sm.pos[t]])));
                  v = iy == 0 && ix == 0 ? best : std::max(v, best);
                } else {
                  for (int t = 0; t < 4; ++t) v += sm.w[t] * static_cast<double>(C(plane[sm.pos[t]]));
                }
              }
              acc[c] = v;
            }
          }
          for (int64_t c = 0; c < channels; ++c)
            ys[(r * channels + c) * bins + b] = T(C(s.maxMode ? acc[c] : acc[c] / count));
        }
      }
    });
  });
  if (stopped) return RunDeadline::error(node.describe());
  return ok ? Status::ok() : Status::unsupported(dtypeError(x, "X"));
}

// ---- NonMaxSuppression: boxes (B, N, 4), scores (B, classes, N), then optional scalars ----

struct NmsParams {
  int64_t maxPerClass = 0;
  double iouThreshold = 0, scoreThreshold = 0;
  bool hasScoreThreshold = false, centerBox = false;
};

// The one value of optional input i, if present and known: as int64 exactly for the box
// count (torchvision exports INT64_MAX, which a double would turn into 2^63), as double else.
template <class V>
Status readScalar(const TensorViews& in, size_t i, const char* what, V* v, bool* present) {
  *present = in.size() > i && in[i].present;
  if (!*present) return Status::ok();
  if (in[i].elements() != 1)
    return Status::invalidModel(std::string(what) + " " + shapeToString(in[i].shape) + " must hold one value");
  if (!in[i].data) return Status::ok();
  if constexpr (std::is_same_v<V, int64_t>) {
    if (!loadAsInt64(in[i].dtype, in[i].data, 0, v)) return Status::invalidModel(dtypeError(in[i], what));
  } else {
    *v = loadAsDouble(in[i].dtype, in[i].data, 0);
  }
  return Status::ok();
}

Status setupNms(const Node& node, const TensorViews& in, NmsParams* p) {
  const TensorView &boxes = in[0], &scores = in[1];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(boxes, "boxes"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 1));
  if (boxes.rank() != 3 || boxes.shape[2] != 4)
    return Status::invalidModel("boxes " + shapeToString(boxes.shape) + " must have shape (batch, boxes, 4)");
  if (scores.rank() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
    return Status::invalidModel("scores " + shapeToString(scores.shape) + " must have shape (" +
                                std::to_string(boxes.shape[0]) + ", classes, " + std::to_string(boxes.shape[1]) + ")");
  const int64_t center = node.getInt("center_point_box", 0);
  if (center != 0 && center != 1)
    return Status::invalidModel("center_point_box must be 0 or 1, got " + std::to_string(center));
  p->centerBox = center == 1;
  bool present;
  int64_t maxOut = 0;
  OSPREY_RETURN_IF_ERROR(readScalar(in, 2, "max_output_boxes_per_class", &maxOut, &present));
  p->maxPerClass = std::max<int64_t>(0, maxOut);  // negative keeps nothing, as 0 does in ONNX Runtime
  OSPREY_RETURN_IF_ERROR(readScalar(in, 3, "iou_threshold", &p->iouThreshold, &present));
  OSPREY_RETURN_IF_ERROR(readScalar(in, 4, "score_threshold", &p->scoreThreshold, &p->hasScoreThreshold));
  return Status::ok();
}

struct Box {
  double yMin, xMin, yMax, xMax;
};

Box boxAt(const std::vector<double>& b, int64_t i, bool center) {
  const double* v = b.data() + i * 4;
  if (center) return {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
  return {std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

bool overlapsTooMuch(const Box& a, const Box& b, double threshold) {
  const double ix0 = std::max(a.xMin, b.xMin), ix1 = std::min(a.xMax, b.xMax);
  const double iy0 = std::max(a.yMin, b.yMin), iy1 = std::min(a.yMax, b.yMax);
  if (ix1 <= ix0 || iy1 <= iy0) return false;
  const double inter = (ix1 - ix0) * (iy1 - iy0);
  const double areaA = (a.xMax - a.xMin) * (a.yMax - a.yMin), areaB = (b.xMax - b.xMin) * (b.yMax - b.yMin);
  const double uni = areaA + areaB - inter;
  if (inter <= 0 || areaA <= 0 || areaB <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

// The selected (batch, class, box) triples in output order.
std::vector<int64_t> runNms(const NmsParams& p, const TensorViews& in) {
  const int64_t batches = in[0].shape[0], numBoxes = in[0].shape[1], classes = in[1].shape[1];
  std::vector<int64_t> selected;
  std::vector<double> boxes(static_cast<size_t>(numBoxes * 4));
  std::vector<std::pair<double, int64_t>> candidates;
  std::vector<Box> kept;
  for (int64_t b = 0; b < batches; ++b) {
    for (size_t i = 0; i < boxes.size(); ++i)
      boxes[i] = loadAsDouble(in[0].dtype, in[0].data, b * numBoxes * 4 + static_cast<int64_t>(i));
    for (int64_t c = 0; c < classes; ++c) {
      candidates.clear();
      for (int64_t i = 0; i < numBoxes; ++i) {
        const double score = loadAsDouble(in[1].dtype, in[1].data, (b * classes + c) * numBoxes + i);
        if (!p.hasScoreThreshold || score > p.scoreThreshold) candidates.push_back({score, i});
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const auto& x, const auto& y) { return x.first > y.first; });
      kept.clear();
      for (const auto& cand : candidates) {
        if (static_cast<int64_t>(kept.size()) >= p.maxPerClass) break;
        const Box box = boxAt(boxes, cand.second, p.centerBox);
        bool suppressed = false;
        for (const Box& k : kept) suppressed = suppressed || overlapsTooMuch(box, k, p.iouThreshold);
        if (suppressed) continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, cand.second});
      }
    }
  }
  return selected;
}

Status nmsShape(const Node& node, const TensorViews& in, TensorViews& out) {
  NmsParams p;
  OSPREY_RETURN_IF_ERROR(setupNms(node, in, &p));
  out[0].dtype = DataType::Int64;
  out[0].shape = {static_cast<int64_t>(runNms(p, in).size() / 3), 3};
  return Status::ok();
}

Status nmsKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  NmsParams p;
  OSPREY_RETURN_IF_ERROR(setupNms(node, in, &p));
  const std::vector<int64_t> selected = runNms(p, in);
  if (static_cast<int64_t>(selected.size()) != out[0].elements())
    return Status::internal("NonMaxSuppression selected a different number of boxes than at shape time");
  std::copy(selected.begin(), selected.end(), out[0].as<int64_t>());
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_RoiAlign = {OpType::RoiAlign, "RoiAlign", 3, 3, 1, 1, roiAlignShape, roiAlignKernel, nullptr, 0, false};
const OpDef kOpDef_NonMaxSuppression = {
    OpType::NonMaxSuppression, "NonMaxSuppression", 2, 5, 1, 1, nmsShape, nmsKernel, nullptr, 0, true};

}  // namespace osprey
