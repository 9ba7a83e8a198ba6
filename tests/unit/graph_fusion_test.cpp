// The converter's pattern fusions (LayerNorm, GELU, attention, SiLU, bias and residual Adds) and
// static shape folding: small exported-style graphs are built here, rewritten, checked for the
// fused op, and (where the fused op runs in this build) run against the original on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>

#include "../ops/op_test_util.h"
#include "converter/passes/passes.h"
#include "ops/activation.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

// x -> LayerNorm decomposition over the last axis of (2, 7, 13); `square` picks Pow or Mul.
GraphBuilder layerNormGraph(bool powSquare, bool affine) {
  GraphBuilder b;
  const int x = b.input("x", {2, 7, 13});
  const int mean = b.op(OpType::ReduceMean, {x, b.axes(-1)});
  const int centred = b.op(OpType::Sub, {x, mean});
  const int sq = powSquare ? b.op(OpType::Pow, {centred, b.scalar(2.f)}) : b.op(OpType::Mul, {centred, centred});
  const int var = b.op(OpType::ReduceMean, {sq, b.axes(-1)});
  const int stdev = b.op(OpType::Sqrt, {b.op(OpType::Add, {var, b.scalar(1e-5f)})});
  int y = b.op(OpType::Div, {centred, stdev});
  if (affine) {
    std::vector<float> gamma(13), beta(13);
    for (int i = 0; i < 13; ++i) gamma[i] = 0.5f + 0.1f * i, beta[i] = 0.05f * i - 0.3f;
    y = b.op(OpType::Mul, {b.floats(gamma, {13}), y});
    y = b.op(OpType::Add, {y, b.floats(beta, {13})});
  }
  b.output(y);
  return b;
}

void expectSameOutputs(const Graph& unfused, const Graph& fused, const Shape& shape, double tol) {
  std::map<std::string, Tensor> feeds{{"x", randomTensor(DataType::Float32, shape, 7, -3.0, 3.0)}};
  Tensor want = runGraph(unfused, feeds), got = runGraph(fused, feeds);
  EXPECT_LE(maxAbsDiff(got, want), tol);
}

TEST(TransformerFusion, LayerNormWithPowAndAffine) {
  GraphBuilder b = layerNormGraph(true, true);
  Graph fused = b.g;
  EXPECT_EQ(passes::fuseLayerNorm(fused), 1);
  EXPECT_EQ(countOps(fused, OpType::LayerNormalization), 1);
  EXPECT_EQ(fused.nodes.size(), 1u);
  expectSameOutputs(b.g, fused, {2, 7, 13}, 2e-5);
}

TEST(TransformerFusion, LayerNormWithMulSquareNoAffineNeedsKnownLength) {
  GraphBuilder b = layerNormGraph(false, false);
  Graph fused = b.g;
  EXPECT_EQ(passes::fuseLayerNorm(fused), 1);  // x's shape (…, 13) is recorded
  EXPECT_EQ(countOps(fused, OpType::LayerNormalization), 1);
  expectSameOutputs(b.g, fused, {2, 7, 13}, 2e-5);
  Graph unknown = b.g;
  unknown.tensors[unknown.inputs[0]].hasShape = false;
  unknown.tensors[unknown.inputs[0]].shape.clear();
  EXPECT_EQ(passes::fuseLayerNorm(unknown), 0);  // no scale length to make ones of
}

TEST(TransformerFusion, LayerNormLeftAloneWhenIntermediateIsShared) {
  GraphBuilder b = layerNormGraph(true, true);
  b.output(b.g.nodes[1].outputs[0]);  // x - mean is also a graph output
  EXPECT_EQ(passes::fuseLayerNorm(b.g), 0);
  GraphBuilder wrongAxis = layerNormGraph(true, true);
  wrongAxis.g.nodes[0].inputs[1] = wrongAxis.axes(1);  // mean over axis 1, variance over -1
  EXPECT_EQ(passes::fuseLayerNorm(wrongAxis.g), 0);
  GraphBuilder wrongEps = layerNormGraph(true, true);
  wrongEps.g.nodes[2].inputs[1] = wrongEps.scalar(3.f);  // cube, not square
  EXPECT_EQ(passes::fuseLayerNorm(wrongEps.g), 0);
}

