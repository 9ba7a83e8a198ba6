// Float16 models on the CPU run widened to float32 (converter/passes/widen_float16.h,
// runtime/float16_widening.h): the session's inputs and outputs stay float16, the values match the
// graph computed as written (its reference kernels on float16, op by op on the host) within
// float16 rounding, and the heavy ops run on the CPU's float32 kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "../ops/op_test_util.h"
#include "backends/cpu/float16_cast.h"
#include "converter/passes/widen_float16.h"
#include "core/half_arrays.h"
#include "graph_builder.h"
#include "ops/evaluate.h"

namespace osprey::test {
namespace {

constexpr DataType kHalf = DataType::Float16;

int halfConstant(GraphBuilder& b, const Shape& shape, uint32_t seed, double scale = 0.3) {
  const Tensor w = randomTensor(kHalf, shape, seed, -scale, scale);
  TensorInfo t;
  t.name = "h" + std::to_string(b.g.tensors.size());
  t.dtype = kHalf;
  t.shape = shape;
  t.isConstant = true;
  t.data = ConstantData::copyOf(w.data(), w.bytes());
  return b.g.addTensor(t);
}

int halfScalar(GraphBuilder& b, float v) {
  TensorInfo t;
  t.name = "s" + std::to_string(b.g.tensors.size());
  t.dtype = kHalf;
  t.isConstant = true;
  const uint16_t bits = floatToHalf(v);
  t.data = ConstantData::copyOf(&bits, 2);
  return b.g.addTensor(t);
}

int castTo(GraphBuilder& b, int x, DataType to) {
  const int y = b.op(OpType::Cast, {x});
  b.g.nodes.back().setInt("to", static_cast<int64_t>(to));
  return y;
}

int conv3x3(GraphBuilder& b, int x, int64_t in, int64_t out, uint32_t seed) {
  const int y = b.op(OpType::Conv, {x, halfConstant(b, {out, in, 3, 3}, seed), halfConstant(b, {out}, seed + 1)});
  b.g.nodes.back().setInts("kernel_shape", {3, 3});
  b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  return y;
}

// The oracle: g op by op on the host with the ops' reference kernels, on the dtypes it is written in.
std::vector<Tensor> evaluateAsWritten(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::map<int, Tensor> values;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const TensorInfo& t = g.tensors[i];
    if (t.isConstant) values[static_cast<int>(i)] = Tensor::wrap(t.dtype, t.shape, const_cast<uint8_t*>(t.data.bytes.get()));
  }
  for (int i : g.inputs) values[i] = feeds.at(g.tensors[i].name);
  for (const Node& node : g.nodes) {
    TensorViews in(node.inputs.size()), out(node.outputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i] < 0) {
        in[i].present = false;
        continue;
      }
      Tensor& v = values.at(node.inputs[i]);
      in[i] = {v.dtype(), v.shape(), v.data()};
    }
    std::vector<RasterPlan> rasters;
    EXPECT_TRUE(computeShapes(node, in, out).isOk()) << node.describe();
    for (size_t o = 0; o < out.size(); ++o) {
      Tensor& v = values[node.outputs[o]] = Tensor(out[o].dtype, out[o].shape);
      out[o].data = v.data();
    }
    EXPECT_TRUE(computeLowering(node, in, out, &rasters).isOk()) << node.describe();
    EXPECT_TRUE(executeOnHost(node, in, out, rasters, nullptr).isOk()) << node.describe();
  }
  std::vector<Tensor> outputs;
  for (int o : g.outputs) outputs.push_back(values.at(o));
  return outputs;
}

struct CpuRun {
  std::vector<Tensor> outputs;
  SessionStats stats;
};

CpuRun runOnCpu(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  Status st = Interpreter::fromModel(model, &interp);
  EXPECT_TRUE(st.isOk()) << st.message();
  std::unique_ptr<Session> session;
  if (st.isOk()) st = interp->createSession(ScheduleConfig(), BackendConfig(), &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  CpuRun run;
  if (!st.isOk()) return run;
  st = session->run(feeds, &run.outputs);
  EXPECT_TRUE(st.isOk()) << st.message();
  run.stats = session->stats();
  return run;
}

// Equal dtype and shape; values within float16's rounding of the as-written result.
void expectCloseToWritten(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.elements(); ++i)
    ASSERT_LE(std::fabs(at(got, i) - at(want, i)), 1e-2 * std::max(1.0, std::fabs(at(want, i)))) << "element " << i;
}

