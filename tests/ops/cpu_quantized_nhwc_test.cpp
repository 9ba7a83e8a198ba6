// The CPU's channels-last layout for int8 / uint8 activations (CpuOptions::QuantizedLayout): small
// quantized networks run with their bytes in NHWC must give the very bytes of the same network
// run in NCHW (both compute exact integer sums and the same requantisation), for uint8 and int8
// activations, batch 2, one and two threads. Each NHWC session checks that the pipeline relaid
// tensors, and each NCHW one that it did not, so no test passes on the wrong layout. Ops without
// a channels-last kernel (the reference QLinearGlobalAveragePool, byte MaxPool, a Transpose) run
// converted around their NCHW kernels; a group of bytes without a convolution stays NCHW.
#include <string>

#include "../unit/graph_builder.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

using QLayout = CpuOptions::QuantizedLayout;

struct Ran {
  Status status;
  std::vector<Tensor> outputs;
  int relaid = 0;
};

Ran runGraph(const Graph& g, const std::map<std::string, Tensor>& feeds, int threads, QLayout layout) {
  Ran ran;
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  ran.status = Interpreter::fromModel(std::move(model), &interp);
  if (!ran.status) return ran;
  ScheduleConfig schedule;
  schedule.threads = threads;
  BackendConfig config;
  config.cpu.quantizedLayout = layout;
  std::unique_ptr<Session> session;
  ran.status = interp->createSession(schedule, config, &session);
  if (!ran.status) return ran;
  ran.status = session->run(feeds, &ran.outputs);
  ran.relaid = session->stats().relaidTensors;
  return ran;
}

// NHWC and NCHW runs of g agree exactly; `relays` says whether the NHWC run must relay tensors.
void expectSameBytesInBothLayouts(const Graph& g, const std::map<std::string, Tensor>& feeds, bool relays = true) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    Ran planes = runGraph(g, feeds, threads, QLayout::NCHW);
    Ran rows = runGraph(g, feeds, threads, QLayout::NHWC);
    ASSERT_TRUE(planes.status) << planes.status.message();
    ASSERT_TRUE(rows.status) << rows.status.message();
    EXPECT_EQ(planes.relaid, 0);
    EXPECT_EQ(rows.relaid > 0, relays);
    ASSERT_EQ(rows.outputs.size(), planes.outputs.size());
    for (size_t i = 0; i < planes.outputs.size(); ++i) expectEqualValues(rows.outputs[i], planes.outputs[i]);
  }
}

// Quantized-network building blocks: every activation has one scale and zero point of `type`.
struct QBuilder {
  GraphBuilder& b;
  DataType type;
  uint32_t seed = 1;

  int zero(int32_t v) { return b.integers(type, {v}, {}); }
  int defaultZero() { return zero(type == DataType::Int8 ? -5 : 123); }

  int quantize(int x, float scale) { return b.op(OpType::QuantizeLinear, {x, b.scalar(scale), defaultZero()}); }
  int dequantize(int x, float scale) { return b.op(OpType::DequantizeLinear, {x, b.scalar(scale), defaultZero()}); }

  // QLinearConv of x (scale xs) into scale ys; int8 weights per channel, int32 bias.
  int conv(int x, float xs, float ys, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t group) {
    const Tensor w = randomBytes(DataType::Int8, {cout, cin / group, k, k}, seed++);
    const Tensor ws = randomTensor(DataType::Float32, {cout}, seed++, 0.002, 0.02);
    std::vector<int64_t> zeros(static_cast<size_t>(cout), 0);
    const int y = b.op(OpType::QLinearConv, {x, b.scalar(xs), defaultZero(), b.weights(w), b.weights(ws),
                                             b.integers(DataType::Int8, zeros, {cout}), b.scalar(ys), defaultZero(),
                                             b.weights(randomTensor(DataType::Int32, {cout}, seed++, -2000, 2000))});
    Node& n = b.g.nodes.back();
    n.setInts("kernel_shape", {k, k});
    n.setInts("strides", {stride, stride});
    n.setInts("pads", {k / 2, k / 2, k / 2, k / 2});
    n.setInt("group", group);
    return y;
  }
  int binary(OpType type, int a, float as, int c, float cs, float ys) {
    return b.op(type, {a, b.scalar(as), defaultZero(), c, b.scalar(cs), defaultZero(), b.scalar(ys), defaultZero()});
  }
  int unary(OpType type, int x, float xs, float ys) {
    return b.op(type, {x, b.scalar(xs), defaultZero(), b.scalar(ys), defaultZero()});
  }
};

