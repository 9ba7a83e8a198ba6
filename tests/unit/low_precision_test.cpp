#include <gtest/gtest.h>

#include <cmath>

#include "core/low_precision.h"

namespace osprey {
namespace {

// Bit patterns worked out by hand from each format's sign/exponent/mantissa layout.
TEST(LowPrecision, KnownEncodings) {
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FN, 1.0), 0x38);    // 0 0111 000
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FN, 448.0), 0x7E);  // largest finite
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FN, -2.0), 0xC0);
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FNUZ, 1.0), 0x40);  // bias 8
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E5M2, 1.0), 0x3C);      // 0 01111 00
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E5M2FNUZ, 1.0), 0x40);  // bias 16
  EXPECT_EQ(encodeLowPrecision(DataType::Float4E2M1, 1.0), 0x2);
  EXPECT_EQ(encodeLowPrecision(DataType::Float4E2M1, 0.5), 0x1);       // the subnormal
  EXPECT_EQ(encodeLowPrecision(DataType::Float4E2M1, 6.0), 0x7);
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E8M0, 1.0), 0x7F);
}

TEST(LowPrecision, SaturationAndSpecials) {
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FN, 1e6, true), 0x7E);
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FN, 1e6, false), 0x7F);  // NaN: no infinity
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E5M2, INFINITY, false), 0x7C);  // infinity
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E5M2, INFINITY, true), 0x7B);   // largest finite
  EXPECT_TRUE(std::isnan(decodeLowPrecision(DataType::Float8E4M3FNUZ, 0x80)));
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FNUZ, -0.0), 0x00);  // no negative zero
}

TEST(LowPrecision, EveryCodeRoundTrips) {
  for (DataType t : {DataType::Float8E4M3FN, DataType::Float8E4M3FNUZ, DataType::Float8E5M2, DataType::Float8E5M2FNUZ}) {
    for (int c = 0; c < 256; ++c) {
      double v = decodeLowPrecision(t, static_cast<uint8_t>(c));
      if (std::isnan(v) || std::isinf(v)) continue;
      if (v == 0 && c != 0) continue;  // negative zero
      EXPECT_EQ(encodeLowPrecision(t, v, false), c) << dataTypeName(t) << " code " << c;
    }
  }
}

TEST(LowPrecision, RoundsToNearestEven) {
  // Between 1.0 (0x38) and 1.125 (0x39) in e4m3fn: the midpoint goes to the even code.
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FN, 1.0625), 0x38);
  EXPECT_EQ(encodeLowPrecision(DataType::Float8E4M3FN, 1.07), 0x39);
}

TEST(LowPrecision, SubByteIntegersUnpackAndWrap) {
  const uint8_t packed[] = {0x87, 0x0F};  // int4: 7, -8, -1, 0
  uint8_t out[4];
  unpackSubByte(DataType::Int4, packed, 4, out);
  EXPECT_EQ(static_cast<int8_t>(out[0]), 7);
  EXPECT_EQ(static_cast<int8_t>(out[1]), -8);
  EXPECT_EQ(static_cast<int8_t>(out[2]), -1);
  EXPECT_EQ(static_cast<int8_t>(out[3]), 0);
  EXPECT_EQ(packedBytes(DataType::UInt2, 5), 2);
  EXPECT_EQ(static_cast<int8_t>(encodeLowPrecision(DataType::Int4, 9.0)), -7);  // wraps like int casts
  EXPECT_EQ(encodeLowPrecision(DataType::UInt2, -3.0), 1);
}

}  // namespace
}  // namespace osprey
