// Stages (core/session_stages.cpp): a node whose output shapes depend on values ends a planned
// stage; the part before it runs with the backends' kernels, the node runs on the host, the
// part after it is planned for the shapes that reach it. And runtimes shared by sessions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

std::shared_ptr<Interpreter> interpreterOf(const Graph& g) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  const Status st = Interpreter::fromModel(model, &interp);
  EXPECT_TRUE(st.isOk()) << st.message();
  return interp;
}

std::unique_ptr<Session> sessionOf(const Interpreter& interp, int threads = 2) {
  ScheduleConfig schedule;
  schedule.threads = threads;
  std::unique_ptr<Session> session;
  const Status st = interp.createSession(schedule, BackendConfig(), &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  return session;
}

// A one-op branch: its input `v` (the If's captured value) through `type`.
std::shared_ptr<Graph> branch(OpType type) {
  GraphBuilder b;
  const int v = b.input("v", {-1, -1});
  b.g.tensors[v].hasShape = false;
  const int y = b.op(type, {v});
  if (type == OpType::Softmax) b.g.nodes.back().setInt("axis", 1);
  b.output(y);
  return std::make_shared<Graph>(b.g);
}

void setGraph(Node* node, const char* name, std::shared_ptr<Graph> g) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::Graph;
  a.graph = std::move(g);
  node->setAttr(a);
}

// x [1, 3, 6, 6] -> Conv (no bias: linear in x) -> Flatten -> MatMul -> y [1, 5]; then
// If(sum(y) > 0, Softmax(y), Neg(y)). Running -x flips the branch.
struct TrailingIf {
  std::shared_ptr<Interpreter> withIf, plain;
};

TrailingIf trailingIfModels() {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 6, 6});
  int y = b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {4, 3, 3, 3}, 5))});
  y = b.op(OpType::Flatten, {y});
  y = b.op(OpType::MatMul, {y, b.weights(randomTensor(DataType::Float32, {64, 5}, 6))});
  Graph plain = b.g;
  plain.outputs = {y};
  const int sum = b.op(OpType::ReduceSum, {y});
  b.g.nodes.back().setInt("keepdims", 0);
  const int cond = b.op(OpType::Greater, {sum, b.scalar(0.f)});
  const int out = b.op(OpType::If, {cond, y});
  setGraph(&b.g.nodes.back(), "then_branch", branch(OpType::Softmax));
  setGraph(&b.g.nodes.back(), "else_branch", branch(OpType::Neg));
  b.g.nodes.back().setInt("num_captured", 1);
  b.output(out);
  b.output(y);  // made before the If: kept for the end of the run
  return {interpreterOf(b.g), interpreterOf(plain)};
}

TEST(Stages, TrailingIfRunsTheModelCompiled) {
  TrailingIf m = trailingIfModels();
  ASSERT_TRUE(m.withIf && m.plain);
  auto session = sessionOf(*m.withIf);
  auto plain = sessionOf(*m.plain);
  const Tensor x = randomTensor(DataType::Float32, {1, 3, 6, 6}, 9);
  Tensor negX(DataType::Float32, x.shape());
  for (int64_t i = 0; i < x.elements(); ++i) negX.data<float>()[i] = -x.data<float>()[i];
  for (const Tensor* input : std::vector<const Tensor*>{&x, &negX, &x}) {
    std::vector<Tensor> out, ref;
    ASSERT_TRUE(session->run({{"x", *input}}, &out).isOk());
    ASSERT_TRUE(plain->run({{"x", *input}}, &ref).isOk());
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].shape(), (Shape{1, 5}));
    const float* y = ref[0].data<float>();
    float sum = 0, max = y[0], denom = 0;
    for (int i = 0; i < 5; ++i) sum += y[i], max = std::max(max, y[i]);
    for (int i = 0; i < 5; ++i) denom += std::exp(y[i] - max);
    for (int i = 0; i < 5; ++i) {
      const float expected = sum > 0 ? std::exp(y[i] - max) / denom : -y[i];
      EXPECT_NEAR(out[0].data<float>()[i], expected, 1e-5f) << i;
      EXPECT_EQ(out[1].data<float>()[i], y[i]);
    }
  }
  const SessionStats& stats = session->stats();
  EXPECT_EQ(stats.stages, 1);  // nothing follows the If
  EXPECT_EQ(stats.hostOps, 1);
  EXPECT_EQ(stats.bodySessions, 2);  // both branches ran, each planned once as a session
  EXPECT_EQ(stats.foldedOps, 0);  // the Conv and MatMul run as executions, not on the host
  EXPECT_GE(stats.executions, sessionOf(*m.plain)->stats().executions);
}