void invertedResidualNetwork(DataType type) {
  SCOPED_TRACE(dataTypeName(type));
  GraphBuilder b;
  QBuilder q{b, type};
  const int x = b.input("x", {2, 3, 23, 19});
  const int input = q.quantize(x, 0.03f);
  const int stem = q.conv(input, 0.03f, 0.05f, 3, 13, 3, 2, 1);
  const int expand = q.conv(stem, 0.05f, 0.04f, 13, 20, 1, 1, 1);
  const int dw = q.conv(expand, 0.04f, 0.06f, 20, 20, 3, 1, 20);
  const int project = q.conv(dw, 0.06f, 0.05f, 20, 13, 1, 1, 1);
  const int sum = q.binary(OpType::QLinearAdd, project, 0.05f, stem, 0.05f, 0.07f);
  const int dw2 = q.conv(sum, 0.07f, 0.05f, 13, 13, 5, 2, 13);
  const int gate = q.unary(OpType::QLinearSigmoid, dw2, 0.05f, 1.f / 256);
  b.output(b.op(OpType::ByteLookup, {gate, b.weights(randomBytes(type, {256}, 77))}));
  // Squeeze-and-excitation: the pooled vector [N, C, 1, 1] broadcast over the map.
  const int pooled = q.unary(OpType::QLinearGlobalAveragePool, gate, 1.f / 256, 1.f / 256);
  const int excited = q.binary(OpType::QLinearMul, dw2, 0.05f, pooled, 1.f / 256, 0.02f);
  const int wide = q.conv(excited, 0.02f, 0.03f, 13, 24, 3, 1, 1);
  b.output(q.dequantize(wide, 0.03f));
  b.output(wide);  // bytes as a graph output: converted back to NCHW for the caller
  const int maxPooled = b.op(OpType::MaxPool, {wide});
  b.g.nodes.back().setInts("kernel_shape", {3, 3});
  b.output(q.dequantize(maxPooled, 0.03f));
  b.output(b.transpose(wide, {0, 2, 3, 1}));
  // A segmentation head's upsampling of codes (TFLite's RESIZE_BILINEAR as the importer writes it).
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    b.output(b.op(OpType::Resize, {wide, b.floats({}, {0}), b.floats({1, 1, 2.5f, 3}, {4})}));
    b.g.nodes.back().setString("mode", mode);
    b.g.nodes.back().setString("integer_rounding", "half_up");
  }
  expectSameBytesInBothLayouts(b.g, {{"x", randomTensor(DataType::Float32, {2, 3, 23, 19}, 5, -3, 3)}});
}

TEST(CpuQuantizedNhwc, InvertedResidualNetworkUint8) { invertedResidualNetwork(DataType::UInt8); }
TEST(CpuQuantizedNhwc, InvertedResidualNetworkInt8) { invertedResidualNetwork(DataType::Int8); }

TEST(CpuQuantizedNhwc, ResidualNetworkWithGroupedAndStridedConvolutions) {
  // ResNet's and ResNeXt's shapes: a 7x7 stride-2 stem, a grouped 3x3, a 1x1 stride 2 shortcut,
  // channel counts that leave the GEMM's blocks partly used.
  GraphBuilder b;
  QBuilder q{b, DataType::UInt8};
  const int x = b.input("x", {2, 3, 30, 27});
  const int stem = q.conv(q.quantize(x, 0.02f), 0.02f, 0.05f, 3, 16, 7, 2, 1);
  const int grouped = q.conv(stem, 0.05f, 0.04f, 16, 24, 3, 1, 4);
  const int strided = q.conv(grouped, 0.04f, 0.05f, 24, 33, 3, 2, 1);
  const int down = q.conv(stem, 0.05f, 0.05f, 16, 33, 1, 2, 1);  // the shortcut: 1x1, stride 2
  const int sum = q.binary(OpType::QLinearAdd, strided, 0.05f, down, 0.05f, 0.08f);
  b.output(q.dequantize(sum, 0.08f));
  expectSameBytesInBothLayouts(b.g, {{"x", randomTensor(DataType::Float32, {2, 3, 30, 27}, 9, -2, 2)}});
}

