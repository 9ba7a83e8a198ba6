// Logical, bitwise and comparison ops and Mod against naive loops written here: every output
// element is computed from its multi-index, mapped to each input by the numpy broadcasting rule,
// in the element type itself (so 64-bit integers are exact).
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

template <class O, class T>
Tensor naiveBinary(const Tensor& a, const Tensor& b, const std::function<O(T, T)>& f) {
  const Shape out = broadcastOf({a.shape(), b.shape()});
  Tensor r(dataTypeOf<O>(), out);
  for (int64_t i = 0; i < r.elements(); ++i)
    r.data<O>()[i] = f(a.data<T>()[sourceIndex(out, a.shape(), i)], b.data<T>()[sourceIndex(out, b.shape(), i)]);
  return r;
}

template <class T>
void expectEqualTensors(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  for (int64_t i = 0; i < actual.elements(); ++i)
    ASSERT_EQ(actual.data<T>()[i], expected.data<T>()[i]) << "element " << i;
}

const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{13, 7}, {13, 7}}, {{3, 13, 7}, {}}, {{13, 1, 5}, {7, 1}}, {{2, 3, 127}, {127}}, {{1, 13, 1}, {5, 1, 7}},
};

TEST(LogicalOp, BoolOpsBroadcast) {
  uint32_t seed = 1;
  const std::pair<OpType, std::function<bool(bool, bool)>> cases[] = {
      {OpType::And, [](bool x, bool y) { return x && y; }},
      {OpType::Or, [](bool x, bool y) { return x || y; }},
      {OpType::Xor, [](bool x, bool y) { return x != y; }},
  };
  for (auto& [type, f] : cases)
    for (auto& [sa, sb] : kShapePairs) {
      SCOPED_TRACE(std::string(opTypeName(type)) + " " + shapeToString(sa) + " " + shapeToString(sb));
      Tensor a = randomTensor(DataType::Bool, sa, seed++, 0, 2), b = randomTensor(DataType::Bool, sb, seed++, 0, 2);
      expectEqualTensors<bool>(run1(makeNode(type), {in(a), in(b)}), naiveBinary<bool, bool>(a, b, f));
    }
  Tensor x = randomTensor(DataType::Bool, {3, 13, 7}, 99, 0, 2);
  Tensor expected(DataType::Bool, x.shape());
  for (int64_t i = 0; i < x.elements(); ++i) expected.data<bool>()[i] = !x.data<bool>()[i];
  expectEqualTensors<bool>(run1(makeNode(OpType::Not), {in(x)}), expected);
}

template <class T>
void checkBitwise(uint32_t seed) {
  SCOPED_TRACE(dataTypeName(dataTypeOf<T>()));
  const double lo = std::is_signed_v<T> ? -100 : 0;
  const std::pair<OpType, std::function<T(T, T)>> cases[] = {
      {OpType::BitwiseAnd, [](T x, T y) { return T(x & y); }},
      {OpType::BitwiseOr, [](T x, T y) { return T(x | y); }},
      {OpType::BitwiseXor, [](T x, T y) { return T(x ^ y); }},
  };
  for (auto& [type, f] : cases)
    for (auto& [sa, sb] : kShapePairs) {
      Tensor a = randomTensor(dataTypeOf<T>(), sa, seed++, lo, 120), b = randomTensor(dataTypeOf<T>(), sb, seed++, lo, 120);
      if (a.elements() > 1) a.data<T>()[0] = std::numeric_limits<T>::max();
      expectEqualTensors<T>(run1(makeNode(type), {in(a), in(b)}), naiveBinary<T, T>(a, b, f));
    }
  Tensor x = randomTensor(dataTypeOf<T>(), {13, 7}, seed, lo, 120);
  Tensor expected(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.elements(); ++i) expected.data<T>()[i] = T(~x.data<T>()[i]);
  expectEqualTensors<T>(run1(makeNode(OpType::BitwiseNot), {in(x)}), expected);
}

TEST(LogicalOp, BitwiseOnEveryIntegerType) {
  checkBitwise<int8_t>(10);
  checkBitwise<int16_t>(20);
  checkBitwise<int32_t>(30);
  checkBitwise<int64_t>(40);
  checkBitwise<uint8_t>(50);
  checkBitwise<uint16_t>(60);
  checkBitwise<uint32_t>(70);
  checkBitwise<uint64_t>(80);
}

template <class T>
void checkShift(uint32_t seed) {
  SCOPED_TRACE(dataTypeName(dataTypeOf<T>()));
  const int bits = sizeof(T) * 8;
  for (const char* direction : {"LEFT", "RIGHT"}) {
    Node node = makeNode(OpType::BitShift);
    node.setString("direction", direction);
    const bool left = direction[0] == 'L';
    // Shift amounts run past the bit width, where the result is 0.
    Tensor x = randomTensor(dataTypeOf<T>(), {13, 7}, seed++, 0, 250);
    Tensor s = randomTensor(dataTypeOf<T>(), {7}, seed++, 0, bits + 3);
    auto f = [left, bits](T v, T n) -> T {
      if (n >= T(bits)) return 0;
      T r = v;
      for (T k = 0; k < n; ++k) r = left ? T(r * 2) : T(r / 2);
      return r;
    };
    expectEqualTensors<T>(run1(node, {in(x), in(s)}), naiveBinary<T, T>(x, s, f));
  }
}

TEST(LogicalOp, BitShiftBothDirections) {
  checkShift<uint8_t>(1);
  checkShift<uint16_t>(2);
  checkShift<uint32_t>(3);
  checkShift<uint64_t>(4);
}

