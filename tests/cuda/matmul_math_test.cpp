// Gemm and MatMul on the CUDA backend (cuBLASLt) against the reference kernel, in fp32 and fp16
// storage: transposes, alpha/beta with a full C, bias + activation epilogues, batched and
// broadcast MatMul.
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

TEST(CudaMatmulMath, GemmTransBBiasRelu) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::Gemm);
  n.setInt("transB", 1);
  n.setString("activation", "Relu");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {13, 127}, 1)),
                                 constant(randomTensor(DataType::Float32, {33, 127}, 2)),
                                 constant(randomTensor(DataType::Float32, {33}, 3))});
}

TEST(CudaMatmulMath, GemmTransAFullCAlphaBeta) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::Gemm);
  n.setInt("transA", 1);
  n.setFloat("alpha", 0.5f);
  n.setFloat("beta", 2.f);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {31, 13}, 4)),
                                 constant(randomTensor(DataType::Float32, {31, 17}, 5)),
                                 in(randomTensor(DataType::Float32, {13, 17}, 6))});
}

TEST(CudaMatmulMath, GemmBiasWithTanhGelu) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::Gemm);
  n.setString("activation", "Gelu");
  n.setFloats("activation_params", {1.f});  // the tanh approximation: a cuBLASLt epilogue
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {64, 96}, 7)),
                                 constant(randomTensor(DataType::Float32, {96, 80}, 8, -0.2, 0.2)),
                                 constant(randomTensor(DataType::Float32, {1, 80}, 9))});
}

TEST(CudaMatmulMath, MatMulFoldsBatchIntoRowsWithExactGelu) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::MatMul);
  n.setString("activation", "Gelu");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {3, 13, 127}, 10)),
                                 constant(randomTensor(DataType::Float32, {127, 19}, 11, -0.2, 0.2))});
}

TEST(CudaMatmulMath, MatMulBatched4D) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::MatMul);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 3, 13, 31}, 12)),
                                 in(randomTensor(DataType::Float32, {2, 3, 31, 17}, 13))});
}

TEST(CudaMatmulMath, MatMulSharedLeftOperand) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::MatMul);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {13, 31}, 14)),
                                 in(randomTensor(DataType::Float32, {5, 31, 7}, 15))});
}

// The converter's MatMul + Add(bias) fusion: input 2 is a [N] bias, cuBLASLt's bias epilogue.
TEST(CudaMatmulMath, MatMulWithBiasInput) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::MatMul);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {3, 13, 127}, 16)),
                                 constant(randomTensor(DataType::Float32, {127, 19}, 17, -0.2, 0.2)),
                                 constant(randomTensor(DataType::Float32, {19}, 18))});
}

TEST(CudaMatmulMath, BatchedMatMulWithBiasInput) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::MatMul);
  n.setString("activation", "Gelu");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 3, 13, 31}, 19)),
                                 in(randomTensor(DataType::Float32, {2, 3, 31, 17}, 20)),
                                 constant(randomTensor(DataType::Float32, {17}, 21))});
}

TEST(CudaMatmulMath, UnsupportedBroadcastRunsOnTheCpu) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::MatMul);
  const std::vector<OpInput> inputs{in(randomTensor(DataType::Float32, {2, 1, 5, 3}, 16)),
                                    in(randomTensor(DataType::Float32, {1, 4, 3, 6}, 17))};
  std::vector<Tensor> expected;
  ASSERT_TRUE(referenceOp(n, inputs, 1, &expected).isOk());
  CudaRun run;
  Status st = runOpOnCuda(n, inputs, 1, false, &run);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(run.onCpu, std::vector<std::string>{"cpu:MatMul"});
  expectNear(run.outputs[0], expected[0], 1e-5, 1e-5);
}

}  // namespace
}  // namespace osprey::test
