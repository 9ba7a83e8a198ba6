// passes::fuseActivationPatterns: x * Tanh(Softplus(x)) into Mish and x * HardSigmoid(x) (alpha
// 1/6, beta 1/2) into HardSwish, with the same outputs as the unfused graph; the look-alikes
// (other HardSigmoid parameters, another tensor under the gate, a gate read twice) stay.
#include <gtest/gtest.h>

#include "../ops/op_test_util.h"
#include "converter/passes/passes.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

const Shape kShape = {2, 3, 5, 7};

GraphBuilder mishGraph(bool gateOnOtherTensor, bool gateAlsoOutput) {
  GraphBuilder b;
  const int x = b.input("x", kShape);
  const int other = b.op(OpType::Abs, {x});
  const int sp = b.op(OpType::Softplus, {gateOnOtherTensor ? other : x});
  const int t = b.op(OpType::Tanh, {sp});
  b.output(b.op(OpType::Mul, {t, x}));
  if (gateAlsoOutput) b.output(t);
  return b;
}

GraphBuilder hardSwishGraph(float alpha, float beta) {
  GraphBuilder b;
  const int x = b.input("x", kShape);
  const int hs = b.op(OpType::HardSigmoid, {x});
  b.g.nodes.back().setFloat("alpha", alpha);
  b.g.nodes.back().setFloat("beta", beta);
  b.output(b.op(OpType::Mul, {x, hs}));
  return b;
}

void expectFusedLikeUnfused(const GraphBuilder& b, OpType fusedType) {
  Graph fused = b.g;
  ASSERT_EQ(passes::fuseActivationPatterns(fused), 1);
  EXPECT_EQ(countOps(fused, fusedType), 1);
  std::map<std::string, Tensor> feeds{{"x", randomTensor(DataType::Float32, kShape, 5, -8.0, 8.0)}};
  expectNear(runGraph(fused, feeds), runGraph(b.g, feeds), 1e-6, 1e-5);
}

TEST(ActivationPatternFusion, MishAndHardSwishFuse) {
  GraphBuilder mish = mishGraph(false, false);
  expectFusedLikeUnfused(mish, OpType::Mish);
  Graph fused = mish.g;
  passes::fuseActivationPatterns(fused);
  EXPECT_EQ(fused.nodes.size(), 2u);  // Abs (dead, left for removeDeadCode) and Mish
  expectFusedLikeUnfused(hardSwishGraph(1.f / 6.f, 0.5f), OpType::HardSwish);
}

TEST(ActivationPatternFusion, LookAlikesStay) {
  for (GraphBuilder b : {mishGraph(true, false), mishGraph(false, true), hardSwishGraph(0.2f, 0.5f),
                         hardSwishGraph(1.f / 6.f, 0.4f)})
    EXPECT_EQ(passes::fuseActivationPatterns(b.g), 0);
}

}  // namespace
}  // namespace osprey::test
