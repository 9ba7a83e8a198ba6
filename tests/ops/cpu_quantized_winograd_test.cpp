// The integer Winograd convolution (quantized_winograd.h) against integer loops, byte for byte,
// wherever the CPU has AVX2 (whichever kernel table the process uses): odd channel counts, odd
// maps, several tile blocks, channels shared out between threads, both activation and weight
// types, zero points at the ends of their types.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/quantized_winograd.h"
#include "core/thread_pool.h"

namespace osprey::test {
namespace {

struct WinogradCase {
  int64_t C, O, H, W, pad;
  bool xSigned, wSigned;
  int32_t xZero, wZero;  // wZero for even output channels, wZero / 2 for odd ones (per channel)
  bool signedOut, narrowRange;
};

bool hasAvx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

void checkWinograd(const WinogradCase& k, uint32_t seed, ThreadPool* pool, int threads) {
#if defined(__x86_64__) || defined(_M_X64)
  SCOPED_TRACE("C=" + std::to_string(k.C) + " O=" + std::to_string(k.O) + " H=" + std::to_string(k.H) +
               " W=" + std::to_string(k.W) + " pad=" + std::to_string(k.pad) + " threads=" + std::to_string(threads));
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> x(static_cast<size_t>(k.H * k.W * k.C)), w(static_cast<size_t>(k.O * k.C * 9));
  for (auto& v : x) v = static_cast<uint8_t>(byte(gen));
  for (auto& v : w) v = static_cast<uint8_t>(byte(gen));
  std::vector<int32_t> wZero(static_cast<size_t>(k.O));
  for (int64_t o = 0; o < k.O; ++o) wZero[o] = o % 2 == 0 ? k.wZero : k.wZero / 2;
  ASSERT_TRUE(qwinogradExact(w.data(), k.wSigned, wZero.data(), k.O, k.O, k.C));
  std::vector<int16_t> packed(qwinogradPackedBytes(k.C, k.O) / sizeof(int16_t));
  qwinogradPackWeights(w.data(), k.wSigned, wZero.data(), k.O, k.O, k.C, packed.data());

  QWinogradShape s;
  s.H = k.H, s.W = k.W, s.C = k.C, s.O = k.O, s.padTop = k.pad, s.padLeft = k.pad;
  s.outH = k.H + 2 * k.pad - 2, s.outW = k.W + 2 * k.pad - 2;
  const int64_t columns = k.O + 64;  // column arrays are read in whole vectors
  std::vector<int32_t> bias(static_cast<size_t>(columns), 0);
  std::vector<float> scale(static_cast<size_t>(columns), 0.f);
  for (int64_t o = 0; o < k.O; ++o) {
    bias[o] = static_cast<int32_t>(o * 97 % 4001) - 2000;
    scale[o] = 0.00011f * static_cast<float>(1 + o % 7);
  }
  QGemmOutputStage stage;
  stage.columnOffset = bias.data();
  stage.scale = scale.data();
  stage.signedOutput = k.signedOut;
  stage.lo = k.signedOut ? -128 : 0;
  stage.hi = k.signedOut ? 127 : 255;
  stage.zeroPoint = k.signedOut ? -5 : 9;
  if (k.narrowRange) stage.lo = stage.zeroPoint, stage.hi = stage.zeroPoint + 100;

  const uint8_t flip = k.xSigned ? 0x80 : 0;
  const int32_t za = k.xSigned ? k.xZero + 128 : k.xZero;
  std::vector<uint8_t> y(static_cast<size_t>(s.outH * s.outW * k.O), 0xCD);
  std::vector<uint8_t> scratch(static_cast<size_t>(threads) * qwinogradScratchBytes(s));
  qwinogradConv__avx2(pool, threads, s, x.data(), flip, za, packed.data(), stage, y.data(), scratch.data());

  int mismatches = 0;
  for (int64_t oh = 0; oh < s.outH && mismatches < 5; ++oh)
    for (int64_t ow = 0; ow < s.outW && mismatches < 5; ++ow)
      for (int64_t o = 0; o < k.O && mismatches < 5; ++o) {
        int32_t sum = 0;
        for (int64_t c = 0; c < k.C; ++c)
          for (int64_t t = 0; t < 9; ++t) {
            const int64_t ih = oh - k.pad + t / 3, iw = ow - k.pad + t % 3;
            const bool inside = ih >= 0 && ih < k.H && iw >= 0 && iw < k.W;
            const int32_t xv = inside ? (x[(ih * k.W + iw) * k.C + c] ^ flip) - za : 0;
            const uint8_t wb = w[(o * k.C + c) * 9 + t];
            const int32_t wv = (k.wSigned ? static_cast<int32_t>(static_cast<int8_t>(wb)) : wb) - wZero[o];
            sum += xv * wv;
          }
        const int32_t want = qgemmRequantize(static_cast<float>(sum + bias[o]) * scale[o], stage);
        const uint8_t at = y[(oh * s.outW + ow) * k.O + o];
        const int32_t got = k.signedOut ? static_cast<int8_t>(at) : at;
        if (got != want) {
          ADD_FAILURE() << "(" << oh << ", " << ow << ", " << o << "): " << got << " want " << want;
          ++mismatches;
        }
      }
#else
  (void)k, (void)seed, (void)pool, (void)threads;
#endif
}

TEST(CpuQuantizedWinograd, MatchesIntegerLoops) {
  if (!hasAvx2()) GTEST_SKIP() << "the integer Winograd runs on the AVX2 table; this CPU has no AVX2";
  const std::vector<WinogradCase> cases = {
      {16, 16, 9, 9, 1, false, true, 128, 0, false, false},    // odd output map, one block
      {19, 37, 11, 8, 1, true, true, -7, 0, true, false},      // channel tails both sides
      {16, 16, 30, 30, 1, false, true, 3, 0, false, false},    // several blocks of tiles
      {33, 40, 8, 8, 1, true, false, 127, 255, true, true},    // uint8 weights, zero points at the ends
      {24, 21, 12, 13, 0, false, false, 255, 128, false, true},  // no padding
      {64, 48, 14, 14, 1, true, true, -128, -128, true, false},  // int8 extremes
      {17, 16, 5, 7, 1, false, true, 0, 127, false, false},      // one row of tiles
  };
  ThreadPool pool(2);
  uint32_t seed = 77;
  for (const WinogradCase& k : cases) {
    checkWinograd(k, seed++, &pool, 2);
    checkWinograd(k, seed++, nullptr, 1);
  }
}

TEST(CpuQuantizedWinograd, RefusesWeightsWhoseSumsCouldLeaveInt32) {
  // 4 * 255 * (C * 9 * 255) >= 2^31 from C = 918: such uint8 weights far from their zero point
  // could overflow the transformed sums, so the direct GEMM keeps them.
  for (int64_t C : {917, 918}) {
    const std::vector<uint8_t> w(static_cast<size_t>(C * 9), 255);
    const int32_t zero = 0;
    EXPECT_EQ(qwinogradExact(w.data(), false, &zero, 1, 1, C), C == 917) << C;
  }
}

}  // namespace
}  // namespace osprey::test
