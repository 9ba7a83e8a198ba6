// floatsToHalves / halvesToFloats (core/half_arrays.h) against the one-element conversions of
// core/dtype.h, on every length up to 40 (the F16C blocks of 8 and the scalar tail) and on the
// values where rounding matters: halfway cases, subnormals, the largest finite half, overflow to
// infinity, signed zeros and NaN; widening every one of the 65536 halves.
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
  for (int i = 0; i < 300; ++i) v.push_back(std::ldexp(static_cast<float>(i * 7919 % 1000) - 500.f, i % 40 - 30));
  return v;
}

TEST(HalfArrays, NarrowMatchesTheScalarConversionAtEveryLength) {
  const std::vector<float> values = edgeValues();
  for (size_t n = 0; n <= 40; ++n)
    for (size_t start : {size_t{0}, size_t{3}}) {
      std::vector<uint16_t> out(n + 1, 0xabcd);
      floatsToHalves(values.data() + start, out.data(), n);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], floatToHalf(values[start + i])) << "n " << n << " i " << i;
      EXPECT_EQ(out[n], 0xabcd) << "wrote past the end at n " << n;
    }
  std::vector<uint16_t> all(values.size());
  floatsToHalves(values.data(), all.data(), values.size());
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(all[i], floatToHalf(values[i])) << values[i];
  const float nan = std::numeric_limits<float>::quiet_NaN();
  uint16_t h = 0;
  floatsToHalves(&nan, &h, 1);
  EXPECT_TRUE(std::isnan(halfToFloat(h)));
  std::vector<float> nans(9, nan);
  std::vector<uint16_t> hs(9);
  floatsToHalves(nans.data(), hs.data(), 9);
  for (uint16_t x : hs) EXPECT_TRUE(std::isnan(halfToFloat(x)));
}

TEST(HalfArrays, WidenEveryHalf) {
  std::vector<uint16_t> halves(65536 + 5);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> out(halves.size());
  halvesToFloats(halves.data(), out.data(), halves.size());
  for (size_t i = 0; i < halves.size(); ++i) {
    const float want = halfToFloat(halves[i]);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(out[i])) << i;
    else
      EXPECT_EQ(std::memcmp(&out[i], &want, sizeof(float)), 0) << i;
  }
}

}  // namespace
}  // namespace osprey
