// Integers stay integers: every op that takes int64 values or int64 operands (counts, indices,
// shapes) is run on INT64_MAX, INT64_MIN and 2^53 + 1 (the first integer a double rounds), and
// compared exactly with plain integer arithmetic written here. Float -> integer conversions
// follow the one rule of saturatingCast (core/dtype.h): truncation, NaN -> 0, saturation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kBig = (int64_t{1} << 53) + 1;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor ints(const std::vector<int64_t>& v) { return makeTensor<int64_t>({static_cast<int64_t>(v.size())}, v); }
Tensor scalarInt(int64_t v) { return makeTensor<int64_t>({}, {v}); }

std::vector<int64_t> valuesOf(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DataType::Int64);
  if (t.dtype() != DataType::Int64) return {};
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.elements());
}

// Two's complement arithmetic, as ONNX integer ops wrap.
int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t wrapNeg(int64_t a) { return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a)); }

Node withInt(OpType type, const char* name, int64_t v) {
  Node n = makeNode(type);
  n.setInt(name, v);
  return n;
}

// Runs a one-output op with its int64 inputs both fed and as constants (folded at resize).
void expectInts(const Node& node, const std::vector<Tensor>& inputs, const std::vector<int64_t>& expected) {
  for (bool asConstants : {false, true}) {
    SCOPED_TRACE(asConstants ? "constant inputs" : "graph inputs");
    std::vector<OpInput> ins;
    for (const Tensor& t : inputs) ins.push_back(asConstants ? constant(t) : in(t));
    std::vector<Tensor> out;
    Status st = runOp(node, ins, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(valuesOf(out[0]), expected);
  }
}

void expectError(const Node& node, const std::vector<Tensor>& inputs) {
  std::vector<OpInput> ins;
  for (const Tensor& t : inputs) ins.push_back(in(t));
  std::vector<Tensor> out;
  Status st = runOp(node, ins, 1, &out);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.code(), StatusCode::Internal) << st.message();
}

TEST(Int64Edges, NonMaxSuppressionInt64MaxKeepsEveryBox) {
  const int64_t N = 6, C = 2;
  Tensor boxes(DataType::Float32, {1, N, 4});
  for (int64_t i = 0; i < N; ++i) {  // [y1, x1, y2, x2], side by side: none overlaps another
    const float box[4] = {0.f, 10.f * static_cast<float>(i), 5.f, 10.f * static_cast<float>(i) + 5.f};
    std::copy(box, box + 4, boxes.data<float>() + i * 4);
  }
  Tensor scores = randomTensor(DataType::Float32, {1, C, N}, 3, 0, 1);
  for (int64_t maxOut : {kMax, kBig, int64_t{4}, int64_t{0}, int64_t{-1}, kMin}) {
    SCOPED_TRACE(maxOut);
    std::vector<int64_t> expected;
    for (int64_t c = 0; c < C; ++c) {
      std::vector<int64_t> order(N);
      for (int64_t i = 0; i < N; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t p, int64_t q) { return at(scores, c * N + p) > at(scores, c * N + q); });
      for (int64_t k = 0; k < std::min(N, std::max<int64_t>(maxOut, 0)); ++k)
        expected.insert(expected.end(), {0, c, order[k]});
    }
    expectInts(makeNode(OpType::NonMaxSuppression),
               {boxes, scores, ints({maxOut}), makeTensor<float>({1}, {0.5f}), makeTensor<float>({1}, {-1.f})},
               expected);
  }
}

// ONNX Slice on one axis, by walking the clamped range in 128-bit arithmetic.
std::vector<int64_t> naiveSlice(const std::vector<int64_t>& data, int64_t start, int64_t end, int64_t step) {
  const __int128 dim = static_cast<__int128>(data.size());
  __int128 s = start, e = end;
  if (s < 0) s += dim;
  if (e < 0) e += dim;
  s = step > 0 ? std::clamp<__int128>(s, 0, dim) : std::clamp<__int128>(s, 0, dim - 1);
  e = step > 0 ? std::clamp<__int128>(e, 0, dim) : std::clamp<__int128>(e, -1, dim - 1);
  std::vector<int64_t> out;
  for (__int128 i = s; step > 0 ? i < e : i > e; i += step) out.push_back(data[static_cast<size_t>(i)]);
  return out;
}

