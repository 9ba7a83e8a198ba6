// The pipeline's layout groups (SessionImpl::chooseLayouts) on a test backend: the CPU backend,
// asking for NHWC for every 4-D float activation and saying yes to NHWC for Relu and
// same-shape Add (which are elementwise, so right in any layout) and no for everything else.
// Results must equal a plain CPU session's, whatever the groups came out as.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "../ops/op_test_util.h"
#include "backends/cpu/cpu_backend.h"
#include "core/layout.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

class AnyLayoutExecution : public Execution {
 public:
  AnyLayoutExecution(Backend* backend, std::unique_ptr<Execution> inner) : Execution(backend), inner_(std::move(inner)) {}
  bool supportsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return true;
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    return inner_->onResize(inputs, outputs);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    return inner_->onExecute(inputs, outputs);
  }

 private:
  std::unique_ptr<Execution> inner_;
};

class NhwcAskingBackend : public CPUBackend {
 public:
  using CPUBackend::CPUBackend;
  Layout activationLayout(const RuntimeTensor& t) const override {
    return t.dtype == DataType::Float32 && t.shape.size() == 4 ? Layout::NHWC : Layout::NCHW;
  }
  std::unique_ptr<Execution> onCreate(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs,
                                      const OpRef& op) override {
    auto exe = CPUBackend::onCreate(inputs, outputs, op);
    bool elementwise = exe && (op.type == OpType::Relu || op.type == OpType::Add);
    for (const RuntimeTensor* t : inputs) elementwise = elementwise && t && t->shape == outputs[0]->shape;
    if (!elementwise) return exe;
    return std::make_unique<AnyLayoutExecution>(this, std::move(exe));
  }
};

class NhwcAskingRuntime : public CPURuntime {
 public:
  using CPURuntime::CPURuntime;
  std::unique_ptr<Backend> onCreate(const BackendConfig& config) override {
    return std::make_unique<NhwcAskingBackend>(this, config);
  }
};

class NhwcAskingCreator : public RuntimeCreator {
 public:
  std::unique_ptr<Runtime> onCreate(const ScheduleConfig& schedule, const BackendConfig&) const override {
    return std::make_unique<NhwcAskingRuntime>(schedule.threads);
  }
  std::vector<DeviceInfo> devices() const override { return {{"nhwc-asking test backend", ""}}; }
};

// Stands in under the Vulkan forward type: in this test binary it replaces the Vulkan backend
// (where the build has one), which none of the binary's other tests use; tests/vulkan test it.
constexpr ForwardType kTestBackend = ForwardType::Vulkan;

struct Ran {
  std::vector<Tensor> outputs;
  int relaid = 0;
};

Ran run(const Graph& g, const std::map<std::string, Tensor>& feeds, ForwardType backend) {
  registerBuiltinBackends();
  static std::once_flag replaced;
  std::call_once(replaced, [] { insertRuntimeCreator(kTestBackend, std::make_unique<NhwcAskingCreator>()); });
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ScheduleConfig schedule;
  schedule.backend = backend;
  std::unique_ptr<Session> session;
  Status st = interp->createSession(schedule, BackendConfig(), &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  Ran ran;
  if (!session) return ran;
  st = session->run(feeds, &ran.outputs);
  EXPECT_TRUE(st.isOk()) << st.message();
  ran.relaid = session->stats().relaidTensors;
  return ran;
}

// Runs on the test backend and on the CPU; same outputs, and `relaid` tensors off NCHW.
void expectGroups(const Graph& g, const std::map<std::string, Tensor>& feeds, int relaid) {
  const Ran plain = run(g, feeds, ForwardType::CPU);
  const Ran grouped = run(g, feeds, kTestBackend);
  EXPECT_EQ(plain.relaid, 0);
  EXPECT_EQ(grouped.relaid, relaid);
  ASSERT_EQ(grouped.outputs.size(), plain.outputs.size());
  for (size_t i = 0; i < plain.outputs.size(); ++i) expectNear(grouped.outputs[i], plain.outputs[i], 0, 0);
}

TEST(LayoutGroups, AGroupWhoseExecutionsAllAgreeTakesTheLayout) {
  GraphBuilder b;
  const int x = b.input("x", {2, 5, 4, 3});
  const int a = b.op(OpType::Relu, {x});
  const int sum = b.op(OpType::Add, {a, x});
  b.output(b.op(OpType::Relu, {sum}));
  // x, a, the sum and the output; the caller's NCHW input and output are converted.
  expectGroups(b.g, {{"x", randomTensor(DataType::Float32, {2, 5, 4, 3}, 1)}}, 4);
}

TEST(LayoutGroups, OneRefusingExecutionKeepsItsWholeGroupNchw) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 7, 6});
  const int a = b.op(OpType::Relu, {x});
  const int c = b.op(OpType::Conv, {a, b.weights(randomTensor(DataType::Float32, {4, 3, 1, 1}, 2))});
  b.g.nodes.back().setInts("kernel_shape", {1, 1});
  b.output(b.op(OpType::Relu, {c}));
  expectGroups(b.g, {{"x", randomTensor(DataType::Float32, {1, 3, 7, 6}, 3)}}, 0);
}

TEST(LayoutGroups, GroupsAreDecidedApart) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 5, 5});
  const int y = b.input("y", {1, 3, 6, 5});
  b.output(b.op(OpType::Relu, {x}));
  b.output(b.op(OpType::Conv, {y, b.weights(randomTensor(DataType::Float32, {2, 3, 3, 3}, 4))}));
  b.g.nodes.back().setInts("kernel_shape", {3, 3});
  expectGroups(b.g,
               {{"x", randomTensor(DataType::Float32, {1, 4, 5, 5}, 5)},
                {"y", randomTensor(DataType::Float32, {1, 3, 6, 5}, 6)}},
               2);
}

// Which tensors bind a group: those whose bytes differ between NCHW and the layout.
TEST(LayoutGroups, LayoutMattersWhereTheBytesDiffer) {
  EXPECT_TRUE(layoutMatters({2, 8, 3, 5}, Layout::NHWC));
  EXPECT_FALSE(layoutMatters({2, 8, 1, 1}, Layout::NHWC));  // a pooled vector
  EXPECT_FALSE(layoutMatters({2, 1, 3, 5}, Layout::NHWC));  // one channel
  EXPECT_FALSE(layoutMatters({8, 3, 5}, Layout::NHWC));     // only 4-D tensors take a layout
  EXPECT_FALSE(layoutMatters({2, 8, 3, 5}, Layout::NCHW));
  EXPECT_TRUE(layoutMatters({1, 3, 1, 1}, Layout::NC8HW8));  // packing pads the channels
}

}  // namespace
}  // namespace osprey::test
