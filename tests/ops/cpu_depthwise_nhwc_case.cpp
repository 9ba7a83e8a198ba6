// The check of one channels-last depthwise QLinearConv case (cpu_depthwise_nhwc_case.h).
#include "cpu_depthwise_nhwc_case.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <random>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/qgemm.h"
#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"

namespace osprey::test {

namespace {

// Every kernel this CPU runs, each with its own weight packing and scratch: the float-sum ones,
// and the one the AVX-512 table chooses for these weights (the integer one where they are
// centred, else the float-sum fallback).
std::vector<std::pair<const char*, QDepthwiseNhwcKernels>> nhwcKernels(bool centredWeights) {
  std::vector<std::pair<const char*, QDepthwiseNhwcKernels>> kernels = {
      {"scalar", qdepthwiseNhwcKernels("scalar", centredWeights)}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    kernels.push_back({"avx2", qdepthwiseNhwcKernels("avx2_fma", centredWeights)});
  if (__builtin_cpu_supports("avx512f")) {
    kernels.push_back({"avx512f", qdepthwiseNhwcKernels("avx512f", false)});
    const QDepthwiseNhwcKernels chosen = qdepthwiseNhwcKernels("avx512f", centredWeights);
    EXPECT_EQ(chosen.run, centredWeights && cpuSupportsAvx512Vnni() ? qdwconv_nhwc_quads__avx512vnni : qdwconv_nhwc__avx512f);
    if (chosen.run != qdwconv_nhwc__avx512f) kernels.push_back({"avx512vnni", chosen});
  }
#endif
  return kernels;
}

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

}  // namespace

void checkNhwcCase(const NhwcCase& k, uint32_t seed) {
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
  const int32_t otherZero = k.centredW >= 0 ? k.centredW : 0;
  for (int64_t c = 0; c < static_cast<int64_t>(wZero.size()); ++c)
    wZero[c] = k.perChannelW && c % 3 == 2 ? otherZero : k.wZero;
  for (uint8_t& v : x) v = k.extremeData ? farByte(k.signedX, k.xZero) : static_cast<uint8_t>(byte(rng));
  for (int64_t i = 0; i < C * taps; ++i)
    w[i] = k.extremeData ? farByte(k.signedW, wZero[k.perChannelW ? i / taps : 0]) : static_cast<uint8_t>(byte(rng));
  const float typical = 40.f / (std::sqrt(static_cast<float>(taps)) * 128.f * 128.f);
  for (int64_t c = 0; c < C; ++c) {
    bias[c] = bd(rng);
    scale[c] = k.powerOfTwoScales ? std::ldexp(1.f, -static_cast<int>(10 + c % 5)) : typical * sd(rng);
    if (k.nonFiniteScales && c % 4 != 0)
      scale[c] = c % 4 == 1 ? INFINITY : c % 4 == 2 ? -INFINITY : NAN;
    if (k.bigBias) {
      const int bits = 24 + static_cast<int>(c % 7);  // 2^24 .. 2^30
      bias[c] = (c % 2 ? -1 : 1) * ((1 << bits) - (1 << (bits - 4)) + bd(rng));
      scale[c] = k.powerOfTwoScales ? std::ldexp(1.f, -(bits - 6)) : 100.f / static_cast<float>(bias[c]);
    }
  }
  QGemmOutputStage stage;
  stage.signedOutput = k.signedOut, stage.zeroPoint = k.yZero;
  stage.lo = k.signedOut ? -128 : 0, stage.hi = k.signedOut ? 127 : 255;
  if (k.clamp) stage.lo += 37, stage.hi -= 61;

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

  const bool centred = qdepthwiseNhwcCentredWeights(k.signedW, wZero.data(), static_cast<int64_t>(wZero.size()));
  constexpr int64_t kGuard = 64;
  constexpr uint8_t kSentinel = 0xA5;
  for (const auto& named : nhwcKernels(centred)) {
    SCOPED_TRACE(std::string(named.first));
    const QDepthwiseNhwcKernels& kernels = named.second;
    const QDepthwiseNhwcKernel kernel = kernels.run;
    std::vector<uint32_t> packed((kernels.packedBytes(C, k.kernelH, k.kernelW) + 3) / 4);
    kernels.pack(w.data(), C, k.kernelH, k.kernelW, k.signedW, wZero.data(), static_cast<int64_t>(wZero.size()),
                 packed.data());
    const size_t scratchBytes = kernels.scratchBytes(a);
    AlignedBytes scratch = alignedBytes(scratchBytes);
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

bool nhwcCaseFits(const NhwcCase& k) {
  const int64_t extentH = (k.kernelH - 1) * k.dilation + 1, extentW = (k.kernelW - 1) * k.dilation + 1;
  return k.inH + k.padTop + k.padBottom >= extentH && k.inW + k.padLeft + k.padRight >= extentW;
}

std::string describeNhwcCase(const NhwcCase& k) {
  return std::to_string(k.channels) + "ch " + std::to_string(k.inH) + "x" + std::to_string(k.inW) + " k" +
         std::to_string(k.kernelH) + "x" + std::to_string(k.kernelW) + " s" + std::to_string(k.stride) + " d" +
         std::to_string(k.dilation) + " pads " + std::to_string(k.padTop) + "," + std::to_string(k.padLeft) + "," +
         std::to_string(k.padBottom) + "," + std::to_string(k.padRight) + " x " + (k.signedX ? "s8 " : "u8 ") +
         std::to_string(k.xZero) + " w " + (k.signedW ? "s8 " : "u8 ") + std::to_string(k.wZero) +
         (k.perChannelW ? " per channel" : "") + " y " + (k.signedOut ? "s8 " : "u8 ") + std::to_string(k.yZero) +
         (k.extremeData ? " far bytes" : "") + (k.powerOfTwoScales ? " 2^-n scales" : "") +
         (k.bigBias ? " big bias" : "") + (k.clamp ? " clamped" : "") + (k.nonFiniteScales ? " inf/NaN scales" : "");
}

}  // namespace osprey::test
