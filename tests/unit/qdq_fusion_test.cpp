// The converter's QDQ fusion (passes::fuseQuantizedOps): small DequantizeLinear -> op ->
// QuantizeLinear graphs, as quantize_static writes them, go through the converter's passes with
// and without ConvertOptions::fuseQuantized. Checked: which ops are left, that the fused and the
// float paths agree within one quantization step (the float path rounds once more), that the
// integer ops compute exactly what plain integer loops written here compute, and that patterns
// that must not fuse keep their float ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "../ops/op_test_util.h"
#include "converter/converter.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

constexpr DataType kU8 = DataType::UInt8, kI8 = DataType::Int8, kI32 = DataType::Int32;

int64_t lowOf(DataType t) { return t == kI8 ? -128 : 0; }
int64_t highOf(DataType t) { return t == kI8 ? 127 : 255; }

Graph convert(const Graph& g, bool fuseQuantized, ConvertReport* report = nullptr) {
  Graph out = g;
  ConvertOptions options;
  options.fuseQuantized = fuseQuantized;
  Status st = optimizeGraph(out, options, report);
  EXPECT_TRUE(st.isOk()) << st.message();
  return out;
}

std::vector<int64_t> randomBytes(DataType t, int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lowOf(t), highOf(t));
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

Tensor byteTensor(DataType t, const Shape& shape, const std::vector<int64_t>& v) {
  Tensor out(t, shape);
  for (size_t i = 0; i < v.size(); ++i)
    storeFromDouble(t, out.data(), static_cast<int64_t>(i), static_cast<double>(v[i]));
  return out;
}

std::vector<int64_t> values(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(at(t, static_cast<int64_t>(i)));
  return v;
}

// The values of constant input `i` of the only node of type `type`.
std::vector<int64_t> constantInput(const Graph& g, OpType type, size_t i) {
  for (const Node& n : g.nodes) {
    if (n.type != type || i >= n.inputs.size() || n.inputs[i] < 0) continue;
    const TensorInfo& t = g.tensors[n.inputs[i]];
    EXPECT_TRUE(t.isConstant);
    std::vector<int64_t> v(static_cast<size_t>(shapeElements(t.shape)));
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int64_t>(loadAsDouble(t.dtype, t.data.bytes.get(), k));
    return v;
  }
  return {};
}

int dq(GraphBuilder& b, int x, float scale, int64_t zero, DataType t) {
  return b.op(OpType::DequantizeLinear, {x, b.scalar(scale), b.integers(t, {zero}, {})});
}

int q(GraphBuilder& b, int x, float scale, int64_t zero, DataType t) {
  return b.op(OpType::QuantizeLinear, {x, b.scalar(scale), b.integers(t, {zero}, {})});
}

// A per-axis DequantizeLinear: one scale and zero point per index of `axis`.
int dqPerAxis(GraphBuilder& b, int x, const std::vector<float>& scales, const std::vector<int64_t>& zeros, DataType t,
              int64_t axis) {
  const int64_t n = static_cast<int64_t>(scales.size());
  const int y = b.op(OpType::DequantizeLinear, {x, b.floats(scales, {n}), b.integers(t, zeros, {n})});
  b.g.nodes.back().setInt("axis", axis);
  return y;
}

// The fused and the float conversion on the same feeds: byte outputs at most one step apart.
void expectWithinOneStep(const Graph& fused, const Graph& unfused, const std::map<std::string, Tensor>& feeds) {
  const std::vector<Tensor> got = runGraphOutputs(fused, feeds), want = runGraphOutputs(unfused, feeds);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(maxAbsDiff(got[i], want[i]), 1.0) << "output " << i;
}

// QLinearConv's and QLinearMatMul's requantization: the multiplier in float32 as the kernels
// (and ONNX's reference) form it, the product in double, rounded half to even, saturated.
int64_t requantize(int64_t acc, float inScale, float weightScale, float outScale, int64_t zero, DataType t) {
  const float product = static_cast<float>(static_cast<double>(inScale) * weightScale);
  const float multiplier = static_cast<float>(static_cast<double>(product) / outScale);
  const double v = std::nearbyint(static_cast<double>(acc) * multiplier + static_cast<double>(zero));
  return static_cast<int64_t>(std::min<double>(highOf(t), std::max<double>(lowOf(t), v)));
}

// ---- Conv ----

struct QConv {
  DataType act = kU8, weight = kI8;
  Shape xShape{1, 3, 7, 6}, wShape{5, 3, 3, 3};
  std::vector<int64_t> pads{1, 0, 1, 1}, strides{2, 1};
  float xScale = 0.02f, yScale = 0.05f;
  int64_t xZero = 128, yZero = 128;
  std::vector<float> wScales{0.004f, 0.007f, 0.003f, 0.01f, 0.0055f};
  std::vector<int64_t> wZeros{0, 0, 0, 0, 0};
  std::vector<int64_t> x, w, bias;  // bias: int32 in the scale xScale * wScales[m]

