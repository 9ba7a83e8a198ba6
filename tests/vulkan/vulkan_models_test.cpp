// Small graphs end to end on Vulkan against the same graphs on the CPU: a CNN (conv, depthwise,
// 1x1, pooling, Gemm, Softmax) and a transformer block (LayerNorm, attention through MatMul,
// Transpose, Softmax, GELU feed-forward, residual Adds), and an op without a Vulkan kernel
// falling back to the CPU between Vulkan ops. Then the runtime: device choice, the pipeline
// cache file.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

#include "backends/vulkan/vk_runtime.h"
#include "core/dtype.h"
#include "vulkan_test_util.h"

namespace osprey::test {
namespace {

// Builds a model node by node; tensors are named by the caller.
class GraphBuilder {
 public:
  GraphBuilder() : model_(std::make_shared<Model>()) {}
  int input(const std::string& name, const Shape& shape) {
    TensorInfo t;
    t.name = name;
    t.dtype = DataType::Float32;
    t.shape = shape;
    const int i = model_->graph.addTensor(t);
    model_->graph.inputs.push_back(i);
    return i;
  }
  int constant(const std::string& name, const Tensor& value) {
    TensorInfo t;
    t.name = name;
    t.dtype = value.dtype();
    t.shape = value.shape();
    t.isConstant = true;
    t.data = ConstantData::copyOf(value.data(), value.bytes());
    return model_->graph.addTensor(t);
  }
  int weights(const std::string& name, const Shape& shape, double scale = 0.5) {
    return constant(name, randomTensor(DataType::Float32, shape, seed_++, -scale, scale));
  }
  // Adds `node` reading `inputs`; returns its (first) output.
  int op(Node node, const std::vector<int>& inputs) {
    TensorInfo t;
    t.name = "t" + std::to_string(model_->graph.nodes.size());
    const int out = model_->graph.addTensor(t);
    node.name = "n" + std::to_string(model_->graph.nodes.size());
    node.inputs = inputs;
    node.outputs = {out};
    model_->graph.nodes.push_back(node);
    return out;
  }
  std::shared_ptr<Model> finish(int output) {
    model_->graph.outputs = {output};
    return model_;
  }

 private:
  std::shared_ptr<Model> model_;
  uint32_t seed_ = 1000;
};

Node conv(std::vector<int64_t> pads, int64_t group, const std::string& activation = "",
          std::vector<float> params = {0.f, 0.f}) {
  Node n = makeNode(OpType::Conv);
  n.setInts("pads", std::move(pads));
  n.setInt("group", group);
  if (!activation.empty()) {
    n.setString("activation", activation);
    n.setFloats("activation_params", std::move(params));
  }
  return n;
}

Node withInt(OpType type, const std::string& name, int64_t value) {
  Node n = makeNode(type);
  n.setInt(name, value);
  return n;
}

// `feeds` with every float scaled by `factor`: other inputs for a run of the same plan.
std::map<std::string, Tensor> scaled(const std::map<std::string, Tensor>& feeds, float factor) {
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : feeds) {
    Tensor copy(t.dtype(), t.shape());
    for (int64_t i = 0; i < t.elements(); ++i) copy.data<float>()[i] = t.data<float>()[i] * factor;
    out[name] = copy;
  }
  return out;
}

// Runs `model` on the CPU (fp32) and on Vulkan at `precision` and compares (tolerance(precision)
// relative); returns the Vulkan stats. Vulkan runs the plan four times: the first run is captured,
// the second profiled (op by op), the third and fourth replay the captured command buffers, the
// third on other inputs.
SessionStats compareWithCpu(const std::shared_ptr<Model>& model, const std::map<std::string, Tensor>& feeds,
                            BackendConfig::Precision precision = BackendConfig::Precision::Normal,
                            float fullPrecisionStem = 0.f, bool mappedWeights = true) {
  std::shared_ptr<Interpreter> interp;
  Status st = Interpreter::fromModel(model, &interp);
  EXPECT_TRUE(st) << st.message();
  if (!st) return {};
  std::unique_ptr<Session> cpu, vk;
  EXPECT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &cpu));
  st = createVulkanSession(*interp, &vk, precision, fullPrecisionStem, true, mappedWeights);
  EXPECT_TRUE(st) << st.message();
  if (!st) return {};
  const std::map<std::string, Tensor> other = scaled(feeds, -0.75f);
  const std::map<std::string, Tensor>* runs[] = {&feeds, &feeds, &other, &feeds};
  for (int run = 0; run < 4; ++run) {
    std::vector<Tensor> expected, actual;
    EXPECT_TRUE(cpu->run(*runs[run], &expected));
    vk->setProfiling(run == 1);
    st = vk->run(*runs[run], &actual);
    EXPECT_TRUE(st) << st.message();
    if (!st) return {};
    EXPECT_EQ(actual.size(), expected.size());
    for (size_t o = 0; o < std::min(actual.size(), expected.size()); ++o) {
      EXPECT_EQ(actual[o].shape(), expected[o].shape());
      for (int64_t i = 0; i < expected[o].elements(); ++i) {
        const double e = at(expected[o], i);
        if (std::fabs(at(actual[o], i) - e) > tolerance(precision) * std::max(1.0, std::fabs(e))) {
          ADD_FAILURE() << "run " << run << " output " << o << " element " << i << ": " << at(actual[o], i)
                        << " vs CPU " << e;
          return vk->stats();
        }
      }
    }
  }
  return vk->stats();
}

