// Outputs written straight into the caller's memory (SessionImpl::bindsOutput): the values are
// those of the reference kernels, an output the caller still holds is never overwritten, the
// caller's last outputs are reused in place, and IoBinding host outputs are written in place.
// Covered shapes of the plan: an output also read by a later op, the same tensor listed twice,
// a Concat output whose parts are written inside it, and a Reshape (view) of a bound output.
#include <gtest/gtest.h>

#include "../ops/op_test_util.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

constexpr int64_t kC = 8, kH = 48, kW = 50;  // 76.8 KB per tensor: above the binding threshold

// x -> Tanh -> a (output); a -> Abs -> b; Concat(a, b) -> c (output); Reshape(a) -> r (output);
// a listed twice among the outputs.
GraphBuilder bindingGraph() {
  GraphBuilder b;
  const int x = b.input("x", {1, kC, kH, kW});
  const int a = b.op(OpType::Tanh, {x});
  const int abs = b.op(OpType::Abs, {a});
  const int c = b.op(OpType::Concat, {a, abs});
  b.g.nodes.back().setInt("axis", 1);
  const int r = b.op(OpType::Reshape, {a, b.ints({1, kC * kH, kW})});
  b.output(a);
  b.output(c);
  b.output(r);
  b.output(a);
  return b;
}

std::unique_ptr<Session> sessionOf(const Graph& g) { return cpuSessionOf(g, 2); }

// The expected outputs, by the reference kernels of each op.
std::vector<Tensor> expected(const Tensor& x) {
  std::vector<Tensor> tanh, abs, concat;
  EXPECT_TRUE(referenceOp(makeNode(OpType::Tanh), {in(x)}, 1, &tanh).isOk());
  EXPECT_TRUE(referenceOp(makeNode(OpType::Abs), {in(tanh[0])}, 1, &abs).isOk());
  Node cat = makeNode(OpType::Concat);
  cat.setInt("axis", 1);
  EXPECT_TRUE(referenceOp(cat, {in(tanh[0]), in(abs[0])}, 1, &concat).isOk());
  Tensor reshaped = Tensor(DataType::Float32, {1, kC * kH, kW});
  std::memcpy(reshaped.data(), tanh[0].data(), tanh[0].bytes());
  return {tanh[0], concat[0], reshaped, tanh[0]};
}

void expectOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    ASSERT_EQ(got[k].shape(), want[k].shape());
    expectNear(got[k], want[k], 1e-6, 1e-6);
  }
}

TEST(OutputBinding, RunsWriteTheCallersTensorsAndNeverOnesItStillHolds) {
  GraphBuilder b = bindingGraph();
  auto session = sessionOf(b.g);
  const Tensor x1 = randomTensor(DataType::Float32, {1, kC, kH, kW}, 1, -3, 3);
  const Tensor x2 = randomTensor(DataType::Float32, {1, kC, kH, kW}, 2, -3, 3);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->run({{"x", x1}}, &out).isOk());
  expectOutputs(out, expected(x1));
  // Held elsewhere: the next run must leave these values alone.
  const std::vector<Tensor> held = out;
  ASSERT_TRUE(session->run({{"x", x2}}, &out).isOk());
  expectOutputs(out, expected(x2));
  expectOutputs(held, expected(x1));
  for (size_t k = 0; k < out.size(); ++k) EXPECT_NE(out[k].data(), held[k].data());
  // Not held: the same memory is written again.
  std::vector<const void*> addresses;
  for (const Tensor& t : out) addresses.push_back(t.data());
  ASSERT_TRUE(session->run({{"x", x1}}, &out).isOk());
  expectOutputs(out, expected(x1));
  EXPECT_EQ(out[1].data(), addresses[1]);
}

TEST(OutputBinding, IoBindingHostOutputsAreWrittenInPlace) {
  GraphBuilder b = bindingGraph();
  auto session = sessionOf(b.g);
  const Tensor x = randomTensor(DataType::Float32, {1, kC, kH, kW}, 3, -3, 3);
  const std::vector<Tensor> want = expected(x);
  Tensor a(DataType::Float32, {1, kC, kH, kW}), c(DataType::Float32, {1, 2 * kC, kH, kW});
  Tensor r(DataType::Float32, {1, kC * kH, kW});
  for (int round = 0; round < 2; ++round) {
    IoBinding io;
    io.bindInput("x", x);
    io.bindOutput(b.g.tensors[b.g.outputs[0]].name, a);
    io.bindOutput(b.g.tensors[b.g.outputs[1]].name, c);
    if (round == 1) io.bindOutput(b.g.tensors[b.g.outputs[2]].name, r);
    ASSERT_TRUE(session->run(io).isOk());
    expectNear(a, want[0], 1e-6, 1e-6);
    expectNear(c, want[1], 1e-6, 1e-6);
    if (round == 1) expectNear(r, want[2], 1e-6, 1e-6);
  }
  // And a plain run afterwards still returns its own tensors.
  std::vector<Tensor> out;
  ASSERT_TRUE(session->run({{"x", x}}, &out).isOk());
  expectOutputs(out, want);
  EXPECT_NE(out[0].data(), a.data());
}

}  // namespace
}  // namespace osprey::test
