// The CPU backend's NC8HW8 layout (src/backends/cpu/kernels/nc8hw8*): every native packed
// execution against the op's reference kernel on seeded random data, through sessions run with
// CpuOptions::layout NC8HW8, on channel counts that leave padding in the last block (3, 13, 20),
// odd planes, every stride / pad / activation / residual case and 1 and 2 threads; the packed
// kernels of both function tables against naive sums; and small networks whose packed run
// must equal the NCHW run of the same graph. Each session checks relaidTensors > 0, so no test
// passes on an NCHW run.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>

#include "../unit/graph_builder.h"
#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/nc8hw8.h"
#include "ops/activation.h"
#include "ops/op_def.h"
#include "cpu_conv_case.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

using Kind = FusedActivation::Kind;

struct Ran {
  Status status;
  std::vector<Tensor> outputs;
  int relaid = 0;
};

Ran runModel(std::shared_ptr<Model> model, const std::map<std::string, Tensor>& feeds, int threads, const char* layout) {
  Ran ran;
  std::shared_ptr<Interpreter> interp;
  ran.status = Interpreter::fromModel(std::move(model), &interp);
  if (!ran.status) return ran;
  ScheduleConfig schedule;
  schedule.threads = threads;
  std::unique_ptr<Session> session;
  BackendConfig config;
  config.cpu.layout = std::string(layout) == "nc8hw8" ? CpuOptions::Layout::NC8HW8 : CpuOptions::Layout::NCHW;
  ran.status = interp->createSession(schedule, config, &session);
  if (!ran.status) return ran;
  ran.status = session->run(feeds, &ran.outputs);
  ran.relaid = session->stats().relaidTensors;
  return ran;
}

// The packed session's output of one node against the node's reference kernel.
// `packed`: whether the op must run packed (relaid tensors) or refuse (its group stays NCHW).
void checkPackedOp(const Node& node, const std::vector<OpInput>& inputs, int threads = 1, bool packed = true) {
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(node, inputs, 1, &feeds);
  Ran ran = runModel(model, feeds, threads, "nc8hw8");
  ASSERT_TRUE(ran.status) << ran.status.message();
  if (packed) {
    EXPECT_GT(ran.relaid, 0);
  } else {
    EXPECT_EQ(ran.relaid, 0);
  }
  std::vector<Tensor> expected;
  Status st = referenceOp(node, inputs, 1, &expected);
  ASSERT_TRUE(st) << st.message();
  ASSERT_EQ(ran.outputs[0].shape(), expected[0].shape());
  expectNear(ran.outputs[0], expected[0], 1e-4, 1e-4);
}

// Whether the packed execution of node on these inputs is native (not converted around NCHW).
bool runsNatively(const Node& node, const std::vector<OpInput>& inputs, const Shape& outShape) {
  CPURuntime runtime(1);
  auto backend = runtime.onCreate(BackendConfig());
  std::vector<RuntimeTensor> tensors(inputs.size() + 1);
  std::vector<RuntimeTensor*> ins, outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].absent) {
      ins.push_back(nullptr);
      continue;
    }
    tensors[i].dtype = inputs[i].value.dtype();
    tensors[i].shape = inputs[i].value.shape();
    if (inputs[i].constant) tensors[i].constData = static_cast<const uint8_t*>(inputs[i].value.data());
    ins.push_back(&tensors[i]);
  }
  tensors.back().dtype = DataType::Float32;
  tensors.back().shape = outShape;
  outs.push_back(&tensors.back());
  OpRef op;
  op.type = node.type;
  op.node = &node;
  auto* cpu = static_cast<CPUBackend*>(backend.get());
  if (node.type == OpType::Conv) return createNc8hw8ConvExecution(cpu, op, ins, outs) != nullptr;
  return createNc8hw8PoolExecution(cpu, op, ins, outs) != nullptr;
}

using ConvCase = CpuConvCase;