  QConv(DataType activations, uint32_t seed) : act(activations) {
    xZero = activations == kI8 ? 0 : 128;
    yZero = xZero;
    x = randomBytes(act, shapeElements(xShape), seed);
    w = randomBytes(weight, shapeElements(wShape), seed + 1);
    bias = {-900, 40, 1500, -7, 333};
  }
  float biasScale(size_t m) const { return xScale * wScales[m]; }
};

enum class Bias { None, Int32, Float };

GraphBuilder convGraph(const QConv& c, Bias bias, bool relu) {
  GraphBuilder b;
  const int x = dq(b, b.input("x", c.xShape, c.act), c.xScale, c.xZero, c.act);
  const int w = dqPerAxis(b, b.integers(c.weight, c.w, c.wShape), c.wScales, c.wZeros, c.weight, 0);
  const int64_t m = c.wShape[0];
  std::vector<int> inputs = {x, w};
  if (bias == Bias::Int32) {
    std::vector<float> scales(static_cast<size_t>(m));
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = c.biasScale(i);
    const std::vector<int64_t> zeros(scales.size(), 0);
    inputs.push_back(dqPerAxis(b, b.integers(kI32, c.bias, {m}), scales, zeros, kI32, 0));
  } else if (bias == Bias::Float) {
    // A quarter step off the integers, so that rounding to the bias scale is unambiguous.
    std::vector<float> v(static_cast<size_t>(m));
    for (size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<float>(c.bias[i]) + 0.25f) * c.biasScale(i);
    inputs.push_back(b.floats(v, {m}));
  }
  int y = b.op(OpType::Conv, inputs);
  b.g.nodes.back().setInts("pads", c.pads);
  b.g.nodes.back().setInts("strides", c.strides);
  if (relu) y = b.op(OpType::Relu, {y});
  b.output(q(b, y, c.yScale, c.yZero, c.act));
  return b;
}

// QLinearConv with plain loops: exact int32 sums over the window (padding adds nothing).
std::vector<int64_t> naiveConv(const QConv& c, bool withBias) {
  const int64_t C = c.xShape[1], H = c.xShape[2], W = c.xShape[3], M = c.wShape[0], KH = c.wShape[2],
                KW = c.wShape[3];
  const int64_t OH = (H + c.pads[0] + c.pads[2] - KH) / c.strides[0] + 1;
  const int64_t OW = (W + c.pads[1] + c.pads[3] - KW) / c.strides[1] + 1;
  std::vector<int64_t> y;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t acc = withBias ? c.bias[m] : 0;
        for (int64_t ci = 0; ci < C; ++ci)
          for (int64_t i = 0; i < KH; ++i)
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t ih = oh * c.strides[0] - c.pads[0] + i, iw = ow * c.strides[1] - c.pads[1] + j;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              acc += (c.x[(ci * H + ih) * W + iw] - c.xZero) * (c.w[((m * C + ci) * KH + i) * KW + j] - c.wZeros[m]);
            }
        y.push_back(requantize(acc, c.xScale, c.wScales[m], c.yScale, c.yZero, c.act));
      }
  return y;
}

TEST(QdqFusion, ConvWithPerChannelWeightsAndInt32Bias) {
  for (DataType act : {kU8, kI8}) {
    const QConv c(act, 11);
    const Graph source = convGraph(c, Bias::Int32, false).g;
    const Graph fused = convert(source, true), unfused = convert(source, false);
    EXPECT_EQ(countOps(fused, OpType::QLinearConv), 1);
    EXPECT_EQ(countOps(fused, OpType::Conv), 0);
    EXPECT_EQ(countOps(fused, OpType::DequantizeLinear) + countOps(fused, OpType::QuantizeLinear), 0);
    EXPECT_EQ(countOps(unfused, OpType::QLinearConv), 0);
    EXPECT_EQ(constantInput(fused, OpType::QLinearConv, 8), c.bias);  // taken as it is
    const std::map<std::string, Tensor> feeds{{"x", byteTensor(act, c.xShape, c.x)}};
    expectWithinOneStep(fused, unfused, feeds);
    EXPECT_EQ(values(runGraphOutputs(fused, feeds)[0]), naiveConv(c, true));
  }
}

