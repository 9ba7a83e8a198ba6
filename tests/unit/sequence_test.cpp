// ONNX sequences and optionals (ops/sequence.cpp): host values between planned stages. Sequence
// ops against the planned ops they mirror (Split, Concat) on random data of odd shapes; sequence
// and optional graph inputs and outputs; the errors a caller or a model can cause.
#include <gtest/gtest.h>

#include <cstring>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"
#include "runtime/model_io.h"

namespace osprey::test {
namespace {

int sequenceInput(GraphBuilder& b, const std::string& name, DataType element = DataType::Float32) {
  const int s = b.input(name, {}, DataType::Sequence);
  b.g.tensors[s].hasShape = false;
  b.g.tensors[s].elementDtype = element;
  return s;
}

int markSequence(GraphBuilder& b, int t) {
  b.g.tensors[t].dtype = DataType::Sequence;
  return t;
}

Status runAll(const Graph& g, const std::map<std::string, Tensor>& feeds, std::vector<Tensor>* out) {
  return cpuSessionOf(g)->run(feeds, out);
}

TEST(Sequence, SplitToSequenceMatchesSplitOnOddShapes) {
  const Tensor x = randomTensor(DataType::Float32, {3, 7, 5}, 11);
  for (int64_t axis : {0, 1, -1}) {
    const std::vector<int64_t> sizes = axis == 0 ? std::vector<int64_t>{1, 2} : axis == 1 ? std::vector<int64_t>{3, 1, 3}
                                                                                            : std::vector<int64_t>{4, 1};
    GraphBuilder b;
    const int in = b.input("x", {3, 7, 5});
    const int seq = markSequence(b, b.op(OpType::SplitToSequence, {in, b.ints(sizes)}));
    b.g.nodes.back().setInt("axis", axis);
    b.output(seq);
    GraphBuilder r;
    const int rin = r.input("x", {3, 7, 5});
    Node split;
    split.type = OpType::Split;
    split.name = "split";
    split.inputs = {rin, r.ints(sizes)};
    split.setInt("axis", axis);
    for (size_t k = 0; k < sizes.size(); ++k) {
      TensorInfo t;
      t.name = "part" + std::to_string(k);
      t.hasShape = false;
      split.outputs.push_back(r.g.addTensor(t));
      r.output(split.outputs.back());
    }
    r.g.nodes.push_back(split);
    std::vector<Tensor> got, want;
    ASSERT_TRUE(runAll(b.g, {{"x", x}}, &got).isOk());
    ASSERT_TRUE(runAll(r.g, {{"x", x}}, &want).isOk());
    ASSERT_TRUE(got[0].isSequence());
    ASSERT_EQ(got[0].items().size(), sizes.size());
    for (size_t k = 0; k < sizes.size(); ++k) {
      EXPECT_EQ(got[0].items()[k].shape(), want[k].shape());
      EXPECT_EQ(maxAbsDiff(got[0].items()[k], want[k]), 0.0) << "axis " << axis << " part " << k;
    }
  }
}

TEST(Sequence, SplitToSequenceScalarSplitAndKeepdims) {
  const Tensor x = randomTensor(DataType::Float32, {2, 7}, 3);
  GraphBuilder b;
  const int in = b.input("x", {2, 7});
  TensorInfo three;
  three.name = "three";
  three.dtype = DataType::Int64;
  three.isConstant = true;
  const int64_t v = 3;
  three.data = ConstantData::copyOf(&v, 8);
  const int chunks = markSequence(b, b.op(OpType::SplitToSequence, {in, b.g.addTensor(three)}));
  b.g.nodes.back().setInt("axis", 1);
  const int rows = markSequence(b, b.op(OpType::SplitToSequence, {in}));
  b.g.nodes.back().setInt("keepdims", 0);
  b.output(chunks);
  b.output(rows);
  std::vector<Tensor> out;
  ASSERT_TRUE(runAll(b.g, {{"x", x}}, &out).isOk());
  ASSERT_EQ(out[0].items().size(), 3u);  // 3 + 3 + 1
  EXPECT_EQ(out[0].items()[2].shape(), (Shape{2, 1}));
  EXPECT_EQ(out[0].items()[2].data<float>()[1], x.data<float>()[13]);
  ASSERT_EQ(out[1].items().size(), 2u);
  EXPECT_EQ(out[1].items()[1].shape(), (Shape{7}));
  EXPECT_EQ(out[1].items()[1].data<float>()[6], x.data<float>()[13]);
}

// Items of odd shapes joined by ConcatFromSequence, against Concat (new_axis 0) and against
// Unsqueeze + Concat (new_axis 1).
TEST(Sequence, ConcatFromSequenceMatchesConcat) {
  const std::vector<Tensor> items = {randomTensor(DataType::Float32, {3, 2, 5}, 1), randomTensor(DataType::Float32, {3, 4, 5}, 2),
                                     randomTensor(DataType::Float32, {3, 1, 5}, 3)};
  const Tensor seq = Tensor::sequence(DataType::Float32, items);
  GraphBuilder b;
  const int s = sequenceInput(b, "s");
  const int joined = b.op(OpType::ConcatFromSequence, {s});
  b.g.nodes.back().setInt("axis", 1);
  b.output(joined);
  GraphBuilder r;
  const int a0 = r.input("a0", {3, 2, 5}), a1 = r.input("a1", {3, 4, 5}), a2 = r.input("a2", {3, 1, 5});
  const int cat = r.op(OpType::Concat, {a0, a1, a2});
  r.g.nodes.back().setInt("axis", 1);
  r.output(cat);
  std::vector<Tensor> got, want;
  ASSERT_TRUE(runAll(b.g, {{"s", seq}}, &got).isOk());
  ASSERT_TRUE(runAll(r.g, {{"a0", items[0]}, {"a1", items[1]}, {"a2", items[2]}}, &want).isOk());
  EXPECT_EQ(got[0].shape(), (Shape{3, 7, 5}));
  EXPECT_EQ(maxAbsDiff(got[0], want[0]), 0.0);

  const Tensor same = Tensor::sequence(DataType::Float32, {items[0], randomTensor(DataType::Float32, {3, 2, 5}, 9)});
  GraphBuilder n;
  const int ns = sequenceInput(n, "s");
  const int stacked = n.op(OpType::ConcatFromSequence, {ns});
  n.g.nodes.back().setInt("axis", -1);
  n.g.nodes.back().setInt("new_axis", 1);
  n.output(stacked);
  ASSERT_TRUE(runAll(n.g, {{"s", same}}, &got).isOk());
  EXPECT_EQ(got[0].shape(), (Shape{3, 2, 5, 2}));
  EXPECT_EQ(got[0].data<float>()[1], same.items()[1].data<float>()[0]);
  EXPECT_EQ(got[0].data<float>()[2 * 9 + 1], same.items()[1].data<float>()[9]);

  std::vector<Tensor> out;
  const Status st = runAll(b.g, {{"s", Tensor::sequence(DataType::Float32, {items[0], randomTensor(DataType::Float32, {2, 2, 5}, 4)})}}, &out);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("does not join"), std::string::npos) << st.message();
}

// seq -> SequenceInsert(x, at 0) -> SequenceErase(last) -> outputs, and SequenceAt(-1) -> Relu -> Conv,
// planned after the host ops; run at two sequence lengths.
TEST(Sequence, InsertEraseAtAndPlannedOpsAfter) {
  GraphBuilder b;
  const int s = sequenceInput(b, "s");
  const int x = b.input("x", {1, 2, 4, 4});
  const int inserted = markSequence(b, b.op(OpType::SequenceInsert, {s, x, b.ints({0})}));
  b.g.tensors[b.g.nodes.back().inputs[2]].shape = {};  // a scalar position
  const int erased = markSequence(b, b.op(OpType::SequenceErase, {inserted}));
  const int length = b.op(OpType::SequenceLength, {erased});
  const int last = b.op(OpType::SequenceAt, {inserted, b.ints({-1})});
  b.g.tensors[b.g.nodes.back().inputs[1]].shape = {};
  const int relu = b.op(OpType::Relu, {last});
  const int conv = b.op(OpType::Conv, {relu, b.weights(randomTensor(DataType::Float32, {3, 2, 3, 3}, 7))});
  b.output(erased);
  b.output(length);
  b.output(conv);
  auto session = cpuSessionOf(b.g, 2);
  const Tensor xv = randomTensor(DataType::Float32, {1, 2, 4, 4}, 5);
  for (int n : {3, 1}) {
    std::vector<Tensor> items;
    for (int k = 0; k < n; ++k) items.push_back(randomTensor(DataType::Float32, {1, 2, 4 + k, 4}, 20 + k));
    const Tensor seq = Tensor::sequence(DataType::Float32, items);
    std::vector<Tensor> out;
    const Status st = session->run({{"s", seq}, {"x", xv}}, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_EQ(out[0].items().size(), static_cast<size_t>(n));  // x in front, the last item gone
    EXPECT_EQ(maxAbsDiff(out[0].items()[0], xv), 0.0);
    for (int k = 1; k < n; ++k) EXPECT_EQ(maxAbsDiff(out[0].items()[k], items[k - 1]), 0.0);
    EXPECT_EQ(out[1].data<int64_t>()[0], n);
    // Conv of relu(the last item): against the same ops on a plain input.
    GraphBuilder r;
    const int rin = r.input("y", items.back().shape());
    r.output(r.op(OpType::Conv, {r.op(OpType::Relu, {rin}), r.weights(randomTensor(DataType::Float32, {3, 2, 3, 3}, 7))}));
    expectNear(out[2], runGraph(r.g, {{"y", items.back()}}), 1e-5, 1e-5);
    EXPECT_EQ(seq.items().size(), static_cast<size_t>(n));  // the caller's sequence is left alone
  }
  EXPECT_GT(session->stats().stages, 1);
}

TEST(Sequence, EmptyAndConstructedSequences) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3});
  const int y = b.input("y", {4});
  const int empty = markSequence(b, b.op(OpType::SequenceEmpty, {}));
  b.g.nodes.back().setInt("dtype", static_cast<int64_t>(DataType::Int32));
  const int built = markSequence(b, b.op(OpType::SequenceConstruct, {x, y}));
  b.output(empty);
  b.output(built);
  std::vector<Tensor> out;
  const Tensor xv = randomTensor(DataType::Float32, {2, 3}, 1), yv = randomTensor(DataType::Float32, {4}, 2);
  ASSERT_TRUE(runAll(b.g, {{"x", xv}, {"y", yv}}, &out).isOk());
  EXPECT_TRUE(out[0].isSequence());
  EXPECT_TRUE(out[0].items().empty());
  EXPECT_EQ(out[0].elementType(), DataType::Int32);
  ASSERT_EQ(out[1].items().size(), 2u);
  EXPECT_EQ(maxAbsDiff(out[1].items()[1], yv), 0.0);
  EXPECT_NE(out[1].items()[0].data(), xv.data());  // copied: the sequence outlives the run's memory
}

