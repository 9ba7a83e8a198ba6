// Elementwise unary ops and Clip against the formulas of the ONNX spec evaluated in double.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

std::vector<UnaryFormula> floatCases() {
  const double pi = 3.14159265358979323846;
  auto none = [](Node&) {};
  return {
      {OpType::Relu, none, [](double x) { return x > 0 ? x : 0; }},
      {OpType::LeakyRelu, none, [](double x) { return x >= 0 ? x : double(0.01f) * x; }},
      {OpType::LeakyRelu, [](Node& n) { n.setFloat("alpha", 0.3f); },
       [](double x) { return x >= 0 ? x : double(0.3f) * x; }},
      {OpType::Sigmoid, none, [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20},
      {OpType::Tanh, none, [](double x) { return std::tanh(x); }},
      {OpType::HardSigmoid, none, [](double x) { return std::max(0.0, std::min(1.0, double(0.2f) * x + 0.5)); }},
      {OpType::HardSigmoid, [](Node& n) { n.setFloat("alpha", 0.5f), n.setFloat("beta", 0.25f); },
       [](double x) { return std::max(0.0, std::min(1.0, 0.5 * x + 0.25)); }},
      {OpType::HardSwish, none, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }},
      {OpType::Erf, none, [](double x) { return std::erf(x); }},
      {OpType::Gelu, none, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {OpType::Gelu, [](Node& n) { n.setString("approximate", "tanh"); },
       [pi](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x))); }},
      {OpType::Elu, none, [](double x) { return x >= 0 ? x : std::exp(x) - 1; }},
      {OpType::Elu, [](Node& n) { n.setFloat("alpha", 0.5f); },
       [](double x) { return x >= 0 ? x : 0.5 * (std::exp(x) - 1); }},
      {OpType::Exp, none, [](double x) { return std::exp(x); }},
      {OpType::Log, none, [](double x) { return std::log(x); }, 0.01, 10},
      {OpType::Sqrt, none, [](double x) { return std::sqrt(x); }, 0, 10},
      {OpType::Reciprocal, none, [](double x) { return 1 / x; }, 0.1, 5},
      {OpType::Neg, none, [](double x) { return -x; }},
      {OpType::Abs, none, [](double x) { return std::fabs(x); }},
  };
}

TEST(UnaryOp, FloatOpsMatchFormulas) { expectUnaryFormulas(floatCases(), 2e-6); }

TEST(UnaryOp, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = makeTensor<float>({5}, {-inf, inf, nan, -0.f, -100.f});
  Node sig;
  sig.type = OpType::Sigmoid;
  Tensor y = run1(sig, {in(x)});
  EXPECT_EQ(y.data<float>()[0], 0.f);
  EXPECT_EQ(y.data<float>()[1], 1.f);
  EXPECT_TRUE(std::isnan(y.data<float>()[2]));
  EXPECT_GE(y.data<float>()[4], 0.f);
  Node relu;
  relu.type = OpType::Relu;
  y = run1(relu, {in(x)});
  EXPECT_EQ(y.data<float>()[0], 0.f);
  EXPECT_EQ(y.data<float>()[1], inf);
  EXPECT_TRUE(std::isnan(y.data<float>()[2]));  // NaN propagates, as numpy's maximum does
}

TEST(UnaryOp, IntegerOps) {
  struct IntCase {
    OpType type;
    std::function<double(double)> f;
  };
  const IntCase cases[] = {{OpType::Relu, [](double x) { return x > 0 ? x : 0; }},
                           {OpType::Neg, [](double x) { return -x; }},
                           {OpType::Abs, [](double x) { return std::fabs(x); }},
                           {OpType::Erf, [](double x) { return std::trunc(std::erf(x)); }}};
  uint32_t seed = 40;
  for (auto& c : cases)
    for (DataType dt : {DataType::Int8, DataType::Int32, DataType::Int64}) {
      SCOPED_TRACE(std::string(opTypeName(c.type)) + " " + dataTypeName(dt));
      Node node;
      node.type = c.type;
      Tensor x = randomTensor(dt, {13, 7}, seed++, -100, 100);
      expectNear(run1(node, {in(x)}), naiveMap(x, c.f), 0, 0);
    }
  // Abs and Neg of the lowest value wrap to itself, as in two's complement.
  Tensor lowest = makeTensor<int8_t>({2}, {-128, 127});
  for (OpType t : {OpType::Abs, OpType::Neg}) {
    Node node;
    node.type = t;
    Tensor y = run1(node, {in(lowest)});
    EXPECT_EQ(y.data<int8_t>()[0], -128);
  }
  Node abs;
  abs.type = OpType::Abs;
  Tensor u = randomTensor(DataType::UInt16, {13}, 50, 0, 60000);
  expectNear(run1(abs, {in(u)}), u, 0, 0);
}