TEST(QdqFusion, ConvFloatBiasIsQuantizedAndReluFusesAtTheLowestZeroPoint) {
  QConv c(kI8, 12);
  c.yZero = -128;  // the lowest int8: the saturation of QLinearConv is Relu
  const Graph source = convGraph(c, Bias::Float, true).g;
  const Graph fused = convert(source, true), unfused = convert(source, false);
  EXPECT_EQ(countOps(fused, OpType::QLinearConv), 1);
  EXPECT_EQ(countOps(fused, OpType::Relu) + countOps(fused, OpType::Conv), 0);
  EXPECT_EQ(constantInput(fused, OpType::QLinearConv, 8), c.bias);  // rounded to the bias scale
  const std::map<std::string, Tensor> feeds{{"x", byteTensor(c.act, c.xShape, c.x)}};
  expectWithinOneStep(fused, unfused, feeds);
  EXPECT_EQ(values(runGraphOutputs(fused, feeds)[0]), naiveConv(c, true));
}

TEST(QdqFusion, ConvWithoutBiasFromFakeQuantizedWeights) {
  // The weight as an exporter of fake-quantized models writes it: Q(float constant) -> DQ.
  const QConv c(kU8, 13);
  GraphBuilder b;
  const int x = dq(b, b.input("x", c.xShape, c.act), c.xScale, c.xZero, c.act);
  std::vector<float> w(c.w.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(c.w[i]) * c.wScales[0];  // per tensor
  const int wq = q(b, b.floats(w, c.wShape), c.wScales[0], 0, kI8);
  const int conv = b.op(OpType::Conv, {x, dq(b, wq, c.wScales[0], 0, kI8)});
  b.g.nodes.back().setInts("pads", c.pads);
  b.g.nodes.back().setInts("strides", c.strides);
  b.output(q(b, conv, c.yScale, c.yZero, c.act));
  const Graph fused = convert(b.g, true), unfused = convert(b.g, false);
  EXPECT_EQ(countOps(fused, OpType::QLinearConv), 1);
  EXPECT_EQ(countOps(fused, OpType::QuantizeLinear) + countOps(fused, OpType::DequantizeLinear), 0);
  QConv perTensor = c;
  perTensor.wScales.assign(c.wScales.size(), c.wScales[0]);
  const std::map<std::string, Tensor> feeds{{"x", byteTensor(c.act, c.xShape, c.x)}};
  expectWithinOneStep(fused, unfused, feeds);
  EXPECT_EQ(values(runGraphOutputs(fused, feeds)[0]), naiveConv(perTensor, false));
}

TEST(QdqFusion, ConvLeftFloatWhereItMustNotFuse) {
  const QConv c(kI8, 14);
  const std::map<std::string, Tensor> feeds{{"x", byteTensor(c.act, c.xShape, c.x)}};
  auto expectFloat = [&](const Graph& source, const char* what) {
    const Graph fused = convert(source, true);
    EXPECT_EQ(countOps(fused, OpType::QLinearConv), 0) << what;
    EXPECT_EQ(countOps(fused, OpType::Conv), 1) << what;
    EXPECT_EQ(countOps(fused, OpType::QuantizeLinear), 1) << what;
    expectWithinOneStep(fused, convert(source, false), feeds);
  };
  // Relu with y_zero_point above the type's lowest value: saturation is not Relu there.
  expectFloat(convGraph(c, Bias::Int32, true).g, "relu, y_zero_point 0");
  // The Conv's float output is read by another op too.
  GraphBuilder shared = convGraph(c, Bias::Int32, false);
  shared.output(shared.op(OpType::Sigmoid, {shared.g.nodes[shared.g.nodes.size() - 2].outputs[0]}));
  expectFloat(shared.g, "conv output read twice");
  // Per-channel weight scales along the wrong axis.
  GraphBuilder axis = convGraph(c, Bias::None, false);
  for (Node& n : axis.g.nodes)
    if (n.type == OpType::DequantizeLinear && n.hasAttr("axis")) n.setInt("axis", 1);
  axis.g.nodes[1].inputs[1] = axis.floats({0.004f, 0.007f, 0.003f}, {3});
  axis.g.nodes[1].inputs[2] = axis.integers(kI8, {0, 0, 0}, {3});
  expectFloat(axis.g, "weight scales along input channels");

  // Weights that are not constants: a graph input.
  GraphBuilder input;
  const int x = dq(input, input.input("x", c.xShape, c.act), c.xScale, c.xZero, c.act);
  const int w = dq(input, input.input("w", c.wShape, kI8), 0.01f, 0, kI8);
  input.output(q(input, input.op(OpType::Conv, {x, w}), c.yScale, c.yZero, c.act));
  const Graph fused = convert(input.g, true);
  EXPECT_EQ(countOps(fused, OpType::QLinearConv), 0);
  EXPECT_EQ(countOps(fused, OpType::Conv), 1);
}

TEST(QdqFusion, SharedDequantizeStaysForItsOtherReader) {
  // DQ(x) feeds the Conv and is a graph output: the Conv reads the bytes, the DQ stays.
  const QConv c(kU8, 15);
  GraphBuilder b = convGraph(c, Bias::Int32, false);
  b.output(b.g.nodes[0].outputs[0]);
  const Graph fused = convert(b.g, true), unfused = convert(b.g, false);
  EXPECT_EQ(countOps(fused, OpType::QLinearConv), 1);
  EXPECT_EQ(countOps(fused, OpType::DequantizeLinear), 1);
  const std::map<std::string, Tensor> feeds{{"x", byteTensor(c.act, c.xShape, c.x)}};
  const std::vector<Tensor> got = runGraphOutputs(fused, feeds), want = runGraphOutputs(unfused, feeds);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(values(got[0]), naiveConv(c, true));
  EXPECT_EQ(maxAbsDiff(got[1], want[1]), 0.0);
}

// ---- MatMul and Gemm ----

struct QMatMul {
  DataType act, weight = kI8;
  int64_t m = 3, k = 13, n = 7;
  float aScale = 0.03f, yScale = 0.08f;
  int64_t aZero, yZero;
  std::vector<float> bScales;
  std::vector<int64_t> bZeros, a, b;
  QMatMul(DataType activations, uint32_t seed) : act(activations) {
    aZero = act == kI8 ? -3 : 131;
    yZero = act == kI8 ? 5 : 120;
    for (int64_t j = 0; j < n; ++j) bScales.push_back(0.002f + 0.0013f * static_cast<float>(j));
    bZeros.assign(static_cast<size_t>(n), 0);
    a = randomBytes(act, m * k, seed);
    b = randomBytes(weight, k * n, seed + 1);
  }
  // sum_k (a - a_zp)(b - b_zp[j]) for row i, column j; B is [K, N].
  int64_t acc(int64_t i, int64_t j) const {
    int64_t s = 0;
    for (int64_t t = 0; t < k; ++t) s += (a[i * k + t] - aZero) * (b[t * n + j] - bZeros[j]);
    return s;
  }
};

TEST(QdqFusion, MatMulWithQuantizedOutputBecomesQLinearMatMul) {
  for (DataType act : {kU8, kI8}) {
    const QMatMul c(act, 21);
    GraphBuilder g;
    const int a = dq(g, g.input("a", {c.m, c.k}, act), c.aScale, c.aZero, act);
    const int b = dqPerAxis(g, g.integers(c.weight, c.b, {c.k, c.n}), c.bScales, c.bZeros, c.weight, 1);
    g.output(q(g, g.op(OpType::MatMul, {a, b}), c.yScale, c.yZero, act));
    const Graph fused = convert(g.g, true), unfused = convert(g.g, false);
    EXPECT_EQ(countOps(fused, OpType::QLinearMatMul), 1);
    EXPECT_EQ(fused.nodes.size(), 1u);
    const std::map<std::string, Tensor> feeds{{"a", byteTensor(act, {c.m, c.k}, c.a)}};
    expectWithinOneStep(fused, unfused, feeds);
    std::vector<int64_t> want;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j)
        want.push_back(requantize(c.acc(i, j), c.aScale, c.bScales[j], c.yScale, c.yZero, act));
    EXPECT_EQ(values(runGraphOutputs(fused, feeds)[0]), want);
  }
}

