// TFLite's fixed-point requantization (ops/fixed_point_requantize.h) on values worked by hand, and
// QLinearMatMul with requantize = "fixed_point" (the TFLite importer's BATCH_MATMUL of two int8
// activations): the CPU session, the reference kernel and a naive loop agree, and ties round as
// LiteRT's kernels do, twice, where a float multiply rounds once.
#include <cstdint>

#include "ops/fixed_point_requantize.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

TEST(QuantizedFixedPoint, MultiplierIsAMantissaAndAShift) {
  const QuantizedMultiplier half = quantizeMultiplier(0.5);
  EXPECT_EQ(half.fixed, 1 << 30);
  EXPECT_EQ(half.shift, 0);
  const QuantizedMultiplier three = quantizeMultiplier(3.0);
  EXPECT_EQ(three.fixed, 3 << 29);
  EXPECT_EQ(three.shift, 2);
  // A mantissa that rounds up to 1.0 moves into the shift.
  const QuantizedMultiplier almostOne = quantizeMultiplier(1.0 - 1e-12);
  EXPECT_EQ(almostOne.fixed, 1 << 30);
  EXPECT_EQ(almostOne.shift, 1);
  EXPECT_EQ(quantizeMultiplier(0.0).fixed, 0);
}

TEST(QuantizedFixedPoint, RoundsTwiceAsTflite) {
  const QuantizedMultiplier half = quantizeMultiplier(0.5), quarter = quantizeMultiplier(0.25);
  // One rounding (the high multiply), half up: 1.5 -> 2, -1.5 -> -1.
  EXPECT_EQ(multiplyByQuantizedMultiplier(3, half), 2);
  EXPECT_EQ(multiplyByQuantizedMultiplier(-3, half), -1);
  // Two: 5 * 0.25 = 1.25 is 2.5 after the multiply (-> 3) and 1.5 after the shift (-> 2, away
  // from zero); rounded once it would be 1.
  EXPECT_EQ(multiplyByQuantizedMultiplier(5, quarter), 2);
  EXPECT_EQ(multiplyByQuantizedMultiplier(-5, quarter), -1);
  EXPECT_EQ(multiplyByQuantizedMultiplier(-6, quarter), -2);
  EXPECT_EQ(multiplyByQuantizedMultiplier(7, quantizeMultiplier(3.0)), 21);
}

Node fixedPointMatMul() {
  Node node = makeNode(OpType::QLinearMatMul);
  node.setString("requantize", "fixed_point");
  return node;
}

TEST(QuantizedFixedPoint, QLinearMatMulRoundsTiesAsTflite) {
  // y = a * b * (0.5 * 0.5 / 1): sums 5 and -5 are the ties above, 6 lands on 1.5.
  const std::vector<OpInput> inputs = {
      in(makeTensor<int8_t>({3, 1}, {5, -5, 6})), constant(scalar(0.5f)), constant(zeroPoint(DataType::Int8, 0)),
      in(makeTensor<int8_t>({1, 1}, {1})),        constant(scalar(0.5f)), constant(zeroPoint(DataType::Int8, 0)),
      constant(scalar(1.0f)),                     constant(zeroPoint(DataType::Int8, 3))};
  std::vector<Tensor> got, want;
  Status st = runOp(fixedPointMatMul(), inputs, 1, &got, 2);
  ASSERT_TRUE(st) << st.message();
  st = referenceOp(fixedPointMatMul(), inputs, 1, &want);
  ASSERT_TRUE(st) << st.message();
  expectEqualValues(got[0], makeTensor<int8_t>({3, 1}, {5, 2, 5}));
  expectEqualValues(want[0], got[0]);
}

TEST(QuantizedFixedPoint, QLinearMatMulOfTwoActivationsMatchesNaiveLoop) {
  const int64_t batches = 3, M = 5, K = 21, N = 7;
  const Tensor a = randomBytes(DataType::Int8, {batches, M, K}, 11), b = randomBytes(DataType::Int8, {batches, K, N}, 12);
  const float as = 0.0321f, bs = 0.0262f, ys = 0.119f;
  const int za = -6, zb = 11, zy = -11;
  const std::vector<OpInput> inputs = {in(a),         in(scalar(as)), in(zeroPoint(DataType::Int8, za)),
                                       in(b),         in(scalar(bs)), in(zeroPoint(DataType::Int8, zb)),
                                       in(scalar(ys)), in(zeroPoint(DataType::Int8, zy))};
  std::vector<Tensor> got, want;
  Status st = runOp(fixedPointMatMul(), inputs, 1, &got, 2);
  ASSERT_TRUE(st) << st.message();
  st = referenceOp(fixedPointMatMul(), inputs, 1, &want);
  ASSERT_TRUE(st) << st.message();
  Tensor naive(DataType::Int8, {batches, M, N});
  const QuantizedMultiplier m = productMultiplier(as, bs, ys);
  for (int64_t i = 0; i < batches; ++i)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) {
        int32_t sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += (a.data<int8_t>()[(i * M + r) * K + k] - za) * (b.data<int8_t>()[(i * K + k) * N + c] - zb);
        const int32_t y = multiplyByQuantizedMultiplier(sum, m) + zy;
        naive.data<int8_t>()[(i * M + r) * N + c] = static_cast<int8_t>(y < -128 ? -128 : y > 127 ? 127 : y);
      }
  expectEqualValues(got[0], naive);
  expectEqualValues(want[0], naive);
}

}  // namespace
}  // namespace osprey::test
