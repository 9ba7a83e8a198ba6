// floatsToHalves / halvesToFloats (core/half_arrays.h) at every length up to 40 (the F16C blocks
// of 8 and the scalar tail), from aligned and unaligned starts, with and without the vector path,
// against the one-element conversions of core/dtype.h, writing nothing past the end. (Every half
// value and the rounding edges: Float16Widening.CpuCastMatchesTheReferenceConversions.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "core/half_arrays.h"

namespace osprey {
namespace {

std::vector<float> edgeValues() {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.f, 65520.f, -65520.f, 1e-8f, -1e-8f,
                          5.96e-8f, 2.98e-8f, 6.1e-5f, 6.09e-5f, 3.1415926f, 1.f + 1.f / 2048.f,
                          1.f + 3.f / 2048.f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), 1e30f, -1e30f};
  for (int i = 0; i < 30; ++i) v.push_back(std::ldexp(static_cast<float>(i * 7919 % 1000) - 500.f, i % 40 - 30));
  return v;
}

TEST(HalfArrays, EveryLengthAndStart) {
  const std::vector<float> values = edgeValues();
  std::vector<uint16_t> halves(values.size());
  for (size_t i = 0; i < values.size(); ++i) halves[i] = floatToHalf(values[i]);
  for (bool vectorised : {true, false})
    for (int64_t n = 0; n <= 40; ++n)
      for (size_t start : {size_t{0}, size_t{3}}) {
        SCOPED_TRACE("n " + std::to_string(n) + " start " + std::to_string(start) + (vectorised ? "" : " scalar"));
        std::vector<uint16_t> narrowed(n + 1, 0xabcd);
        floatsToHalves(values.data() + start, narrowed.data(), n, vectorised);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(narrowed[i], halves[start + i]) << "element " << i;
        EXPECT_EQ(narrowed[n], 0xabcd) << "wrote past the end";
        std::vector<float> widened(n + 1, -7.f);
        halvesToFloats(halves.data() + start, widened.data(), n, vectorised);
        for (int64_t i = 0; i < n; ++i) {
          const float want = halfToFloat(halves[start + i]);
          ASSERT_EQ(std::memcmp(&widened[i], &want, sizeof(float)), 0) << "element " << i;
        }
        EXPECT_EQ(widened[n], -7.f) << "wrote past the end";
      }
}

}  // namespace
}  // namespace osprey
