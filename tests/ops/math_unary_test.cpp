// Unary math ops (math_unary.cpp) against the formulas of the ONNX spec evaluated in double.
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

double halfToEven(double x) {
  const double r = std::floor(x), frac = x - r;
  if (frac > 0.5) return r + 1;
  if (frac < 0.5) return r;
  return std::fmod(r, 2.0) == 0 ? r : r + 1;
}

double softplusNaive(double x) { return std::log(std::exp(x) + 1); }

std::vector<UnaryFormula> floatCases() {
  auto none = [](Node&) {};
  const double seluAlpha = 1.67326319217681884765625, seluGamma = 1.05070102214813232421875;
  return {
      {OpType::Sin, none, [](double x) { return std::sin(x); }},
      {OpType::Cos, none, [](double x) { return std::cos(x); }},
      {OpType::Tan, none, [](double x) { return std::tan(x); }, -1.4, 1.4},
      {OpType::Asin, none, [](double x) { return std::asin(x); }, -0.99, 0.99},
      {OpType::Acos, none, [](double x) { return std::acos(x); }, -0.99, 0.99},
      {OpType::Atan, none, [](double x) { return std::atan(x); }},
      {OpType::Sinh, none, [](double x) { return std::sinh(x); }},
      {OpType::Cosh, none, [](double x) { return std::cosh(x); }},
      {OpType::Asinh, none, [](double x) { return std::asinh(x); }},
      {OpType::Acosh, none, [](double x) { return std::acosh(x); }, 1, 9},
      {OpType::Atanh, none, [](double x) { return std::atanh(x); }, -0.95, 0.95},
      {OpType::Round, none, halfToEven},
      {OpType::Floor, none, [](double x) { return std::floor(x); }},
      {OpType::Ceil, none, [](double x) { return std::ceil(x); }},
      {OpType::Sign, none, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }},
      {OpType::Selu, none,
       [=](double x) { return x > 0 ? seluGamma * x : seluGamma * (seluAlpha * std::exp(x) - seluAlpha); }},
      {OpType::Selu, [](Node& n) { n.setFloat("alpha", 2.f), n.setFloat("gamma", 0.5f); },
       [](double x) { return x > 0 ? 0.5 * x : 0.5 * (2 * std::exp(x) - 2); }},
      {OpType::Celu, none, [](double x) { return std::max(0.0, x) + std::min(0.0, std::exp(x) - 1); }},
      {OpType::Celu, [](Node& n) { n.setFloat("alpha", 2.f); },
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2 * (std::exp(x / 2) - 1)); }},
      {OpType::Softplus, none, softplusNaive, -30, 30},
      {OpType::Softsign, none, [](double x) { return x / (1 + std::fabs(x)); }},
      {OpType::ThresholdedRelu, none, [](double x) { return x > 1 ? x : 0; }},
      {OpType::ThresholdedRelu, [](Node& n) { n.setFloat("alpha", -0.5f); }, [](double x) { return x > -0.5 ? x : 0; }},
      {OpType::Shrink, none, [](double x) { return x < -0.5 ? x : x > 0.5 ? x : 0; }},
      {OpType::Shrink, [](Node& n) { n.setFloat("bias", 1.5f), n.setFloat("lambd", 1.f); },
       [](double x) { return x < -1 ? x + 1.5 : x > 1 ? x - 1.5 : 0; }},
      {OpType::Mish, none, [](double x) { return x * std::tanh(softplusNaive(x)); }, -10, 10},
      {OpType::Swish, none, [](double x) { return x / (1 + std::exp(-x)); }, -10, 10},
      {OpType::Swish, [](Node& n) { n.setFloat("alpha", 0.25f); }, [](double x) { return x / (1 + std::exp(-0.25 * x)); },
       -10, 10},
  };
}

TEST(MathUnaryOp, FloatOpsMatchFormulas) { expectUnaryFormulas(floatCases(), 4e-6); }

TEST(MathUnaryOp, RoundHalvesToEven) {
  std::vector<float> values;
  for (int k = -13; k <= 13; ++k) values.push_back(k * 0.5f);
  values.push_back(-0.f);
  Tensor x = makeTensor<float>({static_cast<int64_t>(values.size())}, values);
  Node node;
  node.type = OpType::Round;
  expectNear(run1(node, {in(x)}), naiveMap(x, DataType::Float32, halfToEven), 0, 0);
}