TEST(Int64Edges, SliceWithExtremeStartsEndsAndSteps) {
  const std::vector<int64_t> data = {kBig, kMax, kMin, 3, kBig + 1, -kBig, 6};
  const int64_t marks[] = {kMax, kMin, kBig, -kBig, 0, 2, -2, 7, -8};
  for (int64_t step : {int64_t{1}, int64_t{-1}, int64_t{2}, int64_t{-3}, kMax, kMin, kBig})
    for (int64_t start : marks)
      for (int64_t end : marks) {
        SCOPED_TRACE(std::to_string(start) + ":" + std::to_string(end) + ":" + std::to_string(step));
        std::vector<OpInput> ins{in(ints(data)), in(ints({start})), in(ints({end})), in(ints({0})), in(ints({step}))};
        std::vector<Tensor> out;
        Status st = runOp(makeNode(OpType::Slice), ins, 1, &out);
        ASSERT_TRUE(st.isOk()) << st.message();
        EXPECT_EQ(valuesOf(out[0]), naiveSlice(data, start, end, step));
      }
}

TEST(Int64Edges, TopKOrdersExactlyAndRejectsHugeK) {
  const std::vector<int64_t> x = {kBig, kBig - 1, kMax, kMin, kBig + 1, kMax - 1, -kBig};
  for (bool largest : {true, false}) {
    std::vector<int64_t> order(x.size());
    for (size_t i = 0; i < x.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t p, int64_t q) { return largest ? x[p] > x[q] : x[p] < x[q]; });
    std::vector<Tensor> out;
    Status st = runOp(withInt(OpType::TopK, "largest", largest), {in(ints(x)), in(ints({4}))}, 2, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    std::vector<int64_t> values, indices(order.begin(), order.begin() + 4);
    for (int64_t i : indices) values.push_back(x[i]);
    EXPECT_EQ(valuesOf(out[0]), values);
    EXPECT_EQ(valuesOf(out[1]), indices);
  }
  for (int64_t k : {kMax, kBig, kMin, int64_t{-1}, int64_t{8}}) {  // K beyond the axis is an error in ONNX
    SCOPED_TRACE(k);
    std::vector<Tensor> out;
    EXPECT_FALSE(runOp(makeNode(OpType::TopK), {in(ints(x)), in(ints({k}))}, 2, &out).isOk());
  }
}

TEST(Int64Edges, RangeCountsAndStepsExactly) {
  struct Case {
    int64_t start, limit, delta;
  };
  for (Case c : {Case{kBig, kBig + 5, 2}, Case{kMax - 2, kMax, 1}, Case{kMin, kMin + 3, 1}, Case{kMax, kMax - 3, -1},
                 Case{kMin, kMax, kMax}, Case{kMax, kMin, kMin}, Case{-kBig, kBig, kBig}}) {
    SCOPED_TRACE(std::to_string(c.start) + " " + std::to_string(c.limit) + " " + std::to_string(c.delta));
    std::vector<int64_t> expected;
    for (__int128 v = c.start; c.delta > 0 ? v < c.limit : v > c.limit; v += c.delta)
      expected.push_back(static_cast<int64_t>(v));
    expectInts(makeNode(OpType::Range), {scalarInt(c.start), scalarInt(c.limit), scalarInt(c.delta)}, expected);
  }
  // 2^64 - 1 values, or 1e30 of them: more than a shape holds.
  expectError(makeNode(OpType::Range), {scalarInt(kMin), scalarInt(kMax), scalarInt(1)});
  expectError(makeNode(OpType::Range),
              {makeTensor<float>({}, {0.f}), makeTensor<float>({}, {1e30f}), makeTensor<float>({}, {1.f})});
}

