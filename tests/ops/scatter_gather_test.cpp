// GatherElements, GatherND, ScatterElements, ScatterND against naive multi-index loops.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

std::vector<Tensor> run(const Node& n, const std::vector<OpInput>& ins) {
  std::vector<Tensor> out;
  Status st = runOp(n, ins, 1, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return out;
}

bool fails(const Node& n, const std::vector<OpInput>& ins) {
  std::vector<Tensor> out;
  return !runOp(n, ins, 1, &out).isOk();
}

// Random indices in [-size, size) (negative ones count from the end).
Tensor randomIndices(DataType dt, const Shape& shape, int64_t size, uint32_t seed) {
  return randomTensor(dt, shape, seed, static_cast<double>(-size), static_cast<double>(size));
}

int64_t wrap(double v, int64_t size) {
  int64_t i = static_cast<int64_t>(v);
  return i < 0 ? i + size : i;
}

TEST(GatherElementsOp, AxesAndIndexDtypes) {
  Tensor data = randomTensor(DataType::Float32, {6, 13, 5}, 1);
  for (int64_t axis : {0, 1, 2, -1})
    for (DataType idt : {DataType::Int32, DataType::Int64}) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      Shape ishape = {4, 11, 3};
      ishape[a] = 7;
      Tensor idx = randomIndices(idt, ishape, data.shape()[a], 2 + a);
      Node n = makeNode(OpType::GatherElements);
      n.setInt("axis", axis);
      auto y = run(n, {in(data), in(idx)});
      ASSERT_EQ(y[0].shape(), ishape);
      for (int64_t i = 0; i < idx.elements(); ++i) {
        std::vector<int64_t> p = unravel(i, ishape);
        p[a] = wrap(at(idx, i), data.shape()[a]);
        EXPECT_EQ(at(y[0], i), at(data, ravel(p, data.shape())));
      }
    }
  Node n = makeNode(OpType::GatherElements);
  EXPECT_TRUE(fails(n, {in(data), in(makeTensor<int64_t>({1, 1, 1}, {6}))}));       // out of range
  EXPECT_TRUE(fails(n, {in(data), in(makeTensor<int64_t>({1, 1}, {0}))}));          // rank
  EXPECT_TRUE(fails(n, {in(data), in(Tensor(DataType::Int64, {1, 14, 1}))}));       // too large
  EXPECT_TRUE(fails(n, {in(data), in(makeTensor<float>({1, 1, 1}, {0.f}))}));       // dtype
}

TEST(ScatterElementsOp, Reductions) {
  Tensor data = randomTensor(DataType::Float32, {5, 9, 4}, 3);
  for (const char* reduction : {"none", "add", "mul", "max", "min"})
    for (int64_t axis : {0, 1, -1}) {
      SCOPED_TRACE(std::string(reduction) + " axis " + std::to_string(axis));
      const int64_t a = axis < 0 ? axis + 3 : axis;
      Shape ishape = {3, 7, 2};
      Tensor idx = randomIndices(DataType::Int64, ishape, data.shape()[a], 4 + a);
      if (std::string(reduction) == "none") {  // distinct targets: the result must not depend on order
        for (int64_t i = 0; i < idx.elements(); ++i)
          idx.data<int64_t>()[i] = unravel(i, ishape)[a] - (i % 2 ? data.shape()[a] : 0);
      }
      Tensor upd = randomTensor(DataType::Float32, ishape, 5 + a);
      Node n = makeNode(OpType::ScatterElements);
      n.setInt("axis", axis);
      n.setString("reduction", reduction);
      auto y = run(n, {in(data), in(idx), in(upd)});
      Tensor expected(data.dtype(), data.shape());
      for (int64_t i = 0; i < data.elements(); ++i) expected.data<float>()[i] = data.data<float>()[i];
      for (int64_t i = 0; i < idx.elements(); ++i) {
        std::vector<int64_t> p = unravel(i, ishape);
        p[a] = wrap(at(idx, i), data.shape()[a]);
        float& t = expected.data<float>()[ravel(p, data.shape())];
        const float u = upd.data<float>()[i];
        const std::string r = reduction;
        t = r == "none" ? u : r == "add" ? t + u : r == "mul" ? t * u : r == "max" ? std::max(t, u) : std::min(t, u);
      }
      expectNear(y[0], expected, 1e-6, 1e-6);
    }
  Node n = makeNode(OpType::ScatterElements);
  n.setString("reduction", "sub");
  EXPECT_TRUE(fails(n, {in(data), in(makeTensor<int64_t>({1, 1, 1}, {0})), in(makeTensor<float>({1, 1, 1}, {1.f}))}));
  Node m = makeNode(OpType::ScatterElements);
  EXPECT_TRUE(fails(m, {in(data), in(makeTensor<int64_t>({1, 1, 1}, {0})), in(makeTensor<float>({1, 1, 2}, {1.f, 2.f}))}));
}

