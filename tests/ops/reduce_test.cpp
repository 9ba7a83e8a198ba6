// ReduceSum, ReduceMean, ReduceMax against a naive reduction written here: every input element
// is added (or compared) into the output element its kept indices name.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

struct ReduceCase {
  std::vector<int64_t> axes;
  bool axesGiven = true;  // false: input 1 omitted
  int64_t keepdims = 1;
  int64_t noop = 0;
};

Node reduceNode(OpType type, const ReduceCase& c) {
  Node n;
  n.type = type;
  if (c.keepdims != 1) n.setInt("keepdims", c.keepdims);
  if (c.noop) n.setInt("noop_with_empty_axes", c.noop);
  return n;
}

// Expected output: reduce over `axes` (all when empty and not noop) in double.
Tensor naiveReduce(OpType type, const Tensor& x, const ReduceCase& c) {
  const Shape& s = x.shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<bool> red(s.size(), c.axes.empty() && !c.noop);
  for (int64_t a : c.axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  Shape keep = s, out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (red[d]) keep[d] = 1;
    if (!red[d])
      out.push_back(s[d]);
    else if (c.keepdims)
      out.push_back(1);
  }
  const int64_t n = shapeElements(keep);
  const bool isFloat = x.dtype() == DataType::Float32 || x.dtype() == DataType::Float64 ||
                       x.dtype() == DataType::Float16 || x.dtype() == DataType::BFloat16;
  std::vector<double> acc(static_cast<size_t>(n), type == OpType::ReduceMax ? -INFINITY : 0.0);
  std::vector<int64_t> count(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < x.elements(); ++i) {
    int64_t rest = i, o = 0, mul = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t idx = rest % s[d];
      rest /= s[d];
      if (!red[d]) o += idx * mul;
      mul *= keep[d];
    }
    double v = at(x, i);
    acc[o] = type == OpType::ReduceMax ? std::max(acc[o], v) : acc[o] + v;
    ++count[o];
  }
  Tensor r(x.dtype(), out);
  for (int64_t o = 0; o < n; ++o) {
    double v = acc[o];
    if (type == OpType::ReduceMean) v = count[o] ? v / count[o] : (isFloat ? NAN : 0.0);
    if (type == OpType::ReduceMean && !isFloat) v = std::trunc(v);
    storeFromDouble(x.dtype(), r.data(), o, v);
  }
  return r;
}

Tensor runReduce(OpType type, const Tensor& x, const ReduceCase& c, bool axesConstant = true) {
  std::vector<OpInput> ins{in(x)};
  if (c.axesGiven) {
    Tensor axes = makeTensor<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes);
    ins.push_back(axesConstant ? constant(axes) : in(axes));
  }
  std::vector<Tensor> out;
  Status st = runOp(reduceNode(type, c), ins, 1, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return st.isOk() ? out[0] : Tensor();
}

const std::vector<ReduceCase> kCases = {
    {{}, false},
    {{}, true},
    {{0}},
    {{1}},
    {{3}},
    {{-1}},
    {{0, 2}},
    {{1, 3}},
    {{0, 1, 2, 3}},
    {{-3, -2}},
    {{2}, true, 0},
    {{0, 3}, true, 0},
    {{}, false, 0},
    {{}, true, 1, 1},
    {{}, false, 1, 1},
    {{1, 2}, true, 0, 1},
};

TEST(ReduceOp, FloatAxesAndKeepdims) {
  Tensor x = randomTensor(DataType::Float32, {5, 7, 3, 4}, 1, -3, 3);
  for (OpType type : {OpType::ReduceSum, OpType::ReduceMean, OpType::ReduceMax}) {
    for (size_t k = 0; k < kCases.size(); ++k) {
      SCOPED_TRACE(std::string(opTypeName(type)) + " case " + std::to_string(k));
      expectNear(runReduce(type, x, kCases[k]), naiveReduce(type, x, kCases[k]), 1e-5, 1e-5);
    }
  }
}

TEST(ReduceOp, AxesFromGraphInput) {
  // Axes that are not constant: the session computes shapes once the value is known.
  Tensor x = randomTensor(DataType::Float32, {4, 13, 6}, 2);
  ReduceCase c{{1}};
  expectNear(runReduce(OpType::ReduceSum, x, c, false), naiveReduce(OpType::ReduceSum, x, c), 1e-5, 1e-5);
}

TEST(ReduceOp, Dtypes) {
  uint32_t seed = 10;
  for (DataType dt : {DataType::Float64, DataType::Float16, DataType::BFloat16, DataType::Int32, DataType::Int64,
                      DataType::UInt8, DataType::Int8}) {
    Tensor x = randomTensor(dt, {3, 13, 7}, seed++, 0, 9);
    if (dt == DataType::Int32 || dt == DataType::Int64 || dt == DataType::Int8)
      x = randomTensor(dt, {3, 13, 7}, seed++, -9, 9);
    for (OpType type : {OpType::ReduceSum, OpType::ReduceMean, OpType::ReduceMax}) {
      for (const ReduceCase& c : {ReduceCase{{1}}, ReduceCase{{0, 2}, true, 0}, ReduceCase{{}, false}}) {
        SCOPED_TRACE(std::string(opTypeName(type)) + " " + dataTypeName(dt));
        // 8-bit sums overflow here; IntegerSumWraps checks the wrap-around.
        if ((dt == DataType::UInt8 || dt == DataType::Int8) && type == OpType::ReduceSum) continue;
        const bool half = dt == DataType::Float16 || dt == DataType::BFloat16;
        expectNear(runReduce(type, x, c), naiveReduce(type, x, c), half ? 1e-2 : 1e-9, half ? 1e-2 : 0);
      }
    }
  }
}

