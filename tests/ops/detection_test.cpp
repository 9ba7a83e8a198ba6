// RoiAlign and NonMaxSuppression against naive implementations written here.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "converter/onnx/onnx_import.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

// Bilinear value of a plane at (y, x) with RoiAlign's edge rules; in max mode the largest
// weighted corner instead of their sum.
double roiSample(const Tensor& x, int64_t plane, int64_t h, int64_t w, double y, double xx, bool maxMode) {
  if (y < -1 || y > h || xx < -1 || xx > w) return 0;
  y = std::min(std::max(y, 0.0), h - 1.0);
  xx = std::min(std::max(xx, 0.0), w - 1.0);
  const int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(xx);
  const int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  const double ly = y - y0, lx = xx - x0;
  auto v = [&](int64_t r, int64_t c) { return at(x, (plane * h + r) * w + c); };
  const double t[4] = {(1 - ly) * (1 - lx) * v(y0, x0), (1 - ly) * lx * v(y0, x1), ly * (1 - lx) * v(y1, x0),
                       ly * lx * v(y1, x1)};
  return maxMode ? std::max(std::max(t[0], t[1]), std::max(t[2], t[3])) : t[0] + t[1] + t[2] + t[3];
}

TEST(RoiAlignOp, AvgMaxAndCoordinateModes) {
  Tensor x = randomTensor(DataType::Float32, {2, 3, 9, 11}, 1, -1, 3);
  Tensor rois = makeTensor<float>({4, 4}, {0, 0, 9, 9, 2.5f, 1.2f, 7.3f, 8.8f, 4, 4, 4.5f, 4.2f, -2, 3, 14, 12});
  Tensor batch = makeTensor<int64_t>({4}, {0, 1, 1, 0});
  for (std::string mode : {"avg", "max"})
    for (std::string ct : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 2}) {
        SCOPED_TRACE(mode + " " + ct + " ratio " + std::to_string(ratio));
        const int64_t oh = 3, ow = 4;
        const double scale = 0.75;
        Node node;
        node.type = OpType::RoiAlign;
        node.setString("mode", mode);
        node.setString("coordinate_transformation_mode", ct);
        node.setInt("output_height", oh);
        node.setInt("output_width", ow);
        node.setInt("sampling_ratio", ratio);
        node.setFloat("spatial_scale", static_cast<float>(scale));
        std::vector<Tensor> out;
        Status st = runOp(node, {in(x), in(rois), in(batch)}, 1, &out);
        ASSERT_TRUE(st.isOk()) << st.message();
        Tensor expected(DataType::Float32, {4, 3, oh, ow});
        for (int64_t r = 0; r < 4; ++r) {
          const double off = ct == "half_pixel" ? 0.5 : 0;
          const double x0 = at(rois, r * 4) * scale - off, y0 = at(rois, r * 4 + 1) * scale - off;
          double rw = at(rois, r * 4 + 2) * scale - off - x0, rh = at(rois, r * 4 + 3) * scale - off - y0;
          if (ct != "half_pixel") rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
          const int64_t gh = ratio ? ratio : static_cast<int64_t>(std::ceil(rh / oh));
          const int64_t gw = ratio ? ratio : static_cast<int64_t>(std::ceil(rw / ow));
          for (int64_t c = 0; c < 3; ++c)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                double acc = 0;
                bool first = true;
                for (int64_t a = 0; a < gh; ++a)
                  for (int64_t b = 0; b < gw; ++b) {
                    const double yy = y0 + (i + (a + 0.5) / gh) * rh / oh, xx = x0 + (j + (b + 0.5) / gw) * rw / ow;
                    const double s = roiSample(x, at(batch, r) * 3 + c, 9, 11, yy, xx, mode == "max");
                    acc = mode == "max" ? (first ? s : std::max(acc, s)) : acc + s;
                    first = false;
                  }
                if (mode == "avg") acc /= std::max<int64_t>(gh * gw, 1);
                expected.data<float>()[((r * 3 + c) * oh + i) * ow + j] = static_cast<float>(acc);
              }
        }
        expectNear(out[0], expected, 1e-5, 1e-4);
      }
}

// Before opset 16 RoiAlign had no coordinate_transformation_mode and did not shift by half a
// pixel; the importer spells that out.
TEST(RoiAlignOp, ImportsOpset10AsOutputHalfPixel) {
  for (int64_t opset : {10, 16}) {
    onnx::ModelProto m;
    m.irVersion = 8;
    m.opsets = {{"", opset}};
    for (const char* name : {"X", "rois", "batch_indices"}) {
      onnx::ValueInfo v;
      v.name = name, v.hasType = true, v.elemType = std::string(name) == "batch_indices" ? 7 : 1;
      m.graph.inputs.push_back(v);
    }
    onnx::ValueInfo y;
    y.name = "Y", y.hasType = true, y.elemType = 1;
    m.graph.outputs.push_back(y);
    onnx::NodeProto n;
    n.opType = "RoiAlign";
    n.inputs = {"X", "rois", "batch_indices"};
    n.outputs = {"Y"};
    m.graph.nodes.push_back(n);
    Model model;
    int nodes = 0;
    Status st = onnx::importModel(&m, &model, &nodes);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_EQ(model.graph.nodes.size(), 1u);
    EXPECT_EQ(model.graph.nodes[0].getString("coordinate_transformation_mode", "half_pixel"),
              opset < 16 ? "output_half_pixel" : "half_pixel");
  }
}