// x [n] -> NonZero(x > 0) -> Cast -> + 1 -> ReduceSum: shapes after NonZero follow the data.
TEST(Stages, NonZeroReplansOnlyWhatFollows) {
  GraphBuilder b;
  const int x = b.input("x", {-1});
  const int doubled = b.op(OpType::Mul, {x, b.scalar(2.f)});
  const int positive = b.op(OpType::Greater, {x, b.scalar(0.f)});
  const int where = b.op(OpType::NonZero, {positive});
  int y = b.op(OpType::Cast, {where});
  b.g.nodes.back().setInt("to", static_cast<int64_t>(DataType::Float32));
  y = b.op(OpType::Add, {y, b.scalar(1.f)});
  const int total = b.op(OpType::ReduceSum, {b.op(OpType::Mul, {y, y})});
  b.output(y);
  b.output(total);
  b.output(doubled);
  auto interp = interpreterOf(b.g);
  ASSERT_TRUE(interp);
  auto session = sessionOf(*interp);
  const std::vector<std::vector<float>> cases = {{1, -1, 2, 0, 3}, {-1, -2, -3, -4, 5}, {1, -1, 2, 0, 3}, {}, {4, 4}};
  for (const auto& values : cases) {
    Tensor in(DataType::Float32, {static_cast<int64_t>(values.size())});
    if (!values.empty()) std::memcpy(in.data(), values.data(), values.size() * 4);
    std::vector<Tensor> out;
    const Status st = session->run({{"x", in}}, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    std::vector<float> expected;
    float sum = 0;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] > 0) expected.push_back(static_cast<float>(i) + 1), sum += expected.back() * expected.back();
    ASSERT_EQ(out[0].shape(), (Shape{1, static_cast<int64_t>(expected.size())}));
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(out[0].data<float>()[i], expected[i]);
    EXPECT_EQ(out[1].data<float>()[0], sum);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(out[2].data<float>()[i], 2 * values[i]);
  }
  EXPECT_EQ(session->stats().stages, 2);
  EXPECT_EQ(session->stats().hostOps, 1);
  EXPECT_EQ(session->stats().bodySessions, 0);
}