TEST(ReduceOp, IntegerSumWraps) {
  Tensor x = makeTensor<uint8_t>({2, 3}, {200, 100, 1, 255, 255, 255});
  ReduceCase c{{1}};
  Tensor y = runReduce(OpType::ReduceSum, x, c);
  EXPECT_EQ(y.data<uint8_t>()[0], static_cast<uint8_t>(301));
  EXPECT_EQ(y.data<uint8_t>()[1], static_cast<uint8_t>(765));
  Tensor m = runReduce(OpType::ReduceMean, makeTensor<int32_t>({2, 2}, {-1, -2, 3, 4}), c);
  EXPECT_EQ(m.data<int32_t>()[0], -1);  // -1.5 truncates toward zero
  EXPECT_EQ(m.data<int32_t>()[1], 3);
}

TEST(ReduceOp, EmptySet) {
  Tensor x(DataType::Float32, {2, 0, 3});
  ReduceCase c{{1}};
  Tensor sum = runReduce(OpType::ReduceSum, x, c);
  Tensor mx = runReduce(OpType::ReduceMax, x, c);
  Tensor mean = runReduce(OpType::ReduceMean, x, c);
  ASSERT_EQ(sum.shape(), (Shape{2, 1, 3}));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(sum.data<float>()[i], 0.f);
    EXPECT_EQ(mx.data<float>()[i], -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(mean.data<float>()[i]));
  }
  Tensor xi(DataType::Int32, {0, 4});
  Tensor mi = runReduce(OpType::ReduceMax, xi, ReduceCase{{0}, true, 0});
  ASSERT_EQ(mi.shape(), (Shape{4}));
  EXPECT_EQ(mi.data<int32_t>()[0], std::numeric_limits<int32_t>::min());
  // The reduced axis is not empty but a kept one is: an empty output.
  Tensor e = runReduce(OpType::ReduceSum, Tensor(DataType::Float32, {0, 5}), ReduceCase{{1}});
  EXPECT_EQ(e.shape(), (Shape{0, 1}));
}

TEST(ReduceOp, MaxOfBoolAndNaN) {
  Tensor b = makeTensor<bool>({2, 3}, {false, false, false, false, true, false});
  Tensor y = runReduce(OpType::ReduceMax, b, ReduceCase{{1}, true, 0});
  ASSERT_EQ(y.dtype(), DataType::Bool);
  EXPECT_FALSE(y.data<bool>()[0]);
  EXPECT_TRUE(y.data<bool>()[1]);
  Tensor f = makeTensor<float>({3}, {1.f, NAN, 2.f});
  EXPECT_TRUE(std::isnan(runReduce(OpType::ReduceMax, f, ReduceCase{{}, false}).data<float>()[0]));
}

TEST(ReduceOp, Errors) {
  Tensor x = randomTensor(DataType::Float32, {3, 4}, 1);
  std::vector<Tensor> out;
  auto tryAxes = [&](OpType type, std::vector<int64_t> axes, const Tensor& data) {
    Tensor a = makeTensor<int64_t>({static_cast<int64_t>(axes.size())}, axes);
    Node n;
    n.type = type;
    return runOp(n, {in(data), constant(a)}, 1, &out);
  };
  EXPECT_FALSE(tryAxes(OpType::ReduceSum, {2}, x).isOk());
  EXPECT_FALSE(tryAxes(OpType::ReduceSum, {-3}, x).isOk());
  EXPECT_FALSE(tryAxes(OpType::ReduceMean, {1, -1}, x).isOk());  // repeated
  EXPECT_FALSE(tryAxes(OpType::ReduceSum, {0}, makeTensor<bool>({2}, {true, false})).isOk());
  Node n;
  n.type = OpType::ReduceSum;
  EXPECT_FALSE(runOp(n, {in(x), constant(makeTensor<float>({1}, {0.f}))}, 1, &out).isOk());
}

TEST(ReduceOp, ThreadedAndStridedShapes) {
  ThreadPool pool(3);
  Tensor x = randomTensor(DataType::Float32, {37, 129, 11}, 3);
  for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{2}, {1}, {0}, {0, 2}}) {
    for (OpType type : {OpType::ReduceMean, OpType::ReduceMax}) {
      Node node = reduceNode(type, ReduceCase{axes});
      Tensor a = makeTensor<int64_t>({static_cast<int64_t>(axes.size())}, axes);
      TensorViews inV(2), outV(1);
      inV[0] = {x.dtype(), x.shape(), x.data()};
      inV[1] = {a.dtype(), a.shape(), a.data()};
      ASSERT_TRUE(opDef(type).shape(node, inV, outV).isOk());
      Tensor y(outV[0].dtype, outV[0].shape);
      outV[0].data = y.data();
      ASSERT_TRUE(opDef(type).reference(node, inV, outV, &pool).isOk());
      expectNear(y, naiveReduce(type, x, ReduceCase{axes}), 1e-5, 1e-5);
    }
  }
}

}  // namespace
}  // namespace osprey::test
