// Binary (Add, Sub, Mul, Div, Pow, Equal, Less, Greater, PRelu), variadic (Max, Min, Sum,
// Mean) and Where against naive loops written here: every output element is computed from
// its multi-index, mapped to each input by the numpy broadcasting rule.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

// Expected output of an elementwise op: out[i] = f(inputs at i) as a double, stored as dtype.
template <class F>
Tensor naiveElementwise(const std::vector<const Tensor*>& ins, DataType dtype, F f) {
  std::vector<Shape> shapes;
  for (auto* t : ins) shapes.push_back(t->shape());
  Shape out = broadcastOf(shapes);
  Tensor r(dtype, out);
  for (int64_t i = 0; i < r.elements(); ++i) {
    std::vector<double> v;
    for (auto* t : ins) v.push_back(at(*t, sourceIndex(out, t->shape(), i)));
    storeFromDouble(dtype, r.data(), i, f(v));
  }
  return r;
}

const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{13, 7, 5}, {13, 7, 5}}, {{13, 7, 5}, {}},
    {{}, {13, 7, 5}},         {{13, 1, 5}, {7, 1}},
    {{2, 3, 127}, {127}},     {{3, 13, 4, 4}, {3, 13, 1, 1}},
    {{1, 13, 1}, {5, 1, 7}},  {{4, 1}, {1, 6}},
    {{2, 0, 3}, {3}},         {{1}, {1}},
    // Ten dims that cannot merge: a broadcast plan longer than its inline storage.
    {{2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {1, 3, 1, 3, 1, 3, 1, 3, 1, 3}},
};

TEST(BinaryOp, FloatArithmeticBroadcasts) {
  const OpType ops[] = {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div};
  uint32_t seed = 1;
  for (auto& [sa, sb] : kShapePairs) {
    Tensor a = randomTensor(DataType::Float32, sa, seed++, -2, 2);
    Tensor b = randomTensor(DataType::Float32, sb, seed++, 0.5, 3);
    for (OpType op : ops) {
      SCOPED_TRACE(std::string(opTypeName(op)) + " " + shapeToString(sa) + " " + shapeToString(sb));
      Tensor expected = naiveElementwise({&a, &b}, DataType::Float32, [op](const std::vector<double>& v) {
        float x = static_cast<float>(v[0]), y = static_cast<float>(v[1]);
        switch (op) {
          case OpType::Add:
            return double(x + y);
          case OpType::Sub:
            return double(x - y);
          case OpType::Mul:
            return double(x * y);
          default:
            return double(x / y);
        }
      });
      expectNear(run1(makeNode(op), {in(a), in(b)}), expected, 0, 0);
      // A constant operand (initializer) takes the same path after constant handling.
      expectNear(run1(makeNode(op), {in(a), constant(b)}), expected, 0, 0);
    }
  }
}

// Integer semantics: wrap-around, C-style truncating division, division by zero gives 0.
template <class T>
void checkIntegerArithmetic(uint32_t seed) {
  const DataType dt = dataTypeOf<T>();
  const double lo = std::is_signed_v<T> ? -double(std::numeric_limits<T>::max() / 2) : 0;
  const double hi = std::min(double(std::numeric_limits<T>::max()), 1e15);
  for (auto& [sa, sb] : kShapePairs) {
    Tensor a = randomTensor(dt, sa, seed++, lo, hi);
    Tensor b = randomTensor(dt, sb, seed++, std::is_signed_v<T> ? -6 : 0, 6);  // includes 0 and -1
    for (OpType op : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div}) {
      SCOPED_TRACE(std::string(opTypeName(op)) + " " + dataTypeName(dt) + " " + shapeToString(sa) + " " +
                   shapeToString(sb));
      Shape out = broadcastOf({sa, sb});
      Tensor expected(dt, out);
      for (int64_t i = 0; i < expected.elements(); ++i) {
        T x = a.data<T>()[sourceIndex(out, sa, i)], y = b.data<T>()[sourceIndex(out, sb, i)];
        uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
        T r;
        if (op == OpType::Add)
          r = static_cast<T>(ux + uy);
        else if (op == OpType::Sub)
          r = static_cast<T>(ux - uy);
        else if (op == OpType::Mul)
          r = static_cast<T>(ux * uy);
        else if (y == 0)
          r = 0;
        else
          r = static_cast<T>(static_cast<long double>(x) / static_cast<long double>(y));  // truncation toward zero
        expected.data<T>()[i] = r;
      }
      expectNear(run1(makeNode(op), {in(a), in(b)}), expected, 0, 0);
    }
  }
}

