// Softmax, LogSoftmax and LayerNormalization against naive double-precision loops written
// here that walk each normalised slice by its multi-index. Data is non-uniform along every
// axis, so normalising along the wrong axis shows.
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

std::vector<int64_t> stridesOf(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Element i of a tensor, biased by its position so every axis carries a different pattern.
Tensor skewed(DataType dt, const Shape& s, uint32_t seed, double scale) {
  Tensor t = randomTensor(dt, s, seed, -scale, scale);
  for (int64_t i = 0; i < t.elements(); ++i) storeFromDouble(dt, t.data(), i, at(t, i) + 0.01 * scale * double(i % 17));
  return t;
}

Tensor naiveSoftmax(const Tensor& x, int64_t axis, bool log) {
  const Shape& s = x.shape();
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  const auto st = stridesOf(s);
  Tensor y(x.dtype(), s);
  for (int64_t i = 0; i < x.elements(); ++i) {
    const int64_t pos = (i / st[axis]) % s[axis];
    const int64_t first = i - pos * st[axis];
    double mx = -INFINITY, sum = 0;
    for (int64_t a = 0; a < s[axis]; ++a) mx = std::max(mx, at(x, first + a * st[axis]));
    for (int64_t a = 0; a < s[axis]; ++a) sum += std::exp(at(x, first + a * st[axis]) - mx);
    const double v = at(x, i) - mx;
    storeFromDouble(x.dtype(), y.data(), i, log ? v - std::log(sum) : std::exp(v) / sum);
  }
  return y;
}

Tensor runNode(const Node& node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* out) {
  Status st = runOp(node, inputs, numOutputs, out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return st.isOk() ? (*out)[0] : Tensor();
}

TEST(SoftmaxOp, EveryAxis) {
  const Shape shape{3, 5, 7, 4};
  Tensor x = skewed(DataType::Float32, shape, 1, 5);
  for (bool log : {false, true}) {
    for (int64_t axis = -4; axis < 4; ++axis) {
      SCOPED_TRACE((log ? "LogSoftmax axis " : "Softmax axis ") + std::to_string(axis));
      Node node;
      node.type = log ? OpType::LogSoftmax : OpType::Softmax;
      node.setInt("axis", axis);
      std::vector<Tensor> out;
      expectNear(runNode(node, {in(x)}, 1, &out), naiveSoftmax(x, axis, log), 1e-6, 1e-5);
    }
    Node dflt;
    dflt.type = log ? OpType::LogSoftmax : OpType::Softmax;
    std::vector<Tensor> out;
    expectNear(runNode(dflt, {in(x)}, 1, &out), naiveSoftmax(x, -1, log), 1e-6, 1e-5);
  }
}

TEST(SoftmaxOp, LargeValuesAndDtypes) {
  Tensor big = skewed(DataType::Float32, {13, 127}, 2, 50);
  for (int64_t i = 0; i < big.elements(); ++i) big.data<float>()[i] += 10000.f;  // exp would overflow unshifted
  for (bool log : {false, true}) {
    Node node;
    node.type = log ? OpType::LogSoftmax : OpType::Softmax;
    std::vector<Tensor> out;
    expectNear(runNode(node, {in(big)}, 1, &out), naiveSoftmax(big, -1, log), 1e-5, 1e-4);
    for (DataType dt : {DataType::Float64, DataType::Float16, DataType::BFloat16}) {
      SCOPED_TRACE(dataTypeName(dt));
      Tensor x = skewed(dt, {5, 13, 3}, 3, 3);
      node.setInt("axis", 1);
      double tol = dt == DataType::Float64 ? 1e-12 : dt == DataType::Float16 ? 3e-3 : 2e-2;
      expectNear(runNode(node, {in(x)}, 1, &out), naiveSoftmax(x, 1, log), tol, tol);
    }
  }
}

TEST(SoftmaxOp, Errors) {
  std::vector<Tensor> out;
  Node node;
  node.type = OpType::Softmax;
  node.setInt("axis", 2);
  EXPECT_FALSE(runOp(node, {in(randomTensor(DataType::Float32, {3, 4}, 1))}, 1, &out).isOk());
  Node ints;
  ints.type = OpType::LogSoftmax;
  EXPECT_FALSE(runOp(ints, {in(randomTensor(DataType::Int32, {3, 4}, 1))}, 1, &out).isOk());
}

struct LayerNormResult {
  Tensor y, mean, invStd;
};

// Naive LayerNormalization in double; Scale and B are broadcast to X by multi-index.
LayerNormResult naiveLayerNorm(const Tensor& x, const Tensor& scale, const Tensor* bias, int64_t axis, double eps,
                               DataType stash) {
  const Shape& s = x.shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  if (axis < 0) axis += rank;
  int64_t outer = 1, n = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : n) *= s[d];
  auto paramIndex = [&](const Shape& ps, int64_t flat) {
    std::vector<int64_t> idx(s.size());
    for (int64_t d = rank - 1; d >= 0; --d) idx[d] = flat % s[d], flat /= s[d];
    int64_t off = 0;
    const size_t lead = s.size() - ps.size();
    for (size_t d = 0; d < ps.size(); ++d) off = off * ps[d] + (ps[d] == 1 ? 0 : idx[lead + d]);
    return off;
  };
  Shape reduced = s;
  for (int64_t d = axis; d < rank; ++d) reduced[d] = 1;
  LayerNormResult r{Tensor(x.dtype(), s), Tensor(stash, reduced), Tensor(stash, reduced)};
  for (int64_t o = 0; o < outer; ++o) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += at(x, o * n + j);
    mean /= n;
    for (int64_t j = 0; j < n; ++j) var += (at(x, o * n + j) - mean) * (at(x, o * n + j) - mean);
    var /= n;
    const double inv = 1 / std::sqrt(var + eps);
    storeFromDouble(stash, r.mean.data(), o, mean);
    storeFromDouble(stash, r.invStd.data(), o, inv);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = o * n + j;
      double v = (at(x, i) - mean) * inv * at(scale, paramIndex(scale.shape(), i));
      if (bias) v += at(*bias, paramIndex(bias->shape(), i));
      storeFromDouble(x.dtype(), r.y.data(), i, v);
    }
  }
  return r;
}

