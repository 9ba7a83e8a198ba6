// The CPU backend's transformer kernels (LayerNormalization over the last axis, Gelu, Swish, Attention,
// a GEMM with a GELU epilogue) against the reference kernels of src/ops on seeded random data.
// Shapes are odd so SIMD tails, partial GEMM blocks and several query-row blocks all run.
#include "ops/activation.h"
#include "ops/op_def.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

Tensor reference(const Node& node, const std::vector<OpInput>& inputs) {
  std::vector<Tensor> outputs;
  Status st = referenceOp(node, inputs, 1, &outputs);
  EXPECT_TRUE(st) << st.message();
  return st ? outputs[0] : Tensor();
}

void checkAgainstReference(const Node& node, const std::vector<OpInput>& inputs, double tol = 1e-5, int threads = 1) {
  std::vector<Tensor> outputs;
  Status st = runOp(node, inputs, threads, &outputs);
  ASSERT_TRUE(st) << st.message();
  Tensor expected = reference(node, inputs);
  ASSERT_EQ(outputs[0].shape(), expected.shape());
  expectNear(outputs[0], expected, tol, tol);
}

TEST(CpuTransformerKernels, LayerNormLastAxis) {
  const Shape shapes[] = {{3, 13}, {2, 5, 37}, {4, 768}, {1, 7}};
  uint32_t seed = 1;
  for (const Shape& s : shapes)
    for (bool bias : {true, false}) {
      Node node;
      node.type = OpType::LayerNormalization;
      node.setInt("axis", -1);
      node.setFloat("epsilon", 1e-6f);
      const int64_t n = s.back();
      std::vector<OpInput> in{::osprey::test::in(randomTensor(DataType::Float32, s, seed++, -4.0, 6.0)),
                              constant(randomTensor(DataType::Float32, {n}, seed++, 0.5, 1.5))};
      if (bias) in.push_back(constant(randomTensor(DataType::Float32, {1, n}, seed++)));
      checkAgainstReference(node, in);
    }
}

TEST(CpuTransformerKernels, GeluErfFormAndSwish) {
  for (int64_t n : {1, 7, 8, 13, 4099, 9001}) {
    Node node;
    node.type = OpType::Gelu;
    checkAgainstReference(node, {in(randomTensor(DataType::Float32, {n}, 3, -6.0, 6.0))});
  }
  for (int64_t n : {5, 4101}) {
    Node swish;
    swish.type = OpType::Swish;
    checkAgainstReference(swish, {in(randomTensor(DataType::Float32, {n}, 5, -90.0, 90.0))});
  }
  Node tanh;
  tanh.type = OpType::Gelu;
  tanh.setString("approximate", "tanh");  // left to the reference
  checkAgainstReference(tanh, {in(randomTensor(DataType::Float32, {3, 11}, 4, -6.0, 6.0))});
}

struct AttentionCase {
  int64_t batch, qSeq, kvSeq, qHeads, kvHeads, dim, vDim;
  bool scale;
  int threads = 1;
};

TEST(CpuTransformerKernels, Attention3D) {
  const AttentionCase cases[] = {
      {1, 7, 7, 3, 3, 5, 5, false},      // tiny heads, every GEMM block partial
      {2, 130, 33, 2, 2, 16, 24, true},  // three query-row blocks, different value size
      {1, 65, 65, 4, 2, 8, 8, false},    // grouped-query heads
      {1, 128, 128, 12, 12, 64, 64, true},
      // Query rows split evenly for the threads: 197 rows of 3 heads as 4 blocks of 50 (49 in the
      // last) at 2 threads; 4 rows at 3 threads as blocks of 2, 2 and an empty one.
      {1, 197, 197, 3, 3, 64, 64, false, 2},
      {1, 4, 9, 1, 1, 8, 8, false, 3},
      {2, 130, 33, 2, 2, 16, 24, true, 3},
  };
  uint32_t seed = 10;
  for (const AttentionCase& c : cases) {
    Node node;
    node.type = OpType::Attention;
    node.setInt("q_num_heads", c.qHeads);
    node.setInt("kv_num_heads", c.kvHeads);
    if (c.scale) node.setFloat("scale", 0.3f);
    checkAgainstReference(node, {in(randomTensor(DataType::Float32, {c.batch, c.qSeq, c.qHeads * c.dim}, seed++, -2, 2)),
                                 in(randomTensor(DataType::Float32, {c.batch, c.kvSeq, c.kvHeads * c.dim}, seed++, -2, 2)),
                                 in(randomTensor(DataType::Float32, {c.batch, c.kvSeq, c.kvHeads * c.vDim}, seed++))},
                          1e-5, c.threads);
  }
}

TEST(CpuTransformerKernels, GemmWithGeluAndSigmoidEpilogue) {
  for (auto kind : {FusedActivation::Kind::Gelu, FusedActivation::Kind::Sigmoid}) {
    Node node;
    node.type = OpType::Gemm;
    node.setInt("transB", 1);
    FusedActivation act;
    act.kind = kind;
    act.store(node);
    checkAgainstReference(node, {in(randomTensor(DataType::Float32, {37, 45}, 20)),
                                 constant(randomTensor(DataType::Float32, {53, 45}, 21)),
                                 constant(randomTensor(DataType::Float32, {53}, 22))},
                          1e-4);
  }
}

}  // namespace
}  // namespace osprey::test
