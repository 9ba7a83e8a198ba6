// The _fp16a shaders (fp16 storage and fp16 multiplies, VulkanOptions::halfMath at precision Low
// on devices with shaderFloat16) against the reference kernel within 1e-2 relative: every tile
// shape of the convolutions (16x16, 64x64 with partial tiles, pointwise, grouped with a residual,
// a reduction of 2304) and MatMul / Gemm. Weights have the scale of trained layers (uniform within
// sqrt(3 / fan-in)); activations are unit scale.
#include "vulkan_test_util.h"

namespace osprey::test {
namespace {

Tensor rnd(const Shape& s, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  return randomTensor(DataType::Float32, s, seed, lo, hi);
}

Node conv(std::vector<int64_t> strides, std::vector<int64_t> pads, int64_t group, const std::string& activation = "") {
  Node n = makeNode(OpType::Conv);
  n.setInts("strides", std::move(strides));
  n.setInts("pads", std::move(pads));
  n.setInts("dilations", {1, 1});
  n.setInt("group", group);
  if (!activation.empty()) {
    n.setString("activation", activation);
    n.setFloats("activation_params", {0.f, 0.f});
  }
  return n;
}

TEST(VulkanHalfMath, ConvSmallTiles) {
  OSPREY_REQUIRE_VULKAN();
  checkHalfMathAgainstReference(conv({2, 1}, {1, 0, 2, 1}, 1, "Relu"),
                                {in(rnd({2, 13, 11, 9}, 1)), constant(trainedScaleWeights({7, 13, 3, 3}, 117, 2)),
                                 constant(rnd({7}, 3))});
  // A reduction of 256 channels x 3 x 3 on a 7x7 map, as a ResNet's last stage has.
  checkHalfMathAgainstReference(conv({1, 1}, {1, 1, 1, 1}, 1),
                                {in(rnd({1, 256, 7, 7}, 4)), constant(trainedScaleWeights({67, 256, 3, 3}, 2304, 5)),
                                 constant(rnd({67}, 6))});
}

TEST(VulkanHalfMath, ConvWideTiles) {
  OSPREY_REQUIRE_VULKAN();
  checkHalfMathAgainstReference(conv({1, 1}, {1, 1, 1, 1}, 1, "Relu"),
                                {in(rnd({1, 64, 67, 61}, 10)), constant(trainedScaleWeights({131, 64, 3, 3}, 576, 11)),
                                 constant(rnd({131}, 12))});
  checkHalfMathAgainstReference(conv({2, 2}, {1, 0, 1, 0}, 2),
                                {in(rnd({2, 6, 130, 67}, 13)), constant(trainedScaleWeights({70, 3, 3, 2}, 18, 14)), absent(),
                                 in(rnd({2, 70, 65, 33}, 15, -2, 2))});
  checkHalfMathAgainstReference(conv({1, 1}, {0, 0, 0, 0}, 1),
                                {in(rnd({4, 255, 33, 31}, 16)), constant(trainedScaleWeights({65, 255, 1, 1}, 255, 17)),
                                 constant(rnd({65}, 18))});
}

TEST(VulkanHalfMath, MatMulAndGemm) {
  OSPREY_REQUIRE_VULKAN();
  checkHalfMathAgainstReference(makeNode(OpType::MatMul),
                                {in(rnd({3, 37, 300}, 20)), constant(trainedScaleWeights({300, 45}, 300, 21))});
  checkHalfMathAgainstReference(makeNode(OpType::MatMul),
                                {in(rnd({2, 5, 768}, 22)), constant(trainedScaleWeights({768, 19}, 768, 23)),
                                 constant(rnd({19}, 24))});
  Node g = makeNode(OpType::Gemm);
  g.setInt("transB", 1);
  checkHalfMathAgainstReference(g, {in(rnd({17, 129}, 25)), constant(trainedScaleWeights({33, 129}, 129, 26)),
                                    constant(rnd({33}, 27))});
}

}  // namespace
}  // namespace osprey::test
