// Post-training quantization (src/quantizer): calibration ranges, the graph rewrite (which ops
// become integer ops, where QuantizeLinear / DequantizeLinear go), and the quantized model's
// agreement with the float one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "ops/activation.h"
#include "quantizer/quantizer.h"

namespace osprey::test {
namespace {

double cosine(const Tensor& a, const Tensor& b) {
  double dot = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.elements(); ++i) {
    dot += at(a, i) * at(b, i);
    aa += at(a, i) * at(a, i);
    bb += at(b, i) * at(b, i);
  }
  return dot / std::sqrt(aa * bb);
}

// x [1, 8, 10, 10] -> Conv 3x3 (Relu) -> Conv 1x1 -> Add(with the first Conv) -> Relu ->
// GlobalAveragePool -> Flatten -> Gemm(transB) -> y [1, 5]
Model convNet() {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 10, 10});
  const int c1 = b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {12, 8, 3, 3}, 1, -0.3, 0.3)),
                                     b.weights(randomTensor(DataType::Float32, {12}, 2))});
  b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  FusedActivation relu;
  relu.kind = FusedActivation::Kind::Relu;
  relu.store(b.g.nodes.back());
  const int c2 = b.op(OpType::Conv, {c1, b.weights(randomTensor(DataType::Float32, {12, 12, 1, 1}, 3, -0.3, 0.3))});
  const int sum = b.op(OpType::Add, {c1, c2});
  const int r = b.op(OpType::Relu, {sum});
  const int pooled = b.op(OpType::GlobalAveragePool, {r});
  const int flat = b.op(OpType::Flatten, {pooled});
  const int y = b.op(OpType::Gemm, {flat, b.weights(randomTensor(DataType::Float32, {5, 12}, 4)),
                                    b.weights(randomTensor(DataType::Float32, {5}, 5))});
  b.g.nodes.back().setInt("transB", 1);
  b.output(y);
  Model m;
  m.graph = b.g;
  return m;
}

std::vector<FeedDict> samples(const std::string& name, const Shape& shape, int count) {
  std::vector<FeedDict> feeds;
  for (int i = 0; i < count; ++i) feeds.push_back({{name, randomTensor(DataType::Float32, shape, 100 + i, -2.0, 2.0)}});
  return feeds;
}

TEST(Quantizer, StaticQuantizationRunsTheConvNetOnIntegerOps) {
  const Model model = convNet();
  Model q;
  QuantizeReport report;
  QuantizeOptions options;
  options.perChannel = true;
  const std::vector<FeedDict> calibration = samples("x", {1, 8, 10, 10}, 8);
  ASSERT_TRUE(quantizeModel(model, calibration, options, &q, &report));
  EXPECT_EQ(countOps(q.graph, OpType::QLinearConv), 2);
  EXPECT_EQ(countOps(q.graph, OpType::QLinearAdd), 1);
  EXPECT_EQ(countOps(q.graph, OpType::QLinearGlobalAveragePool), 1);
  EXPECT_EQ(countOps(q.graph, OpType::QGemm), 1);  // float output: nothing after it runs on bytes
  EXPECT_EQ(countOps(q.graph, OpType::Relu), 0);    // absorbed into QLinearAdd's requantisation
  EXPECT_EQ(countOps(q.graph, OpType::QuantizeLinear), 1);  // the model input, once
  EXPECT_EQ(countOps(q.graph, OpType::Conv), 0);
  EXPECT_EQ(report.floatOps, 0);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_GT(report.outputs[0].cosine, 0.999);
  EXPECT_FALSE(report.tensors.empty());
  // On an input it was not calibrated on, and through the .osp-free path.
  const FeedDict fresh = samples("x", {1, 8, 10, 10}, 1)[0];
  const Tensor want = runGraph(model.graph, fresh), got = runGraph(q.graph, fresh);
  EXPECT_GT(cosine(want, got), 0.999);
}