// GELU in the three exported orders of x * 0.5 * (1 + erf(x / sqrt2)).
GraphBuilder geluGraph(int order, bool divide) {
  GraphBuilder b;
  const int x = b.input("x", {3, 37});
  // The Mul form puts the constant first, as some exporters do.
  const int scaled = divide ? b.op(OpType::Div, {x, b.scalar(1.4142135f)}) : b.op(OpType::Mul, {b.scalar(0.70710678f), x});
  const int onePlus = b.op(OpType::Add, {b.op(OpType::Erf, {scaled}), b.scalar(1.f)});
  int y;
  if (order == 0)
    y = b.op(OpType::Mul, {b.op(OpType::Mul, {x, onePlus}), b.scalar(0.5f)});
  else if (order == 1)
    y = b.op(OpType::Mul, {b.op(OpType::Mul, {x, b.scalar(0.5f)}), onePlus});
  else
    y = b.op(OpType::Mul, {x, b.op(OpType::Mul, {onePlus, b.scalar(0.5f)})});
  b.output(y);
  return b;
}

TEST(TransformerFusion, GeluInEveryExportedOrder) {
  for (int order = 0; order < 3; ++order)
    for (bool divide : {true, false}) {
      GraphBuilder b = geluGraph(order, divide);
      Graph fused = b.g;
      EXPECT_EQ(passes::fuseGelu(fused), 1) << "order " << order;
      EXPECT_EQ(fused.nodes.size(), 1u);
      EXPECT_EQ(countOps(fused, OpType::Gelu), 1);
      expectSameOutputs(b.g, fused, {3, 37}, 1e-5);
    }
}

TEST(TransformerFusion, GeluLeftAloneForOtherConstants) {
  GraphBuilder b = geluGraph(0, true);
  b.g.nodes.back().inputs[1] = b.scalar(0.25f);  // x * (1 + erf) * 0.25 is not GELU
  EXPECT_EQ(passes::fuseGelu(b.g), 0);
  GraphBuilder c = geluGraph(0, true);
  c.g.nodes[0].inputs[1] = c.scalar(2.f);  // erf(x / 2)
  EXPECT_EQ(passes::fuseGelu(c.g), 0);
  GraphBuilder flipped = geluGraph(0, true);
  std::swap(flipped.g.nodes[0].inputs[0], flipped.g.nodes[0].inputs[1]);  // sqrt2 / x is not x / sqrt2
  EXPECT_EQ(passes::fuseGelu(flipped.g), 0);
  GraphBuilder d = geluGraph(1, true);
  d.output(d.g.nodes[1].outputs[0]);  // erf output also a graph output
  EXPECT_EQ(passes::fuseGelu(d.g), 0);
}

// nn.MultiheadAttention's export: q, k, v [S, B, E] split into N = B * heads heads of D.
GraphBuilder attentionGraph(int64_t sq, int64_t skv, int64_t batch, int64_t heads, int64_t dim, bool scaleAfter) {
  GraphBuilder b;
  const int64_t n = batch * heads, e = heads * dim;
  const int q = b.input("q", {sq, batch, e}), k = b.input("k", {skv, batch, e}), v = b.input("v", {skv, batch, e});
  const int qh = b.transpose(b.op(OpType::Reshape, {q, b.ints({sq, n, dim})}), {1, 0, 2});
  const int kt = b.transpose(b.op(OpType::Reshape, {k, b.ints({skv, n, dim})}), {1, 2, 0});
  const int vh = b.transpose(b.op(OpType::Reshape, {v, b.ints({skv, n, dim})}), {1, 0, 2});
  const float c = std::sqrt(static_cast<float>(dim));
  int scores;
  if (scaleAfter)
    scores = b.op(OpType::Div, {b.op(OpType::MatMul, {qh, kt}), b.scalar(c)});
  else
    scores = b.op(OpType::MatMul, {b.op(OpType::Div, {qh, b.scalar(c)}), kt});
  const int probs = b.op(OpType::Softmax, {scores});
  const int merged = b.transpose(b.op(OpType::MatMul, {probs, vh}), {1, 0, 2});
  b.output(b.op(OpType::Reshape, {merged, b.ints({sq * batch, e})}));
  return b;
}

