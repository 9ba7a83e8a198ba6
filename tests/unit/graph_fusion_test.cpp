// The converter's pattern fusions (LayerNorm, GELU, attention, SiLU): small exported-style graphs
// are built here, fused, checked for the fused op, and run against the unfused graph on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>

#include "../ops/op_test_util.h"
#include "converter/passes/passes.h"

namespace osprey::test {
namespace {

class GraphBuilder {
 public:
  int input(const std::string& name, const Shape& shape) {
    TensorInfo t;
    t.name = name;
    t.dtype = DataType::Float32;
    t.shape = shape;
    const int idx = g.addTensor(t);
    g.inputs.push_back(idx);
    return idx;
  }
  int floats(const std::vector<float>& v, const Shape& shape) {
    TensorInfo t;
    t.name = "c" + std::to_string(g.tensors.size());
    t.dtype = DataType::Float32;
    t.shape = shape;
    t.isConstant = true;
    t.data = ConstantData::copyOf(v.data(), v.size() * 4);
    return g.addTensor(t);
  }
  int scalar(float v) { return floats({v}, {}); }
  int axes(int64_t a) {
    TensorInfo t;
    t.name = "axes" + std::to_string(g.tensors.size());
    t.dtype = DataType::Int64;
    t.shape = {1};
    t.isConstant = true;
    t.data = ConstantData::copyOf(&a, 8);
    return g.addTensor(t);
  }
  int ints(const std::vector<int64_t>& v) {
    TensorInfo t;
    t.name = "i" + std::to_string(g.tensors.size());
    t.dtype = DataType::Int64;
    t.shape = {static_cast<int64_t>(v.size())};
    t.isConstant = true;
    t.data = ConstantData::copyOf(v.data(), v.size() * 8);
    return g.addTensor(t);
  }
  int transpose(int x, std::vector<int64_t> perm) {
    const int y = op(OpType::Transpose, {x});
    g.nodes.back().setInts("perm", std::move(perm));
    return y;
  }
  int op(OpType type, std::vector<int> inputs) {
    Node n;
    n.type = type;
    n.name = "n" + std::to_string(g.nodes.size());
    n.inputs = std::move(inputs);
    TensorInfo t;
    t.name = n.name + "_out";
    t.hasShape = false;
    n.outputs = {g.addTensor(t)};
    g.nodes.push_back(n);
    return n.outputs[0];
  }
  void output(int t) { g.outputs.push_back(t); }
  Graph g;
};

int count(const Graph& g, OpType type) {
  int n = 0;
  for (auto& node : g.nodes) n += node.type == type;
  return n;
}

Tensor run(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> session;
  EXPECT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  std::vector<Tensor> out;
  Status st = session->run(feeds, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return out.empty() ? Tensor() : out[0];
}

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
  Tensor want = run(unfused, feeds), got = run(fused, feeds);
  EXPECT_LE(maxAbsDiff(got, want), tol);
}

TEST(TransformerFusion, LayerNormWithPowAndAffine) {
  GraphBuilder b = layerNormGraph(true, true);
  Graph fused = b.g;
  EXPECT_EQ(passes::fuseLayerNorm(fused), 1);
  EXPECT_EQ(count(fused, OpType::LayerNormalization), 1);
  EXPECT_EQ(fused.nodes.size(), 1u);
  expectSameOutputs(b.g, fused, {2, 7, 13}, 2e-5);
}

TEST(TransformerFusion, LayerNormWithMulSquareNoAffineNeedsKnownLength) {
  GraphBuilder b = layerNormGraph(false, false);
  Graph fused = b.g;
  EXPECT_EQ(passes::fuseLayerNorm(fused), 1);  // x's shape (…, 13) is recorded
  EXPECT_EQ(count(fused, OpType::LayerNormalization), 1);
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
      EXPECT_EQ(count(fused, OpType::Gelu), 1);
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
  EXPECT_EQ(count(fused, OpType::Attention), 1);
  EXPECT_EQ(count(fused, OpType::Softmax), 0);
  EXPECT_EQ(count(fused, OpType::Transpose), 0);
  std::map<std::string, Tensor> feeds{{"q", randomTensor(DataType::Float32, {sq, batch, e}, 1, -2.0, 2.0)},
                                      {"k", randomTensor(DataType::Float32, {skv, batch, e}, 2, -2.0, 2.0)},
                                      {"v", randomTensor(DataType::Float32, {skv, batch, e}, 3, -2.0, 2.0)}};
  Tensor want = run(b.g, feeds), got = run(fused, feeds);
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