TEST(BinaryOp, IntegerArithmetic) {
  checkIntegerArithmetic<int8_t>(100);
  checkIntegerArithmetic<int16_t>(200);
  checkIntegerArithmetic<int32_t>(300);
  checkIntegerArithmetic<int64_t>(400);
  checkIntegerArithmetic<uint8_t>(500);
  checkIntegerArithmetic<uint16_t>(600);
  checkIntegerArithmetic<uint32_t>(700);
  checkIntegerArithmetic<uint64_t>(800);
}

TEST(BinaryOp, IntegerDivisionEdges) {
  Tensor a = makeTensor<int32_t>({6}, {-7, 7, -7, std::numeric_limits<int32_t>::min(), 5, 0});
  Tensor b = makeTensor<int32_t>({6}, {2, -2, -2, -1, 0, 0});
  Tensor y = run1(makeNode(OpType::Div), {in(a), in(b)});
  const int32_t expected[] = {-3, -3, 3, std::numeric_limits<int32_t>::min(), 0, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<int32_t>()[i], expected[i]) << i;
}

TEST(BinaryOp, HalfAndDoubleArithmetic) {
  for (DataType dt : {DataType::Float16, DataType::BFloat16, DataType::Float64}) {
    Tensor a = randomTensor(dt, {3, 13, 5}, 11, -4, 4);
    Tensor b = randomTensor(dt, {13, 1}, 12, 0.5, 2);
    for (OpType op : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div}) {
      SCOPED_TRACE(std::string(opTypeName(op)) + " " + dataTypeName(dt));
      // 16-bit floats compute in float and round once.
      Tensor expected = naiveElementwise({&a, &b}, dt, [op, dt](const std::vector<double>& v) {
        double r = op == OpType::Add   ? v[0] + v[1]
                   : op == OpType::Sub ? v[0] - v[1]
                   : op == OpType::Mul ? v[0] * v[1]
                                       : v[0] / v[1];
        return dt == DataType::Float64 ? r : double(float(r));
      });
      expectNear(run1(makeNode(op), {in(a), in(b)}), expected, 0, dt == DataType::Float64 ? 1e-15 : 0);
    }
  }
}

TEST(BinaryOp, Comparisons) {
  uint32_t seed = 20;
  for (DataType dt : {DataType::Float32, DataType::Int32, DataType::UInt8, DataType::Float16, DataType::Int64}) {
    for (auto& [sa, sb] : kShapePairs) {
      Tensor a = randomTensor(dt, sa, seed++, 0, 4);  // small range: many equal pairs
      Tensor b = randomTensor(dt, sb, seed++, 0, 4);
      if (dt == DataType::Float32 || dt == DataType::Float16)  // whole numbers in half the places
        for (Tensor* t : {&a, &b})
          for (int64_t i = 0; i < t->elements(); i += 2) storeFromDouble(dt, t->data(), i, std::floor(at(*t, i)));
      for (OpType op : {OpType::Equal, OpType::Less, OpType::Greater}) {
        SCOPED_TRACE(std::string(opTypeName(op)) + " " + dataTypeName(dt) + " " + shapeToString(sa) + " " +
                     shapeToString(sb));
        Tensor expected = naiveElementwise({&a, &b}, DataType::Bool, [op](const std::vector<double>& v) {
          return double(op == OpType::Equal ? v[0] == v[1] : op == OpType::Less ? v[0] < v[1] : v[0] > v[1]);
        });
        expectNear(run1(makeNode(op), {in(a), in(b)}), expected, 0, 0);
      }
    }
  }
}

