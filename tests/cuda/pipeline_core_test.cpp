// The CUDA pipeline: graph capture and replay with new input values, CPU fallback in the middle
// of a run, fp16 storage, and the planner's arena.
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

// x -> Add(c) -> middle op -> Relu -> Mul(x) : the middle op decides whether a CPU fallback
// sits inside the run.
std::shared_ptr<Model> chainModel(OpType middle) {
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  auto tensor = [&](const std::string& name) {
    TensorInfo t;
    t.name = name;
    return g.addTensor(t);
  };
  TensorInfo xi;
  xi.name = "x";
  xi.dtype = DataType::Float32;
  xi.shape = {3, 41};
  int x = g.addTensor(xi);
  g.inputs.push_back(x);
  TensorInfo ci;
  ci.name = "c";
  ci.dtype = DataType::Float32;
  ci.shape = {41};
  ci.isConstant = true;
  Tensor c = randomTensor(DataType::Float32, {41}, 40);
  ci.data = ConstantData::copyOf(c.data(), c.bytes());
  int cIdx = g.addTensor(ci);
  int a = tensor("a"), m = tensor("m"), r = tensor("r"), y = tensor("y");
  auto add = [&](OpType type, std::vector<int> ins, int out) {
    Node n = makeNode(type);
    n.name = std::string(opTypeName(type)) + std::to_string(out);
    n.inputs = std::move(ins);
    n.outputs = {out};
    if (type == OpType::Hardmax || type == OpType::Softmax) n.setInt("axis", -1);
    g.nodes.push_back(n);
  };
  add(OpType::Add, {x, cIdx}, a);
  add(middle, {a}, m);
  add(OpType::Relu, {m}, r);
  add(OpType::Mul, {r, x}, y);
  g.outputs.push_back(y);
  return model;
}

void expectRunsMatchCpu(OpType middle, bool low, bool expectFallback) {
  auto model = chainModel(middle);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> cuda, cpu;
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  BackendConfig config;
  if (low) config.precision = BackendConfig::Precision::Low;
  ASSERT_TRUE(interp->createSession(onCuda, config, &cuda).isOk());
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &cpu).isOk());
  // New values every run: a replayed graph must read them, not the captured ones.
  for (uint32_t run = 0; run < 5; ++run) {
    std::map<std::string, Tensor> feeds{{"x", randomTensor(DataType::Float32, {3, 41}, 100 + run, -2, 2)}};
    std::vector<Tensor> got, want;
    Status st = cuda->run(feeds, &got);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_TRUE(cpu->run(feeds, &want).isOk());
    EXPECT_LE(maxAbsDiff(got[0], want[0]), (low ? 2e-2 : 1e-5) * 4) << "run " << run;
  }
  bool sawCpu = false;
  for (auto& [key, count] : cuda->stats().opsByBackend) sawCpu |= key.rfind("cpu:", 0) == 0;
  EXPECT_EQ(sawCpu, expectFallback);
  EXPECT_GT(cuda->stats().arenaPeakBytes, 0u);
}

TEST(CudaPipeline, GraphReplayReadsNewInputs) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectRunsMatchCpu(OpType::Sigmoid, false, false);
}

TEST(CudaPipeline, GraphReplayInLowPrecision) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectRunsMatchCpu(OpType::Softmax, true, false);
}

TEST(CudaPipeline, CpuFallbackInsideTheRun) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectRunsMatchCpu(OpType::Hardmax, false, true);
  expectRunsMatchCpu(OpType::Hardmax, true, true);
}

TEST(CudaPipeline, BackendsListsCuda) {
  bool listed = false;
  for (auto& b : availableBackends()) listed |= b.name == "cuda";
  EXPECT_TRUE(listed);
}

TEST(CudaPipeline, NoDeviceIsAStatusNotACrash) {
  if (cudaDeviceCountOrZero() != 0) GTEST_SKIP() << "a device is present";
  auto model = chainModel(OpType::Sigmoid);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> session;
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  Status st = interp->createSession(onCuda, BackendConfig(), &session);
  EXPECT_FALSE(st.isOk());
}

}  // namespace
}  // namespace osprey::test