void checkConv(const ConvCase& k, uint32_t seed) {
  const BuiltConv conv = buildConvCase(k, seed);
  SCOPED_TRACE(describeConvCase(k));
  EXPECT_TRUE(runsNatively(conv.node, conv.inputs, conv.outShape));
  checkPackedOp(conv.node, conv.inputs, k.threads);
}

TEST(CpuNc8hw8, ConvPointwise) {
  // Channel counts on both sides of the 8-wide blocks and the 2-block tile; positions around
  // the 6-position tile and the chunking of a plane; every epilogue.
  uint32_t seed = 1;
  for (int64_t c : {3, 13, 20})
    for (int64_t m : {1, 5, 13, 20, 40})
      for (int64_t hw : {1, 5, 13})
        checkConv({1, c, hw, hw + 2, m, 1, 1, 1, 1, 0, 1, m % 2 == 1, Kind::Relu, false, hw == 13 ? 2 : 1}, seed++);
  checkConv({2, 300, 7, 9, 13, 1, 1, 1, 1, 0, 1, true, Kind::Clip, true, 2}, seed++);  // deep, batch 2
  checkConv({1, 48, 3, 5, 30, 1, 1, 1, 1, 0, 1, false, Kind::Sigmoid, true}, seed++);
  checkConv({1, 24, 29, 31, 20, 1, 1, 1, 1, 0, 1, true, Kind::HardSwish, true, 2}, seed++);
  checkConv({1, 16, 9, 9, 16, 1, 1, 1, 1, 0, 1, true, Kind::None, true}, seed++);
  checkConv({1, 64, 40, 40, 8, 1, 1, 1, 1, 0, 1, true, Kind::LeakyRelu, false, 2}, seed++);  // chunks outer
}

TEST(CpuNc8hw8, ConvDirect) {
  uint32_t seed = 100;
  for (int threads : {1, 2}) {
    checkConv({1, 3, 13, 13, 7, 3, 3, 1, 1, 1, 1, true, Kind::Relu, false, threads}, seed++);
    checkConv({1, 13, 13, 11, 17, 3, 3, 1, 2, 1, 1, true, Kind::Clip, true, threads}, seed++);   // strided, padded
    checkConv({2, 3, 17, 19, 13, 7, 7, 1, 2, 3, 1, false, Kind::None, false, threads}, seed++);  // stem-like
    checkConv({1, 20, 12, 12, 20, 3, 3, 1, 1, 2, 2, true, Kind::LeakyRelu, true, threads}, seed++);  // dilated
    checkConv({1, 8, 13, 13, 16, 1, 1, 1, 2, 0, 1, true, Kind::None, true, threads}, seed++);     // strided 1x1
    checkConv({1, 40, 9, 9, 23, 3, 3, 1, 1, 1, 1, true, Kind::Sigmoid, false, threads}, seed++);
    checkConv({1, 3, 5, 6, 4, 2, 3, 1, 1, 0, 1, true, Kind::HardSwish, false, threads}, seed++);  // non-square kernel
    checkConv({1, 13, 41, 39, 8, 3, 3, 1, 2, 1, 1, true, Kind::Clip, false, threads}, seed++);   // wide rows
    checkConv({1, 5, 23, 26, 5, 3, 3, 1, 3, 1, 1, true, Kind::Relu, true, threads}, seed++);     // stride 3
    checkConv({1, 13, 17, 12, 20, 3, 3, 1, 1, 0, 1, true, Kind::Relu, true, threads, {0, 1, 1, 0}}, seed++);
    checkConv({1, 20, 1, 1, 13, 3, 3, 1, 1, 1, 1, true, Kind::None, false, threads}, seed++);   // all padding
    checkConv({1, 13, 2, 3, 9, 5, 5, 1, 1, 2, 1, true, Kind::Relu, true, threads}, seed++);     // smaller than the window
    checkConv({1, 16, 7, 7, 40, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true, threads}, seed++);    // a 7x7 map
  }
}

