// Tensors placed inside others by the pipeline. Concats whose inputs are placed inside their
// output (SessionImpl::findConcatParts): the producers write there, the Concat runs nothing, and
// memory is not reused while any part is still needed. Cases it must refuse (an input twice, a
// graph input, strided regions, a Concat of Concats) still give the right values. Slices whose
// output is placed inside their input (SessionImpl::findSliceParts): a Gather or Slice that reads
// one contiguous range runs nothing, its readers read the input's memory there, and that memory
// is not reused while a slice of it is still to be read; refused cases (a graph input, a strided
// range, a graph output, a slice then concatenated) still give the right values.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

struct Ran {
  std::vector<Tensor> outputs;
  int views = 0, executions = 0;
};

Ran run(const Graph& g, const Tensor& x) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> session;
  Status st = interp->createSession(ScheduleConfig(), BackendConfig(), &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  Ran ran;
  if (!session) return ran;
  for (int i = 0; i < 2; ++i) {  // the second run finds the arena as the first one left it
    st = session->run({{"x", x}}, &ran.outputs);
    EXPECT_TRUE(st.isOk()) << st.message();
  }
  ran.views = session->stats().views;
  ran.executions = session->stats().executions;
  return ran;
}

int concat(GraphBuilder& b, std::vector<int> inputs, int64_t axis) {
  const int y = b.op(OpType::Concat, std::move(inputs));
  b.g.nodes.back().setInt("axis", axis);
  return y;
}

// Element i of the concatenation along `axis` of tensors whose values come from `parts`.
void expectConcat(const Tensor& y, const std::vector<std::vector<float>>& parts, int64_t outer) {
  size_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const auto& p : parts) {
      const size_t inner = p.size() / outer;
      for (size_t i = 0; i < inner; ++i, ++at) ASSERT_EQ(y.data<float>()[at], p[o * inner + i]) << "element " << at;
    }
  EXPECT_EQ(at, static_cast<size_t>(y.elements()));
}

std::vector<float> apply(const Tensor& x, float (*f)(float)) {
  std::vector<float> v(x.elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = f(x.data<float>()[i]);
  return v;
}
float relu(float v) { return v > 0.f ? v : 0.f; }
float neg(float v) { return -v; }
float negRelu(float v) { return -relu(v); }

TEST(ConcatParts, ProducersWriteIntoTheOutput) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 5, 7});
  const int a = b.op(OpType::Relu, {x});
  const int n = b.op(OpType::Neg, {x});
  const int y = concat(b, {a, n}, 1);
  b.output(b.op(OpType::Exp, {y}));
  b.output(y);
  const Tensor in = randomTensor(DataType::Float32, {1, 3, 5, 7}, 1);
  const Ran ran = run(b.g, in);
  EXPECT_EQ(ran.views, 1);
  EXPECT_EQ(ran.executions, 3);  // Relu, Neg, Exp
  ASSERT_EQ(ran.outputs.size(), 2u);
  expectConcat(ran.outputs[1], {apply(in, relu), apply(in, neg)}, 1);
  for (int64_t i = 0; i < ran.outputs[1].elements(); ++i)
    EXPECT_FLOAT_EQ(ran.outputs[0].data<float>()[i], std::exp(ran.outputs[1].data<float>()[i]));
}

// A part read after the Concat's last reader, and a part computed from another part (DenseNet's
// pattern): tensors planned meanwhile (the Exp) must not take the parts' memory.
TEST(ConcatParts, PartsStayAliveForTheirOwnReaders) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 6, 5});
  const int a = b.op(OpType::Relu, {x});
  const int n = b.op(OpType::Neg, {a});
  const int y = concat(b, {a, n}, 1);
  b.output(b.op(OpType::Abs, {y}));
  const int e = b.op(OpType::Exp, {x});
  b.output(b.op(OpType::Add, {a, e}));
  const Tensor in = randomTensor(DataType::Float32, {1, 4, 6, 5}, 2);
  const Ran ran = run(b.g, in);
  EXPECT_EQ(ran.views, 1);
  ASSERT_EQ(ran.outputs.size(), 2u);
  expectConcat(ran.outputs[0], {apply(in, relu), apply(in, relu)}, 1);
  for (int64_t i = 0; i < in.elements(); ++i) {
    const float v = in.data<float>()[i];
    EXPECT_FLOAT_EQ(ran.outputs[1].data<float>()[i], relu(v) + std::exp(v));
  }
}