void expectSameAttention(const GraphBuilder& b, int64_t sq, int64_t skv, int64_t batch, int64_t e) {
  Graph fused = b.g;
  ASSERT_EQ(passes::fuseAttention(fused), 1);
  EXPECT_EQ(countOps(fused, OpType::Attention), 1);
  EXPECT_EQ(countOps(fused, OpType::Softmax), 0);
  EXPECT_EQ(countOps(fused, OpType::Transpose), 0);
  std::map<std::string, Tensor> feeds{{"q", randomTensor(DataType::Float32, {sq, batch, e}, 1, -2.0, 2.0)},
                                      {"k", randomTensor(DataType::Float32, {skv, batch, e}, 2, -2.0, 2.0)},
                                      {"v", randomTensor(DataType::Float32, {skv, batch, e}, 3, -2.0, 2.0)}};
  Tensor want = runGraph(b.g, feeds), got = runGraph(fused, feeds);
  EXPECT_LE(maxAbsDiff(got, want), 1e-5);
}

TEST(TransformerFusion, AttentionFromMultiheadAttentionExport) {
  expectSameAttention(attentionGraph(7, 7, 1, 3, 4, false), 7, 7, 1, 12);
  expectSameAttention(attentionGraph(5, 9, 2, 3, 8, false), 5, 9, 2, 24);  // batch 2, cross-attention lengths
  expectSameAttention(attentionGraph(13, 13, 1, 2, 5, true), 13, 13, 1, 10);  // scale after QK^T
}

TEST(TransformerFusion, AttentionLeftAloneWhenStructureDiffers) {
  GraphBuilder wrongPerm = attentionGraph(7, 7, 1, 3, 4, false);
  for (auto& n : wrongPerm.g.nodes)
    if (n.type == OpType::Transpose && n.getInts("perm") == std::vector<int64_t>{1, 2, 0}) n.setInts("perm", {1, 0, 2});
  EXPECT_EQ(passes::fuseAttention(wrongPerm.g), 0);
  GraphBuilder sharedProbs = attentionGraph(7, 7, 1, 3, 4, false);
  for (auto& n : sharedProbs.g.nodes)
    if (n.type == OpType::Softmax) sharedProbs.output(n.outputs[0]);  // probabilities also returned
  EXPECT_EQ(passes::fuseAttention(sharedProbs.g), 0);
  GraphBuilder inferred = attentionGraph(7, 7, 1, 3, 4, false);
  inferred.g.nodes[0].inputs[1] = inferred.ints({7, -1, 4});  // q's head count left to inference
  EXPECT_EQ(passes::fuseAttention(inferred.g), 0);
}

// foldShapes: Reshape(x, Concat(Shape(x)[:1], [-1])) as exporters write a flatten.
GraphBuilder flattenGraph(const Shape& xShape) {
  GraphBuilder b;
  const int x = b.input("x", xShape);
  const int shape = b.op(OpType::Shape, {x});
  const int first = b.op(OpType::Slice, {shape, b.ints({0}), b.ints({1})});
  const int target = b.op(OpType::Concat, {first, b.ints({-1})});
  b.g.nodes.back().setInt("axis", 0);
  b.output(b.op(OpType::Relu, {b.op(OpType::Reshape, {x, target})}));
  return b;
}

TEST(FoldShapes, ShapeOfStaticInputBecomesConstant) {
  GraphBuilder b = flattenGraph({2, 3, 4});
  Graph folded = b.g;
  EXPECT_EQ(passes::foldShapes(folded), 3);  // Shape, then the Slice and Concat after it
  EXPECT_EQ(countOps(folded, OpType::Shape), 0);
  ASSERT_EQ(folded.nodes.size(), 2u);
  EXPECT_TRUE(folded.tensors[folded.nodes[0].inputs[1]].isConstant);  // the Reshape's target
  for (const Node& n : folded.nodes) {  // every shape recorded
    const TensorInfo& t = folded.tensors[n.outputs[0]];
    EXPECT_TRUE(t.hasShape);
    EXPECT_EQ(t.shape, (Shape{2, 12}));
    EXPECT_EQ(t.dtype, DataType::Float32);
  }
  expectSameOutputs(b.g, folded, {2, 3, 4}, 0.0);
}

