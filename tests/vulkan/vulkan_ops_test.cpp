// Every Vulkan kernel against the op's reference kernel on random data with odd shapes, in fp32
// (1e-4 relative) and with fp16 storage at precision Low (1e-2 relative); each run must stay on
// Vulkan with nothing falling back.
#include "vulkan_test_util.h"

namespace osprey::test {
namespace {

Tensor rnd(const Shape& s, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  return randomTensor(DataType::Float32, s, seed, lo, hi);
}

Node convNode(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dilations, int64_t group,
              const std::string& activation = "", std::vector<float> params = {}) {
  Node n = makeNode(OpType::Conv);
  n.setInts("strides", std::move(strides));
  n.setInts("pads", std::move(pads));
  n.setInts("dilations", std::move(dilations));
  n.setInt("group", group);
  if (!activation.empty()) {
    n.setString("activation", activation);
    n.setFloats("activation_params", std::move(params));
  }
  return n;
}

TEST(VulkanConv, GeneralStridesPadsDilationsBiasRelu) {
  OSPREY_REQUIRE_VULKAN();
  Node n = convNode({2, 1}, {1, 0, 2, 1}, {1, 2}, 1, "Relu");
  checkAgainstReference(n, {in(rnd({2, 13, 11, 9}, 1)), constant(rnd({7, 13, 3, 3}, 2)), constant(rnd({7}, 3))});
}

TEST(VulkanConv, GroupsWithoutBias) {
  OSPREY_REQUIRE_VULKAN();
  Node n = convNode({1, 2}, {1, 1, 1, 1}, {1, 1}, 3);
  checkAgainstReference(n, {in(rnd({1, 12, 10, 7}, 4)), constant(rnd({9, 4, 3, 2}, 5))});
}

TEST(VulkanConv, DepthwiseClip) {
  OSPREY_REQUIRE_VULKAN();
  Node n = convNode({2, 2}, {1, 1, 1, 1}, {1, 1}, 13, "Clip", {0.f, 0.5f});
  checkAgainstReference(n, {in(rnd({1, 13, 15, 12}, 6)), constant(rnd({13, 1, 3, 3}, 7)), constant(rnd({13}, 8))});
}

TEST(VulkanConv, DepthwiseMultiplierDilated) {
  OSPREY_REQUIRE_VULKAN();
  Node n = convNode({1, 1}, {2, 2, 2, 2}, {2, 2}, 7, "HardSwish");
  checkAgainstReference(n, {in(rnd({2, 7, 9, 8}, 9)), constant(rnd({14, 1, 3, 3}, 10)), constant(rnd({14}, 11))});
}

TEST(VulkanConv, OneByOne127Channels) {
  OSPREY_REQUIRE_VULKAN();
  Node n = convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "Sigmoid");
  checkAgainstReference(n, {in(rnd({2, 127, 5, 3}, 12)), constant(rnd({13, 127, 1, 1}, 13)), constant(rnd({13}, 14))});
}

// At least 64 output channels per group and 64 pixels: several 16x16 tiles, with partial tiles.
TEST(VulkanConv, LargeTilesGeneralGroupedPointwise) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convNode({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "Relu"),
                        {in(rnd({2, 13, 11, 9}, 17)), constant(rnd({70, 13, 3, 3}, 18)), constant(rnd({70}, 19))});
  checkAgainstReference(convNode({2, 1}, {1, 0, 1, 0}, {1, 1}, 2),
                        {in(rnd({1, 10, 21, 9}, 20)), constant(rnd({130, 5, 3, 3}, 21))});
  checkAgainstReference(convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                        {in(rnd({1, 127, 15, 9}, 22)), constant(rnd({67, 127, 1, 1}, 23)), constant(rnd({67}, 24))});
}

// Enough 64x64 tiles (128 workgroups) for conv2d_gemm_wide.comp: partial tiles in both
// directions, grouped, strided with a residual, 1x1 over many input channels.
TEST(VulkanConv, WideTiles) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convNode({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "Relu"),
                        {in(rnd({1, 13, 67, 61}, 30)), constant(rnd({131, 13, 3, 3}, 31)), constant(rnd({131}, 32))});
  checkAgainstReference(convNode({2, 2}, {1, 0, 1, 0}, {1, 1}, 2),
                        {in(rnd({2, 6, 130, 67}, 33)), constant(rnd({70, 3, 3, 2}, 34)), absent(),
                         in(rnd({2, 70, 65, 33}, 35, -2, 2))});
  checkAgainstReference(convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                        {in(rnd({4, 127, 33, 31}, 36)), constant(rnd({65, 127, 1, 1}, 37)), constant(rnd({65}, 38))});
}