TEST(QdqFusion, MatMulWithFloatOutputAndBiasBecomesMatMulIntegerToFloat) {
  const QMatMul c(kU8, 22);
  std::vector<float> bias(static_cast<size_t>(c.n));
  for (size_t j = 0; j < bias.size(); ++j) bias[j] = 0.1f * static_cast<float>(j) - 0.3f;
  GraphBuilder g;
  const int a = dq(g, g.input("a", {c.m, c.k}, c.act), c.aScale, c.aZero, c.act);
  const int b = dqPerAxis(g, g.integers(c.weight, c.b, {c.k, c.n}), c.bScales, c.bZeros, c.weight, -1);
  g.output(g.op(OpType::Add, {g.floats(bias, {c.n}), g.op(OpType::MatMul, {a, b})}));
  const Graph fused = convert(g.g, true), unfused = convert(g.g, false);
  EXPECT_EQ(countOps(fused, OpType::MatMulIntegerToFloat), 1);
  EXPECT_EQ(fused.nodes.size(), 1u);  // the Add is its bias
  const std::map<std::string, Tensor> feeds{{"a", byteTensor(c.act, {c.m, c.k}, c.a)}};
  const Tensor got = runGraphOutputs(fused, feeds)[0];
  EXPECT_EQ(got.dtype(), DataType::Float32);
  EXPECT_LE(maxAbsDiff(got, runGraphOutputs(unfused, feeds)[0]), 1e-4);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const float want = static_cast<float>(c.acc(i, j)) * (c.aScale * c.bScales[j]) + bias[j];
      EXPECT_EQ(got.data<float>()[i * c.n + j], want) << i << ", " << j;
    }
}