TEST(Sequence, OptionalInputsPresentAndAbsent) {
  GraphBuilder b;
  const int o = b.input("o", {2}, DataType::Float32);
  b.g.tensors[o].optional = true;
  const int has = b.op(OpType::OptionalHasElement, {o});
  const int passed = b.op(OpType::Identity, {o});
  b.g.tensors[passed].optional = true;
  b.output(has);
  b.output(passed);
  auto session = cpuSessionOf(b.g);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->run({{"o", Tensor()}}, &out).isOk());
  EXPECT_FALSE(out[0].data<bool>()[0]);
  EXPECT_TRUE(out[1].empty());
  const Tensor v = randomTensor(DataType::Float32, {2}, 3);
  ASSERT_TRUE(session->run({{"o", v}}, &out).isOk());
  EXPECT_TRUE(out[0].data<bool>()[0]);
  EXPECT_EQ(maxAbsDiff(out[1], v), 0.0);
  ASSERT_TRUE(session->run({{"o", Tensor()}}, &out).isOk());
  EXPECT_FALSE(out[0].data<bool>()[0]);

  GraphBuilder g;
  const int og = g.input("o", {2});
  g.g.tensors[og].optional = true;
  g.output(g.op(OpType::OptionalGetElement, {og}));
  const Status st = runAll(g.g, {{"o", Tensor()}}, &out);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("holds no value"), std::string::npos) << st.message();
}

