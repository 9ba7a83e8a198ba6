// Shapes that imply more memory than a session may have are refused at resize, with an error
// naming the tensor and its bytes (BackendConfig::memoryLimit, by default the machine's memory),
// instead of the process being killed part-way through allocating them.
#include <gtest/gtest.h>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

std::unique_ptr<Session> sessionOf(const Graph& g, uint64_t memoryLimit = 0) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  Status st = Interpreter::fromModel(model, &interp);
  EXPECT_TRUE(st.isOk()) << st.message();
  if (!interp) return nullptr;
  BackendConfig config;
  config.memoryLimit = memoryLimit;
  std::unique_ptr<Session> session;
  st = interp->createSession(ScheduleConfig(), config, &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  return session;
}

void expectRefused(const Status& st, const std::vector<std::string>& needles) {
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), StatusCode::OutOfMemory) << st.message();
  for (const std::string& n : needles) EXPECT_NE(st.message().find(n), std::string::npos) << st.message();
}

TEST(MemoryLimit, HugeInputRefusedAtResize) {
  GraphBuilder b;
  b.output(b.op(OpType::Relu, {b.input("x", {1, 3, -1, -1})}));
  auto session = sessionOf(b.g);
  ASSERT_TRUE(session);
  expectRefused(session->resize({{"x", {1, 3, 100000, 100000}}}), {"input 'x'", "120000000000 bytes", "memory limit"});
  // The session stays usable at a shape that fits.
  EXPECT_TRUE(session->resize({{"x", {1, 3, 8, 8}}}).isOk());
  std::vector<Tensor> out;
  EXPECT_TRUE(session->run({{"x", randomTensor(DataType::Float32, {1, 3, 8, 8}, 1)}}, &out).isOk());
}

TEST(MemoryLimit, TileByABillionRefused) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 224, 224});
  b.output(b.op(OpType::Tile, {x, b.ints({1, 1, 1, 1000000000})}));
  auto session = sessionOf(b.g);
  ASSERT_TRUE(session);
  expectRefused(session->resize({{"x", {1, 3, 224, 224}}}), {"output 'n0_out'", "(Tile)", "602112000000000 bytes"});
}

TEST(MemoryLimit, ConstantShapeOfTwoToTheFortyRefused) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4});
  const int big = b.op(OpType::ConstantOfShape, {b.ints({int64_t{1} << 20, int64_t{1} << 20})});
  b.output(b.op(OpType::Add, {b.op(OpType::Relu, {x}), b.op(OpType::Reshape, {big, b.ints({-1, 4})})}));
  auto session = sessionOf(b.g);
  ASSERT_TRUE(session);
  expectRefused(session->resize({{"x", {1, 4}}}), {"output 'n0_out'", "(ConstantOfShape)", "4398046511104 bytes"});
}

TEST(MemoryLimit, ElementCountPastInt64Refused) {
  GraphBuilder b;
  const int x = b.input("x", {1, 2, 3, 4});
  const int64_t g = 1000000000;  // each dimension fits; their product does not
  b.output(b.op(OpType::Expand, {x, b.ints({g, g, g, 4})}));
  auto session = sessionOf(b.g);
  ASSERT_TRUE(session);
  const Status st = session->resize({{"x", {1, 2, 3, 4}}});
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("n0"), std::string::npos) << st.message();
}

TEST(MemoryLimit, ConfiguredLimitCountsTheWholePlan) {
  GraphBuilder b;
  const int x = b.input("x", {1, 1, 512, 512});  // 1 MiB
  const int r = b.op(OpType::Relu, {x});
  const int n = b.op(OpType::Neg, {x});
  b.output(b.op(OpType::Add, {r, n}));
  const Tensor in = randomTensor(DataType::Float32, {1, 1, 512, 512}, 3);
  std::vector<Tensor> out;
  {  // every tensor fits alone; the arena holds three of them at once (the Add writes over r):
     // refused before the arena is allocated (a fuzzer's model asked for 14 GB under 64 MiB)
    auto session = sessionOf(b.g, (3u << 20) - 1);
    ASSERT_TRUE(session);
    expectRefused(session->run({{"x", in}}, &out), {"the plan for input shapes x [1, 1, 512, 512]", "activations alone need 3145728 bytes"});
  }
  {
    auto session = sessionOf(b.g, 512u << 10);
    ASSERT_TRUE(session);
    expectRefused(session->run({{"x", in}}, &out), {"input 'x'", "1048576 bytes", "524288 bytes"});
  }
  auto session = sessionOf(b.g, 16u << 20);
  ASSERT_TRUE(session);
  const Status st = session->run({{"x", in}}, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  for (int64_t i = 0; i < in.elements(); ++i) {
    const float v = in.data<float>()[i];
    ASSERT_EQ(out[0].data<float>()[i], (v > 0 ? v : 0.f) + -v);
  }
}

}  // namespace
}  // namespace osprey::test