TEST(FoldShapes, SymbolicInputLeavesGraphAsItIs) {
  GraphBuilder b = flattenGraph({-1, 3, 4});
  EXPECT_EQ(passes::foldShapes(b.g), 0);
  EXPECT_EQ(countOps(b.g, OpType::Shape), 1);
  for (const Node& n : b.g.nodes) EXPECT_FALSE(b.g.tensors[n.outputs[0]].hasShape);
}

TEST(FoldShapes, RuntimeValuesStopTheInference) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3});
  const int nz = b.op(OpType::NonZero, {x});                        // data-dependent shape
  const int nzShape = b.op(OpType::Shape, {nz});                    // not foldable
  const int cast = b.op(OpType::Cast, {x});                         // static shape, runtime value
  b.g.nodes.back().setInt("to", static_cast<int64_t>(DataType::Int64));
  const int reshaped = b.op(OpType::Reshape, {x, b.op(OpType::Abs, {b.ints({3, 2})})});  // folds
  const int byValue = b.op(OpType::Reshape, {x, b.op(OpType::Slice, {cast, b.ints({0}), b.ints({1})})});
  for (int t : {nzShape, reshaped, byValue}) b.output(t);
  EXPECT_EQ(passes::foldShapes(b.g), 1);  // the Abs
  EXPECT_EQ(countOps(b.g, OpType::Shape), 1);
  EXPECT_FALSE(b.g.tensors[nz].hasShape);
  EXPECT_FALSE(b.g.tensors[nzShape].hasShape);
  EXPECT_EQ(b.g.tensors[cast].shape, (Shape{2, 3}));
  EXPECT_EQ(b.g.tensors[cast].dtype, DataType::Int64);
  EXPECT_EQ(b.g.tensors[reshaped].shape, (Shape{3, 2}));
  EXPECT_FALSE(b.g.tensors[byValue].hasShape);  // its shape is a run-time value
}

// A constant op of much work (a fuzzer's MaxPool over a huge window stalled conversion and
// resize) stays an op that runs under the run's limits; a cheap one still folds.
TEST(FoldConstants, LeavesAnExpensiveConstantOpToTheRun) {
  constexpr int64_t kH = 32, kW = 4096;
  std::vector<float> ramp(kH * kW);
  for (int64_t h = 0; h < kH; ++h)
    for (int64_t w = 0; w < kW; ++w) ramp[h * kW + w] = static_cast<float>(h) + 0.001f * static_cast<float>(w);
  auto pooled = [&](int64_t kernelW) {
    GraphBuilder b;
    b.output(b.op(OpType::MaxPool, {b.floats(ramp, {1, 1, kH, kW})}));
    b.g.nodes.back().setInts("kernel_shape", {kH, kernelW});
    return b;
  };
  GraphBuilder cheap = pooled(2), costly = pooled(kW / 2);  // 4095 x 64 taps; 2049 x 65536 taps
  int folded = 0;
  ASSERT_TRUE(passes::foldConstants(cheap.g, &folded).isOk());
  EXPECT_EQ(folded, 1);
  ASSERT_TRUE(passes::foldConstants(costly.g, &folded).isOk());
  EXPECT_EQ(folded, 0);
  ASSERT_EQ(countOps(costly.g, OpType::MaxPool), 1);
  Tensor y = runGraph(costly.g, {});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 1, kW / 2 + 1}));
  for (int64_t o = 0; o <= kW / 2; ++o) ASSERT_EQ(y.data<float>()[o], ramp[(kH - 1) * kW + o + kW / 2 - 1]) << o;
}