TEST(BinaryOp, EqualOnBoolAndStrings) {
  Tensor a = makeTensor<bool>({2, 3}, {true, false, true, false, false, true});
  Tensor b = makeTensor<bool>({3}, {true, false, false});
  Tensor expected =
      naiveElementwise({&a, &b}, DataType::Bool, [](const std::vector<double>& v) { return double(v[0] == v[1]); });
  expectNear(run1(makeNode(OpType::Equal), {in(a), in(b)}), expected, 0, 0);

  Tensor s(DataType::String, {2, 2}), t(DataType::String, {2});
  s.strings() = {"cat", "dog", "", "dog"};
  t.strings() = {"cat", "dog"};
  Tensor y = run1(makeNode(OpType::Equal), {constant(s), constant(t)});
  ASSERT_EQ(y.shape(), (Shape{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<bool>()[i], s.strings()[i] == t.strings()[i % 2]) << i;
}

TEST(BinaryOp, PowFloat) {
  Tensor a = randomTensor(DataType::Float32, {7, 13}, 30, 0.1, 3);
  Tensor b = randomTensor(DataType::Float32, {13}, 31, -2, 2);
  Tensor expected = naiveElementwise({&a, &b}, DataType::Float32, [](const std::vector<double>& v) {
    return double(std::pow(float(v[0]), float(v[1])));
  });
  expectNear(run1(makeNode(OpType::Pow), {in(a), in(b)}), expected, 0, 1e-6);
  // Scalar exponents, including the special-cased square and cube, on negative bases too.
  Tensor s = randomTensor(DataType::Float32, {3, 127}, 32, -3, 3);
  for (float e : {2.f, 3.f, 1.f, 0.5f, -1.f, 0.f}) {
    SCOPED_TRACE(e);
    Tensor et = makeTensor<float>({}, {e});
    Tensor exp2 = naiveElementwise({&s, &et}, DataType::Float32,
                                   [](const std::vector<double>& v) { return std::pow(v[0], v[1]); });
    expectNear(run1(makeNode(OpType::Pow), {in(s), constant(et)}), exp2, 1e-6, 1e-6);
  }
}

TEST(BinaryOp, PowMixedTypes) {
  // float base, integer exponent
  Tensor fb = randomTensor(DataType::Float32, {5, 13}, 40, -3, 3);
  Tensor ie = randomTensor(DataType::Int64, {13}, 41, -3, 5);
  Tensor expected = naiveElementwise({&fb, &ie}, DataType::Float32,
                                     [](const std::vector<double>& v) { return std::pow(v[0], v[1]); });
  expectNear(run1(makeNode(OpType::Pow), {in(fb), in(ie)}), expected, 1e-6, 1e-5);
  // integer base, integer exponent: exact, negative exponents truncate to 0 except for |base| 1
  Tensor ib = randomTensor(DataType::Int32, {5, 13}, 42, -6, 6);
  Tensor ie2 = randomTensor(DataType::Int32, {5, 1}, 43, -2, 8);
  Tensor exp2 = naiveElementwise({&ib, &ie2}, DataType::Int32, [](const std::vector<double>& v) {
    if (v[1] < 0) return v[0] == 1 ? 1.0 : v[0] == -1 ? (std::fmod(v[1], 2) == 0 ? 1.0 : -1.0) : 0.0;
    return std::pow(v[0], v[1]);
  });
  expectNear(run1(makeNode(OpType::Pow), {in(ib), in(ie2)}), exp2, 0, 0);
  // integer base, float exponent: computed in double, truncated
  Tensor ib2 = randomTensor(DataType::Int64, {13}, 44, 0, 9);
  Tensor fe = randomTensor(DataType::Float32, {13}, 45, 0, 3);
  Tensor exp3 = naiveElementwise({&ib2, &fe}, DataType::Int64, [](const std::vector<double>& v) {
    return std::trunc(std::pow(v[0], double(float(v[1]))));
  });
  expectNear(run1(makeNode(OpType::Pow), {in(ib2), in(fe)}), exp3, 0, 0);
  // float16 base, float exponent
  Tensor hb = randomTensor(DataType::Float16, {13}, 46, 0.5, 2);
  Tensor fe2 = randomTensor(DataType::Float32, {13}, 47, -2, 2);
  Tensor exp4 = naiveElementwise({&hb, &fe2}, DataType::Float16, [](const std::vector<double>& v) {
    return double(std::pow(float(v[0]), float(v[1])));
  });
  expectNear(run1(makeNode(OpType::Pow), {in(hb), in(fe2)}), exp4, 0, 1e-3);
}

TEST(BinaryOp, PRelu) {
  Tensor x = randomTensor(DataType::Float32, {2, 13, 5, 7}, 50, -2, 2);
  for (const Shape& ss : std::vector<Shape>{{13, 1, 1}, {7}, {}, {1, 13, 5, 7}, {5, 1}}) {
    SCOPED_TRACE(shapeToString(ss));
    Tensor slope = randomTensor(DataType::Float32, ss, 51, -1, 1);
    Tensor expected = naiveElementwise({&x, &slope}, DataType::Float32, [](const std::vector<double>& v) {
      return v[0] < 0 ? double(float(v[0]) * float(v[1])) : v[0];
    });
    expectNear(run1(makeNode(OpType::PRelu), {in(x), constant(slope)}), expected, 0, 0);
  }
  Tensor xi = randomTensor(DataType::Int32, {4, 13}, 52, -50, 50);
  Tensor si = randomTensor(DataType::Int32, {13}, 53, -3, 3);
  Tensor expected = naiveElementwise({&xi, &si}, DataType::Int32,
                                     [](const std::vector<double>& v) { return v[0] < 0 ? v[0] * v[1] : v[0]; });
  expectNear(run1(makeNode(OpType::PRelu), {in(xi), in(si)}), expected, 0, 0);
}

TEST(BinaryOp, Errors) {
  std::vector<Tensor> out;
  Tensor a = randomTensor(DataType::Float32, {3, 4}, 1);
  EXPECT_FALSE(runOp(makeNode(OpType::Add), {in(a), in(randomTensor(DataType::Float32, {3}, 2))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::Add), {in(a), in(randomTensor(DataType::Int32, {4}, 2))}, 1, &out).isOk());
  EXPECT_FALSE(
      runOp(makeNode(OpType::Mul), {in(makeTensor<bool>({1}, {true})), in(makeTensor<bool>({1}, {true}))}, 1, &out)
          .isOk());
  EXPECT_FALSE(
      runOp(makeNode(OpType::Less), {in(makeTensor<bool>({1}, {true})), in(makeTensor<bool>({1}, {true}))}, 1, &out)
          .isOk());
  // PRelu's slope must broadcast to X without growing it.
  EXPECT_FALSE(runOp(makeNode(OpType::PRelu), {in(randomTensor(DataType::Float32, {4}, 3)), in(a)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::Pow), {in(a), in(makeTensor<bool>({1}, {true}))}, 1, &out).isOk());
}

TEST(VariadicOp, BroadcastsAllInputs) {
  const std::vector<std::vector<Shape>> cases = {
      {{13, 7}}, {{13, 7}, {7}}, {{5, 1, 7}, {13, 1}, {1, 1, 7}}, {{}, {3, 5}, {2, 1, 5}, {5}}, {{2, 0}, {1}}};
  uint32_t seed = 60;
  for (OpType op : {OpType::Max, OpType::Min, OpType::Sum, OpType::Mean}) {
    for (auto& shapes : cases) {
      SCOPED_TRACE(std::string(opTypeName(op)) + " with " + std::to_string(shapes.size()) + " inputs");
      std::vector<Tensor> ts;
      std::vector<OpInput> ins;
      std::vector<const Tensor*> ptrs;
      for (auto& s : shapes) ts.push_back(randomTensor(DataType::Float32, s, seed++, -3, 3));
      for (auto& t : ts) ins.push_back(in(t)), ptrs.push_back(&t);
      Tensor expected = naiveElementwise(ptrs, DataType::Float32, [op](const std::vector<double>& v) {
        double r = v[0];
        for (size_t i = 1; i < v.size(); ++i)
          r = op == OpType::Max ? std::max(r, v[i]) : op == OpType::Min ? std::min(r, v[i]) : r + v[i];
        return op == OpType::Mean ? r / double(v.size()) : r;
      });
      expectNear(run1(makeNode(op), ins), expected, 1e-6, 1e-6);
    }
  }
}

TEST(VariadicOp, DtypesAndNaN) {
  Tensor a = randomTensor(DataType::Int16, {13, 3}, 70, -100, 100),
         b = randomTensor(DataType::Int16, {3}, 71, -100, 100);
  for (OpType op : {OpType::Max, OpType::Min}) {
    Tensor expected = naiveElementwise({&a, &b}, DataType::Int16, [op](const std::vector<double>& v) {
      return op == OpType::Max ? std::max(v[0], v[1]) : std::min(v[0], v[1]);
    });
    expectNear(run1(makeNode(op), {in(a), in(b)}), expected, 0, 0);
  }
  Tensor h1 = randomTensor(DataType::Float16, {13}, 72), h2 = randomTensor(DataType::Float16, {13}, 73),
         h3 = randomTensor(DataType::Float16, {1}, 74);
  Tensor expected = naiveElementwise({&h1, &h2, &h3}, DataType::Float16,
                                     [](const std::vector<double>& v) { return (v[0] + v[1] + v[2]) / 3; });
  expectNear(run1(makeNode(OpType::Mean), {in(h1), in(h2), in(h3)}), expected, 1e-3, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor n1 = makeTensor<float>({3}, {nan, 1.f, 2.f}), n2 = makeTensor<float>({3}, {0.f, nan, 1.f});
  for (OpType op : {OpType::Max, OpType::Min}) {
    Tensor y = run1(makeNode(op), {in(n1), in(n2)});
    EXPECT_TRUE(std::isnan(y.data<float>()[0]) && std::isnan(y.data<float>()[1]));
    EXPECT_EQ(y.data<float>()[2], op == OpType::Max ? 2.f : 1.f);
  }
  std::vector<Tensor> out;
  EXPECT_FALSE(runOp(makeNode(OpType::Sum), {in(a), in(b)}, 1, &out).isOk());  // Sum is float-only
  EXPECT_FALSE(runOp(makeNode(OpType::Max), {in(a), in(h1)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(makeNode(OpType::Max), {in(a), in(randomTensor(DataType::Int16, {4}, 1))}, 1, &out).isOk());
}

TEST(WhereOp, ThreeWayBroadcast) {
  const std::vector<std::vector<Shape>> cases = {{{13, 7}, {13, 7}, {13, 7}},
                                                 {{7}, {13, 1}, {}},
                                                 {{5, 1, 1}, {1, 13, 1}, {1, 1, 7}},
                                                 {{}, {3}, {2, 3}},
                                                 {{0, 3}, {3}, {1}}};
  uint32_t seed = 80;
  for (DataType dt : {DataType::Float32, DataType::Int64, DataType::Float16, DataType::UInt8}) {
    for (auto& s : cases) {
      SCOPED_TRACE(dataTypeName(dt));
      Tensor c = randomTensor(DataType::Float32, s[0], seed++, 0, 1);
      Tensor cond(DataType::Bool, s[0]);
      for (int64_t i = 0; i < c.elements(); ++i) cond.data<bool>()[i] = c.data<float>()[i] > 0.5f;
      Tensor x = randomTensor(dt, s[1], seed++, 0, 100), y = randomTensor(dt, s[2], seed++, 0, 100);
      Tensor expected =
          naiveElementwise({&cond, &x, &y}, dt, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
      expectNear(run1(makeNode(OpType::Where), {in(cond), in(x), in(y)}), expected, 0, 0);
    }
  }
  std::vector<Tensor> out;
  Tensor f = randomTensor(DataType::Float32, {3}, 1);
  EXPECT_FALSE(runOp(makeNode(OpType::Where), {in(f), in(f), in(f)}, 1, &out).isOk());
  Tensor cond = makeTensor<bool>({3}, {true, false, true});
  EXPECT_FALSE(
      runOp(makeNode(OpType::Where), {in(cond), in(f), in(randomTensor(DataType::Float64, {3}, 2))}, 1, &out).isOk());
  EXPECT_FALSE(
      runOp(makeNode(OpType::Where), {in(cond), in(f), in(randomTensor(DataType::Float32, {4}, 2))}, 1, &out).isOk());
}

// The kernels split large outputs over a thread pool; runOp uses one thread, so run the
// reference directly on a pool of several.
std::vector<Tensor> runOnPool(const Node& node, const std::vector<Tensor>& inputs, ThreadPool* pool) {
  const OpDef& def = opDef(node.type);
  TensorViews in(inputs.size()), out(1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    in[i].dtype = inputs[i].dtype();
    in[i].shape = inputs[i].shape();
    in[i].data = const_cast<void*>(inputs[i].data());
  }
  EXPECT_TRUE(def.shape(node, in, out).isOk());
  std::vector<Tensor> result{Tensor(out[0].dtype, out[0].shape)};
  out[0].data = result[0].data();
  EXPECT_TRUE(def.reference(node, in, out, pool).isOk());
  return result;
}

TEST(BinaryOp, ThreadedLargeShapes) {
  ThreadPool pool(3);
  const std::vector<std::pair<Shape, Shape>> cases = {{{300, 257}, {300, 257}},
                                                      {{3, 257, 129}, {257, 1}},
                                                      {{2, 96, 17, 19}, {2, 96, 1, 1}},
                                                      {{70001}, {}},
                                                      {{5, 1, 9001}, {3, 1}}};
  uint32_t seed = 90;
  for (auto& [sa, sb] : cases) {
    Tensor a = randomTensor(DataType::Float32, sa, seed++), b = randomTensor(DataType::Float32, sb, seed++, 0.5, 1);
    for (OpType op : {OpType::Sub, OpType::Div}) {
      Tensor expected = naiveElementwise({&a, &b}, DataType::Float32, [op](const std::vector<double>& v) {
        return op == OpType::Sub ? double(float(v[0]) - float(v[1])) : double(float(v[0]) / float(v[1]));
      });
      expectNear(runOnPool(makeNode(op), {a, b}, &pool)[0], expected, 0, 0);
    }
    Tensor expected = naiveElementwise({&a, &b, &a}, DataType::Float32, [](const std::vector<double>& v) {
      return std::max(std::max(v[0], v[1]), v[2]);
    });
    expectNear(runOnPool(makeNode(OpType::Max), {a, b, a}, &pool)[0], expected, 0, 0);
  }
}

}  // namespace
}  // namespace osprey::test
