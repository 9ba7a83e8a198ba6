// The byte lookup kernels (QLinearSigmoid, QLinearLeakyRelu) against the scalar one: every
// length around the vector widths, every alignment, in place, and guard bytes that must stay.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/byte_lookup.h"

namespace osprey::test {
namespace {

struct NamedKernel {
  std::string name;
  ByteLookupKernel kernel;
};

// The scalar kernel and those this CPU runs; the dispatch itself decides VBMI.
std::vector<NamedKernel> runnableKernels() {
  std::vector<NamedKernel> kernels = {{"scalar", byte_lookup__scalar}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) kernels.push_back({"avx2", byte_lookup__avx2});
  if (byteLookupKernel("avx512f") == byte_lookup__avx512vbmi) kernels.push_back({"avx512vbmi", byte_lookup__avx512vbmi});
#endif
  return kernels;
}

std::vector<uint8_t> randomBytes(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(byte(rng));
  return v;
}

constexpr int64_t kLengths[] = {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 4097};
constexpr int64_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

TEST(CpuByteLookup, DispatchFollowsTheIsa) {
  EXPECT_EQ(byteLookupKernel("scalar"), byte_lookup__scalar);
  EXPECT_EQ(byteLookupKernel(nullptr), byte_lookup__scalar);
#if defined(__x86_64__)
  EXPECT_EQ(byteLookupKernel("avx2_fma"), byte_lookup__avx2);
  const ByteLookupKernel wide = byteLookupKernel("avx512f");
  EXPECT_TRUE(wide == byte_lookup__avx2 || wide == byte_lookup__avx512vbmi);
#endif
}

TEST(CpuByteLookup, MatchesScalarOnEveryLengthAndAlignment) {
  std::mt19937 rng(20240611);
  for (const NamedKernel& k : runnableKernels()) {
    for (int64_t n : kLengths) {
      for (int64_t offset = 0; offset < 64; ++offset) {
        SCOPED_TRACE(k.name + " n=" + std::to_string(n) + " offset=" + std::to_string(offset));
        const std::vector<uint8_t> table = randomBytes(rng, 256);
        // The input ends where its bytes end, so a read past n shows under AddressSanitizer.
        std::vector<uint8_t> input = randomBytes(rng, static_cast<size_t>(offset + n));
        const uint8_t* x = input.data() + offset;
        std::vector<uint8_t> expected(static_cast<size_t>(n));
        byte_lookup__scalar(table.data(), x, n, expected.data());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(expected[i], table[x[i]]);

        // The output at a different alignment from the input, between guard bytes.
        const int64_t outOffset = (offset * 7 + 3) % 64;
        std::vector<uint8_t> out(static_cast<size_t>(kGuard + outOffset + n + kGuard), kGuardByte);
        uint8_t* y = out.data() + kGuard + outOffset;
        k.kernel(table.data(), x, n, y);
        ASSERT_EQ(std::vector<uint8_t>(y, y + n), expected);
        for (int64_t i = 0; i < kGuard + outOffset; ++i) ASSERT_EQ(out[i], kGuardByte) << "before, at " << i;
        for (int64_t i = 0; i < kGuard; ++i) ASSERT_EQ(y[n + i], kGuardByte) << "after, at " << i;

        // In place, with the input's own alignment.
        std::vector<uint8_t> buffer(static_cast<size_t>(kGuard + offset + n + kGuard), kGuardByte);
        uint8_t* inPlace = buffer.data() + kGuard + offset;
        std::copy(x, x + n, inPlace);
        k.kernel(table.data(), inPlace, n, inPlace);
        ASSERT_EQ(std::vector<uint8_t>(inPlace, inPlace + n), expected);
        for (int64_t i = 0; i < kGuard + offset; ++i) ASSERT_EQ(buffer[i], kGuardByte) << "before, at " << i;
        for (int64_t i = 0; i < kGuard; ++i) ASSERT_EQ(inPlace[n + i], kGuardByte) << "after, at " << i;
      }
    }
  }
}

// A permutation maps each code to a different byte, so a kernel that mixes up two entries (a
// wrong slice, a wrong half) cannot pass by the two holding the same value.
TEST(CpuByteLookup, EveryCodeThroughAPermutation) {
  std::mt19937 rng(7);
  std::vector<uint8_t> codes(256);
  for (int i = 0; i < 256; ++i) codes[i] = static_cast<uint8_t>(i);
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<uint8_t> table = codes, shuffled = codes;
    std::shuffle(table.begin(), table.end(), rng);
    std::shuffle(shuffled.begin(), shuffled.end(), rng);  // each code at other positions, lanes
    for (const NamedKernel& k : runnableKernels()) {
      std::vector<uint8_t> out(256);
      k.kernel(table.data(), codes.data(), 256, out.data());
      for (int i = 0; i < 256; ++i) ASSERT_EQ(out[i], table[i]) << k.name << " code " << i;
      k.kernel(table.data(), shuffled.data(), 256, out.data());
      for (int i = 0; i < 256; ++i) ASSERT_EQ(out[i], table[shuffled[i]]) << k.name << " code " << int(shuffled[i]);
    }
  }
}

}  // namespace
}  // namespace osprey::test
