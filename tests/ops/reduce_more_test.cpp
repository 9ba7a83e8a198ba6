// ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare
// against a naive reduction written here: every input element is folded, in double, into the
// output element its kept indices name.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

const std::vector<OpType> kOps = {OpType::ReduceMin,    OpType::ReduceProd,      OpType::ReduceL1,       OpType::ReduceL2,
                                  OpType::ReduceLogSum, OpType::ReduceLogSumExp, OpType::ReduceSumSquare};

struct Case {
  std::vector<int64_t> axes;
  bool axesGiven = true;
  int64_t keepdims = 1;
  int64_t noop = 0;
};

Tensor naive(OpType type, const Tensor& x, const Case& c) {
  const Shape& s = x.shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  if (c.axes.empty() && c.noop) return x;
  std::vector<bool> red(s.size(), c.axes.empty());
  for (int64_t a : c.axes) red[a < 0 ? a + rank : a] = true;
  Shape keep = s, out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (red[d]) keep[d] = 1;
    if (!red[d]) out.push_back(s[d]);
    else if (c.keepdims) out.push_back(1);
  }
  const double init = type == OpType::ReduceMin ? INFINITY : type == OpType::ReduceProd ? 1.0 : 0.0;
  std::vector<double> acc(shapeElements(keep), init);
  for (int64_t i = 0; i < x.elements(); ++i) {
    int64_t rest = i, o = 0, mul = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t idx = rest % s[d];
      rest /= s[d];
      if (!red[d]) o += idx * mul;
      mul *= keep[d];
    }
    const double v = at(x, i);
    double& a = acc[o];
    switch (type) {
      case OpType::ReduceMin: a = std::min(a, v); break;
      case OpType::ReduceProd: a *= v; break;
      case OpType::ReduceL1: a += std::fabs(v); break;
      case OpType::ReduceLogSumExp: a += std::exp(v); break;
      case OpType::ReduceL2:
      case OpType::ReduceSumSquare: a += v * v; break;
      default: a += v; break;
    }
  }
  Tensor r(x.dtype(), out);
  for (size_t o = 0; o < acc.size(); ++o) {
    double v = acc[o];
    if (type == OpType::ReduceL2) v = std::sqrt(v);
    if (type == OpType::ReduceLogSum || type == OpType::ReduceLogSumExp) v = std::log(v);
    storeFromDouble(x.dtype(), r.data(), o, v);
  }
  return r;
}

Tensor runReduce(OpType type, const Tensor& x, const Case& c) {
  Node n;
  n.type = type;
  if (c.keepdims != 1) n.setInt("keepdims", c.keepdims);
  if (c.noop) n.setInt("noop_with_empty_axes", c.noop);
  std::vector<OpInput> ins{in(x)};
  if (c.axesGiven) ins.push_back(constant(makeTensor<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes)));
  std::vector<Tensor> out;
  Status st = runOp(n, ins, 1, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return st.isOk() ? out[0] : Tensor();
}

const std::vector<Case> kCases = {{{}, false}, {{0}}, {{1}}, {{-1}}, {{0, 2}}, {{2}, true, 0},
                                  {{0, 1, 2}, true, 0}, {{}, true, 1, 1}, {{1, 2}, true, 0, 1}};

TEST(ReduceMoreOp, FloatAxesAndKeepdims) {
  // Positive values near 1 keep products and logs well conditioned.
  Tensor x = randomTensor(DataType::Float64, {5, 13, 3}, 1, 0.6, 1.5);
  for (OpType type : kOps)
    for (size_t k = 0; k < kCases.size(); ++k) {
      SCOPED_TRACE(std::string(opTypeName(type)) + " case " + std::to_string(k));
      expectNear(runReduce(type, x, kCases[k]), naive(type, x, kCases[k]), 1e-9, 1e-9);
    }
}