TEST(Int64Edges, GatherFamilyIndices) {
  const std::vector<int64_t> data = {kBig, kBig + 1, kMax, kMin};
  expectInts(makeNode(OpType::Gather), {ints(data), ints({2, -4, 1, -1})}, {kMax, kBig, kBig + 1, kMin});
  expectInts(makeNode(OpType::GatherElements), {ints(data), ints({3, -3})}, {kMin, kBig + 1});
  Tensor nd = makeTensor<int64_t>({2, 1}, {-1, 0});
  expectInts(makeNode(OpType::GatherND), {ints(data), nd}, {kMin, kBig});
  expectInts(makeNode(OpType::ScatterND), {ints(data), nd, ints({kBig + 2, -kBig})}, {-kBig, kBig + 1, kMax, kBig + 2});
  for (int64_t bad : {kMax, kMin, kBig, int64_t{4}, int64_t{-5}}) {
    SCOPED_TRACE(bad);
    expectError(makeNode(OpType::Gather), {ints(data), ints({bad})});
    expectError(makeNode(OpType::GatherElements), {ints(data), ints({bad})});
    expectError(makeNode(OpType::GatherND), {ints(data), makeTensor<int64_t>({1, 1}, {bad})});
    expectError(makeNode(OpType::ScatterND), {ints(data), makeTensor<int64_t>({1, 1}, {bad}), ints({1})});
  }
}

TEST(Int64Edges, ScatterReductionsWrap) {
  Tensor idx = makeTensor<int64_t>({2, 1}, {0, 1});
  Node add = makeNode(OpType::ScatterND);
  add.setString("reduction", "add");
  expectInts(add, {ints({kMax, kBig}), idx, ints({1, 2})}, {kMin, kBig + 2});
  Node mul = makeNode(OpType::ScatterElements);
  mul.setString("reduction", "mul");
  expectInts(mul, {ints({kBig, kMax}), ints({0, 1}), ints({3, 2})}, {wrapMul(kBig, 3), wrapMul(kMax, 2)});
}

// a op b elementwise for the binary ops, with ONNX's integer rules: wrap, truncating division,
// Mod with the divisor's sign, Max / Min.
int64_t naiveBinary(OpType t, int64_t a, int64_t b) {
  switch (t) {
    case OpType::Add: return wrapAdd(a, b);
    case OpType::Sub: return wrapAdd(a, wrapNeg(b));
    case OpType::Mul: return wrapMul(a, b);
    case OpType::Div: return b == -1 ? wrapNeg(a) : a / b;
    case OpType::Mod: {
      if (b == -1) return 0;
      const int64_t r = a % b;
      return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
    case OpType::Max: return std::max(a, b);
    default: return std::min(a, b);
  }
}

TEST(Int64Edges, ArithmeticIsExact) {
  const std::vector<int64_t> a = {kBig, kBig + 2, kMax, kMin, -kBig, kBig, kMin, 7, kBig - 1};
  const std::vector<int64_t> b = {2, 1, 1, -1, 3, kBig - 1, 2, -kBig, kBig};
  // Where the double-rounded answer would be right the test proves nothing: make sure it is not.
  EXPECT_NE(static_cast<int64_t>(static_cast<double>(a[0]) + static_cast<double>(b[0])), kBig + 2);
  for (OpType t : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div, OpType::Mod, OpType::Max, OpType::Min}) {
    SCOPED_TRACE(opTypeName(t));
    std::vector<int64_t> expected;
    for (size_t i = 0; i < a.size(); ++i) expected.push_back(naiveBinary(t, a[i], b[i]));
    expectInts(makeNode(t), {ints(a), ints(b)}, expected);
  }
  // Variadic Max / Min over three inputs, one broadcast.
  expectInts(makeNode(OpType::Max), {ints({kBig - 1, kMin}), ints({kBig, kMin + 1}), ints({kBig - 1})},
             {kBig, kBig - 1});
  expectInts(makeNode(OpType::Min), {ints({kBig, kMax}), ints({kBig + 1, kMax - 1}), ints({kBig + 1})},
             {kBig, kBig + 1});
}