// PyTorch 2.x's scaled_dot_product_attention export after foldShapes: q, k, v [S, B, E] split
// into [B, H, S, D] views, K^T by Transpose [0, 1, 3, 2], sqrt(scale) on each side (`scaleMode`
// 0), or 1/sqrt(D) as a Div of q only (1) or of the scores (2); heads merged by [2, 0, 1, 3].
GraphBuilder sdpaGraph(int64_t sq, int64_t skv, int64_t batch, int64_t heads, int64_t dim, int scaleMode,
                       int64_t softmaxAxis = -1) {
  GraphBuilder b;
  const int64_t n = batch * heads, e = heads * dim;
  const int q = b.input("q", {sq, batch, e}), k = b.input("k", {skv, batch, e}), v = b.input("v", {skv, batch, e});
  auto split = [&](int src, int64_t s) {
    const int nsd = b.transpose(b.op(OpType::Reshape, {src, b.ints({s, n, dim})}), {1, 0, 2});
    return b.op(OpType::Reshape, {nsd, b.ints({batch, heads, s, dim})});
  };
  int q4 = split(q, sq);
  int kt = b.transpose(split(k, skv), {0, 1, 3, 2});
  const int v4 = split(v, skv);
  const float root = std::sqrt(1.f / std::sqrt(static_cast<float>(dim)));
  if (scaleMode == 0) {
    q4 = b.op(OpType::Mul, {q4, b.floats({root}, {1})});
    kt = b.op(OpType::Mul, {b.floats({root}, {1}), kt});
  } else if (scaleMode == 1) {
    q4 = b.op(OpType::Div, {q4, b.scalar(std::sqrt(static_cast<float>(dim)))});
  }
  int scores = b.op(OpType::MatMul, {q4, kt});
  if (scaleMode == 2) scores = b.op(OpType::Div, {scores, b.scalar(std::sqrt(static_cast<float>(dim)))});
  const int probs = b.op(OpType::Softmax, {scores});
  b.g.nodes.back().setInt("axis", softmaxAxis);
  const int merged = b.transpose(b.op(OpType::MatMul, {probs, v4}), {2, 0, 1, 3});
  b.output(b.op(OpType::Reshape, {merged, b.ints({sq * batch, e})}));
  return b;
}

TEST(TransformerFusion, AttentionFromScaledDotProductExport) {
  expectSameAttention(sdpaGraph(5, 5, 2, 2, 8, 0), 5, 5, 2, 16);
  expectSameAttention(sdpaGraph(7, 9, 3, 4, 3, 0, 3), 7, 9, 3, 12);  // cross lengths, axis 3
  expectSameAttention(sdpaGraph(6, 6, 1, 3, 4, 1), 6, 6, 1, 12);
  expectSameAttention(sdpaGraph(4, 8, 2, 1, 5, 2), 4, 8, 2, 5);
}

TEST(TransformerFusion, ScaledDotProductLeftAloneWhenStructureDiffers) {
  GraphBuilder axis2 = sdpaGraph(5, 5, 2, 2, 8, 0, 2);  // Softmax over the query axis
  EXPECT_EQ(passes::fuseAttention(axis2.g), 0);
  GraphBuilder merge = sdpaGraph(5, 5, 2, 2, 8, 0);
  for (auto& nd : merge.g.nodes)
    if (nd.type == OpType::Transpose && nd.getInts("perm") == std::vector<int64_t>{2, 0, 1, 3}) nd.setInts("perm", {2, 1, 0, 3});
  EXPECT_EQ(passes::fuseAttention(merge.g), 0);
  GraphBuilder split = sdpaGraph(5, 5, 2, 2, 8, 0);  // k viewed as [4, 1, S, D]: heads disagree
  ASSERT_EQ(split.g.nodes[5].type, OpType::Reshape);
  split.g.nodes[5].inputs[1] = split.ints({4, 1, 5, 8});
  EXPECT_EQ(passes::fuseAttention(split.g), 0);
  GraphBuilder scale = sdpaGraph(5, 5, 2, 2, 8, 0);  // a per-column factor is not a scale
  for (auto& nd : scale.g.nodes)
    if (nd.type == OpType::Mul) {
      nd.inputs[1] = scale.floats(std::vector<float>(8, 0.5f), {8});
      break;
    }
  EXPECT_EQ(passes::fuseAttention(scale.g), 0);
}