TEST(CpuNc8hw8, ConvDepthwise) {
  uint32_t seed = 200;
  for (int threads : {1, 2}) {
    for (int64_t c : {3, 13, 20}) {
      checkConv({1, c, 13, 13, c, 3, 3, c, 1, 1, 1, true, Kind::Clip, false, threads}, seed++);
      checkConv({2, c, 17, 15, c, 3, 3, c, 2, 1, 1, true, Kind::Relu, true, threads}, seed++);
      checkConv({1, c, 14, 14, c, 5, 5, c, 1, 2, 1, true, Kind::Sigmoid, true, threads}, seed++);
      checkConv({1, c, 28, 31, c, 5, 5, c, 2, 2, 1, false, Kind::Clip, false, threads}, seed++);
    }
    checkConv({1, 8, 9, 9, 8, 3, 3, 8, 1, 2, 2, true, Kind::None, false, threads}, seed++);   // dilated
    checkConv({1, 13, 1, 1, 13, 3, 3, 13, 1, 1, 1, true, Kind::Relu, true, threads}, seed++);  // all padding
    checkConv({1, 16, 4, 4, 16, 5, 5, 16, 1, 2, 1, true, Kind::None, false, threads}, seed++);  // smaller than the window
    checkConv({1, 12, 11, 9, 12, 5, 5, 12, 1, 0, 1, false, Kind::None, true, threads}, seed++);  // unpadded
    checkConv({1, 13, 40, 33, 13, 3, 3, 13, 3, 1, 1, true, Kind::HardSwish, false, threads}, seed++);  // stride 3
    checkConv({1, 9, 7, 45, 9, 3, 3, 9, 1, 1, 1, true, Kind::Relu, false, threads, {1, 0, 0, 2}}, seed++);
  }
}

TEST(CpuNc8hw8, UncoveredOpsKeepTheirGroupNchwOrConvertPooledVectors) {
  // A grouped convolution has no packed kernel: its whole group stays NCHW (nothing relaid).
  Node node;
  node.type = OpType::Conv;
  node.setInt("group", 3);
  node.setInts("pads", {1, 1, 1, 1});
  std::vector<OpInput> inputs{in(randomTensor(DataType::Float32, {1, 12, 9, 9}, 1)),
                              constant(randomTensor(DataType::Float32, {18, 4, 3, 3}, 2))};
  EXPECT_FALSE(runsNatively(node, inputs, {1, 18, 9, 9}));
  checkPackedOp(node, inputs, 2, false);
  // On pooled vectors it converts around its NCHW kernel, and the packed group holds.
  std::vector<OpInput> pooled{in(randomTensor(DataType::Float32, {2, 12, 1, 1}, 3)),
                              constant(randomTensor(DataType::Float32, {18, 4, 1, 1}, 4))};
  Node pointwise = makeNode(OpType::Conv);
  pointwise.setInt("group", 3);
  checkPackedOp(pointwise, pooled, 1);
}

