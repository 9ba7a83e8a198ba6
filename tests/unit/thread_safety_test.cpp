// The thread-safety contract of include/osprey/interpreter.h: one Interpreter shared by many
// threads, each with its own Session, gives exactly the single-threaded outputs; one Session
// called from two threads at once serialises the calls and never mixes their results.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

// Conv, Add, Relu, MatMul, Softmax and a spatial ReduceMean on an input of any batch and size:
// optimised CPU kernels, the thread pool and the planner all take part.
std::shared_ptr<Interpreter> dynamicModel() {
  GraphBuilder b;
  const int64_t c = 6, w = 11;
  int x = b.input("x", {-1, 3, -1, w});
  const Tensor convWeight = randomTensor(DataType::Float32, {c, 3, 3, 3}, 11);
  const Tensor matWeight = randomTensor(DataType::Float32, {w, w}, 12);
  x = b.op(OpType::Conv, {x, b.weights(convWeight)});
  b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  x = b.op(OpType::Relu, {b.op(OpType::Add, {x, b.floats(std::vector<float>(w, 0.25f), {w})})});
  x = b.op(OpType::Softmax, {b.op(OpType::MatMul, {x, b.weights(matWeight)})});
  b.output(b.op(OpType::Add, {x, b.op(OpType::ReduceMean, {x, b.ints({2, 3})})}));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  const Status st = Interpreter::fromModel(model, &interp);
  EXPECT_TRUE(st.isOk()) << st.message();
  return interp;
}

std::unique_ptr<Session> sessionOf(const Interpreter& interp, int threads) {
  ScheduleConfig schedule;
  schedule.threads = threads;
  std::unique_ptr<Session> session;
  const Status st = interp.createSession(schedule, BackendConfig(), &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  return session;
}

bool sameBytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

struct Case {
  Tensor input, expected;
};

// Inputs of several shapes and their outputs from a one-thread session, run alone.
std::vector<Case> referenceCases(const Interpreter& interp) {
  const std::vector<Shape> shapes = {{1, 3, 7, 11}, {2, 3, 5, 11}, {1, 3, 13, 11}, {3, 3, 4, 11}};
  auto session = sessionOf(interp, 1);
  std::vector<Case> cases;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Case c{randomTensor(DataType::Float32, shapes[i], 100 + static_cast<uint32_t>(i)), Tensor()};
    std::vector<Tensor> out;
    const Status st = session->run({{"x", c.input}}, &out);
    EXPECT_TRUE(st.isOk()) << st.message();
    if (out.size() == 1) c.expected = out[0];
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(ThreadSafety, SharedInterpreterEightThreadsOwnSessions) {
  auto interp = dynamicModel();
  ASSERT_TRUE(interp);
  const std::vector<Case> cases = referenceCases(*interp);
  constexpr int kThreads = 8, kRuns = 200;
  std::vector<int> mismatches(kThreads, 0), failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto session = sessionOf(*interp, 1 + t % 2);  // half of them with a pool of their own
      if (!session) {
        failures[t] = kRuns;
        return;
      }
      std::vector<Tensor> out;
      for (int r = 0; r < kRuns; ++r) {
        const Case& c = cases[(t + r) % cases.size()];  // shapes change between runs
        if (!session->run({{"x", c.input}}, &out).isOk() || out.size() != 1) {
          ++failures[t];
        } else if (!sameBytes(out[0], c.expected)) {
          ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

TEST(ThreadSafety, OneSessionFromTwoThreadsIsSerialised) {
  auto interp = dynamicModel();
  ASSERT_TRUE(interp);
  const std::vector<Case> cases = referenceCases(*interp);
  auto session = sessionOf(*interp, 2);
  ASSERT_TRUE(session);
  constexpr int kRuns = 200;
  int mismatches[2] = {0, 0}, failures[2] = {0, 0};
  auto caller = [&](int t) {
    std::vector<Tensor> out;
    for (int r = 0; r < kRuns; ++r) {
      // The two threads ask for different shapes, so every other call re-plans under the other.
      const Case& c = cases[(2 * r + t) % cases.size()];
      if (!session->run({{"x", c.input}}, &out).isOk() || out.size() != 1) {
        ++failures[t];
      } else if (!sameBytes(out[0], c.expected)) {
        ++mismatches[t];
      }
      if (r % 50 == 0 && session->inputs().size() != 1) ++failures[t];
    }
  };
  std::thread a(caller, 0), b(caller, 1);
  a.join();
  b.join();
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

}  // namespace
}  // namespace osprey::test
