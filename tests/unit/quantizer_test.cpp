// Post-training quantization (src/quantizer): calibration ranges, the graph rewrite (which ops
// become integer ops, where QuantizeLinear / DequantizeLinear go), and the quantized model's
// agreement with the float one.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

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

// x [2, 7, 50] -> MatMul [50, 40] -> Add bias [40] -> Gemm(transB, alpha 0.5, beta 2) [9, 40] + [9]
Model matMulNet(std::vector<float> firstWeights = {}) {
  GraphBuilder b;
  const int x = b.input("x", {2, 7, 50});
  Tensor w1 = randomTensor(DataType::Float32, {50, 40}, 8, -0.5, 0.5);
  for (size_t i = 0; i < firstWeights.size(); ++i) w1.data<float>()[i] = firstWeights[i];
  const int h = b.op(OpType::MatMul, {x, b.weights(w1)});
  const int biased = b.op(OpType::Add, {h, b.weights(randomTensor(DataType::Float32, {40}, 9))});
  const int flat = b.op(OpType::Reshape, {biased, b.integers(DataType::Int64, {14, 40}, {2})});
  const int y = b.op(OpType::Gemm, {flat, b.weights(randomTensor(DataType::Float32, {9, 40}, 10)),
                                    b.weights(randomTensor(DataType::Float32, {9}, 11))});
  b.g.nodes.back().setInt("transB", 1);
  b.g.nodes.back().setFloat("alpha", 0.5f);
  b.g.nodes.back().setFloat("beta", 2.f);
  b.output(y);
  Model m;
  m.graph = b.g;
  return m;
}

TEST(Quantizer, WeightOnlyQuantizationStoresMatMulWeightsAsNBitBlocks) {
  // Column 0 constant (a block whose range is one value), column 1 zero, the K tail (50 = 32 + 18)
  // padded: all must still come out right.
  std::vector<float> special(50 * 40);
  for (int k = 0; k < 50; ++k) special[k * 40] = 0.25f, special[k * 40 + 1] = 0.f;
  for (int k = 0; k < 50; ++k)
    for (int n = 2; n < 40; ++n) special[k * 40 + n] = std::sin(0.37f * k + 1.3f * n) * 0.5f;
  const Model model = matMulNet(special);
  const FeedDict fresh = samples("x", {2, 7, 50}, 1)[0];
  const Tensor want = runGraph(model.graph, fresh);
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    QuantizeOptions options;
    options.weightBits = bits;
    Model q;
    QuantizeReport report;
    ASSERT_TRUE(quantizeModel(model, samples("x", {2, 7, 50}, 1), options, &q, &report));
    EXPECT_EQ(countOps(q.graph, OpType::MatMulNBits), 2);
    EXPECT_EQ(countOps(q.graph, OpType::MatMul) + countOps(q.graph, OpType::Gemm), 0);
    EXPECT_EQ(countOps(q.graph, OpType::Add), 0);  // the bias moved into MatMulNBits
    for (const Node& n : q.graph.nodes) {
      if (n.type != OpType::MatMulNBits) continue;
      const int64_t K = n.getInt("K", 0), N = n.getInt("N", 0), blocks = (K + 31) / 32;
      EXPECT_EQ(q.graph.tensors[n.inputs[1]].shape, (Shape{N, blocks, 32 * bits / 8}));
      EXPECT_EQ(q.graph.tensors[n.inputs[1]].dtype, DataType::UInt8);
      EXPECT_EQ(n.inputs.size(), 6u);  // the bias
    }
    ASSERT_EQ(report.tensors.size(), 2u);
    for (const QuantizedTensorReport& t : report.tensors) EXPECT_GT(t.cosine, bits == 8 ? 0.9999 : 0.99) << t.name;
    const Tensor got = runGraph(q.graph, fresh);
    EXPECT_GT(cosine(want, got), bits == 8 ? 0.9999 : 0.99);
  }
}

// A MatMul as the converter leaves it (bias and activation fused) keeps both in MatMulNBits.
TEST(Quantizer, WeightOnlyKeepsAFusedBiasAndActivation) {
  GraphBuilder b;
  const int x = b.input("x", {5, 64});
  const int y = b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {64, 48}, 21)),
                                      b.weights(randomTensor(DataType::Float32, {48}, 22))});
  FusedActivation gelu;
  gelu.kind = FusedActivation::Kind::Gelu;
  gelu.store(b.g.nodes.back());
  b.output(y);
  Model model;
  model.graph = b.g;
  const FeedDict fresh = samples("x", {5, 64}, 1)[0];
  const Tensor want = runGraph(model.graph, fresh);
  QuantizeOptions options;
  options.weightBits = 8;
  Model q;
  ASSERT_TRUE(quantizeModel(model, {}, options, &q, nullptr));
  ASSERT_EQ(countOps(q.graph, OpType::MatMulNBits), 1);
  EXPECT_EQ(q.graph.nodes.size(), 1u);
  FusedActivation kept;
  ASSERT_TRUE(FusedActivation::fromNode(q.graph.nodes[0], &kept).isOk());
  EXPECT_EQ(kept.kind, FusedActivation::Kind::Gelu);
  EXPECT_EQ(q.graph.nodes[0].inputs.size(), 6u);  // the bias
  EXPECT_GT(cosine(want, runGraph(q.graph, fresh)), 0.9999);
}