// QGemm with B transposed ([N, K], per output channel along axis 0) and a float C.
GraphBuilder gemmGraph(const QMatMul& c, const std::vector<int64_t>& bT, const std::vector<float>& cFloat,
                       bool quantized) {
  GraphBuilder g;
  const int a = dq(g, g.input("a", {c.m, c.k}, c.act), c.aScale, c.aZero, c.act);
  const int b = dqPerAxis(g, g.integers(c.weight, bT, {c.n, c.k}), c.bScales, c.bZeros, c.weight, 0);
  int y = g.op(OpType::Gemm, {a, b, g.floats(cFloat, {c.n})});
  g.g.nodes.back().setInt("transB", 1);
  if (quantized) y = q(g, y, c.yScale, c.yZero, c.act);
  g.output(y);
  return g;
}

TEST(QdqFusion, GemmBecomesQGemmWithQuantizedOrFloatOutput) {
  const QMatMul c(kU8, 23);
  std::vector<int64_t> bT(c.b.size());  // B^T, so that acc() still reads B as [K, N]
  for (int64_t t = 0; t < c.k; ++t)
    for (int64_t j = 0; j < c.n; ++j) bT[j * c.k + t] = c.b[t * c.n + j];
  std::vector<int64_t> cInt(static_cast<size_t>(c.n));
  std::vector<float> cFloat(cInt.size());
  for (size_t j = 0; j < cInt.size(); ++j) {
    cInt[j] = static_cast<int64_t>(j) * 97 - 300;
    cFloat[j] = (static_cast<float>(cInt[j]) - 0.25f) * (c.aScale * c.bScales[j]);
  }
  const std::map<std::string, Tensor> feeds{{"a", byteTensor(c.act, {c.m, c.k}, c.a)}};
  for (bool quantized : {true, false}) {
    const Graph source = gemmGraph(c, bT, cFloat, quantized).g;
    const Graph fused = convert(source, true), unfused = convert(source, false);
    EXPECT_EQ(countOps(fused, OpType::QGemm), 1);
    EXPECT_EQ(fused.nodes.size(), 1u);
    EXPECT_EQ(constantInput(fused, OpType::QGemm, 6), cInt);
    const Tensor got = runGraphOutputs(fused, feeds)[0], want = runGraphOutputs(unfused, feeds)[0];
    EXPECT_LE(maxAbsDiff(got, want), quantized ? 1.0 : 1e-4);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        // QGemm: float(acc + C) * (a_scale * b_scale[j] [/ y_scale]), requantized as MLAS does.
        const int64_t acc = c.acc(i, j) + cInt[j];
        float scale = c.aScale * c.bScales[j];
        if (!quantized) {
          EXPECT_EQ(got.data<float>()[i * c.n + j], static_cast<float>(acc) * scale);
          continue;
        }
        scale /= c.yScale;
        const float lo = static_cast<float>(lowOf(c.act) - c.yZero), hi = static_cast<float>(highOf(c.act) - c.yZero);
        const float v = std::min(hi, std::max(lo, static_cast<float>(acc) * scale));
        EXPECT_EQ(at(got, i * c.n + j), std::nearbyint(v) + static_cast<double>(c.yZero)) << i << ", " << j;
      }
  }
}

// ---- Elementwise, pooling, lookup ops, Softmax, Concat ----

struct PointwiseCase {
  const char* name;
  OpType fusedType;
  std::function<int(GraphBuilder&, int, int, DataType)> build;  // (a, b) dequantized -> float result
};