std::shared_ptr<Model> smallCnn() {
  GraphBuilder g;
  int x = g.input("image", {2, 3, 19, 17});
  x = g.op(conv({1, 1, 1, 1}, 1, "Relu"), {x, g.weights("w1", {16, 3, 3, 3}), g.weights("b1", {16})});
  Node pool = makeNode(OpType::MaxPool);
  pool.setInts("kernel_shape", {2, 2});
  pool.setInts("strides", {2, 2});
  x = g.op(pool, {x});
  x = g.op(conv({1, 1, 1, 1}, 16, "Clip", {-0.25f, 0.75f}), {x, g.weights("w2", {16, 1, 3, 3}), g.weights("b2", {16})});
  x = g.op(conv({0, 0, 0, 0}, 1), {x, g.weights("w3", {24, 16, 1, 1}), g.weights("b3", {24})});
  x = g.op(makeNode(OpType::GlobalAveragePool), {x});
  x = g.op(withInt(OpType::Flatten, "axis", 1), {x});
  x = g.op(withInt(OpType::Gemm, "transB", 1), {x, g.weights("fc", {10, 24}), g.weights("fcb", {10})});
  x = g.op(withInt(OpType::Softmax, "axis", -1), {x});
  return g.finish(x);
}

std::map<std::string, Tensor> smallCnnFeeds() {
  return {{"image", randomTensor(DataType::Float32, {2, 3, 19, 17}, 7, -1, 1)}};
}

TEST(VulkanModels, SmallCnn) {
  OSPREY_REQUIRE_VULKAN();
  const SessionStats stats = compareWithCpu(smallCnn(), smallCnnFeeds());
  EXPECT_TRUE(noFallback(stats)) << describeBackends(stats);
}

// Weights through the staging buffer and a copy, as on a device without a large mapped heap
// (lavapipe and GPUs with a resizable BAR write them straight into device memory).
TEST(VulkanModels, SmallCnnWeightsStaged) {
  OSPREY_REQUIRE_VULKAN();
  for (auto precision : {BackendConfig::Precision::Normal, BackendConfig::Precision::Low}) {
    const SessionStats stats = compareWithCpu(smallCnn(), smallCnnFeeds(), precision, 0.f, false);
    EXPECT_TRUE(noFallback(stats)) << describeBackends(stats);
  }
}

// Precision Low: every float tensor in fp16 (stem 0), then with BackendConfig's default fp32
// stem, whose edge converts fp32 to fp16 between two Vulkan ops.
TEST(VulkanModels, SmallCnnHalfPrecision) {
  OSPREY_REQUIRE_VULKAN();
  SessionStats stats = compareWithCpu(smallCnn(), smallCnnFeeds(), BackendConfig::Precision::Low);
  EXPECT_TRUE(noFallback(stats)) << describeBackends(stats);
  EXPECT_EQ(stats.fullPrecisionOps, 0);
  stats = compareWithCpu(smallCnn(), smallCnnFeeds(), BackendConfig::Precision::Low, BackendConfig().fullPrecisionStem);
  EXPECT_TRUE(noFallback(stats)) << describeBackends(stats);
  if (vulkanHalfStorage()) {
    EXPECT_GT(stats.fullPrecisionOps, 0);
  }
}