// Each weight moves by at most half its block's step, so y = x W + b moves by at most
// sum_k |x_k| * step(k, n) / 2: a weight decoded at the wrong place or with a wrong zero point
// breaks that bound.
TEST(Quantizer, WeightOnlyErrorStaysWithinHalfAStepPerWeight) {
  GraphBuilder b;
  const int x = b.input("x", {3, 70});
  // Blocks of 16 along K alternate between mostly negative and all positive weights, so that
  // neighbouring blocks have far apart zero points.
  Tensor w = randomTensor(DataType::Float32, {70, 11}, 12, -1.0, 0.3);
  for (int64_t k = 0; k < 70; ++k)
    for (int64_t n = 0; n < 11; ++n)
      if ((k / 16) % 2 == 1) w.data<float>()[k * 11 + n] = std::fabs(w.data<float>()[k * 11 + n]) + 0.1f;
  const int y = b.op(OpType::MatMul, {x, b.weights(w)});
  b.output(y);
  Model model;
  model.graph = b.g;
  const FeedDict fresh = samples("x", {3, 70}, 1)[0];
  const Tensor want = runGraph(model.graph, fresh);
  for (int bits : {8, 4}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    QuantizeOptions options;
    options.weightBits = bits;
    options.blockSize = 16;
    Model q;
    ASSERT_TRUE(quantizeModel(model, {}, options, &q, nullptr));
    ASSERT_EQ(countOps(q.graph, OpType::MatMulNBits), 1);
    const Tensor got = runGraph(q.graph, fresh);
    const Tensor& in = fresh.at("x");
    for (int64_t m = 0; m < 3; ++m)
      for (int64_t n = 0; n < 11; ++n) {
        double bound = 1e-4;
        for (int64_t blk = 0; blk < 5; ++blk) {
          double lo = 0, hi = 0, sumAbs = 0;
          for (int64_t k = blk * 16; k < std::min<int64_t>(70, blk * 16 + 16); ++k) {
            lo = std::min<double>(lo, at(w, k * 11 + n)), hi = std::max<double>(hi, at(w, k * 11 + n));
            sumAbs += std::fabs(at(in, m * 70 + k));
          }
          bound += sumAbs * (hi - lo) / ((1 << bits) - 1) / 2 * 1.001;
        }
        EXPECT_LE(std::fabs(at(got, m * 11 + n) - at(want, m * 11 + n)), bound) << m << "," << n;
        EXPECT_GT(std::fabs(at(got, m * 11 + n) - at(want, m * 11 + n)), 0.0);  // it was quantized
      }
  }
}

TEST(Quantizer, WeightOnlyQuantizationRefusesOtherBitsAndBlockSizes) {
  Model q;
  QuantizeOptions options;
  options.weightBits = 3;
  Status st = quantizeModel(matMulNet(), {}, options, &q, nullptr);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("4 or 8 bits"), std::string::npos) << st.message();
  options.weightBits = 4;
  options.blockSize = 24;
  st = quantizeModel(matMulNet(), {}, options, &q, nullptr);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("power of 2"), std::string::npos) << st.message();
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

// A Relu writes zero for half of a normal input: the entropy threshold must follow the positive
// half's tail, not the spike of zeros (with them, it settled at half the maximum).
TEST(Quantizer, EntropyThresholdIgnoresTheZerosOfARelu) {
  GraphBuilder b;
  const int x = b.input("x", {1, 20000});
  b.output(b.op(OpType::Relu, {x}));
  Model model;
  model.graph = b.g;
  Tensor t(DataType::Float32, {1, 20000});
  std::mt19937 bits(21);  // a standard normal sample by Box-Muller (mt19937's output is fixed)
  for (int i = 0; i < 20000; i += 2) {
    const double u1 = (bits() + 1.0) / 4294967297.0, u2 = bits() / 4294967296.0;
    const double r = std::sqrt(-2 * std::log(u1));
    t.data<float>()[i] = static_cast<float>(r * std::cos(6.283185307179586 * u2));
    t.data<float>()[i + 1] = static_cast<float>(r * std::sin(6.283185307179586 * u2));
  }
  QuantizeOptions options;
  options.method = CalibrationMethod::Entropy;
  std::map<std::string, TensorRange> entropy;
  ASSERT_TRUE(calibrateRanges(model, {{{"x", t}}}, options, &entropy));
  const std::string out = model.graph.tensors[model.graph.outputs[0]].name;
  float hi = 0;
  for (int i = 0; i < 20000; ++i) hi = std::max(hi, t.data<float>()[i]);
  EXPECT_GT(entropy[out].hi, 0.6f * hi) << "max " << hi;
  EXPECT_LE(entropy[out].hi, hi);
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