// Few 16x16 tiles over a long reduction: conv2d_gemm.comp splits the reduction into slices
// (18, 2 with a partial last slice, 8 pointwise) and conv_split_sum.comp adds them, then the bias,
// the residual and the activation. Weights of trained scale (trainedScaleWeights says why).
TEST(VulkanConv, SplitReduction) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convNode({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "Relu"),
                        {in(rnd({1, 256, 7, 7}, 40)), constant(trainedScaleWeights({67, 256, 3, 3}, 2304, 41)),
                         constant(rnd({67}, 42)), in(rnd({1, 67, 7, 7}, 43, -2, 2))});
  checkAgainstReference(convNode({1, 1}, {1, 0, 1, 0}, {1, 1}, 2),
                        {in(rnd({2, 60, 6, 5}, 44)), constant(trainedScaleWeights({40, 30, 3, 3}, 270, 45))});
  checkAgainstReference(convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "Sigmoid"),
                        {in(rnd({1, 1024, 7, 7}, 46)), constant(trainedScaleWeights({100, 1024, 1, 1}, 1024, 47)),
                         constant(rnd({100}, 48))});
}

TEST(VulkanConv, WeightsAsActivation) {
  OSPREY_REQUIRE_VULKAN();
  Node n = convNode({1, 1}, {0, 1, 0, 1}, {1, 1}, 1);
  checkAgainstReference(n, {in(rnd({1, 5, 6, 7}, 15)), in(rnd({3, 5, 2, 3}, 16))});
}

// The residual Z (input 3, Y's shape) in every conv kernel: general, 1x1, both tile sizes,
// grouped, depthwise; with and without bias, added before the activation.
TEST(VulkanConvResidual, GeneralPointwiseGrouped) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convNode({2, 2}, {1, 1, 1, 1}, {1, 1}, 1, "Relu"),
                        {in(rnd({2, 5, 7, 5}, 100)), constant(rnd({6, 5, 3, 3}, 101)), constant(rnd({6}, 102)),
                         in(rnd({2, 6, 4, 3}, 103, -2, 2))});
  checkAgainstReference(convNode({1, 1}, {0, 1, 0, 1}, {1, 1}, 1, "Clip", {-0.5f, 0.5f}),
                        {in(rnd({1, 3, 7, 5}, 104)), constant(rnd({4, 3, 3, 3}, 105)), absent(),
                         in(rnd({1, 4, 5, 5}, 106, -2, 2))});
  checkAgainstReference(convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "Relu"),
                        {in(rnd({2, 127, 5, 3}, 107)), constant(rnd({13, 127, 1, 1}, 108)), constant(rnd({13}, 109)),
                         in(rnd({2, 13, 5, 3}, 110, -2, 2))});
  checkAgainstReference(convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 3),
                        {in(rnd({1, 12, 10, 7}, 111)), constant(rnd({9, 4, 3, 2}, 112)), absent(),
                         in(rnd({1, 9, 8, 6}, 113, -2, 2))});
}

TEST(VulkanConvResidual, LargeTiles) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convNode({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "Relu"),
                        {in(rnd({2, 13, 11, 9}, 120)), constant(rnd({70, 13, 3, 3}, 121)), constant(rnd({70}, 122)),
                         in(rnd({2, 70, 11, 9}, 123, -2, 2))});
  checkAgainstReference(convNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                        {in(rnd({1, 127, 15, 9}, 124)), constant(rnd({67, 127, 1, 1}, 125)), absent(),
                         in(rnd({1, 67, 15, 9}, 126, -2, 2))});
}

TEST(VulkanConvResidual, Depthwise) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convNode({1, 1}, {1, 1, 1, 1}, {1, 1}, 13, "Clip", {0.f, 0.5f}),
                        {in(rnd({1, 13, 15, 12}, 130)), constant(rnd({13, 1, 3, 3}, 131)), constant(rnd({13}, 132)),
                         in(rnd({1, 13, 15, 12}, 133, -2, 2))});
  checkAgainstReference(convNode({2, 2}, {2, 2, 2, 2}, {2, 2}, 7, "Relu"),
                        {in(rnd({2, 7, 9, 8}, 134)), constant(rnd({14, 1, 3, 3}, 135)), absent(),
                         in(rnd({2, 14, 5, 4}, 136, -2, 2))});
}