TEST(QdqFusion, ElementwisePoolingAndConcatBecomeQLinearOps) {
  const Shape shape{2, 4, 5, 3};
  const std::vector<PointwiseCase> cases = {
      {"Add", OpType::QLinearAdd, [](GraphBuilder& b, int x, int y, DataType) { return b.op(OpType::Add, {x, y}); }},
      {"Mul", OpType::QLinearMul, [](GraphBuilder& b, int x, int y, DataType) { return b.op(OpType::Mul, {x, y}); }},
      {"GlobalAveragePool", OpType::QLinearGlobalAveragePool,
       [](GraphBuilder& b, int x, int, DataType) { return b.op(OpType::GlobalAveragePool, {x}); }},
      {"AveragePool", OpType::QLinearAveragePool,
       [](GraphBuilder& b, int x, int, DataType) {
         const int y = b.op(OpType::AveragePool, {x});
         b.g.nodes.back().setInts("kernel_shape", {3, 2});
         b.g.nodes.back().setInts("pads", {1, 0, 1, 1});
         b.g.nodes.back().setInts("strides", {2, 1});
         return y;
       }},
      {"Sigmoid", OpType::QLinearSigmoid,
       [](GraphBuilder& b, int x, int, DataType) { return b.op(OpType::Sigmoid, {x}); }},
      {"LeakyRelu", OpType::QLinearLeakyRelu,
       [](GraphBuilder& b, int x, int, DataType) {
         const int y = b.op(OpType::LeakyRelu, {x});
         b.g.nodes.back().setFloat("alpha", 0.2f);
         return y;
       }},
      {"Softmax", OpType::QLinearSoftmax,
       [](GraphBuilder& b, int x, int, DataType) { return b.op(OpType::Softmax, {x}); }},
      {"Concat", OpType::QLinearConcat,
       [](GraphBuilder& b, int x, int y, DataType) {
         const int out = b.op(OpType::Concat, {x, y, x});
         b.g.nodes.back().setInt("axis", 1);
         return out;
       }},
  };
  for (DataType t : {kU8, kI8}) {
    const int64_t mid = t == kI8 ? 0 : 128;
    for (const PointwiseCase& c : cases) {
      GraphBuilder b;
      const int x = dq(b, b.input("a", shape, t), 0.05f, mid + 3, t);
      const int y = dq(b, b.input("b", shape, t), 0.03f, mid - 7, t);
      const bool probability = c.fusedType == OpType::QLinearSigmoid || c.fusedType == OpType::QLinearSoftmax;
      // Probabilities as quantize_static writes them: scale 1/256 from the type's lowest value.
      b.output(q(b, c.build(b, x, y, t), probability ? 1.f / 256 : 0.07f, probability ? lowOf(t) : mid + 2, t));
      const Graph fused = convert(b.g, true), unfused = convert(b.g, false);
      EXPECT_EQ(countOps(fused, c.fusedType), 1) << c.name;
      EXPECT_EQ(fused.nodes.size(), 1u) << c.name;
      const std::map<std::string, Tensor> feeds{{"a", byteTensor(t, shape, randomBytes(t, shapeElements(shape), 31))},
                                                {"b", byteTensor(t, shape, randomBytes(t, shapeElements(shape), 32))}};
      expectWithinOneStep(fused, unfused, feeds);
    }
  }
}

TEST(QdqFusion, BinaryOpsWithMixedTypesStayFloat) {
  GraphBuilder b;
  const int x = dq(b, b.input("a", {3, 4}, kU8), 0.05f, 128, kU8);
  const int y = dq(b, b.input("b", {3, 4}, kI8), 0.05f, 0, kI8);
  b.output(q(b, b.op(OpType::Add, {x, y}), 0.1f, 128, kU8));
  const Graph fused = convert(b.g, true);
  EXPECT_EQ(countOps(fused, OpType::QLinearAdd), 0);
  EXPECT_EQ(countOps(fused, OpType::Add), 1);
}

// ---- Data movement on the bytes ----

struct MoveCase {
  const char* name;
  OpType type;
  std::function<int(GraphBuilder&, int)> build;
};