TEST(Float16Widening, ConvReluChainRunsFloat32Kernels) {
  GraphBuilder b;
  int x = b.input("x", {1, 8, 13, 11}, kHalf);
  for (uint32_t layer = 0; layer < 3; ++layer) x = b.op(OpType::Relu, {conv3x3(b, x, 8, 8, 10 * layer)});
  b.output(x);
  const std::map<std::string, Tensor> feeds{{"x", randomTensor(kHalf, {1, 8, 13, 11}, 1, -2, 2)}};
  const CpuRun run = runOnCpu(b.g, feeds);
  ASSERT_EQ(run.outputs.size(), 1u);
  expectCloseToWritten(run.outputs[0], evaluateAsWritten(b.g, feeds)[0]);
  EXPECT_EQ(run.stats.opsByDtype.at("Conv float32 -> float32"), 3);
  EXPECT_EQ(run.stats.opsByBackend.count("cpu:Relu"), 0u);  // fused into the Convs once they are float32
  EXPECT_EQ(run.stats.opsByBackend.at("cpu:Cast"), 2);  // at the graph's input and output only
  EXPECT_TRUE(run.stats.referenceOps.empty()) << run.stats.referenceOps.begin()->first;
  EXPECT_GT(run.stats.weightsPacked, 0);
}

TEST(Float16Widening, MatMulBiasMlpRunsFloat32Kernels) {
  GraphBuilder b;
  const int x = b.input("x", {1, 13, 24}, kHalf);
  const int h = b.op(OpType::Relu, {b.op(OpType::Add, {b.op(OpType::MatMul, {x, halfConstant(b, {24, 40}, 3)}),
                                                        halfConstant(b, {40}, 4)})});
  b.output(b.op(OpType::Add, {b.op(OpType::MatMul, {h, halfConstant(b, {40, 24}, 5)}), halfConstant(b, {24}, 6)}));
  const std::map<std::string, Tensor> feeds{{"x", randomTensor(kHalf, {1, 13, 24}, 2, -2, 2)}};
  const CpuRun run = runOnCpu(b.g, feeds);
  ASSERT_EQ(run.outputs.size(), 1u);
  EXPECT_EQ(run.outputs[0].shape(), (Shape{1, 13, 24}));
  expectCloseToWritten(run.outputs[0], evaluateAsWritten(b.g, feeds)[0]);
  EXPECT_EQ(run.stats.opsByDtype.at("MatMul float32 -> float32"), 2);
  EXPECT_EQ(run.stats.opsByBackend.count("cpu:Add"), 0u);  // the biases fused into the MatMuls
  EXPECT_EQ(run.stats.opsByBackend.at("cpu:Cast"), 2);
  EXPECT_TRUE(run.stats.referenceOps.empty()) << run.stats.referenceOps.begin()->first;
}

TEST(Float16Widening, GeluWithFloat16ConstantsFuses) {
  // x * (1 + erf(x / sqrt2)) * 0.5 as exporters write it, sqrt2 rounded to float16 (1.4140625).
  GraphBuilder b;
  const int x = b.input("x", {3, 17}, kHalf);
  const int erf = b.op(OpType::Erf, {b.op(OpType::Div, {x, halfScalar(b, 1.41421356f)})});
  const int inner = b.op(OpType::Mul, {x, b.op(OpType::Add, {erf, halfScalar(b, 1.f)})});
  b.output(b.op(OpType::Mul, {inner, halfScalar(b, 0.5f)}));
  const std::map<std::string, Tensor> feeds{{"x", randomTensor(kHalf, {3, 17}, 13, -4, 4)}};
  const CpuRun run = runOnCpu(b.g, feeds);
  ASSERT_EQ(run.outputs.size(), 1u);
  expectCloseToWritten(run.outputs[0], evaluateAsWritten(b.g, feeds)[0]);
  EXPECT_EQ(run.stats.opsByBackend.count("cpu:Erf"), 0u);
  EXPECT_EQ(run.stats.opsByBackend.at("cpu:Gelu"), 1);
}

