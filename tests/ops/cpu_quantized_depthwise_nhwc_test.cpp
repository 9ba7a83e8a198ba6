// Depthwise QLinearConv on channels-last bytes (quantized_depthwise_nhwc.h): every kernel this
// CPU can run must equal, byte for byte, plain integer loops followed by qgemmRequantize, on odd
// channel counts (vector tails), every window edge (padding on one side only, windows larger than
// the map), zero points at both ends of their types, per-channel scales and zero points; row
// ranges computed apart must give the same bytes, and nothing outside them may be written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/qgemm.h"
#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"

namespace osprey::test {
namespace {

std::vector<std::pair<const char*, QDepthwiseNhwcKernel>> nhwcKernels() {
  std::vector<std::pair<const char*, QDepthwiseNhwcKernel>> kernels = {{"scalar", qdwconv_nhwc__scalar}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernels.push_back({"avx2", qdwconv_nhwc__avx2});
  if (__builtin_cpu_supports("avx512f")) kernels.push_back({"avx512f", qdwconv_nhwc__avx512f});
#endif
  return kernels;
}

struct NhwcCase {
  int64_t channels, inH, inW, kernelH, kernelW, stride, dilation;
  int64_t padTop, padLeft, padBottom, padRight;
  bool signedX;
  int32_t xZero;
  bool signedW;
  int32_t wZero;  // on every channel, or on two channels in three when perChannelW
  bool perChannelW, signedOut;
  int32_t yZero;
  bool extremeData, powerOfTwoScales;
  bool bigBias = false;  // |bias| up to 2^30, so that float(sum + bias) rounds
};

struct AlignedFree {
  void operator()(uint8_t* p) const { ::operator delete (p, std::align_val_t{64}); }
};
using AlignedBytes = std::unique_ptr<uint8_t, AlignedFree>;
AlignedBytes alignedBytes(size_t n) {
  return AlignedBytes(static_cast<uint8_t*>(::operator new (std::max<size_t>(n, 1), std::align_val_t{64})));
}

int32_t byteValue(uint8_t b, bool isSigned) { return isSigned ? static_cast<int8_t>(b) : static_cast<int32_t>(b); }
// The byte of that type farthest from the zero point, so that |difference| reaches 255.
uint8_t farByte(bool isSigned, int32_t zero) {
  if (isSigned) return static_cast<uint8_t>(static_cast<int8_t>(zero < 0 ? 127 : -128));
  return static_cast<uint8_t>(zero < 128 ? 255 : 0);
}

void checkCase(const NhwcCase& k, uint32_t seed) {
  QDepthwiseNhwcArgs a;
  a.inH = k.inH, a.inW = k.inW, a.channels = k.channels, a.kernelH = k.kernelH, a.kernelW = k.kernelW;
  a.strideH = a.strideW = k.stride, a.dilationH = a.dilationW = k.dilation;
  a.padH = k.padTop, a.padW = k.padLeft, a.signedX = k.signedX, a.xZero = k.xZero;
  a.outH = (k.inH + k.padTop + k.padBottom - (k.kernelH - 1) * k.dilation - 1) / k.stride + 1;
  a.outW = (k.inW + k.padLeft + k.padRight - (k.kernelW - 1) * k.dilation - 1) / k.stride + 1;
  ASSERT_GE(a.outH, 1);
  ASSERT_GE(a.outW, 1);
  const int64_t C = k.channels, taps = k.kernelH * k.kernelW, padded = (C + 63) / 64 * 64;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255), bd(-40000, 40000);
  std::uniform_real_distribution<float> sd(0.25f, 4.f);
  std::vector<uint8_t> x(static_cast<size_t>(k.inH * k.inW * C)), w(static_cast<size_t>(C * taps));
  std::vector<int32_t> wZero(k.perChannelW ? C : 1), bias(padded, 0);
  std::vector<float> scale(padded, 1.f);
  for (int64_t c = 0; c < static_cast<int64_t>(wZero.size()); ++c) wZero[c] = k.perChannelW && c % 3 == 2 ? 0 : k.wZero;
  for (uint8_t& v : x) v = k.extremeData ? farByte(k.signedX, k.xZero) : static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < C * taps; ++i)
    w[i] = k.extremeData ? farByte(k.signedW, wZero[k.perChannelW ? i / taps : 0]) : static_cast<uint8_t>(byte(rng));
  const float typical = 40.f / (std::sqrt(static_cast<float>(taps)) * 128.f * 128.f);
  for (int64_t c = 0; c < C; ++c) {
    bias[c] = bd(rng);
    scale[c] = k.powerOfTwoScales ? std::ldexp(1.f, -static_cast<int>(10 + c % 5)) : typical * sd(rng);
    if (k.bigBias) {
      const int bits = 24 + static_cast<int>(c % 7);  // 2^24 .. 2^30
      bias[c] = (c % 2 ? -1 : 1) * ((1 << bits) - (1 << (bits - 4)) + bd(rng));
      scale[c] = k.powerOfTwoScales ? std::ldexp(1.f, -(bits - 6)) : 100.f / static_cast<float>(bias[c]);
    }
  }
  QGemmOutputStage stage;
  stage.signedOutput = k.signedOut, stage.zeroPoint = k.yZero;
  stage.lo = k.signedOut ? -128 : 0, stage.hi = k.signedOut ? 127 : 255;