TEST(LogicalOp, OrderedComparisons) {
  uint32_t seed = 200;
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16, DataType::BFloat16, DataType::Int8,
                      DataType::Int32, DataType::Int64, DataType::UInt8, DataType::UInt64}) {
    for (auto& [sa, sb] : kShapePairs) {
      SCOPED_TRACE(std::string(dataTypeName(dt)) + " " + shapeToString(sa) + " " + shapeToString(sb));
      // Few distinct values, so that equal pairs are common.
      Tensor a = randomTensor(dt, sa, seed++, 0, 5), b = randomTensor(dt, sb, seed++, 0, 5);
      if (dt == DataType::Float32 && a.elements() > 2) a.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
      for (OpType type : {OpType::GreaterOrEqual, OpType::LessOrEqual}) {
        const Shape out = broadcastOf({a.shape(), b.shape()});
        Tensor expected(DataType::Bool, out);
        for (int64_t i = 0; i < expected.elements(); ++i) {
          double x = at(a, sourceIndex(out, a.shape(), i)), y = at(b, sourceIndex(out, b.shape(), i));
          expected.data<bool>()[i] = type == OpType::GreaterOrEqual ? x >= y : x <= y;
        }
        expectEqualTensors<bool>(run1(makeNode(type), {in(a), in(b)}), expected);
      }
    }
  }
}

template <class T>
void checkIntegerMod(uint32_t seed) {
  SCOPED_TRACE(dataTypeName(dataTypeOf<T>()));
  const double lo = std::is_signed_v<T> ? -60 : 0;
  Tensor a = randomTensor(dataTypeOf<T>(), {3, 13, 7}, seed, lo, 60), b = randomTensor(dataTypeOf<T>(), {13, 7}, seed + 1, lo, 60);
  b.data<T>()[0] = 0;  // undefined in ONNX; Osprey gives 0
  for (int fmod : {0, 1}) {
    Node node = makeNode(OpType::Mod);
    node.setInt("fmod", fmod);
    auto f = [fmod](T x, T y) -> T {
      if (y == 0) return 0;
      double q = static_cast<double>(x) / static_cast<double>(y);
      q = fmod ? std::trunc(q) : std::floor(q);  // Python's % floors the quotient, C's truncates it
      return static_cast<T>(static_cast<double>(x) - q * static_cast<double>(y));
    };
    expectEqualTensors<T>(run1(node, {in(a), in(b)}), naiveBinary<T, T>(a, b, f));
  }
}

TEST(LogicalOp, ModIntegersBothSigns) {
  checkIntegerMod<int8_t>(1);
  checkIntegerMod<int16_t>(3);
  checkIntegerMod<int32_t>(5);
  checkIntegerMod<int64_t>(7);
  checkIntegerMod<uint8_t>(9);
  checkIntegerMod<uint32_t>(11);
  checkIntegerMod<uint64_t>(13);
  // The lowest value modulo -1 must not trap.
  Node node = makeNode(OpType::Mod);
  Tensor y = run1(node, {in(makeTensor<int32_t>({1}, {std::numeric_limits<int32_t>::min()})),
                         in(makeTensor<int32_t>({1}, {-1}))});
  EXPECT_EQ(y.data<int32_t>()[0], 0);
}

TEST(LogicalOp, ModFloatsTakeTheSignOfTheDividend) {
  uint32_t seed = 300;
  Node node = makeNode(OpType::Mod);
  node.setInt("fmod", 1);
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16}) {
    SCOPED_TRACE(dataTypeName(dt));
    Tensor a = randomTensor(dt, {13, 7}, seed++, -20, 20), b = randomTensor(dt, {7}, seed++, -5, 5);
    const Shape out = a.shape();
    Tensor expected(dt, out);
    for (int64_t i = 0; i < expected.elements(); ++i)
      storeFromDouble(dt, expected.data(), i, std::fmod(at(a, i), at(b, sourceIndex(out, b.shape(), i))));
    expectNear(run1(node, {in(a), in(b)}), expected, 0, 0);
  }
}

TEST(LogicalOp, InvalidModelsAreErrors) {
  std::vector<Tensor> out;
  Tensor f = randomTensor(DataType::Float32, {3, 4}, 1), i32 = randomTensor(DataType::Int32, {3, 4}, 2, 0, 9);
  Tensor u8 = randomTensor(DataType::UInt8, {3, 4}, 3, 0, 9), bools = randomTensor(DataType::Bool, {3, 4}, 4, 0, 2);
  EXPECT_FALSE(runOp(makeNode(OpType::And), {in(f), in(f)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::Not), {in(i32)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::Or), {in(bools), in(randomTensor(DataType::Bool, {5}, 5, 0, 2))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::BitwiseAnd), {in(f), in(f)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::BitwiseOr), {in(i32), in(u8)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::BitwiseNot), {in(bools)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::BitShift), {in(u8), in(u8)}, 1, &out).isOk());  // no direction
  Node shift = makeNode(OpType::BitShift);
  shift.setString("direction", "UP");
  EXPECT_FALSE(runOp(shift, {in(u8), in(u8)}, 1, &out).isOk());
  shift.setString("direction", "LEFT");
  EXPECT_FALSE(runOp(shift, {in(i32), in(i32)}, 1, &out).isOk());  // signed
  EXPECT_FALSE(runOp(makeNode(OpType::GreaterOrEqual), {in(bools), in(bools)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::Mod), {in(f), in(f)}, 1, &out).isOk());  // float needs fmod=1
  Node mod = makeNode(OpType::Mod);
  mod.setInt("fmod", 2);
  EXPECT_FALSE(runOp(mod, {in(i32), in(i32)}, 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