Node poolNode(OpType type, std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
              int ceil, int includePad) {
  Node n = makeNode(type);
  n.setInts("kernel_shape", std::move(kernel));
  n.setInts("strides", std::move(strides));
  n.setInts("pads", std::move(pads));
  n.setInt("ceil_mode", ceil);
  if (type == OpType::AveragePool) n.setInt("count_include_pad", includePad);
  return n;
}

TEST(VulkanPool, MaxCeilMode) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(poolNode(OpType::MaxPool, {3, 3}, {2, 2}, {1, 0, 1, 0}, 1, 0), {in(rnd({2, 13, 11, 10}, 20))});
}

TEST(VulkanPool, AverageWithAndWithoutPadding) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(poolNode(OpType::AveragePool, {3, 2}, {2, 1}, {1, 1, 1, 0}, 0, 0), {in(rnd({1, 7, 9, 8}, 21))});
  checkAgainstReference(poolNode(OpType::AveragePool, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1, 1),
                        {in(rnd({1, 7, 10, 9}, 22))});
}

TEST(VulkanPool, Global) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(makeNode(OpType::GlobalAveragePool), {in(rnd({2, 13, 7, 9}, 23))});
  checkAgainstReference(makeNode(OpType::GlobalMaxPool), {in(rnd({3, 5, 13, 11}, 24))});
}

TEST(VulkanUnary, EveryOp) {
  OSPREY_REQUIRE_VULKAN();
  for (OpType t :
       {OpType::Relu, OpType::Sigmoid, OpType::Tanh, OpType::HardSigmoid, OpType::HardSwish, OpType::Erf, OpType::Gelu,
        OpType::Elu, OpType::Exp, OpType::Neg, OpType::Abs, OpType::LeakyRelu, OpType::Swish}) {
    SCOPED_TRACE(opTypeName(t));
    checkAgainstReference(makeNode(t), {in(rnd({3, 127}, 30, -3, 3))});
  }
  for (OpType t : {OpType::Log, OpType::Sqrt, OpType::Reciprocal}) {
    SCOPED_TRACE(opTypeName(t));
    checkAgainstReference(makeNode(t), {in(rnd({7, 13}, 31, 0.5, 4))});
  }
  Node gelu = makeNode(OpType::Gelu);
  gelu.setString("approximate", "tanh");
  checkAgainstReference(gelu, {in(rnd({13, 7}, 32, -3, 3))});
}

TEST(VulkanUnary, ClipWithConstantBounds) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(makeNode(OpType::Clip), {in(rnd({5, 13}, 33, -8, 8)), constant(makeTensor<float>({}, {0.f})),
                                                 constant(makeTensor<float>({}, {6.f}))});
  checkAgainstReference(makeNode(OpType::Clip),
                        {in(rnd({5, 13}, 34, -8, 8)), absent(), constant(makeTensor<float>({}, {1.f}))});
}

TEST(VulkanBinary, BroadcastShapes) {
  OSPREY_REQUIRE_VULKAN();
  struct Case {
    OpType type;
    Shape a, b;
  };
  const Case cases[] = {
      {OpType::Add, {2, 1, 13}, {7, 1}},
      {OpType::Mul, {2, 13, 5, 5}, {1, 13, 1, 1}},
      {OpType::Sub, {13}, {3, 7, 13}},
      {OpType::Div, {3, 127}, {3, 127}},
      {OpType::Max, {4, 1, 3, 1, 2, 5}, {3, 7, 1, 5}},
      {OpType::Min, {9, 7}, {}},
      {OpType::PRelu, {2, 13, 3, 3}, {13, 1, 1}},
      {OpType::Mul, {2, 13, 5, 5}, {2, 13, 1, 1}},
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(opTypeName(c.type)) + " " + shapeToString(c.a) + " " + shapeToString(c.b));
    checkAgainstReference(makeNode(c.type), {in(rnd(c.a, seed++)), in(rnd(c.b, seed++, 0.5, 2))});
  }
  checkAgainstReference(makeNode(OpType::Pow), {in(rnd({3, 13}, 50, 0.5, 2)), in(rnd({13}, 51, -2, 2))});
  // Negative and zero bases to whole powers (GPT-2's GELU takes x^3): C's pow, not GLSL's.
  Tensor bases = rnd({3, 7}, 54, -3, 3);
  bases.data<float>()[0] = 0.f;
  checkAgainstReference(makeNode(OpType::Pow), {in(bases), constant(makeTensor<float>({7}, {3, 2, -1, 1, 1, 4, -3}))});
  checkAgainstReference(makeNode(OpType::Add), {in(rnd({3, 13}, 52)), constant(rnd({1, 13}, 53))});
}

