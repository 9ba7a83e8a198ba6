// CastLike, Size, EyeLike, Trilu and Hardmax (elementwise_extra.cpp) against naive loops here.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

TEST(CastLikeOp, TakesTheDtypeOfInputOne) {
  const DataType types[] = {DataType::Float32, DataType::Float64, DataType::Float16, DataType::Int8,
                            DataType::Int64,   DataType::UInt16,  DataType::Bool};
  uint32_t seed = 1;
  for (DataType from : types)
    for (DataType to : types) {
      SCOPED_TRACE(std::string(dataTypeName(from)) + " -> " + dataTypeName(to));
      // Small non-negative whole numbers convert exactly between all of these types.
      Tensor x = from == DataType::Bool ? randomTensor(from, {13, 7}, seed++, 0, 2) : randomTensor(from, {13, 7}, seed++, 0, 50);
      if (from != DataType::Bool)
        for (int64_t i = 0; i < x.elements(); ++i) storeFromDouble(from, x.data(), i, std::floor(at(x, i)));
      Tensor like = randomTensor(to, {3}, seed++, 0, 2);
      Tensor expected(to, x.shape());
      for (int64_t i = 0; i < x.elements(); ++i)
        storeFromDouble(to, expected.data(), i, to == DataType::Bool ? (at(x, i) != 0) : at(x, i));
      Tensor y = run1(makeNode(OpType::CastLike), {in(x), in(like)});
      ASSERT_EQ(y.dtype(), to);
      expectNear(y, expected, 0, 0);
      expectNear(run1(makeNode(OpType::CastLike), {constant(x), constant(like)}), expected, 0, 0);  // folded
    }
}

TEST(SizeOp, CountsElements) {
  for (const Shape& s : {Shape{}, Shape{13}, Shape{3, 0, 5}, Shape{2, 13, 7}}) {
    Tensor y = run1(makeNode(OpType::Size), {in(randomTensor(DataType::Float16, s, 1))});
    ASSERT_EQ(y.dtype(), DataType::Int64);
    ASSERT_EQ(y.shape(), Shape{});
    EXPECT_EQ(y.data<int64_t>()[0], shapeElements(s));
  }
}

TEST(EyeLikeOp, DiagonalsAndDtypes) {
  for (const Shape& s : {Shape{5, 5}, Shape{4, 7}, Shape{13, 3}})
    for (int64_t k : {-20, -2, 0, 1, 6, 20})
      for (int dtype : {-1, static_cast<int>(DataType::Int32), static_cast<int>(DataType::Bool)}) {
        SCOPED_TRACE(shapeToString(s) + " k=" + std::to_string(k) + " dtype=" + std::to_string(dtype));
        Node node = makeNode(OpType::EyeLike);
        node.setInt("k", k);
        if (dtype >= 0) node.setInt("dtype", dtype);
        Tensor x = randomTensor(DataType::Float64, s, 3);
        const DataType outType = dtype >= 0 ? static_cast<DataType>(dtype) : DataType::Float64;
        Tensor expected(outType, s);
        for (int64_t i = 0; i < s[0]; ++i)
          for (int64_t j = 0; j < s[1]; ++j) storeFromDouble(outType, expected.data(), i * s[1] + j, j - i == k ? 1 : 0);
        expectNear(run1(node, {in(x)}), expected, 0, 0);
      }
}

TEST(TriluOp, UpperAndLowerWithK) {
  uint32_t seed = 10;
  for (const Shape& s : {Shape{5, 5}, Shape{2, 4, 7}, Shape{3, 13, 3}, Shape{1, 0, 4}})
    for (int upper : {0, 1})
      for (int64_t k : {-100, -3, -1, 0, 2, 5, 100}) {
        SCOPED_TRACE(shapeToString(s) + " upper=" + std::to_string(upper) + " k=" + std::to_string(k));
        Node node = makeNode(OpType::Trilu);
        node.setInt("upper", upper);
        Tensor x = randomTensor(DataType::Int32, s, seed++, -50, 50);
        const int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
        Tensor expected(DataType::Int32, s);
        for (int64_t e = 0; e < x.elements(); ++e) {
          const int64_t i = (e / cols) % rows, j = e % cols;
          const bool keep = upper ? j - i >= k : j - i <= k;
          expected.data<int32_t>()[e] = keep ? x.data<int32_t>()[e] : 0;
        }
        expectNear(run1(node, {in(x), in(makeTensor<int64_t>({}, {k}))}), expected, 0, 0);
        if (k == 0) expectNear(run1(node, {in(x)}), expected, 0, 0);
      }
}

TEST(HardmaxOp, OneAtTheFirstMaximum) {
  uint32_t seed = 20;
  const Shape s = {3, 13, 7};
  for (int64_t axis : {0, 1, 2, -1, -3})
    for (DataType dt : {DataType::Float32, DataType::Float16, DataType::Float64}) {
      SCOPED_TRACE("axis=" + std::to_string(axis) + " " + dataTypeName(dt));
      Node node = makeNode(OpType::Hardmax);
      node.setInt("axis", axis);
      // Few distinct values, so ties are common and the first maximum must win.
      Tensor x = randomTensor(dt, s, seed++, 0, 4);
      for (int64_t i = 0; i < x.elements(); ++i) storeFromDouble(dt, x.data(), i, std::floor(at(x, i)));
      const int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t inner = 1;
      for (int64_t d = a + 1; d < 3; ++d) inner *= s[d];
      Tensor expected(dt, s);
      for (int64_t e = 0; e < x.elements(); ++e) {
        const int64_t pos = (e / inner) % s[a], first = e - pos * inner;
        int64_t best = 0;
        for (int64_t p = 1; p < s[a]; ++p)
          if (at(x, first + p * inner) > at(x, first + best * inner)) best = p;
        storeFromDouble(dt, expected.data(), e, pos == best ? 1 : 0);
      }
      expectNear(run1(node, {in(x)}), expected, 0, 0);
    }
}

TEST(ElementwiseExtraOp, Errors) {
  std::vector<Tensor> out;
  Tensor f = randomTensor(DataType::Float32, {3, 4}, 1);
  Node eye = makeNode(OpType::EyeLike);
  EXPECT_FALSE(runOp(eye, {in(randomTensor(DataType::Float32, {2, 3, 4}, 1))}, 1, &out).isOk());
  eye.setInt("dtype", 99);
  EXPECT_FALSE(runOp(eye, {in(f)}, 1, &out).isOk());
  Node trilu = makeNode(OpType::Trilu);
  EXPECT_FALSE(runOp(trilu, {in(randomTensor(DataType::Float32, {4}, 1))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(trilu, {in(f), in(makeTensor<int32_t>({}, {1}))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(trilu, {in(f), in(makeTensor<int64_t>({2}, {1, 2}))}, 1, &out).isOk());
  trilu.setInt("upper", 3);
  EXPECT_FALSE(runOp(trilu, {in(f)}, 1, &out).isOk());
  Node hardmax = makeNode(OpType::Hardmax);
  hardmax.setInt("axis", 2);
  EXPECT_FALSE(runOp(hardmax, {in(f)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::Hardmax), {in(randomTensor(DataType::Int32, {3}, 1))}, 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
