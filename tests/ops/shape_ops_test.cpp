// Shape, ConstantOfShape, Range and Constant against naive versions written here.
#include <cstring>
#include <memory>

#include "op_test_util.h"

namespace osprey::test {
namespace {

Status runStatus(const Node& node, const std::vector<OpInput>& inputs) {
  std::vector<Tensor> out;
  return runOp(node, inputs, 1, &out);
}

void expectSame(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(std::memcmp(actual.data(), expected.data(), expected.bytes()), 0);
}

Tensor ints(const std::vector<int64_t>& v) { return makeTensor<int64_t>({static_cast<int64_t>(v.size())}, v); }

Attribute tensorAttr(const std::string& name, const Tensor& t) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::Tensor;
  a.tensor = std::make_shared<TensorInfo>();
  a.tensor->dtype = t.dtype();
  a.tensor->shape = t.shape();
  a.tensor->isConstant = true;
  a.tensor->data = ConstantData::copyOf(t.data(), t.bytes());
  return a;
}

// ---------------------------------------------------------------------------------------
// Shape

TEST(ShapeOp, StartAndEndClampLikePythonSlices) {
  const Shape dims = {2, 3, 5, 7};
  Tensor x = randomTensor(DataType::Float32, dims, 1);
  for (int64_t start = -6; start <= 6; ++start) {
    for (int64_t end = -6; end <= 6; ++end) {
      Node n = makeNode(OpType::Shape);
      n.setInt("start", start);
      n.setInt("end", end);
      std::vector<int64_t> expected;
      const int64_t r = 4;
      int64_t s = start < 0 ? std::max<int64_t>(start + r, 0) : std::min(start, r);
      int64_t e = end < 0 ? std::max<int64_t>(end + r, 0) : std::min(end, r);
      for (int64_t i = 0; i < r; ++i)
        if (i >= s && i < e) expected.push_back(dims[i]);
      expectSame(run1(n, {in(x)}), ints(expected));
    }
  }
  expectSame(run1(makeNode(OpType::Shape), {in(x)}), ints({2, 3, 5, 7}));
  Node startOnly = makeNode(OpType::Shape);
  startOnly.setInt("start", -1);
  expectSame(run1(startOnly, {in(x)}), ints({7}));
  expectSame(run1(makeNode(OpType::Shape), {in(Tensor(DataType::Int8, {}))}), ints({}));
}

// ---------------------------------------------------------------------------------------
// ConstantOfShape

TEST(ConstantOfShapeOp, DefaultAndTypedValues) {
  expectSame(run1(makeNode(OpType::ConstantOfShape), {constant(ints({3, 5}))}), Tensor(DataType::Float32, {3, 5}));
  for (Tensor value : {makeTensor<int64_t>({1}, {-7}), makeTensor<float>({1}, {2.5f}), makeTensor<bool>({1}, {true}),
                       makeTensor<int32_t>({1}, {123456}), makeTensor<double>({1}, {-0.125})}) {
    Node n = makeNode(OpType::ConstantOfShape);
    n.setAttr(tensorAttr("value", value));
    Tensor expected(value.dtype(), {2, 1, 7});
    const size_t elem = dataTypeSize(value.dtype());
    for (int64_t i = 0; i < expected.elements(); ++i)
      std::memcpy(static_cast<uint8_t*>(expected.data()) + i * elem, value.data(), elem);
    expectSame(run1(n, {constant(ints({2, 1, 7}))}), expected);
    expectSame(run1(n, {in(ints({2, 1, 7}))}), expected);  // shape known only at run time
    expectSame(run1(n, {constant(ints({0, 4}))}), Tensor(value.dtype(), {0, 4}));
  }
  Node half = makeNode(OpType::ConstantOfShape);
  Tensor h(DataType::Float16, {1});
  h.data<uint16_t>()[0] = floatToHalf(1.5f);
  half.setAttr(tensorAttr("value", h));
  Tensor got = run1(half, {constant(ints({13}))});
  for (int64_t i = 0; i < 13; ++i) EXPECT_EQ(at(got, i), 1.5);
}

TEST(ConstantOfShapeOp, BadInputsAreErrors) {
  Node n = makeNode(OpType::ConstantOfShape);
  EXPECT_FALSE(runStatus(n, {constant(ints({3, -1}))}).isOk());
  EXPECT_FALSE(runStatus(n, {constant(makeTensor<int64_t>({1, 2}, {3, 4}))}).isOk());
  n.setAttr(tensorAttr("value", makeTensor<float>({2}, {1.f, 2.f})));
  EXPECT_FALSE(runStatus(n, {constant(ints({3}))}).isOk());
}

// ---------------------------------------------------------------------------------------
// Range

// The spec's loop: keep adding delta while the value has not passed limit.
std::vector<double> naiveRange(double start, double limit, double delta) {
  std::vector<double> v;
  for (double x = start; delta > 0 ? x < limit : x > limit; x += delta) v.push_back(x);
  return v;
}

template <class T>
void checkRange(T start, T limit, T delta, double tol) {
  auto scalar = [](T v) { return makeTensor<T>({}, {v}); };
  Tensor got = run1(makeNode(OpType::Range), {constant(scalar(start)), constant(scalar(limit)), constant(scalar(delta))});
  const std::vector<double> expected =
      naiveRange(static_cast<double>(start), static_cast<double>(limit), static_cast<double>(delta));
  ASSERT_EQ(got.dtype(), dataTypeOf<T>());
  ASSERT_EQ(got.shape(), Shape{static_cast<int64_t>(expected.size())});
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(at(got, i), expected[i], tol) << i;
  // The same with every input known only at run time.
  Tensor eager = run1(makeNode(OpType::Range), {in(scalar(start)), in(scalar(limit)), in(scalar(delta))});
  expectSame(eager, got);
}

TEST(RangeOp, IntegerAndFloatTypes) {
  checkRange<int32_t>(10, -7, -3, 0);
  checkRange<int32_t>(-7, 10, 3, 0);
  checkRange<int64_t>(5, 5, 1, 0);     // empty
  checkRange<int64_t>(5, 100, -1, 0);  // empty: delta points away
  checkRange<int64_t>(-1000000000000LL, 1000000000000LL, 99999999999LL, 0);
  checkRange<int16_t>(-100, 100, 7, 0);
  checkRange<int8_t>(-128, 127, 1, 0);  // 255 values: more than int8 can count
  checkRange<float>(0.5f, 13.3f, 0.7f, 1e-4);
  checkRange<float>(3.f, -2.2f, -0.4f, 1e-5);
  checkRange<double>(-1.0, 1.0, 0.125, 0);
}

TEST(RangeOp, HalfPrecision) {
  auto half = [](float v) {
    Tensor t(DataType::Float16, {});
    t.data<uint16_t>()[0] = floatToHalf(v);
    return t;
  };
  Tensor got = run1(makeNode(OpType::Range), {constant(half(1.f)), constant(half(6.f)), constant(half(0.5f))});
  ASSERT_EQ(got.shape(), Shape{10});
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(at(got, i), 1.0 + 0.5 * static_cast<double>(i));
}

TEST(RangeOp, BadInputsAreErrors) {
  auto f = [](float v) { return makeTensor<float>({}, {v}); };
  EXPECT_FALSE(runStatus(makeNode(OpType::Range), {constant(f(0)), constant(f(5)), constant(f(0))}).isOk());
  EXPECT_FALSE(runStatus(makeNode(OpType::Range), {constant(f(0)), constant(f(5)), constant(makeTensor<int32_t>({}, {1}))}).isOk());
  EXPECT_FALSE(runStatus(makeNode(OpType::Range), {constant(f(0)), constant(makeTensor<float>({2}, {5, 6})), constant(f(1))}).isOk());
  EXPECT_FALSE(runStatus(makeNode(OpType::Range), {constant(f(0)), constant(f(INFINITY)), constant(f(1))}).isOk());
}

// ---------------------------------------------------------------------------------------
// Constant

TEST(ConstantOp, EveryValueAttribute) {
  Tensor t = randomTensor(DataType::Int32, {2, 3}, 2, -100, 100);
  Node value = makeNode(OpType::Constant);
  value.setAttr(tensorAttr("value", t));
  expectSame(run1(value, {}), t);

  Node f = makeNode(OpType::Constant);
  f.setFloat("value_float", 1.25f);
  expectSame(run1(f, {}), makeTensor<float>({}, {1.25f}));
  Node fs = makeNode(OpType::Constant);
  fs.setFloats("value_floats", {1.f, -2.f, 3.5f});
  expectSame(run1(fs, {}), makeTensor<float>({3}, {1.f, -2.f, 3.5f}));
  Node i = makeNode(OpType::Constant);
  i.setInt("value_int", -9);
  expectSame(run1(i, {}), makeTensor<int64_t>({}, {-9}));
  Node is = makeNode(OpType::Constant);
  is.setInts("value_ints", {4, 5});
  expectSame(run1(is, {}), ints({4, 5}));
  Node empty = makeNode(OpType::Constant);
  empty.setInts("value_ints", {});
  expectSame(run1(empty, {}), ints({}));
  Node emptyFloats = makeNode(OpType::Constant);
  emptyFloats.setFloats("value_floats", {});
  expectSame(run1(emptyFloats, {}), makeTensor<float>({0}, {}));
}

TEST(ConstantOp, BadAttributesAreErrors) {
  EXPECT_FALSE(runStatus(makeNode(OpType::Constant), {}).isOk());
  Node two = makeNode(OpType::Constant);
  two.setInt("value_int", 1);
  two.setFloat("value_float", 1.f);
  EXPECT_FALSE(runStatus(two, {}).isOk());
  Node str = makeNode(OpType::Constant);
  str.setString("value_string", "hi");
  EXPECT_EQ(runStatus(str, {}).code(), StatusCode::Unsupported);
  Node bad = makeNode(OpType::Constant);
  Attribute a = tensorAttr("value", makeTensor<float>({2}, {1.f, 2.f}));
  a.tensor->shape = {3};  // bytes for 2 elements
  bad.setAttr(a);
  EXPECT_FALSE(runStatus(bad, {}).isOk());
}

}  // namespace
}  // namespace osprey::test