double iou(const std::vector<double>& a, const std::vector<double>& b) {
  const double ix = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
  const double iy = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
  const double inter = ix * iy;
  const double ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return inter > 0 && ua > 0 ? inter / ua : 0;
}

TEST(NonMaxSuppressionOp, MatchesGreedyNaive) {
  const int64_t B = 2, N = 13, C = 3;
  Tensor boxes = randomTensor(DataType::Float32, {B, N, 4}, 10, 0, 10);
  Tensor scores = randomTensor(DataType::Float32, {B, C, N}, 11, 0, 1);
  for (bool center : {false, true})
    for (double scoreThreshold : {-1.0, 0.4}) {
      SCOPED_TRACE(std::string(center ? "center" : "corner") + " score " + std::to_string(scoreThreshold));
      const int64_t maxOut = 4;
      const float iouThreshold = 0.2f;
      Node node;
      node.type = OpType::NonMaxSuppression;
      node.setInt("center_point_box", center);
      std::vector<OpInput> ins{in(boxes), in(scores), in(makeTensor<int64_t>({1}, {maxOut})),
                               in(makeTensor<float>({1}, {iouThreshold}))};
      if (scoreThreshold >= 0) ins.push_back(in(makeTensor<float>({1}, {static_cast<float>(scoreThreshold)})));
      std::vector<Tensor> out;
      Status st = runOp(node, ins, 1, &out);
      ASSERT_TRUE(st.isOk()) << st.message();
      std::vector<int64_t> expected;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c) {
          std::vector<int64_t> order;
          for (int64_t i = 0; i < N; ++i)
            if (scoreThreshold < 0 || at(scores, (b * C + c) * N + i) > static_cast<float>(scoreThreshold)) order.push_back(i);
          std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
            return at(scores, (b * C + c) * N + p) > at(scores, (b * C + c) * N + q);
          });
          std::vector<std::vector<double>> kept;
          for (int64_t i : order) {
            if (static_cast<int64_t>(kept.size()) == maxOut) break;
            std::vector<double> raw(4);
            for (int k = 0; k < 4; ++k) raw[k] = at(boxes, (b * N + i) * 4 + k);
            std::vector<double> box = center ? std::vector<double>{raw[0] - raw[2] / 2, raw[1] - raw[3] / 2,
                                                                   raw[0] + raw[2] / 2, raw[1] + raw[3] / 2}
                                             : std::vector<double>{std::min(raw[1], raw[3]), std::min(raw[0], raw[2]),
                                                                   std::max(raw[1], raw[3]), std::max(raw[0], raw[2])};
            bool suppressed = false;
            for (const auto& k : kept) suppressed = suppressed || iou(box, k) > iouThreshold;
            if (suppressed) continue;
            kept.push_back(box);
            expected.insert(expected.end(), {b, c, i});
          }
        }
      ASSERT_EQ(out[0].shape(), (Shape{static_cast<int64_t>(expected.size() / 3), 3}));
      for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(out[0].data<int64_t>()[i], expected[i]) << i;
    }
}

TEST(DetectionOps, Errors) {
  std::vector<Tensor> out;
  Node roi;
  roi.type = OpType::RoiAlign;
  Tensor x = randomTensor(DataType::Float32, {1, 2, 4, 4}, 20);
  EXPECT_FALSE(runOp(roi, {in(x), in(randomTensor(DataType::Float32, {2, 3}, 21)), in(makeTensor<int64_t>({2}, {0, 0}))}, 1,
                     &out)
                   .isOk());
  EXPECT_FALSE(runOp(roi, {in(x), in(randomTensor(DataType::Float32, {1, 4}, 22)), in(makeTensor<int64_t>({1}, {3}))}, 1,
                     &out)
                   .isOk());  // batch index out of range
  Node nms;
  nms.type = OpType::NonMaxSuppression;
  EXPECT_FALSE(runOp(nms, {in(randomTensor(DataType::Float32, {1, 5, 4}, 23)), in(randomTensor(DataType::Float32, {1, 2, 4}, 24))},
                     1, &out)
                   .isOk());
  nms.setInt("center_point_box", 2);
  EXPECT_FALSE(runOp(nms, {in(randomTensor(DataType::Float32, {1, 5, 4}, 25)), in(randomTensor(DataType::Float32, {1, 2, 5}, 26))},
                     1, &out)
                   .isOk());
}

}  // namespace
}  // namespace osprey::test
