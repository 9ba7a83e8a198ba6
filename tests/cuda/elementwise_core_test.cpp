// CUDA elementwise kernels (unary, binary with broadcasting, Where, Cast) against the reference.
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

Node nodeWith(OpType type) { return makeNode(type); }

TEST(CudaUnary, ActivationsOnOddShapes) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (OpType type : {OpType::Relu, OpType::Sigmoid, OpType::Tanh, OpType::Erf, OpType::Gelu, OpType::Exp, OpType::Neg,
                      OpType::Abs, OpType::HardSwish, OpType::Softplus, OpType::Identity}) {
    SCOPED_TRACE(opTypeName(type));
    expectCudaMatchesReference(nodeWith(type), {in(randomTensor(DataType::Float32, {3, 13, 127}, 1, -3, 3))});
  }
}

// Channels and positions spanning several 32x32 tiles of the NCHW <-> NHWC conversions, with
// partial tiles on both sides (fp16 runs convert at the run's edges).
TEST(CudaUnary, ReluAcrossLayoutConversionTiles) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectCudaMatchesReference(nodeWith(OpType::Relu), {in(randomTensor(DataType::Float32, {3, 37, 41, 45}, 7, -3, 3))});
  expectCudaMatchesReference(nodeWith(OpType::Relu), {in(randomTensor(DataType::Float32, {2, 70, 1, 33}, 8, -3, 3))});
}

TEST(CudaUnary, ParameterisedActivations) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node leaky = makeNode(OpType::LeakyRelu);
  leaky.setFloat("alpha", 0.1f);
  expectCudaMatchesReference(leaky, {in(randomTensor(DataType::Float32, {7, 33}, 2, -2, 2))});
  Node gelu = makeNode(OpType::Gelu);
  gelu.setString("approximate", "tanh");
  expectCudaMatchesReference(gelu, {in(randomTensor(DataType::Float32, {5, 129}, 3, -4, 4))});
  Node hs = makeNode(OpType::HardSigmoid);
  expectCudaMatchesReference(hs, {in(randomTensor(DataType::Float32, {131}, 4, -5, 5))});
}

TEST(CudaUnary, SqrtAndLogOnPositiveInputs) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (OpType type : {OpType::Sqrt, OpType::Log, OpType::Reciprocal})
    expectCudaMatchesReference(nodeWith(type), {in(randomTensor(DataType::Float32, {2, 3, 61}, 5, 0.5, 4))});
}

TEST(CudaUnary, ClipWithConstantBounds) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectCudaMatchesReference(makeNode(OpType::Clip), {in(randomTensor(DataType::Float32, {4, 32, 7, 7}, 6, -10, 10)),
                                                      constant(makeTensor<float>({}, {0.f})), constant(makeTensor<float>({}, {6.f}))});
}

TEST(CudaBinary, ArithmeticWithBroadcasting) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 13, 127}, {3, 13, 127}}, {{3, 13, 128}, {3, 13, 128}}, {{4, 6}, {4, 6}}, {{3, 13, 127}, {127}},
      {{3, 5, 16}, {16}}, {{2, 24, 8, 8}, {2, 24, 1, 1}}, {{2, 4, 4, 24}, {2, 1, 1, 24}}, {{2, 24, 1, 1}, {2, 24, 8, 8}},
      {{2, 16, 9}, {1, 16, 1}}, {{2, 5, 7, 9}, {1, 5, 1, 1}}, {{13, 1}, {1, 17}}, {{6, 1, 5}, {}}};
  for (OpType type : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div, OpType::Max, OpType::Min}) {
    for (auto& [a, b] : shapes) {
      SCOPED_TRACE(std::string(opTypeName(type)) + " " + shapeToString(a) + " " + shapeToString(b));
      expectCudaMatchesReference(nodeWith(type), {in(randomTensor(DataType::Float32, a, 7, 0.5, 2)),
                                                  in(randomTensor(DataType::Float32, b, 8, 0.5, 2))});
    }
  }
}

TEST(CudaBinary, PowWithConstantExponent) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectCudaMatchesReference(makeNode(OpType::Pow), {in(randomTensor(DataType::Float32, {4, 129}, 9, -2, 2)),
                                                     constant(makeTensor<float>({}, {2.f}))});
}

TEST(CudaBinary, ConstantOperandIsUploadedOnce) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectCudaMatchesReference(makeNode(OpType::Add), {in(randomTensor(DataType::Float32, {2, 17, 31}, 10)),
                                                     constant(randomTensor(DataType::Float32, {17, 1}, 11))});
}

TEST(CudaBinary, IntegerArithmeticAndComparison) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (OpType type : {OpType::Add, OpType::Mul, OpType::Sub, OpType::Equal, OpType::Less, OpType::Greater}) {
    SCOPED_TRACE(opTypeName(type));
    expectCudaMatchesReference(nodeWith(type), {in(randomTensor(DataType::Int64, {3, 37}, 12, -20, 20)),
                                                in(randomTensor(DataType::Int64, {37}, 13, -20, 20))});
  }
}

TEST(CudaBinary, FloatComparisonOnExactValues) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  // Integer-valued floats are exact in fp16 too, so both precisions must agree exactly.
  Tensor a = randomTensor(DataType::Int32, {5, 41}, 14, -4, 4), b = randomTensor(DataType::Int32, {5, 41}, 15, -4, 4);
  Tensor fa(DataType::Float32, a.shape()), fb(DataType::Float32, b.shape());
  for (int64_t i = 0; i < a.elements(); ++i) {
    fa.data<float>()[i] = static_cast<float>(a.data<int32_t>()[i]);
    fb.data<float>()[i] = static_cast<float>(b.data<int32_t>()[i]);
  }
  for (OpType type : {OpType::Equal, OpType::Less, OpType::GreaterOrEqual})
    expectCudaMatchesReference(nodeWith(type), {in(fa), in(fb)}, 1, 0, 0);
}

TEST(CudaWhere, BroadcastsAllThreeOperands) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Tensor cond(DataType::Bool, {7, 1});
  for (int64_t i = 0; i < 7; ++i) cond.data<bool>()[i] = i % 3 == 0;
  expectCudaMatchesReference(makeNode(OpType::Where), {in(cond), in(randomTensor(DataType::Float32, {7, 19}, 16)),
                                                       in(randomTensor(DataType::Float32, {19}, 17))});
}

TEST(CudaCast, IntegerToFloatAndBool) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node toFloat = makeNode(OpType::Cast);
  toFloat.setInt("to", static_cast<int64_t>(DataType::Float32));
  expectCudaMatchesReference(toFloat, {in(randomTensor(DataType::Int64, {3, 29}, 18, -50, 50))});
  Node toBool = makeNode(OpType::Cast);
  toBool.setInt("to", static_cast<int64_t>(DataType::Bool));
  expectCudaMatchesReference(toBool, {in(randomTensor(DataType::Int32, {3, 29}, 19, -2, 2))});
}

}  // namespace
}  // namespace osprey::test