  const int64_t rowBytes = a.outW * C, yBytes = a.outH * rowBytes;
  std::vector<uint8_t> want(static_cast<size_t>(yBytes));
  for (int64_t oh = 0; oh < a.outH; ++oh)
    for (int64_t ow = 0; ow < a.outW; ++ow)
      for (int64_t c = 0; c < C; ++c) {
        const int32_t zw = wZero[k.perChannelW ? c : 0];
        int32_t sum = 0;
        for (int64_t kh = 0; kh < k.kernelH; ++kh)
          for (int64_t kw = 0; kw < k.kernelW; ++kw) {
            const int64_t ih = oh * k.stride - k.padTop + kh * k.dilation;
            const int64_t iw = ow * k.stride - k.padLeft + kw * k.dilation;
            if (ih < 0 || ih >= k.inH || iw < 0 || iw >= k.inW) continue;
            sum += (byteValue(x[(ih * k.inW + iw) * C + c], k.signedX) - k.xZero) *
                   (byteValue(w[c * taps + kh * k.kernelW + kw], k.signedW) - zw);
          }
        const float f = static_cast<float>(sum + bias[c]) * scale[c];
        want[oh * rowBytes + ow * C + c] = static_cast<uint8_t>(qgemmRequantize(f, stage));
      }