TEST(CpuNc8hw8, Pools) {
  uint32_t seed = 300;
  struct PoolCase {
    OpType type;
    int64_t c, h, w, k, stride, pad;
    bool ceil, includePad;
  };
  for (const PoolCase& p : std::vector<PoolCase>{{OpType::MaxPool, 13, 17, 15, 3, 2, 1, false, false},
                                                 {OpType::MaxPool, 20, 13, 13, 3, 2, 0, true, false},
                                                 {OpType::MaxPool, 3, 8, 9, 2, 2, 0, false, false},
                                                 {OpType::AveragePool, 13, 11, 12, 3, 1, 1, false, false},
                                                 {OpType::AveragePool, 13, 11, 12, 3, 2, 1, false, true},
                                                 {OpType::AveragePool, 20, 7, 7, 2, 2, 0, true, false}}) {
    for (int threads : {1, 2}) {
      Node node;
      node.type = p.type;
      node.setInts("kernel_shape", {p.k, p.k});
      node.setInts("strides", {p.stride, p.stride});
      node.setInts("pads", {p.pad, p.pad, p.pad, p.pad});
      node.setInt("ceil_mode", p.ceil);
      if (p.type == OpType::AveragePool) node.setInt("count_include_pad", p.includePad);
      std::vector<OpInput> inputs{in(randomTensor(DataType::Float32, {2, p.c, p.h, p.w}, seed++))};
      SCOPED_TRACE(::testing::Message() << opTypeName(p.type) << " c=" << p.c << " k=" << p.k << " ceil=" << p.ceil);
      EXPECT_TRUE(runsNatively(node, inputs, {2, p.c, 1, 1}));
      checkPackedOp(node, inputs, threads);
    }
  }
  for (int64_t c : {3, 13, 20, 64}) {
    Node gap = makeNode(OpType::GlobalAveragePool);
    std::vector<OpInput> inputs{in(randomTensor(DataType::Float32, {2, c, 9, 11}, seed++))};
    EXPECT_TRUE(runsNatively(gap, inputs, {2, c, 1, 1}));
    checkPackedOp(gap, inputs, 2);
  }
}

TEST(CpuNc8hw8, Elementwise) {
  uint32_t seed = 400;
  const Shape x{2, 13, 7, 9};
  for (OpType type : {OpType::Relu, OpType::Sigmoid, OpType::Swish, OpType::Tanh, OpType::Exp, OpType::HardSwish}) {
    SCOPED_TRACE(opTypeName(type));
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, x, seed++, -3, 3))}, 2);
  }
  Node clip = makeNode(OpType::Clip);
  checkPackedOp(clip, {in(randomTensor(DataType::Float32, x, seed++, -3, 3)), constant(makeTensor<float>({}, {-0.5f})),
                       constant(makeTensor<float>({}, {0.75f}))});
  for (OpType type : {OpType::Add, OpType::Sub, OpType::Mul, OpType::Div, OpType::Max}) {
    SCOPED_TRACE(opTypeName(type));
    // Same shape, a per-channel activation (squeeze-and-excitation), per-channel constants of
    // each rank, a scalar constant.
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, x, seed++)),
                                   in(randomTensor(DataType::Float32, x, seed++, 0.5, 2))}, 2);
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, x, seed++)),
                                   in(randomTensor(DataType::Float32, {2, 13, 1, 1}, seed++, 0.5, 2))});
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, {1, 13, 1, 1}, seed++, 0.5, 2)),
                                   in(randomTensor(DataType::Float32, x, seed++))});
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, x, seed++)),
                                   constant(randomTensor(DataType::Float32, {13, 1, 1}, seed++, 0.5, 2))});
    checkPackedOp(makeNode(type), {constant(randomTensor(DataType::Float32, {1, 13, 1, 1}, seed++, 0.5, 2)),
                                   in(randomTensor(DataType::Float32, x, seed++))});
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, x, seed++)),
                                   constant(makeTensor<float>({1}, {0.75f}))});
    // Broadcasts the packing would break keep NCHW.
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, x, seed++)),
                                   in(randomTensor(DataType::Float32, {2, 1, 7, 9}, seed++, 0.5, 2))}, 1, false);
    checkPackedOp(makeNode(type), {in(randomTensor(DataType::Float32, x, seed++)),
                                   constant(randomTensor(DataType::Float32, {9}, seed++, 0.5, 2))}, 1, false);
  }
}

