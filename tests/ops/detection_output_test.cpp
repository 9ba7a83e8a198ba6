// DetectionOutput (Caffe SSD's head) on random data: what every output must satisfy by Caffe's
// definition, checked row by row against the inputs (python/tests/test_caffe_models.py compares
// whole outputs with a numpy implementation of Caffe's code), the no-detection row and bad shapes.
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

// Priors of one row of `count` cells, their variances after them: (1, 2, count * 4).
Tensor priors(int64_t count, uint32_t seed) {
  Tensor p(DataType::Float32, {1, 2, count * 4});
  const Tensor jitter = randomTensor(DataType::Float32, {count * 4}, seed, -0.02, 0.02);
  for (int64_t i = 0; i < count; ++i) {
    const float cx = (static_cast<float>(i) + 0.5f) / static_cast<float>(count);
    const float box[4] = {cx - 0.1f, 0.4f, cx + 0.1f, 0.6f}, var[4] = {0.1f, 0.1f, 0.2f, 0.2f};
    for (int k = 0; k < 4; ++k) {
      p.data<float>()[i * 4 + k] = box[k] + jitter.data<float>()[i * 4 + k];
      p.data<float>()[(count + i) * 4 + k] = var[k];
    }
  }
  return p;
}

Node detectionNode(int64_t classes, bool share, float nms, int64_t keepTopK, float confidence) {
  Node node;
  node.type = OpType::DetectionOutput;
  node.setInt("num_classes", classes);
  node.setInt("share_location", share ? 1 : 0);
  node.setString("code_type", "CENTER_SIZE");
  node.setFloat("nms_threshold", nms);
  node.setInt("keep_top_k", keepTopK);
  node.setFloat("confidence_threshold", confidence);
  return node;
}

double iou(const float* a, const float* b) {
  const double w = std::min(a[2], b[2]) - std::max(a[0], b[0]), h = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0;
  const double inter = w * h;
  return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter);
}

TEST(DetectionOutputOp, RowsAreDecodedSuppressedAndOrderedAsCaffe) {
  const int64_t images = 3, count = 29, classes = 4;
  for (bool share : {true, false}) {
    SCOPED_TRACE(share ? "shared locations" : "per-class locations");
    const int64_t locClasses = share ? 1 : classes, keep = 11;
    const Tensor loc = randomTensor(DataType::Float32, {images, count * locClasses * 4}, 3, -1, 1);
    const Tensor conf = randomTensor(DataType::Float32, {images, count * classes}, 4, 0, 1);
    const Tensor prior = priors(count, 5);
    const float nms = 0.35f, confidence = 0.3f;
    std::vector<Tensor> out;
    Status st = runOp(detectionNode(classes, share, nms, keep, confidence), {in(loc), in(conf), in(prior)}, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_EQ(out[0].shape().size(), 4u);
    const int64_t rows = out[0].shape()[2];
    const float* y = out[0].data<float>();
    std::vector<int64_t> perImage(images, 0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = y + r * 7;
      const int64_t n = static_cast<int64_t>(row[0]), label = static_cast<int64_t>(row[1]);
      ASSERT_TRUE(n >= 0 && n < images && label >= 1 && label < classes) << "row " << r;  // label 0: background
      ++perImage[n];
      if (r > 0) {  // by image, label, then score
        const float* prev = row - 7;
        EXPECT_TRUE(prev[0] < row[0] || (prev[0] == row[0] && (prev[1] < row[1] || (prev[1] == row[1] && prev[2] >= row[2]))));
      }
      EXPECT_GT(row[2], confidence);
      // The row is some prior's box decoded with CENTER_SIZE and the variances, at that prior's score.
      bool matched = false;
      for (int64_t i = 0; i < count && !matched; ++i) {
        const float* d = loc.data<float>() + ((n * count + i) * locClasses + (share ? 0 : label)) * 4;
        const float* p = prior.data<float>() + i * 4;
        const double pw = p[2] - p[0], ph = p[3] - p[1];
        const double cx = 0.1 * d[0] * pw + (p[0] + p[2]) / 2, cy = 0.1 * d[1] * ph + (p[1] + p[3]) / 2;
        const double w = std::exp(0.2 * d[2]) * pw, h = std::exp(0.2 * d[3]) * ph;
        const double want[4] = {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
        matched = conf.data<float>()[(n * count + i) * classes + label] == row[2];
        for (int k = 0; k < 4; ++k) matched = matched && std::fabs(want[k] - row[3 + k]) < 1e-5;
      }
      EXPECT_TRUE(matched) << "row " << r << " is no prior's decoded box at its score";
      for (int64_t q = 0; q < r; ++q)  // kept boxes of one image and class overlap at most nms_threshold
        if (y[q * 7] == row[0] && y[q * 7 + 1] == row[1]) {
          EXPECT_LE(iou(y + q * 7 + 3, row + 3), nms + 1e-6);
        }
    }
    for (int64_t n = 0; n < images; ++n) EXPECT_LE(perImage[n], keep);
    EXPECT_EQ(*std::max_element(perImage.begin(), perImage.end()), keep);  // random data keep more than 11
    // Without keep_top_k more survive.
    std::vector<Tensor> all;
    st = runOp(detectionNode(classes, share, nms, -1, confidence), {in(loc), in(conf), in(prior)}, 1, &all);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_GT(all[0].shape()[2], rows);
  }
}

TEST(DetectionOutputOp, NothingFoundGivesOneRowOfMinusOnesPerImage) {
  const Tensor loc = randomTensor(DataType::Float32, {2, 7 * 4}, 6), conf = randomTensor(DataType::Float32, {2, 7 * 3}, 7, 0, 1);
  std::vector<Tensor> out;
  Status st = runOp(detectionNode(3, true, 0.45f, -1, 1.5f), {in(loc), in(conf), in(priors(7, 8))}, 1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 2, 7}));
  for (int64_t n = 0; n < 2; ++n)
    for (int k = 0; k < 7; ++k) EXPECT_EQ(out[0].data<float>()[n * 7 + k], k == 0 ? static_cast<float>(n) : -1.f);
}

TEST(DetectionOutputOp, ShapesThatDoNotFitAreErrors) {
  const Tensor conf = randomTensor(DataType::Float32, {1, 7 * 3}, 9, 0, 1);
  std::vector<Tensor> out;
  // 6 priors' offsets for 7 priors.
  Status st = runOp(detectionNode(3, true, 0.45f, -1, 0.1f),
                    {in(randomTensor(DataType::Float32, {1, 6 * 4}, 10)), in(conf), in(priors(7, 11))}, 1, &out);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("priors"), std::string::npos) << st.message();
  // Priors without their variances.
  st = runOp(detectionNode(3, true, 0.45f, -1, 0.1f),
             {in(randomTensor(DataType::Float32, {1, 7 * 4}, 12)), in(conf), in(randomTensor(DataType::Float32, {1, 1, 28}, 13))},
             1, &out);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("(1, 2, priors * 4)"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace osprey::test