TEST(Int64Edges, UnaryAndClipAreExact) {
  const std::vector<int64_t> x = {kBig, -kBig, kMin, kMax, 0, kBig + 1};
  std::vector<int64_t> abs, neg, clip;
  for (int64_t v : x) {
    abs.push_back(v < 0 ? wrapNeg(v) : v);  // |INT64_MIN| wraps to itself
    neg.push_back(wrapNeg(v));
    clip.push_back(std::clamp(v, -kBig, kBig + 1));
  }
  expectInts(makeNode(OpType::Abs), {ints(x)}, abs);
  expectInts(makeNode(OpType::Neg), {ints(x)}, neg);
  expectInts(makeNode(OpType::Clip), {ints(x), scalarInt(-kBig), scalarInt(kBig + 1)}, clip);
  expectInts(makeNode(OpType::Clip), {ints(x), scalarInt(kBig - 1)},
             {kBig, kBig - 1, kBig - 1, kMax, kBig - 1, kBig + 1});
}

TEST(Int64Edges, CastBetweenIntegersAndFloats) {
  const std::vector<int64_t> x = {kBig, kMax, kMin, -1, (int64_t{1} << 60) + (int64_t{1} << 36) + 1};
  Node toI32 = withInt(OpType::Cast, "to", static_cast<int64_t>(DataType::Int32));
  Tensor i32 = run1(toI32, {in(ints(x))});
  ASSERT_EQ(i32.dtype(), DataType::Int32);
  for (size_t i = 0; i < x.size(); ++i)  // integer narrowing keeps the low bits
    EXPECT_EQ(i32.data<int32_t>()[i], static_cast<int32_t>(static_cast<uint32_t>(x[i]))) << i;
  // int64 -> float rounds once: through double, the last value would land on a tie and round
  // down to 2^60 instead of up.
  Tensor f32 = run1(withInt(OpType::Cast, "to", static_cast<int64_t>(DataType::Float32)), {in(ints(x))});
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(f32.data<float>()[i], static_cast<float>(x[i])) << i;
  EXPECT_EQ(f32.data<float>()[4], std::ldexp(1.f, 60) + std::ldexp(1.f, 37));
  Tensor back = run1(withInt(OpType::Cast, "to", static_cast<int64_t>(DataType::Int64)), {in(ints(x))});
  EXPECT_EQ(valuesOf(back), x);
  // To 4-bit integers by the low bits, as to the wider ones (a double dropped 2^53 + 1's).
  for (DataType to : {DataType::Int4, DataType::UInt4}) {
    SCOPED_TRACE(dataTypeName(to));
    Tensor y = run1(withInt(OpType::Cast, "to", static_cast<int64_t>(to)), {in(ints(x))});
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t low = x[i] & 0xf;
      EXPECT_EQ(at(y, static_cast<int64_t>(i)), to == DataType::Int4 && low >= 8 ? low - 16 : low) << i;
    }
  }
}

// Float -> integer: truncation in range; NaN -> 0; saturation outside (ONNX leaves both open).
TEST(Int64Edges, CastFloatToIntegerSaturates) {
  const std::vector<double> v = {kNaN, kInf, -kInf, -1.5, 300, 1e30, -1e30, 2.9, -129, 255.9, 4611686018427387904.0};
  struct Target {
    DataType dtype;
    std::vector<double> expected;
  };
  for (const Target& t :
       {Target{DataType::UInt8, {0, 255, 0, 0, 255, 255, 0, 2, 0, 255, 255}},
        Target{DataType::Int8, {0, 127, -128, -1, 127, 127, -128, 2, -128, 127, 127}},
        Target{DataType::Int32,
               {0, 2147483647, -2147483648.0, -1, 300, 2147483647, -2147483648.0, 2, -129, 255, 2147483647}},
        Target{DataType::UInt64,
               {0, 18446744073709551615.0, 0, 0, 300, 18446744073709551615.0, 0, 2, 0, 255, 4611686018427387904.0}}}) {
    SCOPED_TRACE(dataTypeName(t.dtype));
    for (DataType from : {DataType::Float32, DataType::Float64}) {
      Tensor x(from, {static_cast<int64_t>(v.size())});
      for (size_t i = 0; i < v.size(); ++i) storeFromDouble(from, x.data(), static_cast<int64_t>(i), v[i]);
      Tensor y = run1(withInt(OpType::Cast, "to", static_cast<int64_t>(t.dtype)), {in(x)});
      ASSERT_EQ(y.dtype(), t.dtype);
      for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(at(y, static_cast<int64_t>(i)), t.expected[i]) << v[i];
    }
  }
  Tensor x = makeTensor<double>({7}, {kNaN, kInf, -kInf, -1.5, 1e30, -1e30, 4611686018427387904.0});
  Tensor y = run1(withInt(OpType::Cast, "to", static_cast<int64_t>(DataType::Int64)), {in(x)});
  EXPECT_EQ(valuesOf(y), (std::vector<int64_t>{0, kMax, kMin, -1, kMax, kMin, int64_t{1} << 62}));
}