TEST(Sequence, CallerErrorsNameTheInput) {
  GraphBuilder b;
  const int s = sequenceInput(b, "s");
  const int x = b.input("x", {2});
  const int at = b.op(OpType::SequenceAt, {s, b.ints({5})});
  b.g.tensors[b.g.nodes.back().inputs[1]].shape = {};
  b.output(at);
  b.output(b.op(OpType::Relu, {x}));
  const Tensor xv = randomTensor(DataType::Float32, {2}, 1);
  const Tensor seq = Tensor::sequence(DataType::Float32, {xv, xv});
  std::vector<Tensor> out;
  Status st = runAll(b.g, {{"s", xv}, {"x", xv}}, &out);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("input 's' is a sequence"), std::string::npos) << st.message();
  st = runAll(b.g, {{"s", seq}, {"x", seq}}, &out);
  EXPECT_NE(st.message().find("input 'x' was given a sequence"), std::string::npos) << st.message();
  st = runAll(b.g, {{"s", seq}, {"x", Tensor()}}, &out);
  EXPECT_NE(st.message().find("input 'x' was given no value"), std::string::npos) << st.message();
  st = runAll(b.g, {{"s", Tensor::sequence(DataType::Int64, {})}, {"x", xv}}, &out);
  EXPECT_NE(st.message().find("sequence of int64"), std::string::npos) << st.message();
  st = runAll(b.g, {{"s", seq}, {"x", xv}}, &out);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("position 5 is outside [-2, 1]"), std::string::npos) << st.message();
}

TEST(Sequence, OspKeepsSequenceAndOptionalTypes) {
  GraphBuilder b;
  const int s = sequenceInput(b, "s", DataType::Int64);
  const int o = b.input("o", {3});
  b.g.tensors[o].optional = true;
  b.output(b.op(OpType::SequenceLength, {s}));
  b.output(b.op(OpType::OptionalHasElement, {o}));
  Model m;
  m.graph = b.g;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(m, &bytes).isOk());
  Model back;
  ASSERT_TRUE(readModel(bytes.data(), bytes.size(), &back).isOk());
  const TensorInfo& bs = back.graph.tensors[back.graph.findTensor("s")];
  EXPECT_EQ(bs.dtype, DataType::Sequence);
  EXPECT_EQ(bs.elementDtype, DataType::Int64);
  EXPECT_TRUE(back.graph.tensors[back.graph.findTensor("o")].optional);
}

}  // namespace
}  // namespace osprey::test
