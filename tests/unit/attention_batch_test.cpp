// foldAttentionBatchTransposes: a batch-first nn.MultiheadAttention export (Transposes around
// a sequence-first body) optimised into an Attention batched over B with no Transpose left,
// giving the unoptimised graph's values; structures it must not touch keep their Transposes.
#include <gtest/gtest.h>

#include <map>

#include "../ops/op_test_util.h"
#include "converter/converter.h"
#include "converter/passes/passes.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

struct MhaShape {
  int64_t batch, seq, heads, dim;
  int64_t embed() const { return heads * dim; }
};

int constantFloats(GraphBuilder& b, const Shape& shape, uint32_t seed) {
  return b.weights(randomTensor(DataType::Float32, shape, seed, -0.5, 0.5));
}

// x [B, S, E] -> Transpose -> packed projection + bias -> q, k, v Slices (or PyTorch 2's split:
// Gathers of [S, B, 3, E] with the 3 moved to the front) -> head split [S, N, D] ->
// softmax(q k^T / sqrt(D)) v -> head merge -> [S * B, E] -> output Gemm -> [S, B, E] -> Transpose.
GraphBuilder batchFirstAttention(const MhaShape& s, bool gatherSplit = false) {
  GraphBuilder b;
  const int64_t E = s.embed(), N = s.batch * s.heads;
  const int x = b.input("x", {s.batch, s.seq, E});
  const int rows = b.transpose(x, {1, 0, 2});
  const int packed = b.op(OpType::Add, {b.op(OpType::MatMul, {rows, constantFloats(b, {E, 3 * E}, 11)}),
                                        constantFloats(b, {3 * E}, 12)});
  int front = -1;
  if (gatherSplit) {
    const int parts = b.op(OpType::Reshape, {packed, b.ints({s.seq, s.batch, 3, E})});
    const int moved = b.transpose(b.op(OpType::Unsqueeze, {parts, b.ints({0})}), {3, 1, 2, 0, 4});
    front = b.op(OpType::Squeeze, {moved, b.ints({3})});
  }
  auto part = [&](int64_t i) {
    if (gatherSplit) return b.op(OpType::Gather, {front, b.integers(DataType::Int64, {i}, {})});
    return b.op(OpType::Slice, {packed, b.ints({i * E}), b.ints({(i + 1) * E}), b.ints({-1})});
  };
  auto heads = [&](int t, std::vector<int64_t> perm) {
    return b.transpose(b.op(OpType::Reshape, {t, b.ints({s.seq, N, s.dim})}), std::move(perm));
  };
  const int q = heads(part(0), {1, 0, 2}), kt = heads(part(1), {1, 2, 0}), v = heads(part(2), {1, 0, 2});
  const int scaled = b.op(OpType::Div, {q, b.scalar(std::sqrt(static_cast<float>(s.dim)))});
  const int probs = b.op(OpType::Softmax, {b.op(OpType::MatMul, {scaled, kt})});
  const int merged = b.transpose(b.op(OpType::MatMul, {probs, v}), {1, 0, 2});
  const int flat = b.op(OpType::Reshape, {merged, b.ints({s.seq * s.batch, E})});
  const int projected = b.op(OpType::Gemm, {flat, constantFloats(b, {E, E}, 13), constantFloats(b, {E}, 14)});
  const int sequenceFirst = b.op(OpType::Reshape, {projected, b.ints({s.seq, s.batch, E})});
  b.output(b.transpose(sequenceFirst, {1, 0, 2}));
  return b;
}

Graph optimized(const Graph& g) {
  Graph out = g;
  EXPECT_TRUE(optimizeGraph(out).isOk());
  return out;
}

void expectSameValues(const Graph& original, const Graph& folded, const MhaShape& s) {
  std::map<std::string, Tensor> feeds{{"x", randomTensor(DataType::Float32, {s.batch, s.seq, s.embed()}, 5, -1.0, 1.0)}};
  EXPECT_LE(maxAbsDiff(runGraph(folded, feeds), runGraph(original, feeds)), 2e-5);
}

TEST(AttentionBatchTransposes, BatchFirstEncoderLosesBothTransposes) {
  for (const MhaShape& s : {MhaShape{3, 7, 2, 5}, MhaShape{1, 9, 3, 4}, MhaShape{4, 4, 1, 8}}) {
    const GraphBuilder b = batchFirstAttention(s);
    const Graph g = optimized(b.g);
    EXPECT_EQ(countOps(g, OpType::Transpose), 0) << s.batch << "x" << s.seq;
    EXPECT_EQ(countOps(g, OpType::Slice), 0);  // q, k and v each its own projection
    EXPECT_EQ(countOps(g, OpType::MatMul), 3);
    ASSERT_EQ(countOps(g, OpType::Attention), 1);
    for (const Node& n : g.nodes)
      if (n.type == OpType::Attention) {
        EXPECT_EQ(n.getInt("q_num_heads", 0), s.heads);
        EXPECT_EQ(n.getInt("kv_num_heads", 0), s.heads);
      }
    expectSameValues(b.g, g, s);
  }
}