  std::vector<float> packed(qdepthwiseNhwcPackedBytes(C, taps) / sizeof(float));
  qdepthwiseNhwcPackWeights(w.data(), C, taps, k.signedW, wZero.data(), static_cast<int64_t>(wZero.size()),
                            packed.data());
  const size_t scratchBytes = qdepthwiseNhwcScratchBytes(a);
  AlignedBytes scratch = alignedBytes(scratchBytes);
  constexpr int64_t kGuard = 64;
  constexpr uint8_t kSentinel = 0xA5;
  for (const auto& named : nhwcKernels()) {
    SCOPED_TRACE(std::string(named.first));
    const QDepthwiseNhwcKernel kernel = named.second;
    auto run = [&](int64_t oh0, int64_t oh1, uint8_t* y) {
      std::fill(scratch.get(), scratch.get() + scratchBytes, uint8_t{0xFF});  // NaN floats: must be overwritten
      kernel(a, x.data(), packed.data(), bias.data(), scale.data(), stage, oh0, oh1, y, scratch.get());
    };
    std::vector<uint8_t> whole(static_cast<size_t>(yBytes), kSentinel);
    run(0, a.outH, whole.data());
    for (int64_t i = 0; i < yBytes; ++i)
      ASSERT_EQ(int(whole[i]), int(want[i]))
          << "whole: row " << i / rowBytes << " column " << i % rowBytes / C << " channel " << i % C;
    // Rows apart, in uneven pieces, scratch not reset between calls.
    std::vector<uint8_t> pieces(static_cast<size_t>(yBytes), kSentinel);
    const int64_t piece = 1 + static_cast<int64_t>(seed % 3);
    for (int64_t oh = 0; oh < a.outH; oh += piece)
      kernel(a, x.data(), packed.data(), bias.data(), scale.data(), stage, oh, std::min(a.outH, oh + piece),
             pieces.data(), scratch.get());
    for (int64_t i = 0; i < yBytes; ++i) ASSERT_EQ(int(pieces[i]), int(want[i])) << "pieces of " << piece << ": " << i;
    // A middle range between guard bytes: nothing before oh0 or from oh1 on is written.
    const int64_t oh0 = a.outH / 3, oh1 = std::max(oh0 + 1, 2 * a.outH / 3);
    std::vector<uint8_t> guarded(static_cast<size_t>(yBytes + 2 * kGuard), kSentinel);
    run(oh0, oh1, guarded.data() + kGuard);
    for (int64_t i = 0; i < yBytes + 2 * kGuard; ++i) {
      const int64_t at = i - kGuard;
      const bool inside = at >= oh0 * rowBytes && at < oh1 * rowBytes;
      ASSERT_EQ(int(guarded[i]), inside ? int(want[at]) : int(kSentinel))
          << "rows [" << oh0 << ", " << oh1 << "): byte " << at;
    }
  }
}

std::string describe(const NhwcCase& k) {
  return std::to_string(k.channels) + "ch " + std::to_string(k.inH) + "x" + std::to_string(k.inW) + " k" +
         std::to_string(k.kernelH) + "x" + std::to_string(k.kernelW) + " s" + std::to_string(k.stride) + " d" +
         std::to_string(k.dilation) + " pads " + std::to_string(k.padTop) + "," + std::to_string(k.padLeft) + "," +
         std::to_string(k.padBottom) + "," + std::to_string(k.padRight) + " x " + (k.signedX ? "s8 " : "u8 ") +
         std::to_string(k.xZero) + " w " + (k.signedW ? "s8 " : "u8 ") + std::to_string(k.wZero) +
         (k.perChannelW ? " per channel" : "") + " y " + (k.signedOut ? "s8 " : "u8 ") + std::to_string(k.yZero) +
         (k.extremeData ? " far bytes" : "") + (k.powerOfTwoScales ? " 2^-n scales" : "") +
         (k.bigBias ? " big bias" : "");
}

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
          const int64_t extentH = (kernelH - 1) * k.dilation + 1, extentW = (kernelW - 1) * k.dilation + 1;
          if (k.inH + k.padTop + k.padBottom < extentH || k.inW + k.padLeft + k.padRight < extentW) continue;
          SCOPED_TRACE(describe(k));
          checkCase(k, 9000 + index);
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
    SCOPED_TRACE(describe(k));
    checkCase(k, seed++);
    if (HasFatalFailure()) return;
  }
}

TEST(CpuQuantizedDepthwiseNhwc, KernelForIsaName) {
  EXPECT_EQ(qdepthwiseNhwcKernel("scalar"), qdwconv_nhwc__scalar);
#if defined(__x86_64__)
  EXPECT_EQ(qdepthwiseNhwcKernel("avx2_fma"), qdwconv_nhwc__avx2);
  EXPECT_EQ(qdepthwiseNhwcKernel("avx512f"), qdwconv_nhwc__avx512f);
#endif
}

}  // namespace
}  // namespace osprey::test