TEST(QdqFusion, DataMovementRunsOnTheBytesWhenScalesAgree) {
  const Shape shape{1, 4, 6, 6};
  const std::vector<MoveCase> cases = {
      {"MaxPool", OpType::MaxPool,
       [](GraphBuilder& b, int x) {
         const int y = b.op(OpType::MaxPool, {x});
         b.g.nodes.back().setInts("kernel_shape", {3, 2});
         b.g.nodes.back().setInts("pads", {1, 0, 1, 0});
         b.g.nodes.back().setInts("strides", {2, 2});
         return y;
       }},
      {"Reshape", OpType::Reshape,
       [](GraphBuilder& b, int x) { return b.op(OpType::Reshape, {x, b.ints({1, 4, 36})}); }},
      {"Transpose", OpType::Transpose, [](GraphBuilder& b, int x) { return b.transpose(x, {0, 2, 3, 1}); }},
      {"Flatten", OpType::Flatten, [](GraphBuilder& b, int x) { return b.op(OpType::Flatten, {x}); }},
      {"Squeeze", OpType::Squeeze, [](GraphBuilder& b, int x) { return b.op(OpType::Squeeze, {x, b.axes(0)}); }},
      {"Unsqueeze", OpType::Unsqueeze, [](GraphBuilder& b, int x) { return b.op(OpType::Unsqueeze, {x, b.axes(1)}); }},
      {"Slice", OpType::Slice,
       [](GraphBuilder& b, int x) { return b.op(OpType::Slice, {x, b.ints({1}), b.ints({5}), b.ints({2})}); }},
      {"Gather", OpType::Gather,
       [](GraphBuilder& b, int x) {
         const int y = b.op(OpType::Gather, {x, b.ints({3, 0, 3})});
         b.g.nodes.back().setInt("axis", 1);
         return y;
       }},
      {"Resize", OpType::Resize,
       [](GraphBuilder& b, int x) {
         const int y = b.op(OpType::Resize, {x, -1, b.floats({1, 1, 2, 1.5f}, {4})});
         b.g.nodes.back().setString("mode", "nearest");
         return y;
       }},
      {"DepthToSpace", OpType::DepthToSpace,
       [](GraphBuilder& b, int x) {
         const int y = b.op(OpType::DepthToSpace, {x});
         b.g.nodes.back().setInt("blocksize", 2);
         return y;
       }},
      {"SpaceToDepth", OpType::SpaceToDepth,
       [](GraphBuilder& b, int x) {
         const int y = b.op(OpType::SpaceToDepth, {x});
         b.g.nodes.back().setInt("blocksize", 2);
         return y;
       }},
  };
  for (DataType t : {kU8, kI8}) {
    const std::map<std::string, Tensor> feeds{{"a", byteTensor(t, shape, randomBytes(t, shapeElements(shape), 41))}};
    for (const MoveCase& c : cases)
      for (bool sameScale : {true, false}) {
        GraphBuilder b;
        const int x = dq(b, b.input("a", shape, t), 0.05f, lowOf(t) + 100, t);
        b.output(q(b, c.build(b, x), sameScale ? 0.05f : 0.06f, lowOf(t) + 100, t));
        const Graph fused = convert(b.g, true), unfused = convert(b.g, false);
        EXPECT_EQ(countOps(fused, c.type), 1) << c.name;
        const int qdqLeft = countOps(fused, OpType::DequantizeLinear) + countOps(fused, OpType::QuantizeLinear);
        EXPECT_EQ(qdqLeft, sameScale ? 0 : 2) << c.name << (sameScale ? "" : ", scales differ");
        const std::vector<Tensor> got = runGraphOutputs(fused, feeds), want = runGraphOutputs(unfused, feeds);
        EXPECT_EQ(got[0].dtype(), t) << c.name;
        EXPECT_EQ(maxAbsDiff(got[0], want[0]), 0.0) << c.name;
      }
  }
}

TEST(QdqFusion, QuantizeOfDequantizeInOneScaleIsTheBytes) {
  GraphBuilder b;
  const int bytes = q(b, dq(b, b.input("a", {3, 5}, kU8), 0.1f, 7, kU8), 0.1f, 7, kU8);
  b.output(b.op(OpType::Sigmoid, {dq(b, bytes, 0.1f, 7, kU8)}));
  GraphBuilder other = b;  // the same with another zero point in the Q: kept
  other.g.nodes[1].inputs[2] = other.integers(kU8, {8}, {});
  const Graph fused = convert(b.g, true), kept = convert(other.g, true);
  EXPECT_EQ(countOps(fused, OpType::QuantizeLinear), 0);
  EXPECT_EQ(countOps(fused, OpType::DequantizeLinear), 1);
  EXPECT_EQ(countOps(kept, OpType::QuantizeLinear), 1);
  const std::map<std::string, Tensor> feeds{{"a", byteTensor(kU8, {3, 5}, randomBytes(kU8, 15, 51))}};
  EXPECT_EQ(maxAbsDiff(runGraphOutputs(fused, feeds)[0], runGraphOutputs(convert(b.g, false), feeds)[0]), 0.0);
}

TEST(QdqFusion, ReportCountsTheRewrites) {
  const QConv c(kU8, 61);
  GraphBuilder b = convGraph(c, Bias::Int32, false);
  const int conv = b.g.outputs[0];
  b.g.outputs.clear();
  const int pooled = b.op(OpType::GlobalAveragePool, {dq(b, conv, c.yScale, c.yZero, c.act)});
  b.output(q(b, pooled, 0.02f, 128, kU8));
  ConvertReport fusedReport, floatReport;
  convert(b.g, true, &fusedReport);
  convert(b.g, false, &floatReport);
  EXPECT_EQ(fusedReport.fusedOps - floatReport.fusedOps, 2);
}

// ---- Chains of elementwise float ops between a DequantizeLinear and a QuantizeLinear ----

int countOps(const Graph& g, OpType type) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.type == type; }));
}

