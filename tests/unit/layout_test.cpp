#include <gtest/gtest.h>

#include <numeric>

#include "core/dtype.h"
#include "core/layout.h"

namespace osprey {
namespace {

TEST(Layout, PackedRoundTripsThroughEveryLayout) {
  Shape shape = {2, 13, 5, 7};
  std::vector<float> nchw(shapeElements(shape));
  std::iota(nchw.begin(), nchw.end(), 0.f);
  for (Layout mid : {Layout::NHWC, Layout::NC4HW4, Layout::NC8HW8}) {
    std::vector<float> packed(layoutElements(shape, mid), -1.f), back(nchw.size());
    ASSERT_TRUE(convertLayout(nchw.data(), Layout::NCHW, packed.data(), mid, shape, 4).isOk());
    ASSERT_TRUE(convertLayout(packed.data(), mid, back.data(), Layout::NCHW, shape, 4).isOk());
    EXPECT_EQ(back, nchw) << layoutName(mid);
  }
}

TEST(Layout, NC4HW4PlacesChannelsInGroupsOfFour) {
  Shape shape = {1, 6, 2, 1};  // 6 channels -> 2 blocks of 4, padded with zeros
  std::vector<float> nchw = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // c*2 + s
  std::vector<float> packed(layoutElements(shape, Layout::NC4HW4), -1.f);
  EXPECT_EQ(packed.size(), 16u);
  ASSERT_TRUE(convertLayout(nchw.data(), Layout::NCHW, packed.data(), Layout::NC4HW4, shape, 4).isOk());
  // block 0, s 0: channels 0..3 at s=0 -> 0, 2, 4, 6
  EXPECT_EQ(packed[0], 0.f);
  EXPECT_EQ(packed[1], 2.f);
  EXPECT_EQ(packed[3], 6.f);
  // block 1, s 1: channels 4, 5 then zero padding
  EXPECT_EQ(packed[12], 9.f);
  EXPECT_EQ(packed[13], 11.f);
  EXPECT_EQ(packed[14], 0.f);
}

TEST(Layout, NhwcShapes) {
  EXPECT_EQ(storedShape({1, 3, 224, 200}, Layout::NHWC), (Shape{1, 224, 200, 3}));
  EXPECT_EQ(logicalShape({1, 224, 200, 3}, Layout::NHWC), (Shape{1, 3, 224, 200}));
}

TEST(DType, HalfConversionsRoundTrip) {
  for (float f : {0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 1e-3f, 3.14159f}) {
    float back = halfToFloat(floatToHalf(f));
    EXPECT_NEAR(back, f, std::fabs(f) * 1e-3 + 1e-7) << f;
  }
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(1e6f))));
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(1.5f)), 1.5f);
}

}  // namespace
}  // namespace osprey