// The packed kernels of both function tables against a naive sum.
TEST(CpuNc8hw8, ConvTileBothTables) {
  const int64_t inBlocks = 3, plane = 40, taps = 3;
  Tensor x = randomTensor(DataType::Float32, {inBlocks * plane * 8}, 1);
  Tensor w = randomTensor(DataType::Float32, {2 * taps * inBlocks * 64}, 2);
  Tensor bias = randomTensor(DataType::Float32, {16}, 3);
  Tensor z = randomTensor(DataType::Float32, {2 * 12 * 8}, 4);
  const int64_t offsets[taps] = {0, 8, 40}, tapWeights[taps] = {2, 0, 1};
  Nc8ConvArgs a;
  a.tapOffsets = offsets, a.tapWeights = tapWeights, a.taps = taps;
  a.inBlocks = inBlocks, a.inBlockStride = plane * 8, a.positionStride = 16;
  a.weightBlockStride = taps * inBlocks * 64, a.outBlockStride = 12 * 8;
  // Position strides 8 and 16 (stride 1 and 2, fixed in the AVX2 tiles) and any other; a last
  // input block with all 8 or only 3 real channels.
  for (const auto& [clamp, stride, lanes] : std::vector<std::tuple<bool, int64_t, int64_t>>{
           {false, 16, 8}, {true, 16, 8}, {false, 8, 8}, {true, 8, 3}, {false, 24, 3}, {true, 24, 8}}) {
    a.lo = clamp ? 0.f : -std::numeric_limits<float>::infinity();
    a.hi = clamp ? 0.5f : std::numeric_limits<float>::infinity();
    a.positionStride = stride, a.inLanes = lanes;
    for (int64_t positions = 1; positions <= 6; ++positions)
      for (int64_t outBlocks = 1; outBlocks <= 2; ++outBlocks)
        for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
          std::vector<float> y(2 * 12 * 8, -7.f);
          fn->nc8Conv(a, positions, outBlocks, x.data<float>(), w.data<float>(), bias.data<float>(), z.data<float>(),
                      y.data());
          for (int64_t k = 0; k < 2; ++k)
            for (int64_t p = 0; p < 12; ++p)
              for (int64_t l = 0; l < 8; ++l) {
                const int64_t at = k * a.outBlockStride + p * 8 + l;
                if (k >= outBlocks || p >= positions) {
                  ASSERT_EQ(y[at], -7.f) << fn->isa << ": wrote outside its tile";
                  continue;
                }
                double s = bias.data<float>()[k * 8 + l] + z.data<float>()[at];
                for (int64_t t = 0; t < taps; ++t)
                  for (int64_t b = 0; b < inBlocks; ++b)
                    for (int64_t i = 0; i < (b + 1 == inBlocks ? lanes : 8); ++i)
                      s += double(x.data<float>()[p * a.positionStride + offsets[t] + b * a.inBlockStride + i]) *
                           w.data<float>()[k * a.weightBlockStride + (tapWeights[t] * inBlocks + b) * 64 + i * 8 + l];
                const double expected = clamp ? std::min(0.5, std::max(0.0, s)) : s;
                ASSERT_NEAR(y[at], expected, 1e-4) << fn->isa << " positions=" << positions << " blocks=" << outBlocks
                                                    << " stride=" << stride << " lanes=" << lanes;
              }
        }
  }
}