// MatMul(x, W) + bias: the rewrite only (the 3-input MatMul runs on another branch).
TEST(BiasFusion, MatMulBiasAddBecomesThirdInput) {
  for (bool biasFirst : {false, true}) {
    for (const Shape& biasShape : {Shape{5}, Shape{1, 1, 5}}) {
      GraphBuilder b;
      const int x = b.input("x", {2, 3, 4});
      std::vector<float> w(20, 0.25f), bias(5, 1.f);
      const int mm = b.op(OpType::MatMul, {x, b.floats(w, {4, 5})});
      const int c = b.floats(bias, biasShape);
      const int y = b.op(OpType::Add, biasFirst ? std::vector<int>{c, mm} : std::vector<int>{mm, c});
      b.output(y);
      ASSERT_EQ(passes::fuseMatMulBias(b.g), 1);
      ASSERT_EQ(b.g.nodes.size(), 1u);
      const Node& n = b.g.nodes[0];
      EXPECT_EQ(n.type, OpType::MatMul);
      ASSERT_EQ(n.inputs.size(), 3u);
      EXPECT_EQ(n.inputs[0], x);
      EXPECT_EQ(b.g.tensors[n.inputs[2]].shape, (Shape{5}));
      EXPECT_TRUE(b.g.tensors[n.inputs[2]].isConstant);
      if (biasShape.size() == 1) EXPECT_EQ(n.inputs[2], c);
      EXPECT_EQ(n.outputs, std::vector<int>{y});
    }
  }
}

// The integer products with a float result take the bias too, at their own bias input, with
// the same result.
TEST(BiasFusion, IntegerMatMulToFloatTakesTheBiasAdd) {
  for (bool dynamic : {false, true}) {
    GraphBuilder b;
    const int64_t K = 6, N = 5;
    const int x = b.input("x", {3, K}, dynamic ? DataType::Float32 : DataType::UInt8);
    std::vector<int64_t> w(K * N);
    for (int64_t i = 0; i < K * N; ++i) w[i] = (i * 37) % 255 - 127;
    const int weights = b.integers(DataType::Int8, w, {K, N});
    const int wScale = b.floats({0.02f, 0.03f, 0.01f, 0.05f, 0.04f}, {N});
    const int mm = dynamic ? b.op(OpType::DynamicQuantizeMatMul, {x, weights, wScale})
                           : b.op(OpType::MatMulIntegerToFloat,
                                  {x, weights, b.scalar(0.1f), wScale, b.integers(DataType::UInt8, {120}, {})});
    const int y = b.op(OpType::Add, {b.floats({1.f, -2.f, 0.5f, 3.f, -0.25f}, {N}), mm});
    b.output(y);
    Tensor feed(dynamic ? DataType::Float32 : DataType::UInt8, {3, K});
    for (int64_t i = 0; i < 3 * K; ++i) {
      if (dynamic)
        feed.data<float>()[i] = 0.1f * static_cast<float>(i % 11) - 0.4f;
      else
        feed.data<uint8_t>()[i] = static_cast<uint8_t>(i * 29 % 256);
    }
    const Tensor before = runGraph(b.g, {{"x", feed}});
    ASSERT_EQ(passes::fuseMatMulBias(b.g), 1);
    ASSERT_EQ(b.g.nodes.size(), 1u);
    const Node& n = b.g.nodes[0];
    const size_t at = dynamic ? 4 : 6;
    ASSERT_EQ(n.inputs.size(), at + 1);
    EXPECT_EQ(b.g.tensors[n.inputs[at]].shape, (Shape{N}));
    if (!dynamic) {
      EXPECT_EQ(n.inputs[5], -1);  // b_zero_point left out, as before
    }
    EXPECT_EQ(n.outputs, std::vector<int>{y});
    const Tensor after = runGraph(b.g, {{"x", feed}});
    for (int64_t i = 0; i < 3 * N; ++i) EXPECT_FLOAT_EQ(after.data<float>()[i], before.data<float>()[i]) << i;
  }
}

TEST(BiasFusion, MatMulBiasLeftAloneWhenItWouldChangeTheResult) {
  auto graph = [](const Shape& biasShape, bool shareProduct, bool constantW) {
    GraphBuilder b;
    const int x = b.input("x", {3, 4});
    const int w = constantW ? b.floats(std::vector<float>(20, 0.5f), {4, 5}) : b.input("w", {4, 5});
    const int mm = b.op(OpType::MatMul, {x, w});
    b.output(b.op(OpType::Add, {mm, b.floats(std::vector<float>(shapeElements(biasShape), 1.f), biasShape)}));
    if (shareProduct) b.output(mm);
    return b;
  };
  for (auto b : {graph({3, 5}, false, true), graph({1, 1, 5}, false, true), graph({5}, true, true),
                 graph({5}, false, false), graph({1}, false, true)})
    EXPECT_EQ(passes::fuseMatMulBias(b.g), 0);
}