// At fp16 storage a Relu's output is its input rounded to half: proof that the tensors really are
// fp16 on the device (and that the conversions at upload and download round to nearest).
TEST(VulkanModels, HalfStorageRoundsToHalf) {
  OSPREY_REQUIRE_VULKAN();
  if (!vulkanHalfStorage()) GTEST_SKIP() << "the device has no 16-bit storage: precision Low runs in fp32";
  GraphBuilder g;
  const int x = g.input("x", {7, 13});
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(g.finish(g.op(makeNode(OpType::Relu), {x})), &interp));
  std::unique_ptr<Session> session;
  ASSERT_TRUE(createVulkanSession(*interp, &session, BackendConfig::Precision::Low));
  const Tensor input = randomTensor(DataType::Float32, {7, 13}, 11, -1, 1);
  std::vector<Tensor> out;
  Status st = session->run({{"x", input}}, &out);
  ASSERT_TRUE(st) << st.message();
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < input.elements(); ++i) {
    const float expected = std::max(0.f, halfToFloat(floatToHalf(input.data<float>()[i])));
    EXPECT_EQ(out[0].data<float>()[i], expected) << "element " << i;
  }
}

// A weight past maxStorageBufferRange (128 MiB on lavapipe) cannot be bound to a shader: its
// MatMul runs on the CPU backup, the ops around it on Vulkan. Where the device reaches further
// the MatMul runs on Vulkan; the outputs must match either way.
TEST(VulkanModels, TensorPastTheStorageRangeRunsOnTheBackup) {
  OSPREY_REQUIRE_VULKAN();
  const int64_t K = 8704, N = 4096;  // 142.6 MB of fp32 weights
  GraphBuilder g;
  const int x = g.input("x", {2, K});
  const int y = g.op(makeNode(OpType::MatMul), {g.op(makeNode(OpType::Relu), {x}), g.weights("w", {K, N}, 0.02)});
  const SessionStats stats = compareWithCpu(g.finish(g.op(makeNode(OpType::Sigmoid), {y})),
                                            {{"x", randomTensor(DataType::Float32, {2, K}, 5, -1, 1)}});
  EXPECT_GT(stats.opsByBackend.count("vulkan:Relu"), 0u) << describeBackends(stats);
}

TEST(VulkanModels, TransformerBlock) {
  OSPREY_REQUIRE_VULKAN();
  const int64_t B = 2, T = 7, D = 20, F = 36;
  GraphBuilder g;
  const int x = g.input("tokens", {B, T, D});
  const int h = g.op(withInt(OpType::LayerNormalization, "axis", -1), {x, g.weights("ln1s", {D}), g.weights("ln1b", {D})});
  const int q = g.op(makeNode(OpType::MatMul), {h, g.weights("wq", {D, D})});
  const int k = g.op(makeNode(OpType::MatMul), {h, g.weights("wk", {D, D})});
  const int v = g.op(makeNode(OpType::MatMul), {h, g.weights("wv", {D, D})});
  Node transpose = makeNode(OpType::Transpose);
  transpose.setInts("perm", {0, 2, 1});
  const int kT = g.op(transpose, {k});
  int s = g.op(makeNode(OpType::MatMul), {q, kT});
  s = g.op(makeNode(OpType::Mul), {s, g.constant("scale", scalar(1.f / std::sqrt(float(D))))});
  const int p = g.op(withInt(OpType::Softmax, "axis", -1), {s});
  int a = g.op(makeNode(OpType::MatMul), {p, v});
  a = g.op(makeNode(OpType::MatMul), {a, g.weights("wo", {D, D})});
  const int r1 = g.op(makeNode(OpType::Add), {x, a});
  const int h2 = g.op(withInt(OpType::LayerNormalization, "axis", -1), {r1, g.weights("ln2s", {D}), g.weights("ln2b", {D})});
  int f = g.op(makeNode(OpType::MatMul), {h2, g.weights("w1", {D, F})});
  f = g.op(makeNode(OpType::Add), {f, g.weights("b1", {F})});
  f = g.op(makeNode(OpType::Gelu), {f});
  f = g.op(makeNode(OpType::MatMul), {f, g.weights("w2", {F, D})});
  const int y = g.op(makeNode(OpType::Add), {r1, f});
  const std::shared_ptr<Model> model = g.finish(y);
  const std::map<std::string, Tensor> feeds = {{"tokens", randomTensor(DataType::Float32, {B, T, D}, 8, -1, 1)}};
  SessionStats stats = compareWithCpu(model, feeds);
  EXPECT_TRUE(noFallback(stats)) << describeBackends(stats);
  stats = compareWithCpu(model, feeds, BackendConfig::Precision::Low);  // fp16 storage
  EXPECT_TRUE(noFallback(stats)) << describeBackends(stats);
}