TEST(ConcatParts, RefusedCasesStillConcatenate) {
  const Tensor in = randomTensor(DataType::Float32, {2, 3, 4, 5}, 3);
  {  // the same input twice
    GraphBuilder b;
    const int x = b.input("x", {2, 3, 4, 5});
    const int a = b.op(OpType::Relu, {x});
    b.output(concat(b, {a, a}, 0));
    const Ran ran = run(b.g, in);
    EXPECT_EQ(ran.views, 0);
    expectConcat(ran.outputs[0], {apply(in, relu), apply(in, relu)}, 1);
  }
  {  // a graph input among the parts
    GraphBuilder b;
    const int x = b.input("x", {2, 3, 4, 5});
    b.output(concat(b, {b.op(OpType::Neg, {x}), x}, 0));
    const Ran ran = run(b.g, in);
    EXPECT_EQ(ran.views, 0);
    expectConcat(ran.outputs[0], {apply(in, neg), std::vector<float>(in.data<float>(), in.data<float>() + in.elements())}, 1);
  }
  {  // batch 2 along the channels: each input is two strided blocks of the output
    GraphBuilder b;
    const int x = b.input("x", {2, 3, 4, 5});
    b.output(concat(b, {b.op(OpType::Relu, {x}), b.op(OpType::Neg, {x})}, 1));
    const Ran ran = run(b.g, in);
    EXPECT_EQ(ran.views, 0);
    expectConcat(ran.outputs[0], {apply(in, relu), apply(in, neg)}, 2);
  }
  {  // a Concat of Concats: the inner one is placed, the outer one copies it
    GraphBuilder b;
    const int x = b.input("x", {2, 3, 4, 5});
    const int inner = concat(b, {b.op(OpType::Relu, {x}), b.op(OpType::Neg, {x})}, 0);
    b.output(concat(b, {inner, b.op(OpType::Neg, {b.op(OpType::Relu, {x})})}, 0));
    const Ran ran = run(b.g, in);
    EXPECT_EQ(ran.views, 1);
    expectConcat(ran.outputs[0], {apply(in, relu), apply(in, neg), apply(in, negRelu)}, 1);
  }
}

// ---- slice parts ----

int gather(GraphBuilder& b, int data, int64_t index, int64_t axis) {
  const int y = b.op(OpType::Gather, {data, b.integers(DataType::Int64, {index}, {})});
  b.g.nodes.back().setInt("axis", axis);
  return y;
}

// x [3, 4, 5]: element (i, j, k) after f.
float at(const Tensor& x, int64_t i, int64_t j, int64_t k) { return x.data<float>()[(i * 4 + j) * 5 + k]; }

TEST(SliceParts, QueryKeyValueOfAPackedProjection) {
  GraphBuilder b;
  const int x = b.input("x", {3, 4, 5});
  const int packed = b.op(OpType::Relu, {x});
  const int q = gather(b, packed, 0, 0), k = gather(b, packed, 1, 0), v = gather(b, packed, 2, 0);
  const int kv = b.op(OpType::Add, {k, v});
  // Tensors of the packed one's size, made while q is still to be read: memory the planner would
  // hand them if the packed tensor's life ended with the slices.
  int chain = b.op(OpType::Neg, {x});
  for (int i = 0; i < 3; ++i) chain = b.op(OpType::Exp, {b.op(OpType::Neg, {chain})});
  const int last = gather(b, chain, 1, 0);
  b.output(b.op(OpType::Add, {b.op(OpType::Add, {kv, last}), q}));
  const Tensor in = randomTensor(DataType::Float32, {3, 4, 5}, 1);
  const Ran ran = run(b.g, in);
  EXPECT_EQ(ran.views, 4);  // q, k, v and the chain's slice
  ASSERT_EQ(ran.outputs.size(), 1u);
  const Tensor& y = ran.outputs[0];
  ASSERT_EQ(y.shape(), (Shape{4, 5}));
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t c = 0; c < 5; ++c) {
      float chainValue = -at(in, 1, j, c);
      for (int i = 0; i < 3; ++i) chainValue = std::exp(-chainValue);
      const float expected = relu(at(in, 1, j, c)) + relu(at(in, 2, j, c)) + chainValue + relu(at(in, 0, j, c));
      EXPECT_NEAR(y.data<float>()[j * 5 + c], expected, 1e-5f * (1.f + std::fabs(expected))) << j << "," << c;
    }
}

