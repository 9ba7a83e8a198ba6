// Cast between every pair of numeric dtypes, against conversions written here per case.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

const DataType kNumeric[] = {DataType::Float32, DataType::Float64, DataType::Float16, DataType::BFloat16,
                             DataType::Int8,    DataType::Int16,   DataType::Int32,   DataType::Int64,
                             DataType::UInt8,   DataType::UInt16,  DataType::UInt32,  DataType::UInt64,
                             DataType::Bool};

bool isFloat(DataType t) {
  return t == DataType::Float32 || t == DataType::Float64 || t == DataType::Float16 || t == DataType::BFloat16;
}

Node castTo(DataType t) {
  Node n;
  n.type = OpType::Cast;
  n.setInt("to", static_cast<int64_t>(t));
  return n;
}

// The value `v` (exactly representable in the source type) as the target type would hold it.
double expectedValue(double v, DataType to) {
  if (to == DataType::Bool) return v != 0 ? 1 : 0;
  if (!isFloat(to)) return std::trunc(v);
  if (to == DataType::Float16) return halfToFloat(floatToHalf(static_cast<float>(v)));
  if (to == DataType::BFloat16) return bfloat16ToFloat(floatToBfloat16(static_cast<float>(v)));
  if (to == DataType::Float32) return static_cast<float>(v);
  return v;
}

TEST(CastOp, EveryNumericPair) {
  uint32_t seed = 1;
  for (DataType from : kNumeric) {
    // Non-negative values below 100 fit every target; floats carry fractions and exact zeros.
    Tensor x = from == DataType::Bool ? randomTensor(DataType::Bool, {13, 7}, seed++, 0, 2)
                                      : randomTensor(from, {13, 7}, seed++, 0, 100);
    if (from != DataType::Bool) storeFromDouble(from, x.data(), 3, 0.0);
    for (DataType to : kNumeric) {
      SCOPED_TRACE(std::string(dataTypeName(from)) + " -> " + dataTypeName(to));
      Tensor expected(to, x.shape());
      for (int64_t i = 0; i < x.elements(); ++i) storeFromDouble(to, expected.data(), i, expectedValue(at(x, i), to));
      Tensor y = run1(castTo(to), {in(x)});
      ASSERT_EQ(y.dtype(), to);
      expectNear(y, expected, 0, 0);
    }
  }
}

TEST(CastOp, NegativeAndSaturating) {
  Tensor f = makeTensor<float>({6}, {-1.5f, -0.5f, 2.9f, 300.f, -129.f, std::numeric_limits<float>::quiet_NaN()});
  Tensor i8 = run1(castTo(DataType::Int8), {in(f)});
  const int8_t e8[] = {-1, 0, 2, 127, -128, 0};  // truncation toward zero, saturation; NaN -> 0
  for (int i = 0; i < 6; ++i) EXPECT_EQ(i8.data<int8_t>()[i], e8[i]) << i;
  Tensor u8 = run1(castTo(DataType::UInt8), {in(f)});
  const uint8_t eu8[] = {0, 0, 2, 255, 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(u8.data<uint8_t>()[i], eu8[i]) << i;
  Tensor huge = makeTensor<double>({3}, {1e30, -1e30, 1.8e19});
  Tensor i64 = run1(castTo(DataType::Int64), {in(huge)});
  EXPECT_EQ(i64.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64.data<int64_t>()[1], std::numeric_limits<int64_t>::min());
  Tensor u64 = run1(castTo(DataType::UInt64), {in(huge)});
  EXPECT_EQ(u64.data<uint64_t>()[2], static_cast<uint64_t>(1.8e19));
  Tensor big = makeTensor<int32_t>({3}, {-1, 70000, -70000});
  Tensor i16 = run1(castTo(DataType::Int16), {in(big)});
  EXPECT_EQ(i16.data<int16_t>()[0], -1);
  EXPECT_EQ(i16.data<int16_t>()[1], static_cast<int16_t>(70000));
  EXPECT_EQ(i16.data<int16_t>()[2], static_cast<int16_t>(-70000));
  Tensor u32 = run1(castTo(DataType::UInt32), {in(big)});
  EXPECT_EQ(u32.data<uint32_t>()[0], 0xffffffffu);
  Tensor nanBool = run1(castTo(DataType::Bool), {in(f)});
  EXPECT_TRUE(nanBool.data<bool>()[5]);
}

TEST(CastOp, FloatRounding) {
  Tensor x = randomTensor(DataType::Float32, {127}, 5, -70000, 70000);
  for (DataType to : {DataType::Float16, DataType::BFloat16}) {
    Tensor y = run1(castTo(to), {in(x)});
    for (int64_t i = 0; i < x.elements(); ++i) {
      float v = x.data<float>()[i];
      uint16_t bits = to == DataType::Float16 ? floatToHalf(v) : floatToBfloat16(v);
      EXPECT_EQ(y.data<uint16_t>()[i], bits) << v;
    }
  }
}

TEST(CastOp, FromStrings) {
  Tensor s(DataType::String, {2, 3});
  s.strings() = {"1.5", "-2", "1e3", "INF", "-inf", " 7"};
  Tensor y = run1(castTo(DataType::Float32), {constant(s)});
  const float e[] = {
      1.5f, -2.f, 1000.f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 7.f};
  ASSERT_EQ(y.shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], e[i]) << i;
  Tensor n(DataType::String, {3});
  n.strings() = {"NaN", "0", "12"};
  Tensor yn = run1(castTo(DataType::Float64), {constant(n)});
  EXPECT_TRUE(std::isnan(yn.data<double>()[0]));
  Tensor ints(DataType::String, {3});
  ints.strings() = {"-9000000000", "42", "0"};
  Tensor yi = run1(castTo(DataType::Int64), {constant(ints)});
  EXPECT_EQ(yi.data<int64_t>()[0], -9000000000LL);
  EXPECT_EQ(yi.data<int64_t>()[1], 42);

  std::vector<Tensor> out;
  Tensor bad(DataType::String, {1});
  bad.strings() = {"twelve"};
  EXPECT_FALSE(runOp(castTo(DataType::Float32), {constant(bad)}, 1, &out).isOk());
  Tensor range(DataType::String, {1});
  range.strings() = {"300"};
  EXPECT_FALSE(runOp(castTo(DataType::Int8), {constant(range)}, 1, &out).isOk());
}

TEST(CastOp, Errors) {
  std::vector<Tensor> out;
  Tensor x = randomTensor(DataType::Float32, {3}, 1);
  Node noTo;
  noTo.type = OpType::Cast;
  EXPECT_FALSE(runOp(noTo, {in(x)}, 1, &out).isOk());
  Node f8;
  f8.type = OpType::Cast;
  f8.setInt("to", 14);
  Status st = runOp(f8, {in(x)}, 1, &out);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  EXPECT_NE(st.message().find("complex64"), std::string::npos) << st.message();
  st = runOp(castTo(DataType::String), {in(x)}, 1, &out);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  Node bogus;
  bogus.type = OpType::Cast;
  bogus.setInt("to", 99);
  EXPECT_FALSE(runOp(bogus, {in(x)}, 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
