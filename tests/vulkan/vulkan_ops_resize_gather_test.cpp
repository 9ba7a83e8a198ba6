// Resize, ConvTranspose and Gather on Vulkan against the reference kernels on random data with
// odd shapes, in fp32 (1e-4 relative) and fp16 storage (1e-2), with nothing falling back.
#include "vulkan_test_util.h"

namespace osprey::test {
namespace {

Tensor rnd(const Shape& s, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  return randomTensor(DataType::Float32, s, seed, lo, hi);
}

Node resizeNode(const std::string& mode, const std::string& coord,
                const std::string& nearestMode = "round_prefer_floor") {
  Node n = makeNode(OpType::Resize);
  n.setString("mode", mode);
  n.setString("coordinate_transformation_mode", coord);
  n.setString("nearest_mode", nearestMode);
  return n;
}

OpInput scales(std::vector<float> s) { return constant(makeTensor<float>({static_cast<int64_t>(s.size())}, s)); }
OpInput sizes(std::vector<int64_t> s) { return constant(makeTensor<int64_t>({static_cast<int64_t>(s.size())}, s)); }

TEST(VulkanResize, NearestEveryCoordinateAndRoundingMode) {
  OSPREY_REQUIRE_VULKAN();
  const Tensor x = rnd({2, 3, 13, 11}, 200);
  const std::pair<const char*, const char*> cases[] = {{"asymmetric", "floor"},
                                                       {"half_pixel", "round_prefer_floor"},
                                                       {"align_corners", "round_prefer_ceil"},
                                                       {"pytorch_half_pixel", "ceil"},
                                                       {"half_pixel_symmetric", "floor"}};
  for (auto [coord, rounding] : cases) {
    SCOPED_TRACE(std::string(coord) + " " + rounding);
    checkAgainstReference(resizeNode("nearest", coord, rounding), {in(x), absent(), scales({1, 1, 2, 0.6f})});
    checkAgainstReference(resizeNode("nearest", coord, rounding), {in(x), absent(), absent(), sizes({2, 3, 27, 7})});
  }
}

TEST(VulkanResize, LinearEveryCoordinateMode) {
  OSPREY_REQUIRE_VULKAN();
  const Tensor x = rnd({1, 5, 13, 9}, 201);
  for (const char* coord :
       {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"}) {
    SCOPED_TRACE(coord);
    checkAgainstReference(resizeNode("linear", coord), {in(x), absent(), scales({1, 1, 1.5f, 2.25f})});
    checkAgainstReference(resizeNode("linear", coord), {in(x), absent(), absent(), sizes({1, 5, 6, 127})});
  }
}

// The taps are the reference's: cubic, antialiased downscaling and tf_crop_and_resize's
// extrapolation run through the same shader; and a 3-D input.
TEST(VulkanResize, CubicAntialiasCropAndRank3) {
  OSPREY_REQUIRE_VULKAN();
  const Tensor x = rnd({2, 3, 13, 11}, 202);
  checkAgainstReference(resizeNode("cubic", "half_pixel"), {in(x), absent(), scales({1, 1, 1.7f, 0.8f})});
  Node aa = resizeNode("linear", "half_pixel");
  aa.setInt("antialias", 1);
  checkAgainstReference(aa, {in(x), absent(), scales({1, 1, 0.4f, 0.5f})});
  Node crop = resizeNode("linear", "tf_crop_and_resize");
  crop.setFloat("extrapolation_value", 0.25f);
  checkAgainstReference(crop, {in(x), constant(makeTensor<float>({8}, {0, 0, -0.2f, 0.1f, 1, 1, 0.9f, 1.3f})),
                               absent(), sizes({2, 3, 9, 13})});
  checkAgainstReference(resizeNode("linear", "half_pixel"),
                        {in(rnd({3, 13, 127}, 203)), absent(), scales({1, 2, 0.5f})});
}

Node convTransposeNode(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> dilations,
                       int64_t group, std::vector<int64_t> outputPadding = {0, 0}) {
  Node n = makeNode(OpType::ConvTranspose);
  n.setInts("strides", std::move(strides));
  n.setInts("pads", std::move(pads));
  n.setInts("dilations", std::move(dilations));
  n.setInt("group", group);
  n.setInts("output_padding", std::move(outputPadding));
  return n;
}

TEST(VulkanConvTranspose, StridesPadsDilationsOutputPaddingBias) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convTransposeNode({2, 3}, {1, 0, 2, 1}, {1, 2}, 1, {1, 2}),
                        {in(rnd({2, 13, 7, 5}, 210)), constant(rnd({13, 6, 3, 3}, 211)), constant(rnd({6}, 212))});
  checkAgainstReference(convTransposeNode({1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                        {in(rnd({1, 127, 3, 5}, 213)), constant(rnd({127, 13, 2, 2}, 214))});
}

TEST(VulkanConvTranspose, GroupsAndSameAutoPadAndOutputShape) {
  OSPREY_REQUIRE_VULKAN();
  checkAgainstReference(convTransposeNode({2, 2}, {1, 1, 1, 1}, {1, 1}, 3),
                        {in(rnd({2, 9, 5, 6}, 215)), constant(rnd({9, 4, 4, 3}, 216)), constant(rnd({12}, 217))});
  Node same = makeNode(OpType::ConvTranspose);
  same.setInts("strides", {2, 2});
  same.setString("auto_pad", "SAME_UPPER");
  checkAgainstReference(same, {in(rnd({1, 4, 13, 7}, 218)), constant(rnd({4, 5, 3, 3}, 219))});
  Node shaped = makeNode(OpType::ConvTranspose);
  shaped.setInts("strides", {3, 2});
  shaped.setInts("output_shape", {20, 15});
  checkAgainstReference(shaped,
                        {in(rnd({1, 4, 7, 7}, 220)), constant(rnd({4, 2, 3, 3}, 221)), constant(rnd({2}, 222))});
}

TEST(VulkanGather, AnyAxisIndexTypesNegativeIndices) {
  OSPREY_REQUIRE_VULKAN();
  const Tensor data = rnd({5, 13, 7}, 230);
  const Tensor i64 = makeTensor<int64_t>({2, 3}, {0, -1, 3, 3, -5, 4});
  for (int64_t axis : {0, 1, -1, 2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Node n = makeNode(OpType::Gather);
    n.setInt("axis", axis);
    checkAgainstReference(n, {in(data), in(i64)});
  }
  Node n = makeNode(OpType::Gather);
  n.setInt("axis", 1);
  checkAgainstReference(n, {in(data), in(makeTensor<int32_t>({4}, {12, -13, 0, 6}))});
  checkAgainstReference(n, {in(data), in(makeTensor<int64_t>({}, {-2}))});
  // Integer data moves unchanged at either precision; then rows of a 127-row table.
  checkAgainstReference(makeNode(OpType::Gather),
                        {in(randomTensor(DataType::Int64, {13, 3}, 231, -1000, 1000)),
                         in(makeTensor<int32_t>({2}, {-1, 5}))});
  checkAgainstReference(makeNode(OpType::Gather), {in(randomTensor(DataType::Int32, {7, 5}, 232, -50, 50)),
                                                   in(makeTensor<int64_t>({3}, {6, 0, -7}))});
  checkAgainstReference(makeNode(OpType::Gather),
                        {in(rnd({127, 13}, 233)), in(makeTensor<int64_t>({2, 2}, {126, 0, -127, 64}))});
}

}  // namespace
}  // namespace osprey::test