TEST(Float16Widening, InteriorCastToFloat16StillRounds) {
  // 1 + 2^-12 is 1 in float16: (cast(x) - 1) * 4096 is 0 there, and would be 1 in float32.
  GraphBuilder b;
  const int x = b.input("x", {3});
  const int rounded = castTo(b, x, kHalf);
  b.output(b.op(OpType::Mul, {b.op(OpType::Sub, {rounded, halfScalar(b, 1.f)}), halfScalar(b, 4096.f)}));
  const std::map<std::string, Tensor> feeds{{"x", makeTensor<float>({3}, {1.f + 1.f / 4096, 1.5f, -1.f})}};
  const CpuRun run = runOnCpu(b.g, feeds);
  ASSERT_EQ(run.outputs.size(), 1u);
  ASSERT_EQ(run.outputs[0].dtype(), kHalf);
  EXPECT_EQ(at(run.outputs[0], 0), 0.0);
  EXPECT_EQ(at(run.outputs[0], 1), 2048.0);
  EXPECT_EQ(at(run.outputs[0], 2), -8192.0);
  EXPECT_EQ(run.stats.opsByDtype.count("Mul float16 -> float16"), 0u);  // widened, after a Cast back
}

TEST(Float16Widening, CastsOfWidenedTensorsToFloat16OrFloat32Disappear) {
  GraphBuilder b;
  const int x = b.input("x", {2, 5}, kHalf);
  const int same = castTo(b, b.op(OpType::Relu, {x}), kHalf);
  b.output(b.op(OpType::Mul, {castTo(b, same, DataType::Float32), b.scalar(3.f)}));
  const std::map<std::string, Tensor> feeds{{"x", randomTensor(kHalf, {2, 5}, 8, -2, 2)}};
  Graph widened = b.g;
  ASSERT_EQ(passes::widenFloat16(widened), 1);  // the Relu
  EXPECT_EQ(countOps(widened, OpType::Cast), 1);  // the input's; the model's own Casts are gone
  const CpuRun run = runOnCpu(b.g, feeds);
  ASSERT_EQ(run.outputs.size(), 1u);
  EXPECT_EQ(run.outputs[0].dtype(), DataType::Float32);
  expectCloseToWritten(run.outputs[0], evaluateAsWritten(b.g, feeds)[0]);
}

TEST(Float16Widening, ShapeReadsEitherFormWithoutACast) {
  GraphBuilder b;
  const int x = b.input("x", {2, 6}, kHalf);
  const int r = b.op(OpType::Relu, {x});
  b.output(b.op(OpType::Reshape, {r, b.op(OpType::Shape, {r})}));  // r's float32 form
  b.output(b.op(OpType::Shape, {x}));                               // x's float16 form
  Graph widened = b.g;
  ASSERT_EQ(passes::widenFloat16(widened), 2);  // Relu, Reshape
  EXPECT_EQ(countOps(widened, OpType::Cast), 2);  // x in, the Reshape's result out
  const std::map<std::string, Tensor> feeds{{"x", randomTensor(kHalf, {2, 6}, 14, -2, 2)}};
  const CpuRun run = runOnCpu(b.g, feeds);
  const std::vector<Tensor> want = evaluateAsWritten(b.g, feeds);
  ASSERT_EQ(run.outputs.size(), 2u);
  expectCloseToWritten(run.outputs[0], want[0]);
  expectEqualValues(run.outputs[1], want[1]);
}

TEST(Float16Widening, MixedFloat16AndFloat32Inputs) {
  GraphBuilder b;
  const int a = b.input("a", {4, 6}, kHalf);
  const int f = b.input("f", {4, 6});
  const int product = b.op(OpType::Mul, {a, a});
  b.output(b.op(OpType::Add, {castTo(b, product, DataType::Float32), f}));  // float32
  b.output(b.op(OpType::Sub, {product, halfScalar(b, 0.5f)}));              // float16
  b.output(product);                                                        // float16, also read
  const std::map<std::string, Tensor> feeds{{"a", randomTensor(kHalf, {4, 6}, 11, -3, 3)},
                                            {"f", randomTensor(DataType::Float32, {4, 6}, 12)}};
  const CpuRun run = runOnCpu(b.g, feeds);
  const std::vector<Tensor> want = evaluateAsWritten(b.g, feeds);
  ASSERT_EQ(run.outputs.size(), 3u);
  for (size_t i = 0; i < want.size(); ++i) expectCloseToWritten(run.outputs[i], want[i]);
  EXPECT_EQ(run.stats.opsByDtype.count("Mul float16 -> float16"), 0u);
}