// Conv(x) + z: the rewrite only (the 4-input Conv runs on another branch).
GraphBuilder residualGraph(bool zFirst, bool relu, bool inferShapes = true) {
  GraphBuilder b;
  const int x = b.input("x", {1, 2, 5, 5});
  int z = zFirst ? b.op(OpType::Sigmoid, {x}) : -1;
  const int conv = b.op(OpType::Conv, {x, b.floats(std::vector<float>(2 * 2 * 3 * 3, 0.1f), {2, 2, 3, 3}),
                                       b.floats({0.5f, -0.5f}, {2})});
  b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  if (!zFirst) z = b.op(OpType::Sigmoid, {x});
  int y = b.op(OpType::Add, {z, conv});
  if (relu) y = b.op(OpType::Relu, {y});
  b.output(y);
  if (inferShapes) passes::foldShapes(b.g);
  return b;
}

TEST(ResidualFusion, ConvAddBecomesFourthInputThenActivationFuses) {
  GraphBuilder b = residualGraph(true, true);
  const int z = b.g.nodes[0].outputs[0];
  ASSERT_EQ(passes::fuseConvResidual(b.g), 1);
  EXPECT_EQ(countOps(b.g, OpType::Add), 0);
  EXPECT_EQ(passes::fuseActivations(b.g), 1);
  ASSERT_EQ(b.g.nodes.size(), 2u);
  const Node& conv = b.g.nodes[1];
  EXPECT_EQ(conv.type, OpType::Conv);
  ASSERT_EQ(conv.inputs.size(), 4u);
  EXPECT_EQ(conv.inputs[3], z);
  EXPECT_TRUE(conv.hasAttr("activation"));
  EXPECT_EQ(conv.outputs[0], b.g.outputs[0]);
}

TEST(ResidualFusion, LaterConvTakesTheEarlierAsResidual) {
  GraphBuilder b;
  const int x = b.input("x", {1, 2, 4, 4});
  const int w = b.floats(std::vector<float>(4, 0.5f), {2, 2, 1, 1});
  const int c1 = b.op(OpType::Conv, {x, w});
  const int c2 = b.op(OpType::Conv, {x, w});
  b.output(b.op(OpType::Add, {c2, c1}));
  passes::foldShapes(b.g);
  ASSERT_EQ(passes::fuseConvResidual(b.g), 1);
  ASSERT_EQ(b.g.nodes.size(), 2u);
  EXPECT_EQ(b.g.nodes[0].inputs.size(), 2u);
  ASSERT_EQ(b.g.nodes[1].inputs.size(), 4u);
  EXPECT_EQ(b.g.nodes[1].inputs[2], -1);  // no bias
  EXPECT_EQ(b.g.nodes[1].inputs[3], c1);
}

TEST(ResidualFusion, ConvAddLeftAloneWhenTheResidualDoesNotFit) {
  GraphBuilder late = residualGraph(false, false);  // z computed after the Conv
  EXPECT_EQ(passes::fuseConvResidual(late.g), 0);
  GraphBuilder broadcast;  // z broadcasts over the output
  const int x = broadcast.input("x", {1, 2, 5, 5}), z = broadcast.input("z", {1, 2, 1, 1});
  const int conv = broadcast.op(OpType::Conv, {x, broadcast.floats(std::vector<float>(4, 1.f), {2, 2, 1, 1})});
  broadcast.output(broadcast.op(OpType::Add, {conv, z}));
  passes::foldShapes(broadcast.g);
  EXPECT_EQ(passes::fuseConvResidual(broadcast.g), 0);
  GraphBuilder unknown = residualGraph(true, false, false);  // shapes not known (foldShapes not run)
  EXPECT_EQ(passes::fuseConvResidual(unknown.g), 0);
  GraphBuilder fusedAlready = residualGraph(true, false);
  fusedAlready.g.nodes[1].setString("activation", "Relu");
  EXPECT_EQ(passes::fuseConvResidual(fusedAlready.g), 0);
}

