#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/graph.h"
#include "runtime/model_io.h"
#include "ops/op_def.h"
#include "osprey/osprey.h"

namespace osprey {
namespace {

// x[?, 4] -> Add(x, c) -> Relu -> Transpose -> y
Model smallModel() {
  Model m;
  m.producer = "test";
  Graph& g = m.graph;
  TensorInfo x;
  x.name = "x";
  x.dtype = DataType::Float32;
  x.shape = {-1, 4};
  x.dimNames = {"batch", ""};
  int xi = g.addTensor(x);
  TensorInfo c;
  c.name = "c";
  c.dtype = DataType::Float32;
  c.shape = {4};
  c.isConstant = true;
  float cv[4] = {1.f, -2.f, 3.f, -4.f};
  c.data = ConstantData::copyOf(cv, sizeof(cv));
  int ci = g.addTensor(c);
  TensorInfo s, r, y;
  s.name = "sum";
  r.name = "relu";
  y.name = "y";
  int si = g.addTensor(s), ri = g.addTensor(r), yi = g.addTensor(y);
  Node add;
  add.type = OpType::Add;
  add.name = "add";
  add.inputs = {xi, ci};
  add.outputs = {si};
  Node relu;
  relu.type = OpType::Relu;
  relu.name = "relu";
  relu.inputs = {si};
  relu.outputs = {ri};
  Node tr;
  tr.type = OpType::Transpose;
  tr.name = "transpose";
  tr.inputs = {ri};
  tr.outputs = {yi};
  tr.setInts("perm", {1, 0});
  g.nodes = {add, relu, tr};
  g.inputs = {xi};
  g.outputs = {yi};
  return m;
}

TEST(ModelIO, RoundTripKeepsEverything) {
  Model m = smallModel();
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(m, &bytes).isOk());
  Model back;
  Status st = readModel(bytes.data(), bytes.size(), &back);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(back.producer, "test");
  ASSERT_EQ(back.graph.tensors.size(), m.graph.tensors.size());
  for (size_t i = 0; i < m.graph.tensors.size(); ++i) {
    EXPECT_EQ(back.graph.tensors[i].name, m.graph.tensors[i].name);
    EXPECT_EQ(back.graph.tensors[i].shape, m.graph.tensors[i].shape);
    EXPECT_EQ(back.graph.tensors[i].isConstant, m.graph.tensors[i].isConstant);
  }
  EXPECT_EQ(back.graph.tensors[0].dimNames, (std::vector<std::string>{"batch", ""}));
  ASSERT_EQ(back.graph.tensors[1].data.size, 16u);
  EXPECT_EQ(reinterpret_cast<const float*>(back.graph.tensors[1].data.bytes.get())[3], -4.f);
  ASSERT_EQ(back.graph.nodes.size(), 3u);
  EXPECT_EQ(back.graph.nodes[2].type, OpType::Transpose);
  EXPECT_EQ(back.graph.nodes[2].getInts("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(back.graph.inputs, m.graph.inputs);
  EXPECT_EQ(back.graph.outputs, m.graph.outputs);
  // Writing what was read gives the same bytes.
  std::vector<uint8_t> again;
  ASSERT_TRUE(writeModel(back, &again).isOk());
  EXPECT_EQ(again, bytes);
}

// Read from a buffer it is given to keep, the model's constants point into it: a loaded file's
// weights are held once.
TEST(ModelIO, ConstantsPointIntoAnOwnedBuffer) {
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  ASSERT_TRUE(writeModel(smallModel(), bytes.get()).isOk());
  Model back;
  Status st = readModel(bytes->data(), bytes->size(), &back, bytes);
  ASSERT_TRUE(st.isOk()) << st.message();
  const uint8_t* c = back.graph.tensors[1].data.bytes.get();
  EXPECT_TRUE(c >= bytes->data() && c + 16 <= bytes->data() + bytes->size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 16, 0u);
  const long owners = bytes.use_count();
  bytes.reset();  // the model keeps the buffer
  EXPECT_GT(owners, 1);
  EXPECT_EQ(reinterpret_cast<const float*>(c)[3], -4.f);
}

TEST(ModelIO, AdoptedBytesAreNotCopied) {
  std::vector<uint8_t> v(64, 7);
  const uint8_t* before = v.data();
  ConstantData c = ConstantData::adopt(std::move(v));
  EXPECT_EQ(c.bytes.get(), before);
  EXPECT_EQ(c.size, 64u);
  EXPECT_EQ(c.bytes.get()[63], 7);
}

TEST(ModelIO, EveryTruncationIsAnError) {
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(smallModel(), &bytes).isOk());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Model m;
    Status st = readModel(bytes.data(), n, &m);
    EXPECT_FALSE(st.isOk()) << "prefix of " << n << " bytes was accepted";
  }
}

TEST(ModelIO, CorruptBytesNeverCrash) {
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(smallModel(), &bytes).isOk());
  std::mt19937 gen(11);
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = bytes;
    int flips = 1 + gen() % 4;
    for (int f = 0; f < flips; ++f) bad[gen() % bad.size()] = static_cast<uint8_t>(gen());
    Model m;
    Status st = readModel(bad.data(), bad.size(), &m);
    if (!st.isOk()) {
      ++rejected;
      EXPECT_FALSE(st.message().empty());
      continue;
    }
    // Whatever the verifier accepts must also be safe to plan and run.
    std::shared_ptr<Interpreter> interp;
    if (!Interpreter::fromModel(std::make_shared<Model>(m), &interp).isOk()) continue;
    std::unique_ptr<Session> session;
    if (!interp->createSession({}, {}, &session).isOk()) continue;
    std::map<std::string, Tensor> feeds;
    for (auto& in : session->inputs()) {
      Shape s = in.shape;
      bool sane = true;
      for (auto& d : s) {
        if (d < 0) d = 2;
        sane &= d < 64;
      }
      if (!sane || in.dtype == DataType::String || dataTypeSize(in.dtype) == 0) continue;
      feeds[in.name] = Tensor(in.dtype, s);
    }
    std::vector<Tensor> out;
    (void)session->run(feeds, &out);
  }
  EXPECT_GT(rejected, 0);
}