// GELU's half as quantize_static leaves it: x / DQ(sqrt 2 as int8) -> Erf, then a Clip; every
// code of the input against the same chain computed here in float32, rounded half to even.
TEST(QdqFusion, ElementwiseChainBecomesATableOfItsCodes) {
  for (DataType t : {kU8, kI8}) {
    const float inScale = 0.031f, outScale = 1.f / 127, divisorScale = 0.0112f;
    const int64_t inZero = t == kI8 ? 5 : 131, outZero = t == kI8 ? -2 : 126, divisorCode = 126;
    GraphBuilder b;
    const int x = dq(b, b.input("x", {4, 64}, t), inScale, inZero, t);
    const int divisor = dq(b, b.integers(kI8, {divisorCode}, {}), divisorScale, 0, kI8);
    const int erf = b.op(OpType::Erf, {b.op(OpType::Div, {x, divisor})});
    const int clipped = b.op(OpType::Clip, {erf, b.scalar(-0.75f), b.scalar(0.9f)});
    b.output(q(b, clipped, outScale, outZero, t));
    const Graph fused = convert(b.g, true), unfused = convert(b.g, false);
    EXPECT_EQ(countOps(fused, OpType::ByteLookup), 1);
    EXPECT_EQ(countOps(fused, OpType::Erf), 0);
    EXPECT_EQ(countOps(fused, OpType::DequantizeLinear), 0);
    EXPECT_EQ(countOps(unfused, OpType::ByteLookup), 0);
    std::vector<int64_t> codes(256);
    for (int64_t i = 0; i < 256; ++i) codes[i] = lowOf(t) + i;
    const Tensor feed = byteTensor(t, {4, 64}, codes);
    const std::vector<int64_t> got = values(runGraph(fused, {{"x", feed}}));
    const float d = divisorScale * static_cast<float>(divisorCode);
    for (int64_t i = 0; i < 256; ++i) {
      const float v = std::erf(static_cast<float>(codes[i] - inZero) * inScale / d);
      const float c = std::min(0.9f, std::max(-0.75f, v));
      const double want = std::min<double>(highOf(t), std::max<double>(lowOf(t), std::nearbyint(c / outScale) + outZero));
      EXPECT_EQ(got[i], static_cast<int64_t>(want)) << "code " << codes[i];
    }
    expectWithinOneStep(fused, unfused, {{"x", feed}});
  }
}

TEST(QdqFusion, ElementwiseChainStaysWhereAnOutputCodeReadsMoreThanOneInput) {
  auto chain = [](bool perAxisOut, bool vectorConstant, bool sharedMiddle) {
    GraphBuilder b;
    const int x = dq(b, b.input("x", {2, 3}, kU8), 0.05f, 128, kU8);
    const int c = vectorConstant ? b.floats({1.f, 2.f, 3.f}, {3}) : b.scalar(2.f);
    const int mid = b.op(OpType::Mul, {x, c});
    const int y = b.op(OpType::Tanh, {mid});
    if (perAxisOut) {
      b.output(b.op(OpType::QuantizeLinear, {y, b.floats({0.01f, 0.02f, 0.03f}, {3}), b.integers(kU8, {128, 128, 128}, {3})}));
      b.g.nodes.back().setInt("axis", 1);
    } else {
      b.output(q(b, y, 0.01f, 128, kU8));
    }
    if (sharedMiddle) b.output(mid);
    return b.g;
  };
  for (const Graph& g : {chain(true, false, false), chain(false, true, false), chain(false, false, true)}) {
    const Graph fused = convert(g, true);
    EXPECT_EQ(countOps(fused, OpType::ByteLookup), 0);
    EXPECT_EQ(countOps(fused, OpType::Tanh), 1);
  }
  EXPECT_EQ(countOps(convert(chain(false, false, false), true), OpType::ByteLookup), 1);
}

// Attention's products of two activations, once the shapes are known: QLinearMatMul with B
// packed at each run, one matrix of B per matrix of A.
TEST(QdqFusion, ProductOfTwoActivationsBecomesQLinearMatMul) {
  for (bool broadcastB : {false, true}) {
    GraphBuilder b;
    const Shape aShape{3, 5, 8}, bShape{broadcastB ? 1 : 3, 8, 6};
    const int x = dq(b, b.input("a", aShape, kU8), 0.04f, 120, kU8);
    const int y = dq(b, b.input("b", bShape, kI8), 0.03f, -3, kI8);
    b.output(q(b, b.op(OpType::MatMul, {x, y}), 0.2f, 125, kU8));
    const Graph fused = convert(b.g, true), unfused = convert(b.g, false);
    // B broadcast over A's batches: the CPU's integer MatMul would not take it, so it stays float.
    EXPECT_EQ(countOps(fused, OpType::QLinearMatMul), broadcastB ? 0 : 1);
    EXPECT_EQ(countOps(fused, OpType::MatMul), broadcastB ? 1 : 0);
    const std::map<std::string, Tensor> feeds = {{"a", byteTensor(kU8, aShape, randomBytes(kU8, shapeElements(aShape), 7))},
                                                 {"b", byteTensor(kI8, bShape, randomBytes(kI8, shapeElements(bShape), 8))}};
    expectWithinOneStep(fused, unfused, feeds);
  }
}

}  // namespace
}  // namespace osprey::test