// x [n] -> NonZero(x > 0) [1, k] -> Shape -> output; then NonZero(Cast(NonZero) > 0) [2, m]:
// the middle stage has a boundary of its own, and the Shape, known once that stage's shapes
// are, is one of the model's outputs.
TEST(Stages, OutputKnownInAMiddleStage) {
  GraphBuilder b;
  const int x = b.input("x", {-1});
  const int first = b.op(OpType::NonZero, {b.op(OpType::Greater, {x, b.scalar(0.f)})});
  const int shape = b.op(OpType::Shape, {first});
  const int indices = b.op(OpType::Cast, {first});
  b.g.nodes.back().setInt("to", static_cast<int64_t>(DataType::Float32));
  const int second = b.op(OpType::NonZero, {b.op(OpType::Greater, {indices, b.scalar(0.f)})});
  b.output(shape);
  b.output(second);
  auto interp = interpreterOf(b.g);
  ASSERT_TRUE(interp);
  auto session = sessionOf(*interp);
  for (const std::vector<float>& values : std::vector<std::vector<float>>{{1, -1, 2, 3}, {0, 5}, {-1}}) {
    Tensor in(DataType::Float32, {static_cast<int64_t>(values.size())});
    std::memcpy(in.data(), values.data(), values.size() * 4);
    std::vector<Tensor> out;
    const Status st = session->run({{"x", in}}, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    std::vector<int64_t> positive;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] > 0) positive.push_back(static_cast<int64_t>(i));
    ASSERT_EQ(out[0].shape(), (Shape{2}));
    EXPECT_EQ(out[0].data<int64_t>()[0], 1);
    EXPECT_EQ(out[0].data<int64_t>()[1], static_cast<int64_t>(positive.size()));
    int64_t nonzeroIndices = 0;
    for (int64_t p : positive) nonzeroIndices += p > 0;
    EXPECT_EQ(out[1].shape(), (Shape{2, nonzeroIndices}));
  }
  EXPECT_EQ(session->stats().stages, 2);  // nothing follows the second NonZero
}

// The If's condition is a graph input: the first stage is empty.
TEST(Stages, BoundaryOnAGraphInput) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3});
  TensorInfo c;
  c.name = "cond";
  c.dtype = DataType::Bool;
  c.shape = {};
  const int cond = b.g.addTensor(c);
  b.g.inputs.push_back(cond);
  const int out = b.op(OpType::If, {cond, x});
  setGraph(&b.g.nodes.back(), "then_branch", branch(OpType::Neg));
  setGraph(&b.g.nodes.back(), "else_branch", branch(OpType::Relu));
  b.g.nodes.back().setInt("num_captured", 1);
  b.output(b.op(OpType::Mul, {out, b.scalar(3.f)}));
  auto interp = interpreterOf(b.g);
  ASSERT_TRUE(interp);
  auto session = sessionOf(*interp);
  const Tensor xs = randomTensor(DataType::Float32, {2, 3}, 3);
  for (bool flag : {true, false, true}) {
    Tensor condIn(DataType::Bool, {});
    condIn.data<bool>()[0] = flag;
    std::vector<Tensor> out;
    const Status st = session->run({{"x", xs}, {"cond", condIn}}, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    for (int i = 0; i < 6; ++i) {
      const float v = xs.data<float>()[i];
      EXPECT_FLOAT_EQ(out[0].data<float>()[i], 3 * (flag ? -v : std::max(v, 0.f)));
    }
  }
  EXPECT_EQ(session->stats().stages, 2);
}

TEST(RunCallbacks, SeeEveryOpAndStopTheRun) {
  TrailingIf m = trailingIfModels();
  auto session = sessionOf(*m.withIf);
  const Tensor x = randomTensor(DataType::Float32, {1, 3, 6, 6}, 41);
  std::vector<std::string> before, after;
  std::map<std::string, Tensor> seen;
  RunCallbacks callbacks;
  callbacks.before = [&](const OpCallbackInfo& op, const OpTensors& inputs) {
    before.push_back(op.type);
    return inputs.size() > 0;
  };
  callbacks.after = [&](const OpCallbackInfo& op, const OpTensors& outputs) {
    after.push_back(op.type + "@" + op.backend);
    for (size_t i = 0; i < outputs.size(); ++i) EXPECT_TRUE(outputs.read(i, &seen[outputs.name(i)]).isOk());
    return true;
  };
  std::vector<Tensor> out;
  ASSERT_TRUE(session->run({{"x", x}}, &out, callbacks).isOk());
  EXPECT_EQ(before, (std::vector<std::string>{"Conv", "Flatten", "MatMul", "ReduceSum", "Greater", "If"}));
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(after.back(), "If@host");
  const std::string ifOutput = m.withIf->outputs()[0].name, matmulOutput = m.withIf->outputs()[1].name;
  ASSERT_TRUE(seen.count(ifOutput) && seen.count(matmulOutput));
  EXPECT_EQ(std::memcmp(seen[ifOutput].data(), out[0].data(), out[0].bytes()), 0);
  EXPECT_EQ(std::memcmp(seen[matmulOutput].data(), out[1].data(), out[1].bytes()), 0);

  int calls = 0;
  RunCallbacks stop;
  stop.after = [&](const OpCallbackInfo&, const OpTensors&) { return ++calls < 2; };
  const Status stopped = session->run({{"x", x}}, &out, stop);
  EXPECT_EQ(stopped.code(), StatusCode::Cancelled);
  EXPECT_NE(stopped.message().find("stopped by a callback after"), std::string::npos) << stopped.message();
  EXPECT_EQ(calls, 2);
  std::vector<Tensor> again;
  ASSERT_TRUE(session->run({{"x", x}}, &again).isOk());  // still usable
  EXPECT_EQ(std::memcmp(again[0].data(), seen[ifOutput].data(), again[0].bytes()), 0);
}

