// BatchNormalization after MatMul / Gemm folded into one Gemm (passes::foldBatchNormIntoGemm):
// the rewrite, the same outputs as the unfolded graph on the CPU, and the cases left alone.
#include <gtest/gtest.h>

#include "../ops/op_test_util.h"
#include "converter/passes/passes.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

std::vector<float> randomFloats(size_t n, uint32_t seed, double lo, double hi) {
  const Tensor t = randomTensor(DataType::Float32, {static_cast<int64_t>(n)}, seed, lo, hi);
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

// x [rows, k] -> producer -> BN over `cout` columns; the producer's weights are [k, cout] or,
// for a Gemm with transB, [cout, k].
struct FoldCase {
  bool gemm = false, transB = false, withC = false, scalarC = false;
  float alpha = 1.f, beta = 1.f;
};

GraphBuilder foldGraph(const FoldCase& f, int64_t rows, int64_t k, int64_t cout, bool constantW = true) {
  GraphBuilder b;
  const int x = b.input("x", {rows, k});
  const Shape wShape = f.transB ? Shape{cout, k} : Shape{k, cout};
  const int w = constantW ? b.floats(randomFloats(k * cout, 3, -1, 1), wShape) : b.input("w", wShape);
  int y;
  if (f.gemm) {
    std::vector<int> in = {x, w};
    if (f.withC) in.push_back(f.scalarC ? b.floats({0.7f}, {1}) : b.floats(randomFloats(cout, 4, -1, 1), {cout}));
    y = b.op(OpType::Gemm, in);
    if (f.transB) b.g.nodes.back().setInt("transB", 1);
    b.g.nodes.back().setFloat("alpha", f.alpha);
    b.g.nodes.back().setFloat("beta", f.beta);
  } else {
    y = b.op(OpType::MatMul, {x, w});
  }
  const int bn = b.op(OpType::BatchNormalization,
                      {y, b.floats(randomFloats(cout, 5, 0.5, 1.5), {cout}), b.floats(randomFloats(cout, 6, -1, 1), {cout}),
                       b.floats(randomFloats(cout, 7, -1, 1), {cout}), b.floats(randomFloats(cout, 8, 0.2, 2), {cout})});
  b.g.nodes.back().setFloat("epsilon", 1e-3f);
  b.output(bn);
  passes::foldShapes(b.g);
  return b;
}

TEST(BatchNormGemmFold, MatMulAndGemmFoldIntoOneGemm) {
  std::vector<FoldCase> cases(6);
  cases[1].gemm = true;
  cases[2].gemm = true, cases[2].transB = true, cases[2].withC = true, cases[2].alpha = 0.5f, cases[2].beta = 2.f;
  cases[3].gemm = true, cases[3].withC = true, cases[3].scalarC = true, cases[3].beta = -1.f;
  cases[4].gemm = true, cases[4].transB = true;
  cases[5].gemm = true, cases[5].withC = true, cases[5].alpha = 3.f;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    GraphBuilder b = foldGraph(cases[i], 5, 13, 7);
    Graph folded = b.g;
    ASSERT_EQ(passes::foldBatchNormIntoGemm(folded), 1);
    ASSERT_EQ(folded.nodes.size(), 1u);
    EXPECT_EQ(folded.nodes[0].type, OpType::Gemm);
    std::map<std::string, Tensor> feeds{{"x", randomTensor(DataType::Float32, {5, 13}, 9, -2, 2)}};
    expectNear(runGraph(folded, feeds), runGraph(b.g, feeds), 1e-5, 1e-5);
  }
}

TEST(BatchNormGemmFold, LeftAloneWhenTheFoldWouldNotHold) {
  FoldCase plain;
  GraphBuilder variableW = foldGraph(plain, 5, 13, 7, false);
  EXPECT_EQ(passes::foldBatchNormIntoGemm(variableW.g), 0);
  GraphBuilder shared = foldGraph(plain, 5, 13, 7);
  shared.output(shared.g.nodes[0].outputs[0]);  // the product is an output too
  EXPECT_EQ(passes::foldBatchNormIntoGemm(shared.g), 0);
  // A 3-D product: BN's channel axis 1 is not the MatMul's column axis.
  GraphBuilder b;
  const int x = b.input("x", {2, 7, 4});
  const int y = b.op(OpType::MatMul, {x, b.floats(randomFloats(28, 1, -1, 1), {4, 7})});
  std::vector<int> bnInputs = {y};
  for (int i = 0; i < 4; ++i) bnInputs.push_back(b.floats(std::vector<float>(7, 1.f), {7}));
  b.output(b.op(OpType::BatchNormalization, bnInputs));
  passes::foldShapes(b.g);
  EXPECT_EQ(passes::foldBatchNormIntoGemm(b.g), 0);
}

}  // namespace
}  // namespace osprey::test