TEST(Float16Widening, SessionKeepsFloat16InputsAndOutputs) {
  GraphBuilder b;
  const int y = b.op(OpType::Relu, {conv3x3(b, b.input("x", {1, 4, 7, 7}, kHalf), 4, 4, 20)});
  b.g.tensors[y].dtype = kHalf;  // declared, as ONNX models declare their outputs
  b.output(y);
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  for (bool ran : {false, true}) {
    if (ran) {
      std::vector<Tensor> out;
      ASSERT_TRUE(session->run({{"x", randomTensor(kHalf, {1, 4, 7, 7}, 4)}}, &out).isOk());
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dtype(), kHalf);
      EXPECT_EQ(out[0].shape(), (Shape{1, 4, 7, 7}));
    }
    ASSERT_EQ(session->inputs().size(), 1u);
    EXPECT_EQ(session->inputs()[0].dtype, kHalf);
    EXPECT_EQ(session->inputs()[0].name, "x");
    ASSERT_EQ(session->outputs().size(), 1u);
    EXPECT_EQ(session->outputs()[0].dtype, kHalf);
    EXPECT_EQ(session->outputs()[0].name, b.g.tensors[y].name);
  }
  EXPECT_EQ(interp->model().graph.nodes.size(), 2u);  // the model itself is not rewritten
  EXPECT_EQ(interp->model().graph.tensors[y].dtype, kHalf);
}

TEST(Float16Widening, SessionsOfOneModelShareTheWidenedWeights) {
  GraphBuilder b;
  b.output(conv3x3(b, b.input("x", {1, 8, 9, 9}, kHalf), 8, 8, 30));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::shared_ptr<SharedRuntime> runtime;
  ASSERT_TRUE(Interpreter::createRuntime(ScheduleConfig(), BackendConfig(), &runtime).isOk());
  const std::map<std::string, Tensor> feeds{{"x", randomTensor(kHalf, {1, 8, 9, 9}, 3)}};
  std::unique_ptr<Session> first, second;
  ASSERT_TRUE(interp->createSession(runtime, &first).isOk());
  ASSERT_TRUE(interp->createSession(runtime, &second).isOk());
  std::vector<Tensor> out1, out2;
  ASSERT_TRUE(first->run(feeds, &out1).isOk());
  ASSERT_TRUE(second->run(feeds, &out2).isOk());
  EXPECT_GT(first->stats().weightsPacked, 0);
  EXPECT_EQ(second->stats().weightsPacked, 0);
  EXPECT_GT(second->stats().weightsShared, 0);
  EXPECT_EQ(maxAbsDiff(out1[0], out2[0]), 0.0);
}

TEST(Float16Widening, IfBranchesRunWidenedInTheirOwnSessions) {
  // then: x * 2; else: x - 1, on float16; the outer graph adds before and applies Relu after.
  auto branch = [](OpType type, float c) {
    GraphBuilder body;
    const int x = body.input("bx", {2, 3}, kHalf);
    body.output(body.op(type, {x, halfScalar(body, c)}));
    body.g.tensors[body.g.outputs[0]].dtype = kHalf;
    return std::make_shared<Graph>(body.g);
  };
  GraphBuilder b;
  const int cond = b.input("cond", {}, DataType::Bool);
  const int x = b.input("x", {2, 3}, kHalf);
  const int chosen = b.op(OpType::If, {cond, b.op(OpType::Add, {x, halfScalar(b, 0.25f)})});
  b.g.nodes.back().setGraph("then_branch", branch(OpType::Mul, 2.f));
  b.g.nodes.back().setGraph("else_branch", branch(OpType::Sub, 1.f));
  b.output(b.op(OpType::Relu, {chosen}));
  for (bool take : {true, false}) {
    Tensor c(DataType::Bool, {});
    *static_cast<bool*>(c.data()) = take;
    const Tensor xs = randomTensor(kHalf, {2, 3}, 9, -2, 2);
    const CpuRun run = runOnCpu(b.g, {{"cond", c}, {"x", xs}});
    ASSERT_EQ(run.outputs.size(), 1u);
    // The same arithmetic without the If, as written.
    GraphBuilder flat;
    const int fx = flat.input("x", {2, 3}, kHalf);
    const int added = flat.op(OpType::Add, {fx, halfScalar(flat, 0.25f)});
    flat.output(flat.op(OpType::Relu, {flat.op(take ? OpType::Mul : OpType::Sub, {added, halfScalar(flat, take ? 2.f : 1.f)})}));
    expectCloseToWritten(run.outputs[0], evaluateAsWritten(flat.g, {{"x", xs}})[0]);
    EXPECT_EQ(run.stats.opsByDtype.count("Relu float16 -> float16"), 0u);
  }
}