std::shared_ptr<SharedRuntime> twoThreadRuntime() {
  ScheduleConfig schedule;
  schedule.threads = 2;
  std::shared_ptr<SharedRuntime> runtime;
  const Status st = Interpreter::createRuntime(schedule, BackendConfig(), &runtime);
  EXPECT_TRUE(st.isOk()) << st.message();
  return runtime;
}

TEST(SharedRuntimes, FourSessionsUseOnePool) {
  TrailingIf m = trailingIfModels();
  std::shared_ptr<SharedRuntime> runtime = twoThreadRuntime();
  ASSERT_TRUE(runtime);
  EXPECT_EQ(runtime->threadCount(), 2);
  std::vector<std::unique_ptr<Session>> sessions(4);
  for (size_t i = 0; i < sessions.size(); ++i)
    ASSERT_TRUE((i % 2 ? m.plain : m.withIf)->createSession(runtime, &sessions[i]).isOk());
  const Tensor x = randomTensor(DataType::Float32, {1, 3, 6, 6}, 21);
  std::vector<Tensor> expected;
  ASSERT_TRUE(sessionOf(*m.plain)->run({{"x", x}}, &expected).isOk());
  for (auto& s : sessions) {
    std::vector<Tensor> out;
    ASSERT_TRUE(s->run({{"x", x}}, &out).isOk());
    const Tensor& y = out.back();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(y.data<float>()[i], expected[0].data<float>()[i]);
  }
  runtime->garbageCollect(0);
}

// Two threads, each with its own session on one runtime: the runs take turns, never mix.
TEST(SharedRuntimes, SessionsOnOneRuntimeFromTwoThreads) {
  TrailingIf m = trailingIfModels();
  std::shared_ptr<SharedRuntime> runtime = twoThreadRuntime();
  ASSERT_TRUE(runtime);
  const Tensor xs[2] = {randomTensor(DataType::Float32, {1, 3, 6, 6}, 31),
                        randomTensor(DataType::Float32, {1, 3, 6, 6}, 32)};
  std::vector<Tensor> expected[2];
  for (int t = 0; t < 2; ++t) ASSERT_TRUE(sessionOf(*m.withIf)->run({{"x", xs[t]}}, &expected[t]).isOk());
  int mismatches[2] = {0, 0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<Session> session;
      if (!m.withIf->createSession(runtime, &session).isOk()) {
        ++mismatches[t];
        return;
      }
      for (int r = 0; r < 100; ++r) {
        std::vector<Tensor> out;
        if (!session->run({{"x", xs[t]}}, &out).isOk() || out.size() != 2 ||
            std::memcmp(out[0].data(), expected[t][0].data(), out[0].bytes()) != 0)
          ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches[0], 0);
  EXPECT_EQ(mismatches[1], 0);
}

}  // namespace
}  // namespace osprey::test