TEST(VulkanBatchNorm, Inference) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(makeNode(OpType::BatchNormalization),
                        {in(rnd({2, 13, 5, 3}, 60)), constant(rnd({13}, 61)), constant(rnd({13}, 62)),
                         constant(rnd({13}, 63)), constant(rnd({13}, 64, 0.5, 2))});
}

TEST(VulkanMatMul, BatchedAndBroadcast) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(makeNode(OpType::MatMul), {in(rnd({3, 13, 7}, 70)), constant(rnd({7, 19}, 71))});
  checkAgainstReference(makeNode(OpType::MatMul), {in(rnd({2, 5, 37}, 72)), in(rnd({2, 37, 4}, 73))});
  checkAgainstReference(makeNode(OpType::MatMul), {in(rnd({13}, 74)), in(rnd({2, 13, 5}, 75))});
  checkAgainstReference(makeNode(OpType::MatMul), {in(rnd({6, 13}, 76)), in(rnd({13}, 77))});
}

TEST(VulkanMatMul, GemmTransposesAlphaBetaBias) {
  OSPREY_REQUIRE_VULKAN();
  Node g = makeNode(OpType::Gemm);
  g.setInt("transA", 1);
  g.setInt("transB", 1);
  g.setFloat("alpha", 0.5f);
  g.setFloat("beta", 2.f);
  checkAgainstReference(g, {in(rnd({127, 5}, 80)), constant(rnd({13, 127}, 81)), constant(rnd({13}, 82))});
  Node h = makeNode(OpType::Gemm);
  h.setString("activation", "Relu");
  h.setFloats("activation_params", {0.f, 0.f});
  checkAgainstReference(h, {in(rnd({3, 17}, 83)), constant(rnd({17, 33}, 84)), constant(rnd({3, 1}, 85))});
  checkAgainstReference(makeNode(OpType::Gemm), {in(rnd({1, 33}, 86)), constant(rnd({33, 10}, 87))});
}

// MatMul's bias [N] (input 2) over every row: constant and activation B, batches, 1-D A.
TEST(VulkanMatMul, Bias) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(makeNode(OpType::MatMul),
                        {in(rnd({3, 13, 7}, 140)), constant(rnd({7, 19}, 141)), constant(rnd({19}, 142, -2, 2))});
  checkAgainstReference(makeNode(OpType::MatMul),
                        {in(rnd({2, 5, 37}, 143)), in(rnd({2, 37, 4}, 144)), constant(rnd({4}, 145, -2, 2))});
  checkAgainstReference(makeNode(OpType::MatMul),
                        {in(rnd({1, 6, 5}, 146)), in(rnd({4, 5, 16}, 147)), constant(rnd({16}, 148, -2, 2))});
  checkAgainstReference(makeNode(OpType::MatMul),
                        {in(rnd({13}, 149)), constant(rnd({13, 5}, 150)), constant(rnd({5}, 151, -2, 2))});
  Node relu = makeNode(OpType::MatMul);
  relu.setString("activation", "Relu");
  relu.setFloats("activation_params", {0.f, 0.f});
  for (int64_t M : {1, 3, 17})
    checkAgainstReference(relu,
                          {in(rnd({M, 129}, 152)), constant(rnd({129, 33}, 153)), constant(rnd({33}, 154, -2, 2))});
}

TEST(VulkanNormalize, SoftmaxLayerNorm) {
  OSPREY_REQUIRE_VULKAN();
  Node s = makeNode(OpType::Softmax);
  s.setInt("axis", 1);
  checkAgainstReference(s, {in(rnd({3, 7, 5}, 90, -5, 5))});
  checkAgainstReference(makeNode(OpType::LogSoftmax), {in(rnd({4, 127}, 91, -5, 5))});
  Node ln = makeNode(OpType::LayerNormalization);
  ln.setFloat("epsilon", 1e-5f);
  checkAgainstReference(ln, {in(rnd({2, 3, 127}, 92)), constant(rnd({127}, 93)), constant(rnd({127}, 94))});
  Node ln2 = makeNode(OpType::LayerNormalization);
  ln2.setInt("axis", 1);
  checkAgainstReference(ln2, {in(rnd({5, 3, 13}, 95)), constant(rnd({3, 13}, 96))});
}