TEST(Int64Edges, SharedConversionHelpers) {
  uint8_t u8 = 7;
  storeFromDouble(DataType::UInt8, &u8, 0, -1.5);  // was undefined: a negative double to unsigned char
  EXPECT_EQ(u8, 0);
  storeFromDouble(DataType::UInt8, &u8, 0, 300);
  EXPECT_EQ(u8, 255);
  int8_t i8 = 0;
  storeFromDouble(DataType::Int8, &i8, 0, -1e30);
  EXPECT_EQ(i8, -128);
  int64_t i64 = 1;
  storeFromDouble(DataType::Int64, &i64, 0, kNaN);
  EXPECT_EQ(i64, 0);
  storeFromDouble(DataType::Int64, &i64, 0, 9223372036854775808.0);
  EXPECT_EQ(i64, kMax);
  int64_t read = 0;
  EXPECT_TRUE(loadAsInt64(DataType::Int64, &kBig, 0, &read));
  EXPECT_EQ(read, kBig);
  const uint64_t huge = std::numeric_limits<uint64_t>::max();
  EXPECT_TRUE(loadAsInt64(DataType::UInt64, &huge, 0, &read));
  EXPECT_EQ(read, kMax);
  const float f[] = {-2.7f, std::numeric_limits<float>::quiet_NaN(), -1e30f};
  const int64_t fExpected[] = {-2, 0, kMin};
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(loadAsInt64(DataType::Float32, f, i, &read));
    EXPECT_EQ(read, fExpected[i]);
  }
  EXPECT_EQ(saturatingCast<uint16_t>(-kInf), 0);
  EXPECT_EQ(saturatingCast<int16_t>(40000.5), 32767);
  EXPECT_EQ(saturatingCast<int32_t>(-2147483648.9), -2147483647 - 1);
  EXPECT_TRUE(saturatingCast<bool>(kNaN));
}

TEST(Int64Edges, GemmIntegerScalingSaturates) {
  Node scaled = makeNode(OpType::Gemm);
  scaled.setFloat("alpha", 2.f);
  Tensor a = makeTensor<int64_t>({3, 1}, {int64_t{1} << 62, -(int64_t{1} << 62) - 1, 5});
  Tensor b = makeTensor<int64_t>({1, 1}, {1});
  expectInts(scaled, {a, b}, {kMax, kMin, 10});  // 2^63 and below -2^63 do not fit
  // Without scaling the bias adds in integers, wrapping like Add.
  expectInts(makeNode(OpType::Gemm), {a, b, makeTensor<int64_t>({3, 1}, {kMax, kBig, 2})},
             {wrapAdd(int64_t{1} << 62, kMax), wrapAdd(-(int64_t{1} << 62) - 1, kBig), 7});
}

// One-axis Pad in 128-bit arithmetic (numpy's modes; constant 0).
std::vector<int64_t> naivePad(const std::vector<int64_t>& x, int64_t begin, int64_t end, const std::string& mode) {
  const __int128 n = static_cast<__int128>(x.size()), length = n + begin + end;
  std::vector<int64_t> out;
  for (__int128 o = 0; o < length; ++o) {
    __int128 i = o - begin;
    if (i < 0 || i >= n) {
      if (mode == "constant") {
        out.push_back(0);
        continue;
      }
      const __int128 period = mode == "wrap" ? n : 2 * (n - 1);
      i = mode == "edge" ? (i < 0 ? 0 : n - 1) : ((i % period) + period) % period;
      if (mode == "reflect" && i >= n) i = period - i;
    }
    out.push_back(x[static_cast<size_t>(i)]);
  }
  return out;
}