TEST(ReduceMoreOp, Dtypes) {
  for (DataType dt : {DataType::Float32, DataType::Float16, DataType::Int32, DataType::Int64, DataType::UInt32}) {
    const bool isInt = dt != DataType::Float32 && dt != DataType::Float16;
    Tensor x = randomTensor(dt, {4, 7, 3}, 2, isInt ? (dt == DataType::UInt32 ? 0 : -3) : -2, 3);
    for (OpType type : kOps) {
      // Logs of negative sums are NaN; integer logs are checked in IntegerResults.
      if (type == OpType::ReduceLogSum) continue;
      SCOPED_TRACE(std::string(opTypeName(type)) + " " + dataTypeName(dt));
      const double tol = dt == DataType::Float16 ? 2e-2 : dt == DataType::Float32 ? 1e-5 : 0;
      for (const Case& c : {Case{{1}}, Case{{0, 2}, true, 0}}) {
        Tensor expected = naive(type, x, c);
        if (isInt && (type == OpType::ReduceL2 || type == OpType::ReduceLogSumExp)) continue;
        expectNear(runReduce(type, x, c), expected, tol, tol);
      }
    }
  }
}

TEST(ReduceMoreOp, IntegerResults) {
  Tensor x = makeTensor<int32_t>({2, 3}, {3, 4, 0, 1, 1, 7});
  Case c{{1}, true, 0};
  Tensor l2 = runReduce(OpType::ReduceL2, x, c);
  EXPECT_EQ(l2.data<int32_t>()[0], 5);                                   // sqrt(25)
  EXPECT_EQ(l2.data<int32_t>()[1], static_cast<int32_t>(std::sqrt(51.0)));  // truncated
  Tensor ls = runReduce(OpType::ReduceLogSum, x, c);
  EXPECT_EQ(ls.data<int32_t>()[0], static_cast<int32_t>(std::log(7.0)));
  Tensor mn = runReduce(OpType::ReduceMin, makeTensor<int8_t>({3}, {5, -128, 7}), Case{{}, false});
  EXPECT_EQ(mn.data<int8_t>()[0], -128);
  Tensor pr = runReduce(OpType::ReduceProd, makeTensor<uint8_t>({2}, {16, 17}), Case{{}, false});
  EXPECT_EQ(pr.data<uint8_t>()[0], static_cast<uint8_t>(16 * 17));  // wraps like the type
}

TEST(ReduceMoreOp, EmptySetBoolAndStability) {
  Tensor e(DataType::Float32, {2, 0, 3});
  Case c{{1}};
  EXPECT_EQ(runReduce(OpType::ReduceMin, e, c).data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(runReduce(OpType::ReduceProd, e, c).data<float>()[0], 1.f);
  EXPECT_EQ(runReduce(OpType::ReduceL1, e, c).data<float>()[0], 0.f);
  EXPECT_EQ(runReduce(OpType::ReduceL2, e, c).data<float>()[0], 0.f);
  EXPECT_EQ(runReduce(OpType::ReduceSumSquare, e, c).data<float>()[0], 0.f);
  EXPECT_EQ(runReduce(OpType::ReduceLogSum, e, c).data<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(runReduce(OpType::ReduceLogSumExp, e, c).data<float>()[0], -std::numeric_limits<float>::infinity());
  Tensor b = makeTensor<bool>({2, 3}, {true, true, true, true, false, true});
  Tensor bm = runReduce(OpType::ReduceMin, b, Case{{1}, true, 0});
  EXPECT_TRUE(bm.data<bool>()[0]);
  EXPECT_FALSE(bm.data<bool>()[1]);
  // exp(1000) overflows double; the shifted accumulation does not.
  Tensor big = makeTensor<float>({2}, {1000.f, 1000.f});
  EXPECT_NEAR(runReduce(OpType::ReduceLogSumExp, big, Case{{}, false}).data<float>()[0], 1000.f + std::log(2.f), 1e-3);
  Tensor withNan = makeTensor<float>({3}, {1.f, NAN, -2.f});
  EXPECT_TRUE(std::isnan(runReduce(OpType::ReduceMin, withNan, Case{{}, false}).data<float>()[0]));
  std::vector<Tensor> out;
  Node n;
  n.type = OpType::ReduceProd;
  EXPECT_FALSE(runOp(n, {in(b)}, 1, &out).isOk());  // bool only for Min/Max
  EXPECT_FALSE(runOp(n, {in(e), constant(makeTensor<int64_t>({1}, {3}))}, 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
