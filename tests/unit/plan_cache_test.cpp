// Plans of recently used input shapes (BackendConfig::planCacheSize) and weights packed once per
// runtime (the CPU backend's PackedWeights): returning to a shape plans nothing, a new shape
// repacks nothing, and every output stays what a fresh session computes.
#include <gtest/gtest.h>

#include <cstring>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

// Conv (3x3, packed for the GEMM), Relu and MatMul (packed B) on an input of any batch and height.
std::shared_ptr<Interpreter> convModel() {
  GraphBuilder b;
  int x = b.input("x", {-1, 3, -1, 12});
  x = b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {8, 3, 3, 3}, 1))});
  b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  x = b.op(OpType::Relu, {x});
  b.output(b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {12, 5}, 2))}));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  return interp;
}

std::unique_ptr<Session> sessionWithCache(const Interpreter& interp, int cacheSize) {
  ScheduleConfig schedule;
  schedule.threads = 2;
  BackendConfig config;
  config.planCacheSize = cacheSize;
  std::unique_ptr<Session> session;
  EXPECT_TRUE(interp.createSession(schedule, config, &session).isOk());
  return session;
}

Tensor runOnce(Session* session, const Tensor& x) {
  std::vector<Tensor> out;
  const Status st = session->run({{"x", x}}, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return out.empty() ? Tensor() : out[0];
}

bool sameBytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

TEST(PlanCache, ReturningToAShapePlansNothingAndNewShapesRepackNothing) {
  auto interp = convModel();
  ASSERT_TRUE(interp);
  const Tensor a = randomTensor(DataType::Float32, {1, 3, 7, 12}, 10);
  const Tensor b = randomTensor(DataType::Float32, {2, 3, 9, 12}, 11);
  const Tensor want[2] = {runOnce(sessionWithCache(*interp, 0).get(), a), runOnce(sessionWithCache(*interp, 0).get(), b)};
  auto session = sessionWithCache(*interp, 4);
  EXPECT_TRUE(sameBytes(runOnce(session.get(), a), want[0]));
  EXPECT_GT(session->stats().weightsPacked, 0);
  EXPECT_TRUE(sameBytes(runOnce(session.get(), b), want[1]));
  EXPECT_EQ(session->stats().weightsPacked, 0);  // the plan for b shares a's packed weights
  EXPECT_GT(session->stats().weightsShared, 0);
  for (int round = 0; round < 3; ++round) {
    EXPECT_TRUE(sameBytes(runOnce(session.get(), a), want[0])) << round;
    EXPECT_TRUE(sameBytes(runOnce(session.get(), b), want[1])) << round;
  }
  EXPECT_EQ(session->stats().plansMade, 2);
  EXPECT_EQ(session->stats().plansKept, 1);
}

TEST(PlanCache, SizeZeroPlansEveryShapeAgainAndTheCacheIsBounded) {
  auto interp = convModel();
  ASSERT_TRUE(interp);
  const Tensor a = randomTensor(DataType::Float32, {1, 3, 7, 12}, 12);
  const Tensor b = randomTensor(DataType::Float32, {1, 3, 5, 12}, 13);
  auto uncached = sessionWithCache(*interp, 0);
  for (int round = 0; round < 2; ++round) {
    runOnce(uncached.get(), a);
    runOnce(uncached.get(), b);
  }
  EXPECT_EQ(uncached->stats().plansMade, 4);
  EXPECT_EQ(uncached->stats().plansKept, 0);

  auto bounded = sessionWithCache(*interp, 2);
  for (int64_t h = 3; h < 9; ++h) runOnce(bounded.get(), randomTensor(DataType::Float32, {1, 3, h, 12}, 20));
  EXPECT_EQ(bounded->stats().plansMade, 6);
  EXPECT_EQ(bounded->stats().plansKept, 2);
  const Tensor latest = randomTensor(DataType::Float32, {1, 3, 7, 12}, 21);  // kept: no new plan
  EXPECT_TRUE(sameBytes(runOnce(bounded.get(), latest), runOnce(uncached.get(), latest)));
  EXPECT_EQ(bounded->stats().plansMade, 6);
}

TEST(PlanCache, ReleaseMemoryDropsEveryPlanAndTheNextRunPlansAgain) {
  auto interp = convModel();
  ASSERT_TRUE(interp);
  auto session = sessionWithCache(*interp, 4);
  const Tensor a = randomTensor(DataType::Float32, {1, 3, 7, 12}, 14);
  const Tensor b = randomTensor(DataType::Float32, {2, 3, 5, 12}, 15);
  const Tensor wantA = runOnce(session.get(), a);
  runOnce(session.get(), b);
  EXPECT_EQ(session->stats().plansKept, 1);
  session->releaseMemory();
  EXPECT_EQ(session->stats().arenaPeakBytes, 0u);
  std::vector<Tensor> out;
  EXPECT_EQ(session->run({}, &out).code(), StatusCode::InvalidArgument);  // the inputs' values went too
  EXPECT_TRUE(sameBytes(runOnce(session.get(), a), wantA));
  EXPECT_EQ(session->stats().plansMade, 3);
  EXPECT_EQ(session->stats().plansKept, 0);
  EXPECT_GT(session->stats().weightsPacked, 0);  // nothing held the packed weights
}

// A 3x3 Conv of 32 channels runs Winograd, its GEMMs with the tiles as columns on a 40x40 map
// (400 tiles) and as rows on a 20x20 one (100): the two pack the same weights differently, so
// the two packings must not be taken for each other, whether two plans of one Conv or two Convs
// reading one constant share them.
std::shared_ptr<Interpreter> winogradModel(bool sharedWeights) {
  GraphBuilder b;
  const int large = b.input("large", {1, 32, 40, 40}), small = b.input("small", {1, 32, -1, -1});
  const Tensor w = randomTensor(DataType::Float32, {32, 32, 3, 3}, 3);
  const int first = b.weights(w), second = sharedWeights ? first : b.weights(w);
  for (auto [x, weights] : {std::pair{large, first}, std::pair{small, second}}) {
    b.output(b.op(OpType::Conv, {x, weights}));
    b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  }
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  return interp;
}

TEST(PlanCache, WinogradPackingsOfOneConstantStayApart) {
  auto shared = winogradModel(true), separate = winogradModel(false);
  ASSERT_TRUE(shared && separate);
  auto session = sessionWithCache(*shared, 4);
  const Tensor large = randomTensor(DataType::Float32, {1, 32, 40, 40}, 20);
  for (int64_t side : {20, 40, 20}) {
    const Tensor small = randomTensor(DataType::Float32, {1, 32, side, side}, 21);
    std::vector<Tensor> got, want;
    ASSERT_TRUE(session->run({{"large", large}, {"small", small}}, &got).isOk());
    ASSERT_TRUE(sessionWithCache(*separate, 0)->run({{"large", large}, {"small", small}}, &want).isOk());
    ASSERT_EQ(got.size(), 2u);
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(sameBytes(got[i], want[i])) << "output " << i << " at " << side;
  }
}

// Two sessions of one model on one runtime: the second packs nothing.
TEST(PlanCache, SessionsOfOneRuntimeSharePackedWeights) {
  auto interp = convModel();
  ASSERT_TRUE(interp);
  ScheduleConfig schedule;
  schedule.threads = 2;
  std::shared_ptr<SharedRuntime> runtime;
  ASSERT_TRUE(Interpreter::createRuntime(schedule, BackendConfig(), &runtime).isOk());
  std::unique_ptr<Session> first, second;
  ASSERT_TRUE(interp->createSession(runtime, &first).isOk());
  ASSERT_TRUE(interp->createSession(runtime, &second).isOk());
  const Tensor x = randomTensor(DataType::Float32, {1, 3, 6, 12}, 30);
  const Tensor y = runOnce(first.get(), x);
  EXPECT_GT(first->stats().weightsPacked, 0);
  EXPECT_TRUE(sameBytes(runOnce(second.get(), x), y));
  EXPECT_EQ(second->stats().weightsPacked, 0);
  EXPECT_EQ(second->stats().weightsShared, first->stats().weightsPacked);
}

}  // namespace
}  // namespace osprey::test