// Slices of a view (a Reshape between) lie in the memory the view shares, which then lives as
// long as they are read.
TEST(SliceParts, ThroughAView) {
  GraphBuilder b;
  const int x = b.input("x", {3, 4, 5});
  const int packed = b.op(OpType::Reshape, {b.op(OpType::Relu, {x}), b.ints({3, 20})});
  const int first = gather(b, packed, 0, 0), third = gather(b, packed, 2, 0);
  int chain = b.op(OpType::Neg, {x});
  for (int i = 0; i < 3; ++i) chain = b.op(OpType::Exp, {b.op(OpType::Neg, {chain})});
  const int last = b.op(OpType::Reshape, {gather(b, chain, 0, 0), b.ints({20})});
  b.output(b.op(OpType::Add, {b.op(OpType::Add, {third, last}), first}));
  const Tensor in = randomTensor(DataType::Float32, {3, 4, 5}, 3);
  const Ran ran = run(b.g, in);
  EXPECT_GE(ran.views, 3);  // the Reshape, the two slices of it
  ASSERT_EQ(ran.outputs.size(), 1u);
  for (int64_t e = 0; e < 20; ++e) {
    float chainValue = -in.data<float>()[e];
    for (int i = 0; i < 3; ++i) chainValue = std::exp(-chainValue);
    const float expected = relu(in.data<float>()[40 + e]) + chainValue + relu(in.data<float>()[e]);
    EXPECT_NEAR(ran.outputs[0].data<float>()[e], expected, 1e-5f * (1.f + std::fabs(expected))) << e;
  }
}

TEST(SliceParts, RefusedCasesStillCopy) {
  GraphBuilder b;
  const int x = b.input("x", {3, 4, 5});
  const int fromInput = gather(b, x, 1, 0);          // a graph input: filled at every run
  const int strided = gather(b, b.op(OpType::Relu, {x}), 2, 1);  // [3, 5] from [3, 4, 5]: strided
  const int packed = b.op(OpType::Sigmoid, {x});
  const int asOutput = gather(b, packed, 0, 0);       // a graph output of its own
  const int a = gather(b, packed, 1, 0), c = gather(b, packed, 2, 0);
  const int joined = b.op(OpType::Concat, {c, a});    // slices then concatenated: placed once
  b.g.nodes.back().setInt("axis", 0);
  b.output(b.op(OpType::Neg, {fromInput}));
  b.output(b.op(OpType::Neg, {strided}));
  b.output(asOutput);
  b.output(b.op(OpType::Neg, {joined}));
  const Tensor in = randomTensor(DataType::Float32, {3, 4, 5}, 2);
  const Ran ran = run(b.g, in);
  ASSERT_EQ(ran.outputs.size(), 4u);
  EXPECT_EQ(ran.views, 2);  // a and c only
  auto sigmoid = [](float v) { return 1.f / (1.f + std::exp(-v)); };
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t k = 0; k < 5; ++k) {
      EXPECT_EQ(ran.outputs[0].data<float>()[j * 5 + k], -at(in, 1, j, k));
      EXPECT_NEAR(ran.outputs[2].data<float>()[j * 5 + k], sigmoid(at(in, 0, j, k)), 1e-6f);
      EXPECT_NEAR(ran.outputs[3].data<float>()[j * 5 + k], -sigmoid(at(in, 2, j, k)), 1e-6f);
      EXPECT_NEAR(ran.outputs[3].data<float>()[20 + j * 5 + k], -sigmoid(at(in, 1, j, k)), 1e-6f);
    }
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(ran.outputs[1].data<float>()[i * 5 + k], -relu(at(in, i, 2, k)));
}

}  // namespace
}  // namespace osprey::test