TEST(Quantizer, ExcludedOpsStayFloatBehindQuantizeAndDequantize) {
  const Model model = convNet();
  Model q;
  QuantizeOptions options;
  options.exclude = {"Add"};
  ASSERT_TRUE(quantizeModel(model, samples("x", {1, 8, 10, 10}, 4), options, &q, nullptr));
  EXPECT_EQ(countOps(q.graph, OpType::QLinearAdd), 0);
  // Add reads both Convs in float; GlobalAveragePool then starts a byte region again.
  EXPECT_EQ(countOps(q.graph, OpType::DequantizeLinear), 2);
  EXPECT_EQ(countOps(q.graph, OpType::QLinearGlobalAveragePool), 0);  // its input is float now
  const FeedDict fresh = samples("x", {1, 8, 10, 10}, 1)[0];
  EXPECT_GT(cosine(runGraph(model.graph, fresh), runGraph(q.graph, fresh)), 0.999);
}

TEST(Quantizer, DynamicQuantizationTurnsMatMulsIntoDynamicQuantizeMatMul) {
  GraphBuilder b;
  const int x = b.input("x", {2, 7, 24});
  const int h = b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {24, 40}, 6))});
  const int y = b.op(OpType::MatMul, {h, b.weights(randomTensor(DataType::Float32, {40, 9}, 7))});
  b.output(y);
  Model model, q;
  model.graph = b.g;
  QuantizeOptions options;
  options.dynamic = true;
  ASSERT_TRUE(quantizeModel(model, {}, options, &q, nullptr));
  EXPECT_EQ(countOps(q.graph, OpType::DynamicQuantizeMatMul), 2);
  EXPECT_EQ(countOps(q.graph, OpType::MatMul), 0);
  const FeedDict fresh = samples("x", {2, 7, 24}, 1)[0];
  EXPECT_GT(cosine(runGraph(model.graph, fresh), runGraph(q.graph, fresh)), 0.999);
}

TEST(Quantizer, StaticQuantizationNeedsCalibration) {
  Model q;
  Status st = quantizeModel(convNet(), {}, QuantizeOptions(), &q, nullptr);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("calibration"), std::string::npos) << st.message();
}

TEST(Quantizer, PercentileAndEntropyClipOutliersThatMinMaxKeeps) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4000});
  b.output(b.op(OpType::Relu, {x}));
  Model model;
  model.graph = b.g;
  Tensor t = randomTensor(DataType::Float32, {1, 4000}, 9, -1.0, 1.0);
  t.data<float>()[17] = 100.f;  // one outlier
  const std::vector<FeedDict> feeds = {{{"x", t}}};
  std::map<std::string, TensorRange> minmax, percentile, entropy;
  QuantizeOptions options;
  ASSERT_TRUE(calibrateRanges(model, feeds, options, &minmax));
  options.method = CalibrationMethod::Percentile;
  options.percentile = 99.9;
  ASSERT_TRUE(calibrateRanges(model, feeds, options, &percentile));
  options.method = CalibrationMethod::Entropy;
  ASSERT_TRUE(calibrateRanges(model, feeds, options, &entropy));
  const std::string out = model.graph.tensors[model.graph.outputs[0]].name;
  EXPECT_FLOAT_EQ(minmax[out].hi, 100.f);
  EXPECT_LT(percentile[out].hi, 2.f);
  // The search starts at 256 of the 2048 bins (uint8's levels for a tensor never negative): 12.5.
  EXPECT_LE(entropy[out].hi, 12.6f);
  EXPECT_GT(entropy[out].hi, 0.5f);
  EXPECT_LT(minmax["x"].lo, -0.99f);  // the input itself is watched too
  EXPECT_GT(percentile["x"].lo, minmax["x"].lo);
}

TEST(Quantizer, ActivationParametersHoldZero) {
  float scale = 0;
  uint8_t zero = 0;
  activationParameters({0.f, 6.f}, &scale, &zero);
  EXPECT_FLOAT_EQ(scale, 6.f / 255.f);
  EXPECT_EQ(zero, 0);
  activationParameters({-1.f, 3.f}, &scale, &zero);
  EXPECT_FLOAT_EQ(scale, 4.f / 255.f);
  EXPECT_EQ(zero, 64);
  activationParameters({2.f, 3.f}, &scale, &zero);  // widened to hold 0
  EXPECT_FLOAT_EQ(scale, 3.f / 255.f);
  EXPECT_EQ(zero, 0);
  activationParameters({0.f, 0.f}, &scale, &zero);
  EXPECT_FLOAT_EQ(scale, 1.f);
}

}  // namespace
}  // namespace osprey::test