TEST(MathUnaryOp, IsNaNAndIsInf) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = {-inf, inf, nan, 0.f, -1.5f, 3.f, -nan, 65504.f};
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16, DataType::BFloat16}) {
    SCOPED_TRACE(dataTypeName(dt));
    Tensor x(dt, {static_cast<int64_t>(values.size())});
    for (size_t i = 0; i < values.size(); ++i) storeFromDouble(dt, x.data(), i, values[i]);
    Node isnan;
    isnan.type = OpType::IsNaN;
    expectNear(run1(isnan, {in(x)}), naiveMap(x, DataType::Bool, [](double v) { return std::isnan(v) ? 1.0 : 0.0; }),
               0, 0);
    for (int pos : {0, 1})
      for (int neg : {0, 1}) {
        Node isinf;
        isinf.type = OpType::IsInf;
        isinf.setInt("detect_positive", pos);
        isinf.setInt("detect_negative", neg);
        auto f = [pos, neg](double v) { return (v == INFINITY && pos) || (v == -INFINITY && neg) ? 1.0 : 0.0; };
        expectNear(run1(isinf, {in(x)}), naiveMap(x, DataType::Bool, f), 0, 0);
      }
  }
}

TEST(MathUnaryOp, SignAndShrinkOnIntegers) {
  uint32_t seed = 100;
  for (DataType dt : {DataType::Int8, DataType::Int32, DataType::Int64, DataType::UInt8, DataType::UInt32}) {
    SCOPED_TRACE(dataTypeName(dt));
    const bool isSigned = dt == DataType::Int8 || dt == DataType::Int32 || dt == DataType::Int64;
    Tensor x = randomTensor(dt, {13, 7}, seed++, isSigned ? -100 : 0, 100);
    Node sign;
    sign.type = OpType::Sign;
    expectNear(run1(sign, {in(x)}), naiveMap(x, dt, [](double v) { return v > 0 ? 1 : v < 0 ? -1 : 0; }), 0, 0);
    Node shrink;
    shrink.type = OpType::Shrink;
    shrink.setFloat("lambd", 20.f);
    shrink.setFloat("bias", 2.5f);
    // Integer results truncate toward zero, as numpy's astype does.
    expectNear(run1(shrink, {in(x)}),
               naiveMap(x, dt, [](double v) { return std::trunc(v < -20 ? v + 2.5 : v > 20 ? v - 2.5 : 0); }), 0, 0);
  }
}

TEST(MathUnaryOp, ThreadedLargeInput) {
  ThreadPool pool(3);
  Tensor x = randomTensor(DataType::Float32, {3, 70001}, 70, -5, 5);
  Node node;
  node.type = OpType::Softsign;
  const OpDef& def = opDef(OpType::Softsign);
  TensorViews inV(1), outV(1);
  inV[0].dtype = x.dtype();
  inV[0].shape = x.shape();
  inV[0].data = x.data();
  ASSERT_TRUE(def.shape(node, inV, outV).isOk());
  Tensor y(outV[0].dtype, outV[0].shape);
  outV[0].data = y.data();
  ASSERT_TRUE(def.reference(node, inV, outV, &pool).isOk());
  expectNear(y, naiveMap(x, DataType::Float32, [](double v) { return v / (1 + std::fabs(v)); }), 2e-6, 2e-6);
}

TEST(MathUnaryOp, Errors) {
  std::vector<Tensor> out;
  Tensor i32 = randomTensor(DataType::Int32, {4}, 1);
  for (OpType t : {OpType::Sin, OpType::Round, OpType::IsNaN, OpType::IsInf, OpType::Selu, OpType::Mish,
                   OpType::Swish, OpType::Softplus}) {
    Node node;
    node.type = t;
    EXPECT_FALSE(runOp(node, {in(i32)}, 1, &out).isOk()) << opTypeName(t);
  }
  for (OpType t : {OpType::Sign, OpType::Shrink, OpType::Cos}) {
    Node node;
    node.type = t;
    EXPECT_FALSE(runOp(node, {in(makeTensor<bool>({1}, {true}))}, 1, &out).isOk()) << opTypeName(t);
  }
  Node celu;
  celu.type = OpType::Celu;
  celu.setFloat("alpha", 0.f);
  EXPECT_FALSE(runOp(celu, {in(randomTensor(DataType::Float32, {4}, 1))}, 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
