// Configuration as values (osprey/backend_options.h): the per-backend option structs reach the
// CPU runtime and backend that sessions create, and the process-wide CPU ISA limit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#if defined(__linux__)
#include <sched.h>
#endif

#include "../ops/op_test_util.h"
#include "core/backend.h"
#include "core/shared_runtime.h"
#include "core/thread_pool.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

// The library reads no environment; tests keep benchmark procedures' OSPREY_CPU_ISA=avx2|scalar
// convention, as the CLI and the Python package do. Applied when the test binary starts, before
// any kernel has chosen the table.
const bool kIsaFromEnvironment = [] {
  const char* name = std::getenv("OSPREY_CPU_ISA");
  CpuIsa isa;
  return name && cpuIsaFromName(name, &isa) && setCpuIsaLimit(isa).isOk();
}();

bool pinnedWith(CpuOptions::Pinning pinning, int threads) {
  ScheduleConfig schedule;
  schedule.threads = threads;
  BackendConfig config;
  config.cpu.pinning = pinning;
  std::shared_ptr<SharedRuntime> runtime;
  Status st = Interpreter::createRuntime(schedule, config, &runtime);
  EXPECT_TRUE(st.isOk()) << st.message();
  if (!runtime) return false;
  ThreadPool* pool = runtimeState(*runtime).main->threadPool();
  EXPECT_NE(pool, nullptr);
  return pool && pool->pinned();
}

int usableCores() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return 1;
}

TEST(BackendOptions, CpuPinningReachesTheThreadPool) {
  EXPECT_FALSE(pinnedWith(CpuOptions::Pinning::Off, 2));
#if defined(__linux__)
  // On binds the workers wherever there are cores enough for them; Off never does.
  EXPECT_EQ(pinnedWith(CpuOptions::Pinning::On, 2), usableCores() >= 2);
  EXPECT_EQ(pinnedWith(CpuOptions::Pinning::Auto, 2), usableCores() == 2);
#endif
}

// CpuOptions::layout NC8HW8 relays a convolution's activations; the outputs stay the same.
TEST(BackendOptions, CpuLayoutChoosesPackedActivations) {
  GraphBuilder b;
  const int x = b.input("x", {1, 5, 7, 6});
  const int c = b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {8, 5, 3, 3}, 2))});
  b.g.nodes.back().setInts("kernel_shape", {3, 3});
  b.output(b.op(OpType::Relu, {c}));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  const std::map<std::string, Tensor> feeds = {{"x", randomTensor(DataType::Float32, {1, 5, 7, 6}, 1)}};
  std::vector<Tensor> outputs[2];
  int relaid[2] = {0, 0};
  for (int packed = 0; packed < 2; ++packed) {
    BackendConfig config;
    config.cpu.layout = packed ? CpuOptions::Layout::NC8HW8 : CpuOptions::Layout::NCHW;
    std::unique_ptr<Session> session;
    Status st = interp->createSession(ScheduleConfig(), config, &session);
    ASSERT_TRUE(st.isOk()) << st.message();
    st = session->run(feeds, &outputs[packed]);
    ASSERT_TRUE(st.isOk()) << st.message();
    relaid[packed] = session->stats().relaidTensors;
  }
  EXPECT_EQ(relaid[0], 0);
  EXPECT_GT(relaid[1], 0);
  ASSERT_EQ(outputs[0].size(), 1u);
  ASSERT_EQ(outputs[1].size(), 1u);
  expectNear(outputs[1][0], outputs[0][0], 1e-4, 1e-4);
}

// The runtime a SharedRuntime holds keeps the BackendConfig it was made with, options included.
TEST(BackendOptions, SharedRuntimeKeepsItsOptions) {
  BackendConfig config;
  config.cpu.pinning = CpuOptions::Pinning::Off;
  config.opencl.platform = "0";
  config.opencl.tuning = OpenCLOptions::Tuning::Fast;
  config.cuda.graphs = false;
  std::shared_ptr<SharedRuntime> runtime;
  ASSERT_TRUE(Interpreter::createRuntime(ScheduleConfig(), config, &runtime).isOk());
  EXPECT_EQ(runtime->backendConfig().cpu.pinning, CpuOptions::Pinning::Off);
  EXPECT_EQ(runtime->backendConfig().opencl.platform, "0");
  EXPECT_EQ(runtime->backendConfig().opencl.tuning, OpenCLOptions::Tuning::Fast);
  EXPECT_FALSE(runtime->backendConfig().cuda.graphs);
}

TEST(BackendOptions, CpuIsaNames) {
  CpuIsa isa = CpuIsa::Native;
  EXPECT_TRUE(cpuIsaFromName("avx2", &isa));
  EXPECT_EQ(isa, CpuIsa::Avx2);
  EXPECT_TRUE(cpuIsaFromName("scalar", &isa));
  EXPECT_EQ(isa, CpuIsa::Scalar);
  EXPECT_TRUE(cpuIsaFromName("native", &isa));
  EXPECT_EQ(isa, CpuIsa::Native);
  EXPECT_FALSE(cpuIsaFromName("avx512", &isa));
}

// The table is chosen once: afterwards only the limit in force may be set again.
TEST(BackendOptions, CpuIsaLimitIsFixedOnceTheTableIsChosen) {
  const std::string inUse = cpuIsaInUse();
  EXPECT_FALSE(inUse.empty());
  const char* name = std::getenv("OSPREY_CPU_ISA");
  CpuIsa current = CpuIsa::Native;
  if (kIsaFromEnvironment) {
    ASSERT_TRUE(cpuIsaFromName(name, &current));
  }
  EXPECT_TRUE(setCpuIsaLimit(current).isOk());
  const CpuIsa other = current == CpuIsa::Scalar ? CpuIsa::Native : CpuIsa::Scalar;
  Status st = setCpuIsaLimit(other);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("already chosen"), std::string::npos) << st.message();
  EXPECT_EQ(cpuIsaInUse(), inUse);
  if (current == CpuIsa::Scalar) {
    EXPECT_EQ(inUse, "scalar");
  }
}

}  // namespace
}  // namespace osprey::test