TEST(CpuQuantizedNhwc, CastOfCodesBridgesToNchwFloats) {
  // A TFLite int8 MEAN as its importer writes it: the codes cast to float and summed over the
  // map; the Cast reads channels-last bytes and writes NCHW floats.
  for (DataType type : {DataType::UInt8, DataType::Int8}) {
    SCOPED_TRACE(dataTypeName(type));
    GraphBuilder b;
    QBuilder q{b, type};
    const int x = b.input("x", {2, 5, 9, 11});
    const int features = q.conv(q.quantize(x, 0.04f), 0.04f, 0.05f, 5, 37, 3, 1, 1);
    const int codes = b.op(OpType::Cast, {features});
    b.g.nodes.back().setInt("to", static_cast<int64_t>(DataType::Float32));
    b.output(codes);
    b.output(b.op(OpType::ReduceSum, {codes, b.ints({2, 3})}));
    expectSameBytesInBothLayouts(b.g, {{"x", randomTensor(DataType::Float32, {2, 5, 9, 11}, 4, -3, 3)}});
  }
}

TEST(CpuQuantizedNhwc, TransposesBetweenNhwcBytesAndTheirNchwViewCopy) {
  // A TFLite int8 model's edges: NHWC bytes in, Transpose to the NCHW view the convolutions read
  // (stored channels-last, so the same bytes), and back to NHWC at the output.
  GraphBuilder b;
  QBuilder q{b, DataType::Int8};
  const int x = b.input("x", {2, 9, 11, 5}, DataType::Int8);
  const int view = b.transpose(x, {0, 3, 1, 2});
  const int first = q.conv(view, 0.04f, 0.05f, 5, 7, 3, 1, 1);
  const int features = q.conv(q.conv(first, 0.05f, 0.05f, 7, 7, 1, 1, 1), 0.05f, 0.05f, 7, 7, 3, 1, 7);
  b.output(b.transpose(features, {0, 2, 3, 1}));
  b.output(b.transpose(features, {0, 3, 2, 1}));  // any other permutation converts
  expectSameBytesInBothLayouts(b.g, {{"x", randomBytes(DataType::Int8, {2, 9, 11, 5}, 8)}});
}

TEST(CpuQuantizedNhwc, BytesConvertedMoreOftenThanConvolvedStayNchw) {
  // One convolution whose output two ops without a channels-last kernel read: two conversions
  // for one convolution's gain, so the group stays NCHW.
  GraphBuilder b;
  QBuilder q{b, DataType::UInt8};
  const int x = b.input("x", {1, 6, 9, 7});
  const int features = q.conv(q.quantize(x, 0.05f), 0.05f, 0.05f, 6, 8, 3, 1, 1);
  b.output(b.transpose(features, {0, 1, 3, 2}));
  b.output(b.transpose(features, {0, 2, 1, 3}));
  expectSameBytesInBothLayouts(b.g, {{"x", randomTensor(DataType::Float32, {1, 6, 9, 7}, 6, -4, 4)}}, false);
}

TEST(CpuQuantizedNhwc, BytesWithoutAConvolutionStayNchw) {
  GraphBuilder b;
  QBuilder q{b, DataType::UInt8};
  const int x = b.input("x", {1, 8, 9, 7});
  const int bytes = q.quantize(x, 0.05f);
  const int pooled = b.op(OpType::MaxPool, {bytes});
  b.g.nodes.back().setInts("kernel_shape", {2, 2});
  b.output(q.dequantize(q.binary(OpType::QLinearAdd, pooled, 0.05f, pooled, 0.05f, 0.1f), 0.1f));
  expectSameBytesInBothLayouts(b.g, {{"x", randomTensor(DataType::Float32, {1, 8, 9, 7}, 3, -4, 4)}}, false);
}

}  // namespace
}  // namespace osprey::test