TEST(LayerNormOp, EveryAxisWithStatistics) {
  const Shape shape{3, 5, 7, 4};
  Tensor x = skewed(DataType::Float32, shape, 10, 4);
  uint32_t seed = 11;
  for (int64_t axis = -4; axis < 4; ++axis) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    Shape ps(shape.begin() + a, shape.end());
    Tensor scale = randomTensor(DataType::Float32, ps, seed++, 0.5, 2);
    Tensor bias = randomTensor(DataType::Float32, ps, seed++, -1, 1);
    for (bool withBias : {true, false}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (withBias ? " with bias" : ""));
      Node node;
      node.type = OpType::LayerNormalization;
      node.setInt("axis", axis);
      node.setFloat("epsilon", 0.25f);
      std::vector<Tensor> out;
      std::vector<OpInput> ins{in(x), constant(scale)};
      if (withBias) ins.push_back(constant(bias));
      runNode(node, ins, 3, &out);
      ASSERT_EQ(out.size(), 3u);
      LayerNormResult e = naiveLayerNorm(x, scale, withBias ? &bias : nullptr, axis, double(0.25f), DataType::Float32);
      expectNear(out[0], e.y, 2e-5, 2e-5);
      expectNear(out[1], e.mean, 1e-6, 1e-6);
      expectNear(out[2], e.invStd, 1e-6, 1e-6);
    }
  }
}

TEST(LayerNormOp, BroadcastParamsAndDefaults) {
  Tensor x = skewed(DataType::Float32, {3, 5, 7, 4}, 20, 3);
  // Scale/B of fewer dims than the normalised ones, and a Scale that varies over a leading dim.
  const std::vector<std::pair<Shape, Shape>> params = {
      {{1, 4}, {7, 1}}, {{1, 1, 7, 4}, {4}}, {{3, 1, 7, 4}, {1}}, {{}, {3, 5, 7, 4}}};
  uint32_t seed = 21;
  for (auto& [ss, bs] : params) {
    SCOPED_TRACE(shapeToString(ss) + " " + shapeToString(bs));
    Tensor scale = randomTensor(DataType::Float32, ss, seed++, 0.5, 2),
           bias = randomTensor(DataType::Float32, bs, seed++);
    Node node;
    node.type = OpType::LayerNormalization;
    node.setInt("axis", 2);
    std::vector<Tensor> out;
    runNode(node, {in(x), in(scale), in(bias)}, 1, &out);
    expectNear(out[0], naiveLayerNorm(x, scale, &bias, 2, double(1e-5f), DataType::Float32).y, 2e-5, 2e-5);
  }
  // Default axis -1 and epsilon 1e-5, with a row far from zero (catastrophic cancellation check).
  Tensor shifted = skewed(DataType::Float32, {13, 127}, 30, 1);
  for (int64_t i = 0; i < shifted.elements(); ++i) shifted.data<float>()[i] += 1000.f;
  Tensor scale = randomTensor(DataType::Float32, {127}, 31, 0.5, 2);
  Node node;
  node.type = OpType::LayerNormalization;
  std::vector<Tensor> out;
  runNode(node, {in(shifted), constant(scale)}, 1, &out);
  expectNear(out[0], naiveLayerNorm(shifted, scale, nullptr, -1, double(1e-5f), DataType::Float32).y, 1e-3, 1e-3);
}