TEST(AttentionBatchTransposes, PackedSplitOfPyTorch2BecomesSlices) {
  const MhaShape s{2, 6, 3, 4};
  const GraphBuilder b = batchFirstAttention(s, true);
  const Graph g = optimized(b.g);
  EXPECT_EQ(countOps(g, OpType::Transpose), 0);
  EXPECT_EQ(countOps(g, OpType::Gather), 0);
  EXPECT_EQ(countOps(g, OpType::Slice), 0);
  expectSameValues(b.g, g, s);
}

TEST(AttentionBatchTransposes, LeftAloneWhenTheBodyIsReadOutside) {
  const MhaShape s{2, 5, 2, 4};
  GraphBuilder shared = batchFirstAttention(s);
  for (const Node& n : shared.g.nodes)
    if (n.type == OpType::Gemm) shared.output(n.outputs[0]);  // a sequence-first tensor also returned
  const Graph g = optimized(shared.g);
  EXPECT_EQ(countOps(g, OpType::Transpose), 2);
  expectSameValues(shared.g, g, s);

  GraphBuilder rowsOfC = batchFirstAttention(s);  // the output Gemm's C a whole [S * B, E] matrix
  for (Node& n : rowsOfC.g.nodes)
    if (n.type == OpType::Gemm) n.inputs[2] = constantFloats(rowsOfC, {s.seq * s.batch, s.embed()}, 15);
  const Graph c = optimized(rowsOfC.g);
  EXPECT_EQ(countOps(c, OpType::Transpose), 2);
  expectSameValues(rowsOfC.g, c, s);

  GraphBuilder otherPerm = batchFirstAttention(s);
  otherPerm.g.nodes[0].setInts("perm", {0, 1, 2});  // no transpose in: the rows are batch-first already
  const Graph h = optimized(otherPerm.g);
  EXPECT_EQ(countOps(h, OpType::Attention), 1);
  for (const Node& n : h.nodes) {
    if (n.type != OpType::Attention) continue;
    EXPECT_EQ(n.getInt("q_num_heads", 0), s.batch * s.heads);
  }
  expectSameValues(otherPerm.g, h, s);
}

// x [5, 12] -> MatMul(W [12, 10], bias) -> Slices of columns: disjoint ranges split the product,
// an overlap or a reader that is not a column Slice keeps it whole.
GraphBuilder slicedProduct(const std::vector<std::pair<int64_t, int64_t>>& ranges, bool alsoReadWhole) {
  GraphBuilder b;
  const int x = b.input("x", {5, 12});
  const int y = b.op(OpType::MatMul, {x, constantFloats(b, {12, 10}, 21), constantFloats(b, {10}, 22)});
  for (auto [begin, end] : ranges) b.output(b.op(OpType::Slice, {y, b.ints({begin}), b.ints({end}), b.ints({1})}));
  if (alsoReadWhole) b.output(b.op(OpType::Relu, {y}));
  return b;
}

TEST(SplitSlicedProjections, DisjointColumnRangesBecomeProducts) {
  const GraphBuilder b = slicedProduct({{6, 10}, {0, 4}, {4, -4}}, false);  // [4, 6) written as 4..-4
  Graph g = b.g;
  ASSERT_TRUE(optimizeGraph(g).isOk());
  EXPECT_EQ(countOps(g, OpType::Slice), 0);
  EXPECT_EQ(countOps(g, OpType::MatMul), 3);
  std::map<std::string, Tensor> feeds{{"x", randomTensor(DataType::Float32, {5, 12}, 23, -1.0, 1.0)}};
  const std::vector<Tensor> want = runGraphOutputs(b.g, feeds), got = runGraphOutputs(g, feeds);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_LE(maxAbsDiff(got[i], want[i]), 1e-6) << i;
  for (const GraphBuilder& kept : {slicedProduct({{0, 6}, {4, 10}}, false), slicedProduct({{0, 5}, {5, 10}}, true)}) {
    Graph h = kept.g;
    ASSERT_TRUE(optimizeGraph(h).isOk());
    EXPECT_EQ(countOps(h, OpType::MatMul), 1);
  }
}

}  // namespace
}  // namespace osprey::test