TEST(ModelIO, NotAModel) {
  const char text[] = "this is not a model at all, just some text";
  Model m;
  Status st = readModel(reinterpret_cast<const uint8_t*>(text), sizeof(text), &m);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("not an Osprey model"), std::string::npos) << st.message();
  std::shared_ptr<Interpreter> interp;
  EXPECT_FALSE(Interpreter::fromBuffer(text, 0, &interp).isOk());
}

TEST(Session, ResizeToNewShapesWithoutReload) {
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(smallModel(), &bytes).isOk());
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromBuffer(bytes.data(), bytes.size(), &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession({}, {}, &session).isOk());
  for (int64_t batch : {3, 7, 1, 7}) {
    Tensor x(DataType::Float32, {batch, 4});
    for (int64_t i = 0; i < x.elements(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 2.f;
    std::vector<Tensor> out;
    Status st = session->run({{"x", x}}, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_EQ(out[0].shape(), (Shape{4, batch}));
    const float c[4] = {1.f, -2.f, 3.f, -4.f};
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_EQ(out[0].data<float>()[j * batch + b], std::max(0.f, x.data<float>()[b * 4 + j] + c[j]));
    EXPECT_GT(session->stats().arenaPeakBytes, 0u);
    EXPECT_LE(session->stats().arenaPeakBytes, session->stats().activationBytesSum + 64 * 4);
  }
}

TEST(Session, WrongInputsAreClearErrors) {
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(smallModel(), &bytes).isOk());
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromBuffer(bytes.data(), bytes.size(), &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession({}, {}, &session).isOk());
  std::vector<Tensor> out;
  Status st = session->run({{"x", Tensor(DataType::Float64, {2, 4})}}, &out);
  EXPECT_NE(st.message().find("'x'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("float64"), std::string::npos) << st.message();
  st = session->run({{"x", Tensor(DataType::Float32, {2, 5})}}, &out);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("'x'"), std::string::npos) << st.message();
  st = session->run({{"nope", Tensor(DataType::Float32, {2, 4})}}, &out);
  EXPECT_NE(st.message().find("'nope'"), std::string::npos) << st.message();
  st = session->run({}, &out);
  EXPECT_NE(st.message().find("not given"), std::string::npos) << st.message();
}

// Whole-tensor copies (Reshape, Unsqueeze) become views of their input: no work runs for them,
// and memory the views still need (a graph output among them) is not reused by later ops.
TEST(Session, ReshapesAreViewsOfTheirInput) {
  Model m;
  m.producer = "test";
  Graph& g = m.graph;
  auto tensor = [&](const std::string& name) {
    TensorInfo t;
    t.name = name;
    return g.addTensor(t);
  };
  auto ints = [&](const std::string& name, std::vector<int64_t> v) {
    TensorInfo t;
    t.name = name;
    t.dtype = DataType::Int64;
    t.shape = {static_cast<int64_t>(v.size())};
    t.isConstant = true;
    t.data = ConstantData::copyOf(v.data(), v.size() * 8);
    return g.addTensor(t);
  };
  TensorInfo x;
  x.name = "x";
  x.dtype = DataType::Float32;
  x.shape = {2, 6};
  const int xi = g.addTensor(x);
  const int relu = tensor("relu"), view = tensor("view"), neg = tensor("neg"), flat = tensor("flat"),
            kept = tensor("kept"), later = tensor("later");
  auto node = [&](OpType type, std::vector<int> in, int out) {
    Node n;
    n.type = type;
    n.name = opTypeName(type) + std::to_string(out);
    n.inputs = std::move(in);
    n.outputs = {out};
    return n;
  };
  g.nodes = {node(OpType::Relu, {xi}, relu), node(OpType::Reshape, {relu, ints("s34", {3, 4})}, view),
             node(OpType::Neg, {view}, neg), node(OpType::Reshape, {neg, ints("s12", {12})}, flat),
             node(OpType::Unsqueeze, {view, ints("axes", {0})}, kept), node(OpType::Exp, {flat}, later)};
  g.inputs = {xi};
  g.outputs = {flat, kept, later};
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(m, &bytes).isOk());
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromBuffer(bytes.data(), bytes.size(), &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession({}, {}, &session).isOk());
  Tensor in(DataType::Float32, {2, 6});
  for (int i = 0; i < 12; ++i) in.data<float>()[i] = static_cast<float>(i) - 5.5f;
  std::vector<Tensor> out;
  Status st = session->run({{"x", in}}, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(session->stats().views, 3);
  EXPECT_EQ(session->stats().executions, 3);  // Relu, Neg, Exp
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape(), (Shape{12}));
  EXPECT_EQ(out[1].shape(), (Shape{1, 3, 4}));
  for (int i = 0; i < 12; ++i) {
    const float r = std::max(0.f, in.data<float>()[i]);
    EXPECT_EQ(out[0].data<float>()[i], -r);
    EXPECT_EQ(out[1].data<float>()[i], r);
    EXPECT_FLOAT_EQ(out[2].data<float>()[i], std::exp(-r));
  }
}

TEST(Catalog, NamesRoundTrip) {
  for (int i = 0; i < static_cast<int>(OpType::Count); ++i) {
    OpType t = static_cast<OpType>(i);
    EXPECT_EQ(opTypeFromName(opTypeName(t)), t);
    EXPECT_EQ(opDef(t).type, t) << opTypeName(t) << "'s OpDef names another type";
  }
  EXPECT_EQ(opTypeFromName("NoSuchOp"), OpType::Invalid);
}

}  // namespace
}  // namespace osprey