TEST(CpuNc8hw8, DepthwiseRowBothTables) {
  struct Case {
    int64_t k, stride, dilation, h, w, pad;
  };
  for (const Case& c : std::vector<Case>{{3, 1, 1, 7, 13, 1}, {3, 2, 1, 13, 11, 1}, {5, 1, 1, 9, 7, 2}, {5, 2, 1, 15, 17, 2},
                                         {3, 1, 2, 9, 12, 2}, {7, 1, 1, 9, 9, 3}, {3, 3, 1, 10, 29, 0}, {5, 1, 1, 3, 3, 2}}) {
    BlockedDepthwiseArgs a;
    a.inH = c.h, a.inW = c.w, a.kernelH = a.kernelW = c.k, a.strideH = a.strideW = c.stride;
    a.dilationH = a.dilationW = c.dilation, a.padH = a.padW = c.pad;
    const int64_t outH = (c.h + 2 * c.pad - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    a.outW = (c.w + 2 * c.pad - c.dilation * (c.k - 1) - 1) / c.stride + 1;
    Tensor x = randomTensor(DataType::Float32, {c.h * c.w * 8}, 1), w = randomTensor(DataType::Float32, {c.k * c.k * 8}, 2);
    Tensor bias = randomTensor(DataType::Float32, {8}, 3), z = randomTensor(DataType::Float32, {a.outW * 8}, 4, -2, 2);
    for (bool clamp : {false, true}) {
      a.lo = clamp ? 0.f : -std::numeric_limits<float>::infinity();
      a.hi = clamp ? 0.5f : std::numeric_limits<float>::infinity();
      for (int64_t oh = 0; oh < outH; ++oh)
        for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
          std::vector<float> y(a.outW * 8, -7.f);
          fn->nc8DepthwiseRow(a, oh, x.data<float>(), w.data<float>(), bias.data<float>(), z.data<float>(), y.data());
          for (int64_t ow = 0; ow < a.outW; ++ow)
            for (int64_t l = 0; l < 8; ++l) {
              double s = bias.data<float>()[l] + z.data<float>()[ow * 8 + l];
              for (int64_t kh = 0; kh < c.k; ++kh)
                for (int64_t kw = 0; kw < c.k; ++kw) {
                  const int64_t ih = oh * c.stride - c.pad + kh * c.dilation, iw = ow * c.stride - c.pad + kw * c.dilation;
                  if (ih >= 0 && ih < c.h && iw >= 0 && iw < c.w)
                    s += double(x.data<float>()[(ih * c.w + iw) * 8 + l]) * w.data<float>()[(kh * c.k + kw) * 8 + l];
                }
              const double expected = clamp ? std::min(0.5, std::max(0.0, s)) : s;
              ASSERT_NEAR(y[ow * 8 + l], expected, 1e-4) << fn->isa << " k=" << c.k << " stride=" << c.stride
                                                          << " dilation=" << c.dilation << " oh=" << oh << " ow=" << ow;
            }
        }
    }
  }
}

TEST(CpuNc8hw8, PackAndUnpack) {
  Tensor x = randomTensor(DataType::Float32, {2, 13, 5, 3}, 1);
  std::vector<float> packed(2 * 16 * 15, -7.f), back(x.elements(), 0.f);
  packNc8hw8(x.data<float>(), 2, 13, 15, packed.data());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 16; ++c)
      for (int64_t s = 0; s < 15; ++s)
        ASSERT_EQ(packed[((n * 2 + c / 8) * 15 + s) * 8 + c % 8], c < 13 ? x.data<float>()[(n * 13 + c) * 15 + s] : 0.f);
  unpackNc8hw8(packed.data(), 2, 13, 15, back.data());
  for (int64_t i = 0; i < x.elements(); ++i) ASSERT_EQ(back[i], x.data<float>()[i]);
}

// A graph run packed and in NCHW: the same outputs, and tensors really relaid.
void expectSameAsNchw(const Graph& g, const std::map<std::string, Tensor>& feeds, double tolerance) {
  for (int threads : {1, 2}) {
    auto model = std::make_shared<Model>();
    model->graph = g;
    Ran plain = runModel(model, feeds, threads, "nchw");
    Ran packed = runModel(model, feeds, threads, "nc8hw8");
    ASSERT_TRUE(plain.status) << plain.status.message();
    ASSERT_TRUE(packed.status) << packed.status.message();
    EXPECT_EQ(plain.relaid, 0);
    EXPECT_GT(packed.relaid, 0);
    ASSERT_EQ(packed.outputs.size(), plain.outputs.size());
    for (size_t i = 0; i < plain.outputs.size(); ++i) expectNear(packed.outputs[i], plain.outputs[i], tolerance, tolerance);
  }
}