// Naive GatherND: every output element, found through its index tuple.
Tensor naiveGatherNd(const Tensor& data, const Tensor& idx, int64_t b) {
  const Shape& ds = data.shape();
  const Shape& is = idx.shape();
  const int64_t m = is.back();
  Shape outShape(is.begin(), is.end() - 1);
  outShape.insert(outShape.end(), ds.begin() + b + m, ds.end());
  Tensor y(data.dtype(), outShape);
  for (int64_t i = 0; i < y.elements(); ++i) {
    std::vector<int64_t> oi = unravel(i, outShape);
    std::vector<int64_t> tuple(oi.begin(), oi.begin() + (is.size() - 1));
    std::vector<int64_t> di(oi.begin(), oi.begin() + b);
    for (int64_t k = 0; k < m; ++k) {
      tuple.push_back(k);
      di.push_back(wrap(at(idx, ravel(tuple, is)), ds[b + k]));
      tuple.pop_back();
    }
    di.insert(di.end(), oi.begin() + (is.size() - 1), oi.end());
    storeFromDouble(y.dtype(), y.data(), i, at(data, ravel(di, ds)));
  }
  return y;
}

TEST(GatherNdOp, DepthsAndBatchDims) {
  Tensor data = randomTensor(DataType::Int32, {3, 5, 7, 2}, 6, -50, 50);
  struct Case {
    int64_t b;
    Shape ishape;
  };
  for (const Case& c : {Case{0, {4, 1}}, Case{0, {2, 3, 2}}, Case{0, {5, 4}}, Case{1, {3, 2}}, Case{1, {3, 6, 3}},
                        Case{2, {3, 5, 1}}, Case{1, {3, 1}}}) {
    SCOPED_TRACE("batch_dims " + std::to_string(c.b) + " indices " + shapeToString(c.ishape));
    Tensor idx(DataType::Int64, c.ishape);
    const int64_t m = c.ishape.back();
    for (int64_t i = 0; i < idx.elements(); ++i) {
      const int64_t k = i % m, size = data.shape()[c.b + k];
      idx.data<int64_t>()[i] = (i * 7 + 3) % (2 * size) - size;
    }
    Node n = makeNode(OpType::GatherND);
    n.setInt("batch_dims", c.b);
    auto y = run(n, {in(data), in(idx)});
    expectNear(y[0], naiveGatherNd(data, idx, c.b), 0, 0);
  }
  Node n = makeNode(OpType::GatherND);
  EXPECT_TRUE(fails(n, {in(data), in(Tensor(DataType::Int64, {2, 5}))}));        // depth > rank
  EXPECT_TRUE(fails(n, {in(data), in(makeTensor<int64_t>({1, 1}, {3}))}));      // out of range
  n.setInt("batch_dims", 1);
  EXPECT_TRUE(fails(n, {in(data), in(Tensor(DataType::Int64, {2, 1}))}));        // batch mismatch
}

TEST(ScatterNdOp, SlicesAndReductions) {
  Tensor data = randomTensor(DataType::Float64, {6, 5, 3}, 7);
  for (const char* reduction : {"none", "add", "mul", "max", "min"})
    for (int64_t m : {1, 2, 3}) {
      SCOPED_TRACE(std::string(reduction) + " depth " + std::to_string(m));
      const int64_t tuples = 4;
      Tensor idx(DataType::Int64, {tuples, m});
      for (int64_t t = 0; t < tuples; ++t)
        for (int64_t k = 0; k < m; ++k) {
          // Distinct tuples (row t), with a negative spelling for odd t.
          const int64_t size = data.shape()[k];
          const int64_t v = k == 0 ? t : (t + k) % size;
          idx.data<int64_t>()[t * m + k] = t % 2 ? v - size : v;
        }
      Shape ushape = {tuples};
      ushape.insert(ushape.end(), data.shape().begin() + m, data.shape().end());
      Tensor upd = randomTensor(DataType::Float64, ushape, 8);
      Node n = makeNode(OpType::ScatterND);
      n.setString("reduction", reduction);
      auto y = run(n, {in(data), in(idx), in(upd)});
      Tensor expected(data.dtype(), data.shape());
      for (int64_t i = 0; i < data.elements(); ++i) expected.data<double>()[i] = data.data<double>()[i];
      for (int64_t i = 0; i < upd.elements(); ++i) {
        std::vector<int64_t> ui = unravel(i, ushape);
        std::vector<int64_t> di;
        for (int64_t k = 0; k < m; ++k) di.push_back(wrap(idx.data<int64_t>()[ui[0] * m + k], data.shape()[k]));
        di.insert(di.end(), ui.begin() + 1, ui.end());
        double& t = expected.data<double>()[ravel(di, data.shape())];
        const double u = upd.data<double>()[i];
        const std::string r = reduction;
        t = r == "none" ? u : r == "add" ? t + u : r == "mul" ? t * u : r == "max" ? std::max(t, u) : std::min(t, u);
      }
      expectNear(y[0], expected, 1e-12, 1e-12);
    }
  Node n = makeNode(OpType::ScatterND);
  EXPECT_TRUE(fails(n, {in(data), in(Tensor(DataType::Int64, {2, 1})), in(Tensor(DataType::Float64, {2, 5}))}));
  EXPECT_TRUE(fails(n, {in(data), in(makeTensor<int64_t>({1, 1}, {6})), in(Tensor(DataType::Float64, {1, 5, 3}))}));
}

}  // namespace
}  // namespace osprey::test
