// Session::runAsync / wait: the run happens while the caller goes on, its outputs are those of
// run(), a second runAsync before wait() is refused, and wait() without a run is an error.
#include <gtest/gtest.h>

#include <cstring>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

std::unique_ptr<Session> convSession(std::shared_ptr<Interpreter>* keep) {
  GraphBuilder b;
  int x = b.input("x", {-1, 3, 10, 10});
  x = b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {6, 3, 3, 3}, 1))});
  b.output(b.op(OpType::Relu, {x}));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  EXPECT_TRUE(Interpreter::fromModel(model, keep).isOk());
  ScheduleConfig schedule;
  schedule.threads = 2;
  std::unique_ptr<Session> session;
  EXPECT_TRUE((*keep)->createSession(schedule, BackendConfig(), &session).isOk());
  return session;
}

TEST(RunAsync, GivesTheOutputsOfRun) {
  std::shared_ptr<Interpreter> interp;
  auto session = convSession(&interp);
  for (int i = 0; i < 3; ++i) {
    const Tensor x = randomTensor(DataType::Float32, {1 + i, 3, 10, 10}, 5 + i);
    std::vector<Tensor> expected, got;
    ASSERT_TRUE(session->run({{"x", x}}, &expected).isOk());
    ASSERT_TRUE(session->runAsync({{"x", x}}).isOk());
    const Status refused = session->runAsync({{"x", x}});
    EXPECT_EQ(refused.code(), StatusCode::InvalidArgument);
    EXPECT_NE(refused.message().find("wait()"), std::string::npos) << refused.message();
    const Status st = session->wait(&got);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].shape(), expected[0].shape());
    EXPECT_EQ(std::memcmp(got[0].data(), expected[0].data(), expected[0].bytes()), 0);
  }
  EXPECT_EQ(session->wait().code(), StatusCode::InvalidArgument);
}

TEST(RunAsync, ReportsTheRunsError) {
  std::shared_ptr<Interpreter> interp;
  auto session = convSession(&interp);
  ASSERT_TRUE(session->runAsync({{"y", randomTensor(DataType::Float32, {1, 3, 10, 10}, 1)}}).isOk());
  const Status st = session->wait();
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("'y'"), std::string::npos) << st.message();
}

TEST(RunAsync, DestroyingTheSessionWaitsForTheRun) {
  std::shared_ptr<Interpreter> interp;
  auto session = convSession(&interp);
  ASSERT_TRUE(session->runAsync({{"x", randomTensor(DataType::Float32, {8, 3, 10, 10}, 2)}}).isOk());
  session.reset();  // must not crash or leak the running thread
}

}  // namespace
}  // namespace osprey::test
