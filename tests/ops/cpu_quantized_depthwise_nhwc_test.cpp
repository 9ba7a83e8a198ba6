// Depthwise QLinearConv on channels-last bytes (quantized_depthwise_nhwc.h): every kernel this
// CPU can run must equal, byte for byte, plain integer loops followed by qgemmRequantize, on odd
// channel counts (vector tails), every window edge (padding on one side only, windows larger than
// the map), zero points at both ends of their types, per-channel scales and zero points; row
// ranges computed apart must give the same bytes, and nothing outside them may be written.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu_depthwise_nhwc_case.h"

namespace osprey::test {
namespace {

TEST(CpuQuantizedDepthwiseNhwc, KernelsMatchIntegerLoopsOnEveryEdge) {
  const int64_t channelCounts[] = {1, 3, 15, 16, 17, 33, 100, 1001};
  const std::pair<int64_t, int64_t> windows[] = {{3, 3}, {5, 5}, {1, 3}, {3, 1}, {7, 7}};
  const std::pair<int64_t, int64_t> maps[] = {{1, 1}, {2, 3}, {37, 29}, {7, 7}, {4, 9}, {13, 6}, {10, 10}};
  const std::pair<bool, int32_t> xZeros[] = {{false, 0}, {true, 127}, {false, 255}, {true, -128}, {false, 128}};
  const std::pair<bool, int32_t> wZeros[] = {{true, 0}, {false, 255}, {true, -128}, {false, 0}, {true, 127}};
  const std::pair<bool, int32_t> yZeros[] = {{false, 0}, {true, -128}, {false, 255}, {true, 127}, {false, 131}};
  uint32_t index = 0;
  int cases = 0;
  for (int64_t channels : channelCounts)
    for (const auto& [kernelH, kernelW] : windows)
      for (int64_t stride : {1, 2})
        for (int padding = 0; padding < 5; ++padding, ++index) {
          NhwcCase k{};
          k.channels = channels, k.kernelH = kernelH, k.kernelW = kernelW, k.stride = stride;
          k.dilation = index % 4 == 3 ? 2 : 1;
          // Big maps on big channel counts only now and then, to keep the loops quick.
          const auto& map = maps[(index * 5 + (channels > 100 ? index / 3 : 0)) % 7];
          k.inH = channels > 100 && map.first > 20 ? 9 : map.first, k.inW = map.second;
          const int64_t p = padding == 0 ? 0 : padding <= 2 ? padding : 1 + index % 2;
          const bool top = padding != 4, bottom = padding != 3;  // 3: top/left only, 4: bottom/right only
          k.padTop = kernelH > 1 && top ? p : 0, k.padBottom = kernelH > 1 && bottom ? p : 0;
          k.padLeft = kernelW > 1 && top ? p : 0, k.padRight = kernelW > 1 && bottom ? p : 0;
          std::tie(k.signedX, k.xZero) = xZeros[index % 5];
          std::tie(k.signedW, k.wZero) = wZeros[(index / 5) % 5];
          std::tie(k.signedOut, k.yZero) = yZeros[(index / 2 + index / 25) % 5];
          k.perChannelW = index % 2 == 1;
          k.extremeData = index % 7 == 0;
          k.powerOfTwoScales = index % 3 == 1;
          k.bigBias = index % 11 == 4;
          if (!nhwcCaseFits(k)) continue;
          SCOPED_TRACE(describeNhwcCase(k));
          checkNhwcCase(k, 9000 + index);
          if (HasFatalFailure()) return;
          ++cases;
        }
  EXPECT_GT(cases, 250);
}

TEST(CpuQuantizedDepthwiseNhwc, KernelsMatchIntegerLoopsOnModelShapes) {
  // MobileNetV2 / EfficientNet layers, cut to few rows where the map is big.
  const std::vector<NhwcCase> cases = {
      {96, 12, 112, 3, 3, 2, 1, 0, 0, 1, 1, false, 0, true, 0, true, false, 0, false, false},
      {144, 9, 56, 3, 3, 1, 1, 1, 1, 1, 1, true, -128, true, 0, true, true, -3, false, false},
      {192, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, false, 128, false, 128, false, false, 7, false, false},
      {240, 14, 14, 5, 5, 1, 1, 2, 2, 2, 2, true, 5, true, 0, true, false, 0, false, true},
      {672, 14, 14, 5, 5, 2, 1, 1, 1, 2, 2, false, 0, true, 0, true, true, -128, false, false},
      {960, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, true, -128, true, 0, false, false, 255, true, false},
  };
  uint32_t seed = 100;
  for (const NhwcCase& k : cases) {
    SCOPED_TRACE(describeNhwcCase(k));
    checkNhwcCase(k, seed++);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace osprey::test