TEST(UnaryOp, Errors) {
  std::vector<Tensor> out;
  Tensor i32 = randomTensor(DataType::Int32, {4}, 1);
  for (OpType t : {OpType::Sigmoid, OpType::Exp, OpType::Gelu, OpType::LeakyRelu, OpType::Sqrt}) {
    Node node;
    node.type = t;
    EXPECT_FALSE(runOp(node, {in(i32)}, 1, &out).isOk()) << opTypeName(t);
  }
  Node relu;
  relu.type = OpType::Relu;
  EXPECT_FALSE(runOp(relu, {in(randomTensor(DataType::UInt8, {4}, 1))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(relu, {in(makeTensor<bool>({1}, {true}))}, 1, &out).isOk());
  Node gelu;
  gelu.type = OpType::Gelu;
  gelu.setString("approximate", "fast");
  Status st = runOp(gelu, {in(randomTensor(DataType::Float32, {4}, 1))}, 1, &out);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("approximate"), std::string::npos) << st.message();
}

TEST(ClipOp, Bounds) {
  Tensor x = randomTensor(DataType::Float32, {5, 13, 3}, 60, -3, 3);
  Tensor lo = makeTensor<float>({}, {-1.f}), hi = makeTensor<float>({}, {0.5f});
  Node clip;
  clip.type = OpType::Clip;
  auto clamp = [](double v, double l, double h) { return std::min(std::max(v, l), h); };
  const double big = std::numeric_limits<double>::infinity();
  expectNear(run1(clip, {in(x), constant(lo), constant(hi)}), naiveMap(x, [&](double v) { return clamp(v, -1, 0.5); }),
             0, 0);
  expectNear(run1(clip, {in(x), in(lo), in(hi)}), naiveMap(x, [&](double v) { return clamp(v, -1, 0.5); }), 0, 0);
  expectNear(run1(clip, {in(x), constant(lo)}), naiveMap(x, [&](double v) { return clamp(v, -1, big); }), 0, 0);
  expectNear(run1(clip, {in(x), absent(), constant(hi)}), naiveMap(x, [&](double v) { return clamp(v, -big, 0.5); }), 0,
             0);
  expectNear(run1(clip, {in(x)}), x, 0, 0);
  // min > max: everything becomes max.
  expectNear(run1(clip, {in(x), constant(hi), constant(lo)}), naiveMap(x, [](double) { return -1.0; }), 0, 0);
  Tensor xi = randomTensor(DataType::Int8, {13, 7}, 61, -128, 127);
  Tensor li = makeTensor<int8_t>({1}, {-5}), hiI = makeTensor<int8_t>({1}, {17});
  expectNear(run1(clip, {in(xi), constant(li), constant(hiI)}),
             naiveMap(xi, [&](double v) { return clamp(v, -5, 17); }), 0, 0);
  expectNear(run1(clip, {in(xi), absent(), constant(hiI)}), naiveMap(xi, [&](double v) { return std::min(v, 17.0); }),
             0, 0);
  Tensor xh = randomTensor(DataType::Float16, {13, 7}, 62, -3, 3);
  Tensor lh = makeTensor<float16_t>({}, {float16_t(-0.25f)});
  expectNear(run1(clip, {in(xh), constant(lh)}), naiveMap(xh, [&](double v) { return std::max(v, -0.25); }), 0, 0);

  std::vector<Tensor> out;
  EXPECT_FALSE(runOp(clip, {in(x), constant(makeTensor<float>({2}, {0.f, 1.f}))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(clip, {in(x), constant(li)}, 1, &out).isOk());
}

TEST(UnaryOp, ThreadedLargeInput) {
  ThreadPool pool(3);
  Tensor x = randomTensor(DataType::Float32, {3, 70001}, 70, -5, 5);
  for (OpType t : {OpType::Tanh, OpType::Relu}) {
    Node node;
    node.type = t;
    const OpDef& def = opDef(t);
    TensorViews inV(1), outV(1);
    inV[0].dtype = x.dtype();
    inV[0].shape = x.shape();
    inV[0].data = x.data();
    ASSERT_TRUE(def.shape(node, inV, outV).isOk());
    Tensor y(outV[0].dtype, outV[0].shape);
    outV[0].data = y.data();
    ASSERT_TRUE(def.reference(node, inV, outV, &pool).isOk());
    expectNear(y, naiveMap(x, [t](double v) { return t == OpType::Tanh ? std::tanh(v) : std::max(v, 0.0); }), 2e-6,
               2e-6);
  }
}

}  // namespace
}  // namespace osprey::test