// The fused graph is one `type` node whose epilogue applies `kind` with parameter a.
void expectOneOpWithActivation(const Graph& fused, OpType type, FusedActivation::Kind kind, float a) {
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].type, type);
  FusedActivation act;
  ASSERT_TRUE(FusedActivation::fromNode(fused.nodes[0], &act));
  EXPECT_EQ(act.kind, kind);
  EXPECT_EQ(act.a, a);
}

TEST(ActivationFusion, ConvSiluBecomesConvWithSwish) {
  // EfficientNet's Conv -> Sigmoid -> Mul: one Conv whose epilogue applies Swish.
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 6, 7});
  const int w = b.floats({0.5f, -1.f, 0.25f, 2.f, -0.5f, 1.f}, {2, 3, 1, 1});
  const int conv = b.op(OpType::Conv, {x, w});
  b.output(b.op(OpType::Mul, {conv, b.op(OpType::Sigmoid, {conv})}));
  Graph fused = b.g;
  EXPECT_EQ(passes::fuseSwish(fused), 1);
  EXPECT_EQ(passes::fuseActivations(fused), 1);
  expectOneOpWithActivation(fused, OpType::Conv, FusedActivation::Kind::Swish, 1.f);
  expectSameOutputs(b.g, fused, {1, 3, 6, 7}, 1e-6);
}

TEST(ActivationFusion, FloatMatMulTakesGeluIntegerMatMulDoesNot) {
  // ViT's MLP: MatMul (+ bias) -> Gelu becomes one MatMul with the activation, once shape
  // inference has recorded the product as float; an integer product keeps its Relu.
  GraphBuilder b;
  const int x = b.input("x", {2, 5, 4});
  std::vector<float> w(4 * 6);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  b.output(b.op(OpType::Gelu, {b.op(OpType::MatMul, {x, b.floats(w, {4, 6})})}));
  Graph unknown = b.g;
  EXPECT_EQ(passes::fuseActivations(unknown), 0);  // no dtype recorded yet for the product
  passes::foldShapes(b.g);
  Graph fused = b.g;
  EXPECT_EQ(passes::fuseActivations(fused), 1);
  expectOneOpWithActivation(fused, OpType::MatMul, FusedActivation::Kind::Gelu, 0.f);  // a = 0: the erf form
  expectSameOutputs(b.g, fused, {2, 5, 4}, 1e-5);

  GraphBuilder integer;
  const int xi = integer.input("x", {3, 4}), wi = integer.input("w", {4, 2});
  integer.g.tensors[xi].dtype = integer.g.tensors[wi].dtype = DataType::Int32;
  integer.output(integer.op(OpType::Relu, {integer.op(OpType::MatMul, {xi, wi})}));
  passes::foldShapes(integer.g);
  EXPECT_EQ(passes::fuseActivations(integer.g), 0);
}

TEST(ActivationFusion, SiluBecomesSwish) {
  for (bool gateFirst : {false, true}) {
    GraphBuilder b;
    const int x = b.input("x", {2, 3, 19});
    const int gate = b.op(OpType::Sigmoid, {x});
    b.output(b.op(OpType::Mul, gateFirst ? std::vector<int>{gate, x} : std::vector<int>{x, gate}));
    Graph fused = b.g;
    EXPECT_EQ(passes::fuseSwish(fused), 1);
    ASSERT_EQ(fused.nodes.size(), 1u);
    EXPECT_EQ(fused.nodes[0].type, OpType::Swish);
    expectSameOutputs(b.g, fused, {2, 3, 19}, 1e-6);
  }
  GraphBuilder other;  // y * Sigmoid(x) is a gate, not SiLU
  const int x = other.input("x", {4}), y = other.input("y", {4});
  other.output(other.op(OpType::Mul, {y, other.op(OpType::Sigmoid, {x})}));
  EXPECT_EQ(passes::fuseSwish(other.g), 0);
  GraphBuilder shared;  // the gate is also returned
  const int xs = shared.input("x", {4});
  const int gate = shared.op(OpType::Sigmoid, {xs});
  shared.output(shared.op(OpType::Mul, {xs, gate}));
  shared.output(gate);
  EXPECT_EQ(passes::fuseSwish(shared.g), 0);
}

}  // namespace
}  // namespace osprey::test
