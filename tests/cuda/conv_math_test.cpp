// Conv on the CUDA backend (cuDNN) against the reference kernel on odd shapes, in fp32 and in
// fp16 storage: bias, fused activations, groups, depthwise, strides, dilations, 1-D.
#include "backends/cuda/math/math_util.h"
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

Node convNode(std::vector<int64_t> kernel, std::vector<int64_t> pads, std::vector<int64_t> strides,
              std::vector<int64_t> dilations, int64_t group) {
  Node n = makeNode(OpType::Conv);
  n.setInts("kernel_shape", kernel);
  n.setInts("pads", pads);
  n.setInts("strides", strides);
  n.setInts("dilations", dilations);
  n.setInt("group", group);
  return n;
}

TEST(CudaConvMath, BiasReluOddShape) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1);
  n.setString("activation", "Relu");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 13, 17, 19}, 1)),
                                 constant(randomTensor(DataType::Float32, {27, 13, 3, 3}, 2)),
                                 constant(randomTensor(DataType::Float32, {27}, 3))});
}

// fp32 convolutions run on TF32 tensor cores with split operands (conv_execution.cpp): the
// result must keep float accuracy. TF32 alone is off here by 2.9e-4 of the largest output
// (numpy with TF32-rounded operands), split operands by 6e-8.
TEST(CudaConvMath, Fp32KeepsFloatAccuracyOnTensorCores) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1);
  expectCudaMatchesReference(n,
                             {in(randomTensor(DataType::Float32, {2, 96, 9, 11}, 11)),
                              constant(randomTensor(DataType::Float32, {40, 96, 3, 3}, 12)),
                              constant(randomTensor(DataType::Float32, {40}, 13))},
                             1, 1e-5);
}

TEST(CudaConvMath, PointwiseWithoutBias) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {3, 127, 7, 5}, 4)),
                                 constant(randomTensor(DataType::Float32, {65, 127, 1, 1}, 5, -0.2, 0.2))});
}

TEST(CudaConvMath, DepthwiseStrideDilationClip) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {2, 2, 2, 2}, {2, 2}, {2, 2}, 13);
  n.setString("activation", "Clip");
  n.setFloats("activation_params", {0.f, 0.5f});
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 13, 23, 17}, 6)),
                                 constant(randomTensor(DataType::Float32, {13, 1, 3, 3}, 7)),
                                 constant(randomTensor(DataType::Float32, {13}, 8))});
}

TEST(CudaConvMath, GroupedRectangularKernelHardSwish) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({5, 3}, {2, 1, 2, 1}, {1, 2}, {1, 1}, 3);
  n.setString("activation", "HardSwish");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {1, 12, 15, 11}, 9)),
                                 constant(randomTensor(DataType::Float32, {9, 4, 5, 3}, 10)),
                                 constant(randomTensor(DataType::Float32, {9}, 11))});
}

TEST(CudaConvMath, OneDimensional) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({5}, {2, 2}, {2}, {1}, 1);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 7, 31}, 12)),
                                 constant(randomTensor(DataType::Float32, {5, 7, 5}, 13)),
                                 constant(randomTensor(DataType::Float32, {5}, 14))});
}

TEST(CudaConvMath, StridedResNetLikeBlock) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 1);
  n.setString("activation", "Relu");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {4, 32, 28, 28}, 15)),
                                 constant(randomTensor(DataType::Float32, {64, 32, 3, 3}, 16, -0.2, 0.2)),
                                 constant(randomTensor(DataType::Float32, {64}, 17))});
}

// The converter's Conv + Add fusion: input 3 is a residual of y's shape, added before the
// activation. With bias and ReLU cuDNN takes it as z; without bias the epilogue kernel adds it.
TEST(CudaConvMath, ResidualBiasRelu) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1);
  n.setString("activation", "Relu");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 24, 9, 11}, 30)),
                                 constant(randomTensor(DataType::Float32, {40, 24, 1, 1}, 31, -0.3, 0.3)),
                                 constant(randomTensor(DataType::Float32, {40}, 32)),
                                 in(randomTensor(DataType::Float32, {2, 40, 9, 11}, 33))});
}

TEST(CudaConvMath, ResidualWithoutBiasOrActivation) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 1);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {1, 5, 13, 10}, 34)),
                                 constant(randomTensor(DataType::Float32, {7, 5, 3, 3}, 35)), absent(),
                                 in(randomTensor(DataType::Float32, {1, 7, 7, 5}, 36))});
}

TEST(CudaConvMath, DepthwiseResidualHardSwish) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 6);
  n.setString("activation", "HardSwish");
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 6, 8, 9}, 37)),
                                 constant(randomTensor(DataType::Float32, {6, 1, 3, 3}, 38)),
                                 constant(randomTensor(DataType::Float32, {6}, 39)),
                                 in(randomTensor(DataType::Float32, {2, 6, 8, 9}, 40))});
}

// At fp16 the pipeline keeps x and y in NHWC: the convolution runs on KRSC weights.
TEST(CudaConvMath, ChannelsLastAtLowPrecision) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 2);
  n.setString("activation", "LeakyRelu");
  n.setFloats("activation_params", {0.1f});
  const std::vector<OpInput> inputs{in(randomTensor(DataType::Float32, {2, 16, 13, 11}, 20)),
                                    constant(randomTensor(DataType::Float32, {24, 8, 3, 3}, 21, -0.3, 0.3)),
                                    constant(randomTensor(DataType::Float32, {24}, 22))};
  expectCudaMatchesReference(n, inputs);
  CudaRun run;
  Status st = runOpOnCuda(n, inputs, 1, true, &run);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(run.relaidTensors, 2);  // the input's device mirror and the output
}

TEST(CudaConvMath, AsymmetricPaddingRunsOnTheCpu) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = convNode({3, 3}, {0, 0, 1, 1}, {2, 2}, {1, 1}, 1);
  const std::vector<OpInput> inputs{in(randomTensor(DataType::Float32, {1, 3, 9, 9}, 18)),
                                    constant(randomTensor(DataType::Float32, {4, 3, 3, 3}, 19))};
  std::vector<Tensor> expected;
  ASSERT_TRUE(referenceOp(n, inputs, 1, &expected).isOk());
  CudaRun run;
  Status st = runOpOnCuda(n, inputs, 1, false, &run);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(run.onCpu, std::vector<std::string>{"cpu:Conv"});
  expectNear(run.outputs[0], expected[0], 1e-5, 1e-5);
}

// Host-side weight packing for the NHWC convolution: needs no device.
TEST(CudaConvMath, FilterPackingToKrscAndHalf) {
  const int64_t k = 3, c = 5, spatial = 7;
  std::vector<float> kcrs(static_cast<size_t>(k * c * spatial));
  for (size_t i = 0; i < kcrs.size(); ++i) kcrs[i] = static_cast<float>(i) * 0.25f;
  const std::vector<float> krsc = cuda_math::filterToChannelsLast(kcrs.data(), k, c, spatial);
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t t = 0; t < spatial; ++t)
        EXPECT_EQ(krsc[(o * spatial + t) * c + i], kcrs[(o * c + i) * spatial + t]);
  const std::vector<uint8_t> half = cuda_math::packFloats(krsc.data(), static_cast<int64_t>(krsc.size()),
                                                          DataType::Float16);
  ASSERT_EQ(half.size(), krsc.size() * 2);
  for (size_t i = 0; i < krsc.size(); ++i)
    EXPECT_EQ(loadAsDouble(DataType::Float16, half.data(), static_cast<int64_t>(i)), krsc[i]);  // exact in fp16
}

}  // namespace
}  // namespace osprey::test
