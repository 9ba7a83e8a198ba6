// The CPU's pointwise kernels (Relu, Tanh, Exp, HardSwish, Softplus, Mish, ...) against the
// reference kernels: whole sessions on odd sizes and threads (the execution must be the CPU's,
// not the reference fallback), every kernel this CPU runs (scalar, AVX2, AVX-512) on edge values (zeros,
// tiny and huge magnitudes, infinities, NaN), and the same functions fused into a Conv.
#include <cmath>
#include <limits>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/pointwise.h"
#include "cpu_conv_case.h"
#include "op_test_util.h"
#include "osprey/interpreter.h"

namespace osprey::test {
namespace {

struct PointwiseCase {
  OpType type;
  std::vector<std::pair<std::string, float>> attrs;
  double lo = -6, hi = 6;  // input range
};

const std::vector<PointwiseCase>& cases() {
  static const std::vector<PointwiseCase> all = {
      {OpType::Relu, {}},
      {OpType::LeakyRelu, {{"alpha", 0.13f}}},
      {OpType::HardSigmoid, {{"alpha", 0.3f}, {"beta", 0.4f}}},
      {OpType::HardSwish, {}},
      {OpType::Abs, {}},
      {OpType::Neg, {}},
      {OpType::Sqrt, {}, 0.0, 50.0},
      {OpType::Reciprocal, {}, 0.05, 20.0},
      {OpType::Floor, {}},
      {OpType::Ceil, {}},
      {OpType::Round, {}},
      {OpType::Exp, {}, -80.0, 80.0},
      {OpType::Tanh, {}, -10.0, 10.0},
      {OpType::Elu, {{"alpha", 0.7f}}},
      {OpType::Selu, {}},
      {OpType::Softplus, {}, -30.0, 30.0},
      {OpType::Mish, {}, -30.0, 30.0},
  };
  return all;
}

Node nodeOf(const PointwiseCase& c) {
  Node node = makeNode(c.type);
  for (auto& [name, value] : c.attrs) node.setFloat(name, value);
  return node;
}

TEST(CpuPointwise, SessionsMatchTheReferenceOnOddSizes) {
  uint32_t seed = 1;
  for (const PointwiseCase& c : cases()) {
    for (const Shape& shape : std::vector<Shape>{{1}, {7}, {3, 9}, {2, 3, 5, 7}, {1, 17, 31, 19}}) {
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(std::string(opTypeName(c.type)) + " " + shapeToString(shape) + " threads " + std::to_string(threads));
        const Tensor x = randomTensor(DataType::Float32, shape, seed++, c.lo, c.hi);
        std::map<std::string, Tensor> feeds;
        auto model = oneNodeModel(nodeOf(c), {in(x)}, 1, &feeds);
        std::shared_ptr<Interpreter> interp;
        ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
        ScheduleConfig schedule;
        schedule.threads = threads;
        std::unique_ptr<Session> session;
        ASSERT_TRUE(interp->createSession(schedule, BackendConfig(), &session).isOk());
        std::vector<Tensor> y;
        ASSERT_TRUE(session->run(feeds, &y).isOk());
        EXPECT_TRUE(session->stats().referenceOps.empty());
        std::vector<Tensor> ref;
        ASSERT_TRUE(referenceOp(nodeOf(c), {in(x)}, 1, &ref).isOk());
        expectNear(y[0], ref[0], 1e-6, 2e-6);
      }
    }
  }
}

// Values where approximations go wrong: 0 and -0, the smallest normal and subnormal floats,
// where Tanh and Expm1 switch formulas, past exp's range, infinities and NaN.
std::vector<float> edgeValues() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v = {0.f, -0.f, 1e-38f, -1e-38f, 1e-45f, 3e-4f, -3e-4f, 4e-4f, 5e-4f, 0.4999f, -0.4999f, 0.5f,
                          -0.5f, 0.5001f, -0.5001f, 1.f, -1.f, 2.5f, -2.5f, 3.f, -3.f, 7.9f, -7.9f, 8.f, 9.f,
                          19.9f, 20.f, 20.1f, -20.f, 87.f, 88.7f, 89.f, -87.f, -88.f, -104.f, 1e30f, -1e30f,
                          inf, -inf, nan};
  for (int i = -40; i <= 40; ++i) v.push_back(i * 0.37f);
  return v;
}

// The selected table's kernel, the portable one, and each vector one this CPU can run.
std::vector<std::pair<std::string, PointwiseKernel>> pointwiseKernels() {
  std::vector<std::pair<std::string, PointwiseKernel>> all = {{"selected", cpuFunctions().pointwise},
                                                              {"scalar", scalarCpuFunctions().pointwise}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) all.push_back({"avx2", f32_pointwise__avx2_fma});
  if (__builtin_cpu_supports("avx512f")) all.push_back({"avx512f", f32_pointwise__avx512f});
#endif
  return all;
}

TEST(CpuPointwise, TablesAgreeWithTheReferenceOnEdgeValues) {
  const std::vector<float> x = edgeValues();
  const int64_t n = static_cast<int64_t>(x.size());
  for (const PointwiseCase& c : cases()) {
    Pointwise p;
    ASSERT_TRUE(pointwiseOfNode(nodeOf(c), &p));
    const Tensor xt = makeTensor<float>({n}, x);
    std::vector<Tensor> ref;
    ASSERT_TRUE(referenceOp(nodeOf(c), {in(xt)}, 1, &ref).isOk());
    const float* expected = ref[0].data<float>();
    for (const auto& [isa, kernel] : pointwiseKernels()) {
      std::vector<float> y(x.size());
      kernel(p, x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        SCOPED_TRACE(std::string(opTypeName(c.type)) + " (" + isa + ") of " + std::to_string(x[i]));
        if (std::isnan(expected[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << y[i];
        } else if (std::isinf(expected[i])) {
          EXPECT_EQ(y[i], expected[i]);
        } else {
          EXPECT_NEAR(y[i], expected[i], 1e-6 + 2e-6 * std::fabs(expected[i]));
        }
      }
    }
  }
}

TEST(CpuPointwise, FusedConvActivations) {
  using Kind = FusedActivation::Kind;
  uint32_t seed = 50;
  for (Kind act : {Kind::HardSwish, Kind::HardSigmoid, Kind::LeakyRelu, Kind::Tanh, Kind::Elu}) {
    // pointwise (GEMM), grouped, depthwise and 3x3 paths, each with two threads.
    for (CpuConvCase k : {CpuConvCase{1, 13, 9, 11, 21, 1, 1, 1, 1, 0, 1, true, act},
                          CpuConvCase{1, 12, 10, 7, 12, 3, 3, 3, 1, 1, 1, true, act},
                          CpuConvCase{1, 9, 15, 13, 9, 3, 3, 9, 2, 1, 1, false, act},
                          CpuConvCase{2, 5, 12, 17, 19, 3, 3, 1, 1, 1, 1, true, act, false, 2}}) {
      const BuiltConv conv = buildConvCase(k, seed++);
      SCOPED_TRACE(describeConvCase(k));
      std::vector<Tensor> y, ref;
      ASSERT_TRUE(runOp(conv.node, conv.inputs, 1, &y, k.threads).isOk());
      ASSERT_TRUE(referenceOp(conv.node, conv.inputs, 1, &ref).isOk());
      expectNear(y[0], ref[0], 1e-4, 1e-4);
    }
  }
}

}  // namespace
}  // namespace osprey::test
