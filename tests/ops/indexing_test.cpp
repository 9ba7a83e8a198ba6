// ArgMax/ArgMin, TopK, NonZero, Unique, Compress, OneHot, CumSum/CumProd and ReverseSequence
// against naive implementations written here with multi-indices.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

std::vector<Tensor> run(const Node& n, const std::vector<OpInput>& ins, int outs) {
  std::vector<Tensor> out;
  Status st = runOp(n, ins, outs, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return out;
}

bool fails(const Node& n, const std::vector<OpInput>& ins, int outs = 1) {
  std::vector<Tensor> out;
  return !runOp(n, ins, outs, &out).isOk();
}

// ---- ArgMax / ArgMin ----

Tensor naiveArg(const Tensor& x, int64_t axis, bool keep, bool last, bool isMax) {
  const Shape& s = x.shape();
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  Shape keptShape = s;
  keptShape[axis] = 1;
  Shape outShape = keptShape;
  if (!keep) outShape.erase(outShape.begin() + axis);
  Tensor y(DataType::Int64, outShape);
  for (int64_t o = 0; o < shapeElements(keptShape); ++o) {
    std::vector<int64_t> idx = unravel(o, keptShape);
    int64_t best = 0;
    for (int64_t k = 0; k < s[axis]; ++k) {
      idx[axis] = k;
      std::vector<int64_t> bi = idx;
      bi[axis] = best;
      const double v = at(x, ravel(idx, s)), b = at(x, ravel(bi, s));
      if ((isMax ? v > b : v < b) || (last && v == b)) best = k;
    }
    y.data<int64_t>()[o] = best;
  }
  return y;
}

TEST(ArgExtremeOp, AxesKeepdimsAndTies) {
  // Few distinct values so ties are common.
  Tensor x = randomTensor(DataType::Float32, {5, 13, 7}, 1, 0, 4);
  for (int64_t i = 0; i < x.elements(); ++i) x.data<float>()[i] = std::floor(x.data<float>()[i]);
  for (OpType type : {OpType::ArgMax, OpType::ArgMin})
    for (int64_t axis : {0, 1, 2, -1})
      for (int64_t keep : {0, 1})
        for (int64_t last : {0, 1}) {
          SCOPED_TRACE(std::string(opTypeName(type)) + " axis " + std::to_string(axis) + " keep " + std::to_string(keep) +
                       " last " + std::to_string(last));
          Node n = makeNode(type);
          n.setInt("axis", axis);
          n.setInt("keepdims", keep);
          n.setInt("select_last_index", last);
          auto y = run(n, {in(x)}, 1);
          expectNear(y[0], naiveArg(x, axis, keep, last, type == OpType::ArgMax), 0, 0);
        }
}

TEST(ArgExtremeOp, DtypesAndErrors) {
  for (DataType dt : {DataType::Int32, DataType::UInt8, DataType::Float16, DataType::Int64}) {
    Tensor x = randomTensor(dt, {7, 11}, 3, 0, 100);
    Node n = makeNode(OpType::ArgMax);
    n.setInt("axis", 1);
    expectNear(run(n, {in(x)}, 1)[0], naiveArg(x, 1, true, false, true), 0, 0);
  }
  Node n = makeNode(OpType::ArgMin);
  n.setInt("axis", 2);
  EXPECT_TRUE(fails(n, {in(randomTensor(DataType::Float32, {3, 4}, 1))}));
  EXPECT_TRUE(fails(makeNode(OpType::ArgMin), {in(randomTensor(DataType::Float32, {}, 1))}));
}

// ---- TopK ----

TEST(TopKOp, LargestSmallestAxes) {
  Tensor x = randomTensor(DataType::Float32, {6, 13, 5}, 2, 0, 6);
  for (int64_t i = 0; i < x.elements(); ++i) x.data<float>()[i] = std::floor(x.data<float>()[i]);  // ties
  for (int64_t axis : {0, 1, -1})
    for (int64_t largest : {0, 1})
      for (int64_t k : {0, 1, 3, 5}) {
        SCOPED_TRACE("axis " + std::to_string(axis) + " largest " + std::to_string(largest) + " k " + std::to_string(k));
        Node n = makeNode(OpType::TopK);
        n.setInt("axis", axis);
        n.setInt("largest", largest);
        auto y = run(n, {in(x), constant(makeTensor<int64_t>({1}, {k}))}, 2);
        const Shape& s = x.shape();
        const int64_t a = axis < 0 ? axis + 3 : axis;
        Shape outShape = s;
        outShape[a] = k;
        ASSERT_EQ(y[0].shape(), outShape);
        ASSERT_EQ(y[1].shape(), outShape);
        // Naive: for each line, pick k times the best remaining element (lowest index on ties).
        Shape lineShape = s;
        lineShape[a] = 1;
        for (int64_t o = 0; o < shapeElements(lineShape); ++o) {
          std::vector<int64_t> idx = unravel(o, lineShape);
          std::vector<bool> used(s[a], false);
          for (int64_t j = 0; j < k; ++j) {
            int64_t best = -1;
            double bv = 0;
            for (int64_t c = 0; c < s[a]; ++c) {
              if (used[c]) continue;
              idx[a] = c;
              const double v = at(x, ravel(idx, s));
              if (best < 0 || (largest ? v > bv : v < bv)) best = c, bv = v;
            }
            used[best] = true;
            idx[a] = j;
            const int64_t flat = ravel(idx, outShape);
            EXPECT_EQ(at(y[0], flat), bv);
            EXPECT_EQ(at(y[1], flat), best);
          }
        }
      }
}

TEST(TopKOp, RuntimeKAndErrors) {
  Tensor x = makeTensor<int32_t>({5}, {3, 9, 1, 9, 4});
  auto y = run(makeNode(OpType::TopK), {in(x), in(makeTensor<int64_t>({1}, {3}))}, 2);
  EXPECT_EQ(std::vector<int32_t>(y[0].data<int32_t>(), y[0].data<int32_t>() + 3), (std::vector<int32_t>{9, 9, 4}));
  EXPECT_EQ(std::vector<int64_t>(y[1].data<int64_t>(), y[1].data<int64_t>() + 3), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_TRUE(fails(makeNode(OpType::TopK), {in(x), constant(makeTensor<int64_t>({1}, {6}))}, 2));
  EXPECT_TRUE(fails(makeNode(OpType::TopK), {in(x), constant(makeTensor<int64_t>({1}, {-1}))}, 2));
  EXPECT_TRUE(fails(makeNode(OpType::TopK), {in(x), constant(makeTensor<int64_t>({2}, {1, 2}))}, 2));
}

// ---- NonZero ----

TEST(NonZeroOp, RowMajorCoordinates) {
  Tensor x = randomTensor(DataType::Int32, {4, 7, 3}, 5, -1, 2);  // values -1, 0, 1
  for (bool constantInput : {false, true}) {
    auto y = run(makeNode(OpType::NonZero), {constantInput ? constant(x) : in(x)}, 1);
    std::vector<int64_t> expected;
    int64_t count = 0;
    for (int64_t i = 0; i < x.elements(); ++i) count += at(x, i) != 0;
    ASSERT_EQ(y[0].shape(), (Shape{3, count}));
    int64_t j = 0;
    for (int64_t i = 0; i < x.elements(); ++i) {
      if (at(x, i) == 0) continue;
      std::vector<int64_t> idx = unravel(i, x.shape());
      for (int d = 0; d < 3; ++d) EXPECT_EQ(at(y[0], d * count + j), idx[d]);
      ++j;
    }
  }
  auto b = run(makeNode(OpType::NonZero), {in(makeTensor<bool>({2, 2}, {false, true, true, false}))}, 1);
  ASSERT_EQ(b[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(std::vector<int64_t>(b[0].data<int64_t>(), b[0].data<int64_t>() + 4), (std::vector<int64_t>{0, 1, 1, 0}));
}

// ---- Unique ----

TEST(UniqueOp, FlattenedSortedAndUnsorted) {
  Tensor x = randomTensor(DataType::Float32, {5, 13}, 6, 0, 9);
  for (int64_t i = 0; i < x.elements(); ++i) x.data<float>()[i] = std::floor(x.data<float>()[i]);
  for (int64_t sorted : {0, 1}) {
    Node n = makeNode(OpType::Unique);
    n.setInt("sorted", sorted);
    auto y = run(n, {in(x)}, 4);
    std::vector<double> values;  // first-occurrence order
    std::vector<int64_t> first;
    for (int64_t i = 0; i < x.elements(); ++i)
      if (std::find(values.begin(), values.end(), at(x, i)) == values.end()) values.push_back(at(x, i)), first.push_back(i);
    std::vector<size_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    if (sorted) std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
    const int64_t u = static_cast<int64_t>(values.size());
    ASSERT_EQ(y[0].shape(), (Shape{u}));
    for (int64_t q = 0; q < u; ++q) {
      EXPECT_EQ(at(y[0], q), values[order[q]]);
      EXPECT_EQ(at(y[1], q), first[order[q]]);
      int64_t count = 0;
      for (int64_t i = 0; i < x.elements(); ++i) count += at(x, i) == values[order[q]];
      EXPECT_EQ(at(y[3], q), count);
    }
    for (int64_t i = 0; i < x.elements(); ++i) EXPECT_EQ(at(y[0], static_cast<int64_t>(at(y[2], i))), at(x, i));
  }
}

TEST(UniqueOp, AlongAxis) {
  // Rows drawn from a few patterns so that some repeat.
  const int64_t rows = 9, cols = 4;
  Tensor x(DataType::Int64, {2, rows, cols});
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) x.data<int64_t>()[(o * rows + r) * cols + c] = ((r * 7) % 4) * (c + 1) + o * (r % 2);
  Node n = makeNode(OpType::Unique);
  n.setInt("axis", 1);
  auto y = run(n, {in(x)}, 4);
  // Slices of axis 1, compared as (outer, inner)-ordered vectors; std::map sorts them.
  std::map<std::vector<int64_t>, std::pair<int64_t, int64_t>> slices;  // slice -> (first, count)
  std::vector<std::vector<int64_t>> sliceOf(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t c = 0; c < cols; ++c) sliceOf[r].push_back(x.data<int64_t>()[(o * rows + r) * cols + c]);
    auto [it, fresh] = slices.emplace(sliceOf[r], std::make_pair(r, 0));
    ++it->second.second;
  }
  const int64_t u = static_cast<int64_t>(slices.size());
  ASSERT_EQ(y[0].shape(), (Shape{2, u, cols}));
  int64_t q = 0;
  for (auto& [slice, info] : slices) {
    EXPECT_EQ(at(y[1], q), info.first);
    EXPECT_EQ(at(y[3], q), info.second);
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(at(y[0], (o * u + q) * cols + c), slice[o * cols + c]);
    ++q;
  }
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(std::distance(slices.begin(), slices.find(sliceOf[r])), at(y[2], r));
  Node bad = makeNode(OpType::Unique);
  bad.setInt("axis", 3);
  EXPECT_TRUE(fails(bad, {in(x)}));
}

// ---- Compress ----

TEST(CompressOp, AxesAndFlattened) {
  Tensor x = randomTensor(DataType::Float32, {4, 7, 3}, 8);
  for (int64_t axis : {-2, 0, 1, 2, 99}) {  // 99: no axis attribute
    const int64_t len = axis == 99 ? x.elements() : x.shape()[axis < 0 ? axis + 3 : axis];
    Tensor cond(DataType::Bool, {len - 1});  // shorter than the axis: the tail is dropped
    for (int64_t i = 0; i < len - 1; ++i) cond.data<bool>()[i] = (i * 5) % 3 != 0;
    Node n = makeNode(OpType::Compress);
    if (axis != 99) n.setInt("axis", axis);
    auto y = run(n, {in(x), constant(cond)}, 1);
    std::vector<double> expected;
    if (axis == 99) {
      for (int64_t i = 0; i < len - 1; ++i)
        if (cond.data<bool>()[i]) expected.push_back(at(x, i));
    } else {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      for (int64_t i = 0; i < x.elements(); ++i) {
        int64_t c = unravel(i, x.shape())[a];
        if (c < len - 1 && cond.data<bool>()[c]) expected.push_back(at(x, i));
      }
    }
    ASSERT_EQ(y[0].elements(), static_cast<int64_t>(expected.size()));
    // Row-major order of the kept elements is preserved by compress along any axis.
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(at(y[0], i), expected[i]);
  }
  Node n = makeNode(OpType::Compress);
  n.setInt("axis", 0);
  EXPECT_TRUE(fails(n, {in(x), constant(makeTensor<bool>({6}, {false, false, false, false, false, true}))}));
  EXPECT_TRUE(fails(n, {in(x), constant(makeTensor<int64_t>({2}, {1, 0}))}));
}

// ---- OneHot ----

TEST(OneHotOp, AxesAndNegativeIndices) {
  const int64_t depth = 5;
  Tensor idx = randomTensor(DataType::Int64, {3, 4}, 9, -7, 7);  // some out of range
  Tensor values = makeTensor<float>({2}, {-1.5f, 2.5f});
  for (int64_t axis : {-1, 0, 1, 2, -3}) {
    Node n = makeNode(OpType::OneHot);
    n.setInt("axis", axis);
    auto y = run(n, {in(idx), constant(makeTensor<float>({1}, {static_cast<float>(depth)})), in(values)}, 1);
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Shape outShape = idx.shape();
    outShape.insert(outShape.begin() + a, depth);
    ASSERT_EQ(y[0].shape(), outShape);
    for (int64_t i = 0; i < y[0].elements(); ++i) {
      std::vector<int64_t> oi = unravel(i, outShape);
      const int64_t d = oi[a];
      oi.erase(oi.begin() + a);
      int64_t v = idx.data<int64_t>()[ravel(oi, idx.shape())];
      if (v < 0) v += depth;
      EXPECT_EQ(at(y[0], i), v == d ? 2.5 : -1.5);
    }
  }
  Node n = makeNode(OpType::OneHot);
  n.setInt("axis", 3);
  EXPECT_TRUE(fails(n, {in(idx), constant(makeTensor<int64_t>({1}, {depth})), in(values)}));
  EXPECT_TRUE(fails(makeNode(OpType::OneHot), {in(idx), constant(makeTensor<int64_t>({2}, {2, 3})), in(values)}));
}

// ---- CumSum / CumProd ----

TEST(CumulativeOp, ExclusiveReverseAxes) {
  Tensor x = randomTensor(DataType::Float64, {4, 13, 3}, 11, 0.5, 1.5);
  for (OpType type : {OpType::CumSum, OpType::CumProd})
    for (int64_t axis : {0, 1, -1})
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          SCOPED_TRACE(std::string(opTypeName(type)) + " axis " + std::to_string(axis) + " exclusive " +
                       std::to_string(exclusive) + " reverse " + std::to_string(reverse));
          Node n = makeNode(type);
          n.setInt("exclusive", exclusive);
          n.setInt("reverse", reverse);
          auto y = run(n, {in(x), constant(makeTensor<int32_t>({}, {static_cast<int32_t>(axis)}))}, 1);
          const int64_t a = axis < 0 ? axis + 3 : axis;
          Tensor expected(x.dtype(), x.shape());
          for (int64_t i = 0; i < x.elements(); ++i) {
            std::vector<int64_t> idx = unravel(i, x.shape());
            const int64_t pos = idx[a];
            double acc = type == OpType::CumSum ? 0 : 1;
            for (int64_t k = 0; k < x.shape()[a]; ++k) {
              const bool take = reverse ? (exclusive ? k > pos : k >= pos) : (exclusive ? k < pos : k <= pos);
              if (!take) continue;
              idx[a] = k;
              const double v = at(x, ravel(idx, x.shape()));
              acc = type == OpType::CumSum ? acc + v : acc * v;
            }
            storeFromDouble(expected.dtype(), expected.data(), i, acc);
          }
          expectNear(y[0], expected, 1e-12, 1e-12);
        }
  Tensor xi = makeTensor<int32_t>({4}, {1, 2, 3, 4});
  auto y = run(makeNode(OpType::CumSum), {in(xi), in(makeTensor<int64_t>({1}, {0}))}, 1);
  EXPECT_EQ(std::vector<int32_t>(y[0].data<int32_t>(), y[0].data<int32_t>() + 4), (std::vector<int32_t>{1, 3, 6, 10}));
  EXPECT_TRUE(fails(makeNode(OpType::CumSum), {in(xi), constant(makeTensor<int64_t>({1}, {1}))}));
  EXPECT_TRUE(fails(makeNode(OpType::CumSum), {in(xi), constant(makeTensor<float>({1}, {0.f}))}));
}

// ---- ReverseSequence ----

TEST(ReverseSequenceOp, BatchAndTimeMajor) {
  for (int64_t batchAxis : {0, 1}) {
    const int64_t batch = 5, time = 7;
    Shape shape = batchAxis == 0 ? Shape{batch, time, 3} : Shape{time, batch, 3};
    Tensor x = randomTensor(DataType::Float32, shape, 12);
    Tensor lens = makeTensor<int64_t>({batch}, {0, 1, 7, 4, 3});
    Node n = makeNode(OpType::ReverseSequence);
    n.setInt("batch_axis", batchAxis);
    n.setInt("time_axis", 1 - batchAxis);
    auto y = run(n, {in(x), in(lens)}, 1);
    for (int64_t i = 0; i < x.elements(); ++i) {
      std::vector<int64_t> idx = unravel(i, shape);
      const int64_t b = idx[batchAxis], t = idx[1 - batchAxis], len = lens.data<int64_t>()[b];
      if (t < len) idx[1 - batchAxis] = len - 1 - t;
      EXPECT_EQ(at(y[0], i), at(x, ravel(idx, shape)));
    }
    EXPECT_TRUE(fails(n, {in(x), in(makeTensor<int64_t>({batch}, {0, 1, 8, 4, 3}))}));
  }
  Node n = makeNode(OpType::ReverseSequence);
  n.setInt("batch_axis", 1);
  n.setInt("time_axis", 1);
  EXPECT_TRUE(fails(n, {in(randomTensor(DataType::Float32, {2, 2}, 1)), in(makeTensor<int64_t>({2}, {1, 1}))}));
}

}  // namespace
}  // namespace osprey::test