// x -> Relu (Vulkan) -> Sin (no Vulkan kernel: CPU) -> Sigmoid (Vulkan) -> y.
TEST(VulkanModels, UnsupportedOpFallsBackToTheCpu) {
  OSPREY_REQUIRE_VULKAN();
  GraphBuilder g;
  int x = g.input("x", {3, 13});
  x = g.op(makeNode(OpType::Relu), {x});
  x = g.op(makeNode(OpType::Sin), {x});
  x = g.op(makeNode(OpType::Sigmoid), {x});
  const SessionStats stats = compareWithCpu(g.finish(x), {{"x", randomTensor(DataType::Float32, {3, 13}, 9, -2, 2)}});
  EXPECT_EQ(stats.opsByBackend.count("vulkan:Relu"), 1u) << describeBackends(stats);
  EXPECT_EQ(stats.opsByBackend.count("cpu:Sin"), 1u) << describeBackends(stats);
  EXPECT_EQ(stats.opsByBackend.count("vulkan:Sigmoid"), 1u) << describeBackends(stats);
}

TEST(VulkanRuntime, UnknownDeviceIsAnErrorNamingTheDevices) {
  OSPREY_REQUIRE_VULKAN();
  GraphBuilder g;
  const int x = g.input("x", {4});
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(g.finish(g.op(makeNode(OpType::Relu), {x})), &interp));
  ScheduleConfig schedule;
  schedule.backend = ForwardType::Vulkan;
  BackendConfig config;
  config.vulkan.device = "no-such-device";
  std::unique_ptr<Session> session;
  Status st = interp->createSession(schedule, config, &session);
  if (st) {
    std::vector<Tensor> out;
    st = session->run({{"x", randomTensor(DataType::Float32, {4}, 1)}}, &out);
  }
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("no-such-device"), std::string::npos) << st.message();
}

// The pipeline cache file is written when a runtime ends and read by the next one, which builds
// the pipelines it lists at its start, with no session asking.
TEST(VulkanRuntime, PipelineCacheFile) {
  OSPREY_REQUIRE_VULKAN();
  const std::string path = ::testing::TempDir() + "osprey-vulkan-prebuild.bin";
  std::remove(path.c_str());
  GraphBuilder g;
  const int x = g.input("x", {3, 8});
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(g.finish(g.op(makeNode(OpType::Sigmoid), {g.op(makeNode(OpType::Tanh), {x})})), &interp));
  ScheduleConfig schedule;
  schedule.backend = ForwardType::Vulkan;
  BackendConfig config;
  config.vulkan = testVulkanOptions();
  config.vulkan.pipelineCachePath = path;
  for (int session = 0; session < 2; ++session) {  // the second one reads the first one's file
    std::unique_ptr<Session> s;
    ASSERT_TRUE(interp->createSession(schedule, config, &s));
    std::vector<Tensor> out;
    Status st = s->run({{"x", randomTensor(DataType::Float32, {3, 8}, 3)}}, &out);
    ASSERT_TRUE(st) << st.message();
  }
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  vulkan::PipelineCacheFile file;
  ASSERT_TRUE(vulkan::parsePipelineCacheFile(bytes.data(), bytes.size(), &file)) << path;
  ASSERT_GE(file.pipelines.size(), 1u);

  vulkan::RuntimeOptions options;
  options.device = config.vulkan.device;
  options.pipelineCachePath = path;
  std::unique_ptr<vulkan::VulkanRuntime> rt;
  Status st = vulkan::VulkanRuntime::create(options, &rt);
  ASSERT_TRUE(st) << st.message();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rt->readyPipelines() < file.pipelines.size() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(rt->readyPipelines(), file.pipelines.size());
  rt.reset();
  std::remove(path.c_str());
}

TEST(VulkanRuntime, ListsDevicesWithLimits) {
  OSPREY_REQUIRE_VULKAN();
  for (const BackendDescription& b : availableBackends()) {
    if (b.name != "vulkan") continue;
    ASSERT_FALSE(b.devices.empty());
    for (const std::string& d : b.devices) {
      EXPECT_NE(d.find("invocations"), std::string::npos) << d;
      EXPECT_NE(d.find("shared memory"), std::string::npos) << d;
      EXPECT_NE(d.find("subgroup"), std::string::npos) << d;
      EXPECT_NE(d.find("16-bit storage"), std::string::npos) << d;
    }
  }
}

}  // namespace
}  // namespace osprey::test