TEST(Float16Widening, LoopBodyRunsWidenedInItsOwnSession) {
  // v = (x + 0.25), then v * 1.5 three times on float16 in the body; Relu after the Loop.
  GraphBuilder body;
  body.input("iter", {}, DataType::Int64);
  const int cond = body.input("cond", {}, DataType::Bool);
  const int v = body.input("v", {2, 3}, kHalf);
  body.output(body.op(OpType::Identity, {cond}));
  body.g.tensors[body.g.outputs[0]].dtype = DataType::Bool;
  body.output(body.op(OpType::Mul, {v, halfScalar(body, 1.5f)}));
  body.g.tensors[body.g.outputs[1]].dtype = kHalf;
  GraphBuilder b;
  const int x = b.input("x", {2, 3}, kHalf);
  const int trips = b.integers(DataType::Int64, {3}, {});
  const int always = b.integers(DataType::Bool, {1}, {});
  const int loop = b.op(OpType::Loop, {trips, always, b.op(OpType::Add, {x, halfScalar(b, 0.25f)})});
  b.g.nodes.back().setGraph("body", std::make_shared<Graph>(body.g));
  b.output(b.op(OpType::Relu, {loop}));
  const Tensor xs = randomTensor(kHalf, {2, 3}, 10, -2, 2);
  const CpuRun run = runOnCpu(b.g, {{"x", xs}});
  ASSERT_EQ(run.outputs.size(), 1u);
  GraphBuilder flat;
  int y = flat.op(OpType::Add, {flat.input("x", {2, 3}, kHalf), halfScalar(flat, 0.25f)});
  for (int i = 0; i < 3; ++i) y = flat.op(OpType::Mul, {y, halfScalar(flat, 1.5f)});
  flat.output(flat.op(OpType::Relu, {y}));
  expectCloseToWritten(run.outputs[0], evaluateAsWritten(flat.g, {{"x", xs}})[0]);
  EXPECT_EQ(run.stats.opsByDtype.count("Relu float16 -> float16"), 0u);
  EXPECT_EQ(run.stats.opsByDtype.count("Add float16 -> float16"), 0u);
}

// The CPU's Cast at the widened graph's edges converts as the reference Cast does, bit for bit.
TEST(Float16Widening, CpuCastMatchesTheReferenceConversions) {
  std::vector<uint16_t> codes(65536 + 5);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i);
  std::vector<float> widened(codes.size());
  halvesToFloats(codes.data(), widened.data(), static_cast<int64_t>(codes.size()));
  for (size_t i = 0; i < codes.size(); ++i) {
    const float want = halfToFloat(codes[i]);
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(widened[i])) << "code " << i;
    else
      ASSERT_EQ(widened[i], want) << "code " << i;
  }
  // Every half value, the midpoints between neighbours (ties to even), just off them, past the
  // largest half, and below the smallest subnormal.
  std::vector<float> floats = {65504.f, 65519.f, 65520.f, 1e6f, -1e6f, INFINITY, -INFINITY, 1e-9f, -3e-8f, 0.f, -0.f};
  for (uint32_t c = 0; c < 0x7c00; ++c) {
    const float a = halfToFloat(static_cast<uint16_t>(c)), b = halfToFloat(static_cast<uint16_t>(c + 1));
    const float mid = 0.5f * (a + b);
    for (float v : {a, mid, std::nextafter(mid, a), std::nextafter(mid, b)}) floats.insert(floats.end(), {v, -v});
  }
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fc12345u, 0xff9fe000u}) {
    float v;
    std::memcpy(&v, &nan, 4);
    floats.push_back(v);
  }
  std::vector<uint16_t> narrowed(floats.size());
  floatsToHalves(floats.data(), narrowed.data(), static_cast<int64_t>(floats.size()));
  for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(narrowed[i], floatToHalf(floats[i])) << floats[i];
}

TEST(Float16Widening, DeclinesWhereFloat16MeetsAnUnknownDtype) {
  GraphBuilder b;
  const int u = b.input("u", {3}, DataType::Undefined);
  b.output(b.op(OpType::Add, {u, halfScalar(b, 1.f)}));
  Graph g = b.g;
  EXPECT_EQ(passes::widenFloat16(g), 0);
  EXPECT_EQ(g.nodes.size(), b.g.nodes.size());
  EXPECT_EQ(g.tensors.size(), b.g.tensors.size());
}

TEST(Float16Widening, LeavesFloat32GraphsAlone) {
  GraphBuilder b;
  b.output(b.op(OpType::Relu, {b.input("x", {3})}));
  Graph g = b.g;
  EXPECT_EQ(passes::widenFloat16(g), 0);
  EXPECT_EQ(g.tensors.size(), b.g.tensors.size());
}

}  // namespace
}  // namespace osprey::test