TEST(Int64Edges, PadTileReshapeKeepValuesAndRejectOverflow) {
  const std::vector<int64_t> x = {kBig, kMin, kBig + 1};
  expectInts(makeNode(OpType::Pad), {ints(x), ints({1, 2}), scalarInt(kBig + 2)},
             {kBig + 2, kBig, kMin, kBig + 1, kBig + 2, kBig + 2});
  // Pads that cancel out (INT64_MIN with INT64_MAX) leave small outputs whose source
  // coordinates are still 2^63 away.
  for (const std::string mode : {"constant", "edge", "wrap", "reflect"})
    for (const std::vector<int64_t>& pads :
         {std::vector<int64_t>{2, 1}, {kMin, kMax}, {kMax, kMin}, {kMin + 1, kMax - 1}}) {
      SCOPED_TRACE(mode + " " + std::to_string(pads[0]));
      Node node = makeNode(OpType::Pad);
      node.setString("mode", mode);
      expectInts(node, {ints(x), ints(pads)}, naivePad(x, pads[0], pads[1], mode));
    }
  // 3 + INT64_MAX + INT64_MAX wrapped to 1: a one-element output instead of an error.
  for (const std::vector<int64_t>& pads : {std::vector<int64_t>{kMax, kMax}, {kMax, 0}, {kMin, kMin}, {-2, kMin}}) {
    SCOPED_TRACE(pads[0]);
    expectError(makeNode(OpType::Pad), {ints(x), ints(pads)});
  }
  expectInts(makeNode(OpType::Tile), {ints(x), ints({2})}, {kBig, kMin, kBig + 1, kBig, kMin, kBig + 1});
  for (int64_t repeats : {kMax, int64_t{1} << 62, int64_t{-1}}) {
    SCOPED_TRACE(repeats);
    expectError(makeNode(OpType::Tile), {ints(x), ints({repeats})});
  }
  Tensor four = ints({kBig, kMax, kMin, 1});
  expectInts(makeNode(OpType::Reshape), {four, ints({2, -1})}, valuesOf(four));
  // (2^62 + 1) * 4 wraps to 4, the element count: the shape must still be refused.
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{(int64_t{1} << 62) + 1, 4}, {kMax, -1}, {kMax, kMax, 0}, {kBig, kBig}, {kMin}}) {
    SCOPED_TRACE(shape[0]);
    expectError(makeNode(OpType::Reshape), {four, ints(shape)});
  }
}

TEST(Int64Edges, ConstantOfShapeHoldsInt64Values) {
  Node node = makeNode(OpType::ConstantOfShape);
  Attribute value;
  value.name = "value";
  value.kind = Attribute::Kind::Tensor;
  value.tensor = std::make_shared<TensorInfo>();
  value.tensor->dtype = DataType::Int64;
  value.tensor->shape = {1};
  value.tensor->data = ConstantData::copyOf(&kBig, 8);
  node.setAttr(value);
  expectInts(node, {ints({3})}, {kBig, kBig, kBig});
  expectInts(node, {ints({kMax, 0})}, {});
  expectError(node, {ints({kMax, 2})});
  expectError(node, {ints({kMin})});
}

TEST(Int64Edges, ExpandKeepsValuesAndRejectsOverflow) {
  expectInts(makeNode(OpType::Expand), {ints({kBig, kMin}), ints({2, 2})}, {kBig, kMin, kBig, kMin});
  expectError(makeNode(OpType::Expand), {ints({kBig}), ints({kMax, 2})});
  expectError(makeNode(OpType::Expand), {ints({kBig}), ints({kMin})});
}

TEST(Int64Edges, TriluWithExtremeK) {
  const int64_t rows = 2, cols = 3;
  const std::vector<int64_t> x = {kBig, kMax, kMin, -kBig, kBig + 1, 5};
  for (int64_t upper : {0, 1})
    for (int64_t k : {kMax, kMin, kBig, -kBig, int64_t{1}, int64_t{-1}}) {
      SCOPED_TRACE(std::to_string(upper) + " " + std::to_string(k));
      std::vector<int64_t> expected;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const __int128 diagonal = static_cast<__int128>(j) - i;
          expected.push_back((upper ? diagonal >= k : diagonal <= k) ? x[i * cols + j] : 0);
        }
      expectInts(withInt(OpType::Trilu, "upper", upper), {makeTensor<int64_t>({rows, cols}, x), scalarInt(k)},
                 expected);
    }
}