TEST(LayerNormOp, DtypesAndStashType) {
  for (DataType dt : {DataType::Float16, DataType::BFloat16, DataType::Float64}) {
    SCOPED_TRACE(dataTypeName(dt));
    Tensor x = skewed(dt, {5, 13, 6}, 40, 2);
    Tensor scale = randomTensor(dt, {13, 6}, 41, 0.5, 2), bias = randomTensor(dt, {13, 6}, 42);
    Node node;
    node.type = OpType::LayerNormalization;
    node.setInt("axis", 1);
    std::vector<Tensor> out;
    runNode(node, {in(x), in(scale), in(bias)}, 3, &out);
    LayerNormResult e = naiveLayerNorm(x, scale, &bias, 1, double(1e-5f), DataType::Float32);
    double tol = dt == DataType::Float64 ? 1e-5 : dt == DataType::Float16 ? 1e-2 : 6e-2;
    expectNear(out[0], e.y, tol, tol);
    EXPECT_EQ(out[1].dtype(), DataType::Float32);  // stash_type defaults to float
    expectNear(out[1], e.mean, 1e-5, 1e-5);
  }
  Tensor x = skewed(DataType::Float64, {4, 9}, 43, 2);
  Tensor scale = randomTensor(DataType::Float64, {9}, 44, 0.5, 2);
  Node node;
  node.type = OpType::LayerNormalization;
  node.setInt("stash_type", 11);
  std::vector<Tensor> out;
  runNode(node, {in(x), in(scale)}, 3, &out);
  LayerNormResult e = naiveLayerNorm(x, scale, nullptr, -1, double(1e-5f), DataType::Float64);
  expectNear(out[0], e.y, 1e-12, 1e-12);
  expectNear(out[2], e.invStd, 1e-12, 1e-12);
}

TEST(LayerNormOp, Errors) {
  Tensor x = randomTensor(DataType::Float32, {3, 4}, 1);
  Tensor s4 = randomTensor(DataType::Float32, {4}, 2);
  std::vector<Tensor> out;
  auto attempt = [&](Node node, std::vector<OpInput> ins) {
    node.type = OpType::LayerNormalization;
    return runOp(node, ins, 1, &out);
  };
  Node axis2;
  axis2.setInt("axis", 2);
  EXPECT_FALSE(attempt(axis2, {in(x), in(s4)}).isOk());
  EXPECT_FALSE(attempt(Node(), {in(x), in(randomTensor(DataType::Float32, {3}, 2))}).isOk());
  EXPECT_FALSE(attempt(Node(), {in(x), in(randomTensor(DataType::Float32, {2, 3, 4}, 2))}).isOk());
  EXPECT_FALSE(attempt(Node(), {in(x), in(s4), in(randomTensor(DataType::Float64, {4}, 2))}).isOk());
  Node stash;
  stash.setInt("stash_type", 7);
  EXPECT_FALSE(attempt(stash, {in(x), in(s4)}).isOk());
  EXPECT_FALSE(
      attempt(Node(), {in(randomTensor(DataType::Int32, {3, 4}, 1)), in(randomTensor(DataType::Int32, {4}, 1))})
          .isOk());
}

TEST(NormalizationOps, ThreadedPool) {
  ThreadPool pool(3);
  Tensor x = skewed(DataType::Float32, {64, 9, 33}, 50, 3);
  Tensor scale = randomTensor(DataType::Float32, {33}, 51, 0.5, 2);
  auto runOnPool = [&](const Node& node, const std::vector<const Tensor*>& ins) {
    TensorViews inV(ins.size()), outV(1);
    for (size_t i = 0; i < ins.size(); ++i)
      inV[i] = {ins[i]->dtype(), ins[i]->shape(), const_cast<void*>(ins[i]->data())};
    EXPECT_TRUE(opDef(node.type).shape(node, inV, outV).isOk());
    Tensor y(outV[0].dtype, outV[0].shape);
    outV[0].data = y.data();
    EXPECT_TRUE(opDef(node.type).reference(node, inV, outV, &pool).isOk());
    return y;
  };
  for (int64_t axis : {0, 1, 2}) {
    Node sm;
    sm.type = OpType::Softmax;
    sm.setInt("axis", axis);
    expectNear(runOnPool(sm, {&x}), naiveSoftmax(x, axis, false), 1e-6, 1e-5);
  }
  Node ln;
  ln.type = OpType::LayerNormalization;
  expectNear(runOnPool(ln, {&x, &scale}), naiveLayerNorm(x, scale, nullptr, -1, double(1e-5f), DataType::Float32).y,
             2e-5, 2e-5);
}

}  // namespace
}  // namespace osprey::test