// Grouped heads, odd head sizes, more keys than the shader's workgroup, and each mask form.
TEST(VulkanAttention, FourDimensionalGroupedMasked) {
  OSPREY_REQUIRE_VULKAN();
  const Tensor q = rnd({2, 6, 5, 13}, 160, -2, 2), k = rnd({2, 3, 77, 13}, 161, -2, 2), v = rnd({2, 3, 77, 11}, 162);
  checkAgainstReference(makeNode(OpType::Attention), {in(q), in(k), in(v)});
  checkAgainstReference(makeNode(OpType::Attention), {in(q), in(k), in(v), in(rnd({5, 77}, 163, -3, 3))});
  Tensor keep = randomTensor(DataType::Bool, {2, 1, 1, 70}, 164, 0, 2);  // keys past 70 hidden
  checkAgainstReference(makeNode(OpType::Attention), {in(q), in(k), in(v), in(keep)});
  Node scaled = makeNode(OpType::Attention);
  scaled.setFloat("scale", 0.3f);
  checkAgainstReference(scaled, {in(q), in(k), in(v)});
}

TEST(VulkanAttention, ThreeDimensionalCausal) {
  OSPREY_REQUIRE_VULKAN();
  Node n = makeNode(OpType::Attention);
  n.setInt("q_num_heads", 4);
  n.setInt("kv_num_heads", 2);
  n.setInt("is_causal", 1);
  checkAgainstReference(n, {in(rnd({3, 131, 4 * 9}, 165)), in(rnd({3, 131, 2 * 9}, 166)), in(rnd({3, 131, 2 * 7}, 167))});
}

TEST(VulkanNormalize, Reduce) {
  OSPREY_REQUIRE_VULKAN();
  for (OpType t : {OpType::ReduceMean, OpType::ReduceSum, OpType::ReduceMax, OpType::ReduceMin}) {
    SCOPED_TRACE(opTypeName(t));
    checkAgainstReference(makeNode(t), {in(rnd({2, 13, 7, 5}, 97)), constant(makeTensor<int64_t>({2}, {2, 3}))});
    Node keep = makeNode(t);
    keep.setInt("keepdims", 0);
    checkAgainstReference(keep, {in(rnd({3, 13, 5}, 98)), constant(makeTensor<int64_t>({1}, {-2}))});
  }
}

TEST(VulkanRaster, DataMovementOps) {
  OSPREY_REQUIRE_VULKAN();
  Node t = makeNode(OpType::Transpose);
  t.setInts("perm", {0, 2, 3, 1});
  checkAgainstReference(t, {in(rnd({2, 13, 5, 7}, 100))});
  Node c = makeNode(OpType::Concat);
  c.setInt("axis", 1);
  checkAgainstReference(c, {in(rnd({2, 3, 5}, 101)), in(rnd({2, 7, 5}, 102)), in(rnd({2, 1, 5}, 103))});
  checkAgainstReference(makeNode(OpType::Slice),
                        {in(rnd({5, 13, 7}, 104)), constant(makeTensor<int64_t>({2}, {1, 2})),
                         constant(makeTensor<int64_t>({2}, {12, 7})), constant(makeTensor<int64_t>({2}, {1, 2})),
                         constant(makeTensor<int64_t>({2}, {1, 2}))});
  Node f = makeNode(OpType::Flatten);
  f.setInt("axis", 1);
  checkAgainstReference(f, {in(rnd({2, 13, 3, 3}, 105))});
  Node p = makeNode(OpType::Pad);
  checkAgainstReference(p, {in(rnd({2, 3, 5}, 106)), constant(makeTensor<int64_t>({6}, {0, 1, 2, 0, 0, 1}))});
}

// Raster moves 32-bit words: int32 elements one word each, int64 two.
TEST(VulkanRaster, IntegerElements) {
  OSPREY_REQUIRE_VULKAN();
  Node t = makeNode(OpType::Transpose);
  t.setInts("perm", {2, 0, 1});
  checkAgainstReference(t, {in(randomTensor(DataType::Int64, {3, 5, 7}, 107, -1e12, 1e12))});
  Node c = makeNode(OpType::Concat);
  c.setInt("axis", 0);
  checkAgainstReference(c, {in(randomTensor(DataType::Int32, {2, 13}, 108, -1000, 1000)),
                            in(randomTensor(DataType::Int32, {5, 13}, 109, -1000, 1000))});
}

}  // namespace
}  // namespace osprey::test