TEST(Int64Edges, CumSumWrapsExactly) {
  const std::vector<int64_t> x = {kBig, 2, kMax, 1, kMin};
  std::vector<int64_t> running, exclusive;
  int64_t acc = 0;
  for (int64_t v : x) {
    exclusive.push_back(acc);
    running.push_back(acc = wrapAdd(acc, v));
  }
  expectInts(makeNode(OpType::CumSum), {ints(x), scalarInt(0)}, running);
  expectInts(withInt(OpType::CumSum, "exclusive", 1), {ints(x), scalarInt(0)}, exclusive);
}

TEST(Int64Edges, OneHotIndicesAndDepth) {
  Tensor values = ints({kBig, kMin});  // [off, on]
  std::vector<int64_t> expected;
  auto row = [&](int64_t hot) {
    for (int64_t k = 0; k < 3; ++k) expected.push_back(k == hot ? kMin : kBig);
  };
  for (int64_t hot : {-1, -1, 2, 1, -1, -1}) row(hot);
  expectInts(makeNode(OpType::OneHot), {ints({kMin, kMax, -1, 1, kBig, -kBig}), scalarInt(3), values}, expected);
  expected.clear();
  for (int64_t hot : {-1, -1, -1, 1, 2, -1}) row(hot);
  Tensor floatIndices = makeTensor<float>({6}, {NAN, INFINITY, -INFINITY, 1.7f, -1.2f, -1e30f});
  expectInts(makeNode(OpType::OneHot), {floatIndices, makeTensor<float>({}, {3.9f}), values}, expected);
  // An exact depth: through a double, 2^53 + 1 became 2^53.
  std::vector<Tensor> out;
  Status st =
      runOp(makeNode(OpType::OneHot), {in(Tensor(DataType::Int64, {0})), in(scalarInt(kBig)), in(values)}, 1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(out[0].shape(), (Shape{0, kBig}));
  expectError(makeNode(OpType::OneHot), {ints({0}), scalarInt(kMin), values});
  expectError(makeNode(OpType::OneHot), {ints({0}), makeTensor<float>({}, {NAN}), values});
}

TEST(Int64Edges, ReductionsAreExact) {
  const std::vector<int64_t> x = {kBig, 2, kBig - 1, 3};
  int64_t sum = 0, prod = 1;
  for (int64_t v : x) sum = wrapAdd(sum, v), prod = wrapMul(prod, v);
  Node keep0 = withInt(OpType::ReduceSum, "keepdims", 0);
  expectInts(keep0, {ints(x)}, {sum});
  keep0.type = OpType::ReduceProd;
  expectInts(keep0, {ints(x)}, {prod});
  keep0.type = OpType::ReduceMax;
  expectInts(keep0, {ints({kBig - 1, kBig, kMin})}, {kBig});
  keep0.type = OpType::ReduceMin;
  expectInts(keep0, {ints({kBig + 1, kBig, kMax})}, {kBig});
}

TEST(Int64Edges, NegativeLogLikelihoodTargets) {
  Tensor logp = makeTensor<float>({1, 3}, {-0.5f, -1.f, -2.f});
  Node node = withInt(OpType::NegativeLogLikelihoodLoss, "ignore_index", int64_t{1} << 53);
  node.setString("reduction", "none");
  std::vector<Tensor> out;
  // 2^53 + 1 is not the ignored 2^53 (a double cannot tell them apart): out of range.
  EXPECT_FALSE(runOp(node, {in(logp), in(ints({kBig}))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(node, {in(logp), in(ints({kMin}))}, 1, &out).isOk());
  node.setInt("ignore_index", kMax);
  ASSERT_TRUE(runOp(node, {in(logp), in(ints({kMax}))}, 1, &out).isOk());
  EXPECT_EQ(out[0].data<float>()[0], 0.f);
  ASSERT_TRUE(runOp(node, {in(logp), in(ints({2}))}, 1, &out).isOk());
  EXPECT_EQ(out[0].data<float>()[0], 2.f);
}

TEST(Int64Edges, RoiAlignBatchIndicesAndNaNRois) {
  Tensor x = randomTensor(DataType::Float32, {2, 1, 4, 4}, 7, 1, 2);
  Tensor rois = makeTensor<float>({1, 4}, {0, 0, 3, 3});
  Node node = withInt(OpType::RoiAlign, "sampling_ratio", 2);
  for (int64_t bad : {kMax, kMin, kBig, int64_t{2}}) {
    SCOPED_TRACE(bad);
    expectError(node, {x, rois, ints({bad})});
  }
  // A NaN corner reads nothing (the bilinear tap used to cast NaN to an index).
  std::vector<Tensor> out;
  Status st = runOp(node, {in(x), in(makeTensor<float>({1, 4}, {NAN, 0, 3, 3})), in(ints({1}))}, 1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(at(out[0], 0), 0.0);
}

TEST(Int64Edges, TensorScatterWriteIndices) {
  const int64_t maxSeq = 7, seq = 3;
  std::vector<int64_t> past(2 * maxSeq), update(2 * seq);
  for (size_t i = 0; i < past.size(); ++i) past[i] = kBig + static_cast<int64_t>(i);
  for (size_t i = 0; i < update.size(); ++i) update[i] = kMin + static_cast<int64_t>(i);
  const Tensor pastT = makeTensor<int64_t>({2, maxSeq, 1}, past), updateT = makeTensor<int64_t>({2, seq, 1}, update);
  const std::vector<int64_t> writeAt = {kMax, kBig};
  std::vector<int64_t> expected = past;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < seq; ++t)
      expected[b * maxSeq + static_cast<int64_t>((static_cast<__int128>(writeAt[b]) + t) % maxSeq)] =
          update[b * seq + t];
  Node circular = makeNode(OpType::TensorScatter);
  circular.setString("mode", "circular");
  expectInts(circular, {pastT, updateT, ints(writeAt)}, expected);
  // Linear writes must fit: INT64_MAX + 3 used to wrap negative and pass the check.
  for (int64_t bad : {kMax, kMax - 2, kBig, kMin})
    expectError(makeNode(OpType::TensorScatter), {pastT, updateT, ints({bad, 0})});
}

// Loop body: v' = v + 1, cond' = v' < limit.
std::shared_ptr<Graph> countingBody(int64_t limit) {
  auto g = std::make_shared<Graph>();
  auto tensor = [&](const char* name, DataType dtype, Shape shape) {
    TensorInfo t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    return g->addTensor(t);
  };
  const int iter = tensor("iter", DataType::Int64, {}), cond = tensor("cond", DataType::Bool, {});
  const int v = tensor("v", DataType::Int64, {1});
  g->inputs = {iter, cond, v};
  const int one = tensor("one", DataType::Int64, {1}), lim = tensor("limit", DataType::Int64, {1});
  const int64_t oneValue = 1;
  g->tensors[one].isConstant = g->tensors[lim].isConstant = true;
  g->tensors[one].data = ConstantData::copyOf(&oneValue, 8);
  g->tensors[lim].data = ConstantData::copyOf(&limit, 8);
  const int next = tensor("next", DataType::Int64, {1}), more = tensor("more", DataType::Bool, {1});
  Node add = makeNode(OpType::Add), less = makeNode(OpType::Less);
  add.name = "add", less.name = "less";
  add.inputs = {v, one}, add.outputs = {next};
  less.inputs = {next, lim}, less.outputs = {more};
  g->nodes = {add, less};
  g->outputs = {more, next};
  return g;
}

TEST(Int64Edges, LoopTripCountInt64MaxMeansNoLimit) {
  Node loop = makeNode(OpType::Loop);
  Attribute body;
  body.name = "body";
  body.kind = Attribute::Kind::Graph;
  body.graph = countingBody(5);
  loop.setAttr(body);
  Tensor cond = makeTensor<bool>({}, {true});
  for (int64_t trips : {kMax, kBig, int64_t{3}, int64_t{0}}) {
    SCOPED_TRACE(trips);
    std::vector<Tensor> out;
    Status st = runOp(loop, {in(scalarInt(trips)), in(cond), in(ints({0}))}, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(valuesOf(out[0]), std::vector<int64_t>{std::min<int64_t>(trips, 5)});
  }
}

}  // namespace
}  // namespace osprey::test
