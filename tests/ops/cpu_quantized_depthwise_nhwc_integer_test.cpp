// The integer channels-last depthwise kernel (quantized_depthwise_nhwc_quads.inl, AVX-512 VNNI):
// the shapes where its quads, ring columns and bias corrections could go wrong, each checked
// byte for byte against plain integer loops with every other kernel (cpu_depthwise_nhwc_case.h),
// and the choice between it and the float-sum fallback.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <utility>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"
#include "cpu_depthwise_nhwc_case.h"

namespace osprey::test {
namespace {

// The integer kernel's own edges: kernel rows of one, two and three quads, strides that keep
// every input column in the ring (3) or every other (2), dilation, asymmetric padding wider than
// the map, zero points at both ends, fused clamps, scales of +-inf and NaN; centred weights,
// int8 and uint8, and a few uint8 weights of other zero points, which must take the fallback.
TEST(CpuQuantizedDepthwiseNhwc, IntegerKernelMatchesIntegerLoopsOnOddShapes) {
  const int64_t channelCounts[] = {1, 7, 17, 35};
  const std::pair<int64_t, int64_t> windows[] = {{3, 3}, {5, 5}, {1, 3}, {3, 1}, {2, 4}, {3, 7}, {2, 9}};
  const std::pair<int64_t, int64_t> maps[] = {{1, 1}, {2, 3}, {9, 11}, {6, 5}, {14, 13}, {3, 20}};
  const int64_t paddings[][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {0, 1, 2, 0}, {2, 0, 1, 2}};
  const std::pair<bool, int32_t> xZeros[] = {{false, 0},   {true, 127}, {false, 255},
                                             {true, -128}, {false, 128}, {true, 3}};
  // Two in three centred; the rest uint8 of zero point 0 or 255 (the fallback).
  const std::pair<bool, int32_t> wZeros[] = {{true, 0},     {false, 128}, {true, 0},
                                             {false, 128}, {false, 0},   {false, 255}};
  uint32_t index = 0;
  int cases = 0;
  for (int64_t channels : channelCounts)
    for (const auto& [kernelH, kernelW] : windows)
      for (int64_t stride : {1, 2, 3})
        for (const auto& pad : paddings) {
          ++index;
          NhwcCase k{};
          k.channels = channels, k.kernelH = kernelH, k.kernelW = kernelW, k.stride = stride;
          k.dilation = index % 3 == 2 ? 2 : 1;
          const auto& map = maps[(index * 7 + index / 6) % 6];
          k.inH = map.first, k.inW = map.second;
          k.padTop = pad[0], k.padLeft = pad[1], k.padBottom = pad[2], k.padRight = pad[3];
          std::tie(k.signedX, k.xZero) = xZeros[index % 6];
          std::tie(k.signedW, k.wZero) = wZeros[(index / 6) % 6];
          k.centredW = k.signedW ? 0 : 128;
          k.perChannelW = index % 4 == 1;
          k.signedOut = index % 5 < 2, k.yZero = k.signedOut ? (index % 2 ? -128 : 17) : (index % 2 ? 255 : 3);
          k.clamp = index % 3 == 0;
          k.extremeData = index % 7 == 0;
          k.powerOfTwoScales = index % 5 == 3;
          k.bigBias = index % 11 == 4;
          k.nonFiniteScales = index % 13 == 6;
          if (!nhwcCaseFits(k)) continue;
          SCOPED_TRACE(describeNhwcCase(k));
          checkNhwcCase(k, 7000 + index);
          if (HasFatalFailure()) return;
          ++cases;
        }
  EXPECT_GT(cases, 280);
}

TEST(CpuQuantizedDepthwiseNhwc, KernelForIsaNameAndWeights) {
  EXPECT_EQ(qdepthwiseNhwcKernels("scalar", true).run, qdwconv_nhwc__scalar);
  EXPECT_EQ(qdepthwiseNhwcKernels("scalar", true).packedBytes, qdepthwiseNhwcPackedBytes);
#if defined(__x86_64__)
  EXPECT_EQ(qdepthwiseNhwcKernels("avx2_fma", true).run, qdwconv_nhwc__avx2);
  EXPECT_EQ(qdepthwiseNhwcKernels("avx512f", false).run, qdwconv_nhwc__avx512f);
  const QDepthwiseNhwcKernels integer = qdepthwiseNhwcKernels("avx512f", true);
  EXPECT_EQ(integer.run, cpuSupportsAvx512Vnni() ? qdwconv_nhwc_quads__avx512vnni : qdwconv_nhwc__avx512f);
  if (cpuSupportsAvx512Vnni()) {
    EXPECT_EQ(integer.pack, qdepthwiseNhwcPackQuads);
    EXPECT_EQ(integer.scratchBytes, qdepthwiseNhwcQuadScratchBytes);
  }
#endif
  const int32_t int8Centre[] = {0, 0, 0}, uint8Centre[] = {128, 128}, uint8Other[] = {128, 127}, int8Other[] = {1};
  EXPECT_TRUE(qdepthwiseNhwcCentredWeights(true, int8Centre, 3));
  EXPECT_TRUE(qdepthwiseNhwcCentredWeights(false, uint8Centre, 2));
  EXPECT_FALSE(qdepthwiseNhwcCentredWeights(false, uint8Other, 2));
  EXPECT_FALSE(qdepthwiseNhwcCentredWeights(false, int8Centre, 1));
  EXPECT_FALSE(qdepthwiseNhwcCentredWeights(true, int8Other, 1));
}

}  // namespace
}  // namespace osprey::test