int conv(GraphBuilder& b, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group, Kind act,
         uint32_t seed, int residual = -1) {
  std::vector<int> inputs{x, b.weights(randomTensor(DataType::Float32, {cout, cin / group, k, k}, seed, -0.5, 0.5)),
                          b.weights(randomTensor(DataType::Float32, {cout}, seed + 1))};
  if (residual >= 0) inputs.push_back(residual);
  const int y = b.op(OpType::Conv, inputs);
  Node& n = b.g.nodes.back();
  n.setInts("kernel_shape", {k, k});
  n.setInts("strides", {stride, stride});
  n.setInts("pads", {k / 2, k / 2, k / 2, k / 2});
  n.setInt("group", group);
  if (act != Kind::None) {
    FusedActivation a;
    a.kind = act, a.a = 0.f, a.b = 6.f;
    a.store(n);
  }
  return y;
}

TEST(CpuNc8hw8, InvertedResidualNetwork) {
  // MobileNetV2's shape: stem, expand, depthwise, project with the residual added, a strided
  // block, pooling and a Flatten (converted back at the end), channel counts off the blocks.
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 31, 29});
  const int stem = conv(b, x, 3, 13, 3, 2, 1, Kind::Clip, 1);
  const int expand = conv(b, stem, 13, 20, 1, 1, 1, Kind::Clip, 3);
  const int dw = conv(b, expand, 20, 20, 3, 1, 20, Kind::Clip, 5);
  const int project = conv(b, dw, 20, 13, 1, 1, 1, Kind::None, 7, stem);
  const int dw2 = conv(b, project, 13, 13, 5, 2, 13, Kind::Relu, 9);
  const int sum = b.op(OpType::Add, {dw2, conv(b, dw2, 13, 13, 1, 1, 1, Kind::None, 11)});
  const int pooled = b.op(OpType::GlobalAveragePool, {sum});
  const int flat = b.op(OpType::Flatten, {pooled});
  b.output(flat);
  b.output(b.op(OpType::MaxPool, {sum}));
  b.g.nodes.back().setInts("kernel_shape", {3, 3});
  expectSameAsNchw(b.g, {{"x", randomTensor(DataType::Float32, {1, 3, 31, 29}, 20)}}, 1e-4);
}

TEST(CpuNc8hw8, SqueezeExciteNetwork) {
  // EfficientNet's squeeze-and-excitation: pool, 1x1 convolutions on the pooled vector,
  // Sigmoid, Mul by the per-channel scale; then Add and Swish, batch 2.
  GraphBuilder b;
  const int x = b.input("x", {2, 20, 11, 13});
  const int a = conv(b, x, 20, 24, 3, 1, 1, Kind::Relu, 1);
  const int squeezed = b.op(OpType::GlobalAveragePool, {a});
  const int reduce = conv(b, squeezed, 24, 5, 1, 1, 1, Kind::Relu, 3);
  const int scale = b.op(OpType::Sigmoid, {conv(b, reduce, 5, 24, 1, 1, 1, Kind::None, 5)});
  const int excited = b.op(OpType::Mul, {a, scale});
  const int sum = b.op(OpType::Add, {excited, conv(b, x, 20, 24, 1, 1, 1, Kind::Relu, 7)});
  b.output(b.op(OpType::Swish, {sum}));
  expectSameAsNchw(b.g, {{"x", randomTensor(DataType::Float32, {2, 20, 11, 13}, 30)}}, 1e-4);
}

TEST(CpuNc8hw8, BadModelsFailCleanly) {
  // A Conv whose weights do not match its input: an error naming the op, in either layout.
  GraphBuilder b;
  const int x = b.input("x", {1, 13, 9, 9});
  b.output(b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {8, 5, 3, 3}, 1))}));
  b.g.nodes.back().setInts("kernel_shape", {3, 3});
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  Ran ran = runModel(model, {{"x", randomTensor(DataType::Float32, {1, 13, 9, 9}, 2)}}, 2, "nc8hw8");
  EXPECT_FALSE(ran.status);
}

}  // namespace
}  // namespace osprey::test
