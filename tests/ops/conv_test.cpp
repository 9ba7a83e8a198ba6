// Conv and ConvTranspose against naive loops written here: a direct convolution (every output
// sums every tap) and the scatter form of the transposed convolution (every input adds into
// every output its taps reach).
#include <cmath>
#include <string>
#include <vector>

#include "runtime/model_io.h"
#include "core/thread_pool.h"
#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

struct ConvCase {
  Shape x;  // N, C, spatial...
  int64_t outChannels = 4;
  Shape kernel;
  std::vector<int64_t> strides, dilations, pads, outputPadding, outputShape;
  std::string autoPad;  // empty: attribute absent
  int64_t group = 1;
  bool bias = true;
  std::string activation;  // empty, "Relu" or "Clip"
  bool kernelShapeAttr = false;

  ConvCase(Shape xs, int64_t m, Shape k) : x(std::move(xs)), outChannels(m), kernel(std::move(k)) {}
  ConvCase& withStrides(std::vector<int64_t> v) {
    strides = std::move(v);
    return *this;
  }
  ConvCase& withDilations(std::vector<int64_t> v) {
    dilations = std::move(v);
    return *this;
  }
  ConvCase& withPads(std::vector<int64_t> v) {
    pads = std::move(v);
    return *this;
  }
  ConvCase& withOutputPadding(std::vector<int64_t> v) {
    outputPadding = std::move(v);
    return *this;
  }
  ConvCase& withAutoPad(std::string v) {
    autoPad = std::move(v);
    return *this;
  }
  ConvCase& withGroup(int64_t g) {
    group = g;
    return *this;
  }
};

// The case's per-dim attributes with defaults filled in, spatial dims padded in front to three.
struct Dims {
  int rank;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, op[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

Dims dimsOf(const ConvCase& c) {
  Dims g;
  g.rank = static_cast<int>(c.kernel.size());
  for (int i = 0; i < g.rank; ++i) {
    int sl = 3 - g.rank + i;
    g.in[sl] = c.x[2 + i];
    g.k[sl] = c.kernel[i];
    if (!c.strides.empty()) g.s[sl] = c.strides[i];
    if (!c.dilations.empty()) g.d[sl] = c.dilations[i];
    if (!c.pads.empty()) g.pb[sl] = c.pads[i], g.pe[sl] = c.pads[g.rank + i];
    if (!c.outputPadding.empty()) g.op[sl] = c.outputPadding[i];
  }
  return g;
}

Node makeNode(OpType type, const ConvCase& c) {
  Node node;
  node.type = type;
  if (!c.strides.empty()) node.setInts("strides", c.strides);
  if (!c.dilations.empty()) node.setInts("dilations", c.dilations);
  if (!c.pads.empty()) node.setInts("pads", c.pads);
  if (!c.outputPadding.empty()) node.setInts("output_padding", c.outputPadding);
  if (!c.outputShape.empty()) node.setInts("output_shape", c.outputShape);
  if (!c.autoPad.empty()) node.setString("auto_pad", c.autoPad);
  if (c.group != 1) node.setInt("group", c.group);
  if (c.kernelShapeAttr) node.setInts("kernel_shape", c.kernel);
  if (c.activation == "Relu") {
    node.setString("activation", "Relu");
  } else if (c.activation == "Clip") {
    node.setString("activation", "Clip");
    node.setFloats("activation_params", {-0.5f, 0.75f});
  }
  return node;
}

double activate(const std::string& act, double v) {
  if (act == "Relu") return v > 0 ? v : 0;
  if (act == "Clip") return std::min(0.75, std::max(-0.5, v));
  return v;
}

Shape outShapeOf(const ConvCase& c, const Dims& g) {
  Shape s{c.x[0], c.outChannels};
  for (int i = 0; i < g.rank; ++i) s.push_back(g.out[3 - g.rank + i]);
  return s;
}

// Forward output sizes and the pads auto_pad implies, as the ONNX Conv spec states them.
void forwardSizes(const ConvCase& c, Dims* g) {
  for (int sl = 3 - g->rank; sl < 3; ++sl) {
    int64_t extent = (g->k[sl] - 1) * g->d[sl] + 1;
    if (c.autoPad == "SAME_UPPER" || c.autoPad == "SAME_LOWER") {
      g->out[sl] = (g->in[sl] + g->s[sl] - 1) / g->s[sl];
      int64_t total = std::max<int64_t>(0, (g->out[sl] - 1) * g->s[sl] + extent - g->in[sl]);
      g->pb[sl] = c.autoPad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
      g->pe[sl] = total - g->pb[sl];
    } else {
      if (c.autoPad == "VALID") g->pb[sl] = g->pe[sl] = 0;
      g->out[sl] = (g->in[sl] + g->pb[sl] + g->pe[sl] - extent) / g->s[sl] + 1;
    }
  }
}

Tensor naiveConv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  Dims g = dimsOf(c);
  forwardSizes(c, &g);
  const int64_t N = c.x[0], C = c.x[1], M = c.outChannels, Cg = C / c.group, Mg = M / c.group;
  Tensor y(x.dtype(), outShapeOf(c, g));
  int64_t yi = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            double sum = b ? at(*b, m) : 0.0;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                    int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                    int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
                    int64_t c0 = (m / Mg) * Cg + ci;
                    double xv = at(x, (((n * C + c0) * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw);
                    double wv = at(w, (((m * Cg + ci) * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw);
                    sum += xv * wv;
                  }
            storeFromDouble(y.dtype(), y.data(), yi++, activate(c.activation, sum));
          }
  return y;
}

Tensor naiveConvTranspose(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  Dims g = dimsOf(c);
  for (int sl = 3 - g.rank; sl < 3; ++sl) {
    int64_t full = g.s[sl] * (g.in[sl] - 1) + g.op[sl] + (g.k[sl] - 1) * g.d[sl] + 1;
    bool same = c.autoPad == "SAME_UPPER" || c.autoPad == "SAME_LOWER";
    if (!c.outputShape.empty() || same) {
      g.out[sl] = c.outputShape.empty() ? g.in[sl] * g.s[sl] : c.outputShape[sl - (3 - g.rank)];
      int64_t total = full - g.out[sl];
      int64_t half = static_cast<int64_t>(std::floor(total / 2.0));
      g.pb[sl] = c.autoPad == "SAME_UPPER" ? half : total - half;
    } else {
      g.out[sl] = full - g.pb[sl] - g.pe[sl];
    }
  }
  const int64_t N = c.x[0], C = c.x[1], M = c.outChannels, Cg = C / c.group, Mg = M / c.group;
  Shape ys = outShapeOf(c, g);
  std::vector<double> acc(static_cast<size_t>(shapeElements(ys)), 0.0);
  const int64_t outPlane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t id = 0; id < g.in[0]; ++id)
        for (int64_t ih = 0; ih < g.in[1]; ++ih)
          for (int64_t iw = 0; iw < g.in[2]; ++iw) {
            double xv = at(x, (((n * C + ci) * g.in[0] + id) * g.in[1] + ih) * g.in[2] + iw);
            for (int64_t m = 0; m < Mg; ++m)
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    int64_t od = id * g.s[0] - g.pb[0] + kd * g.d[0];
                    int64_t oh = ih * g.s[1] - g.pb[1] + kh * g.d[1];
                    int64_t ow = iw * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (od < 0 || od >= g.out[0] || oh < 0 || oh >= g.out[1] || ow < 0 || ow >= g.out[2]) continue;
                    int64_t mo = (ci / Cg) * Mg + m;
                    double wv = at(w, (((ci * Mg + m) * g.k[0] + kd) * g.k[1] + kh) * g.k[2] + kw);
                    acc[((n * M + mo) * g.out[0] + od) * g.out[1] * g.out[2] + oh * g.out[2] + ow] += xv * wv;
                  }
          }
  Tensor y(x.dtype(), ys);
  for (size_t i = 0; i < acc.size(); ++i) {
    int64_t m = (static_cast<int64_t>(i) / outPlane) % M;
    storeFromDouble(y.dtype(), y.data(), static_cast<int64_t>(i),
                    activate(c.activation, acc[i] + (b ? at(*b, m) : 0.0)));
  }
  return y;
}

// Runs shape function and reference kernel directly on a pool of several threads, which the
// one-thread Session behind runOp never exercises.
std::vector<Tensor> runThreaded(const Node& node, const std::vector<Tensor>& inputs, int threads) {
  const OpDef& def = opDef(node.type);
  TensorViews in(inputs.size()), out(1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    in[i].present = !inputs[i].empty();
    in[i].dtype = inputs[i].dtype();
    in[i].shape = inputs[i].shape();
    in[i].data = const_cast<void*>(inputs[i].data());
  }
  EXPECT_TRUE(def.shape(node, in, out).isOk());
  std::vector<Tensor> result{Tensor(out[0].dtype, out[0].shape)};
  out[0].data = result[0].data();
  ThreadPool pool(threads);
  Status st = def.reference(node, in, out, &pool);
  EXPECT_TRUE(st.isOk()) << st.message();
  return result;
}

void checkCase(OpType type, const ConvCase& c, uint32_t seed, DataType dtype = DataType::Float32, double tol = 1e-4) {
  SCOPED_TRACE("case with x " + shapeToString(c.x) + " kernel " + shapeToString(c.kernel) + " seed " +
               std::to_string(seed));
  const bool transpose = type == OpType::ConvTranspose;
  Shape ws = transpose ? Shape{c.x[1], c.outChannels / c.group} : Shape{c.outChannels, c.x[1] / c.group};
  for (int64_t k : c.kernel) ws.push_back(k);
  Tensor x = randomTensor(dtype, c.x, seed);
  Tensor w = randomTensor(dtype, ws, seed + 1);
  Tensor b = randomTensor(dtype, {c.outChannels}, seed + 2);
  Node node = makeNode(type, c);
  std::vector<Tensor> outs;
  Status st = runOp(node, {in(x), constant(w), c.bias ? constant(b) : absent()}, 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  Tensor expected =
      transpose ? naiveConvTranspose(c, x, w, c.bias ? &b : nullptr) : naiveConv(c, x, w, c.bias ? &b : nullptr);
  expectNear(outs[0], expected, tol, tol);
  std::vector<Tensor> threaded = runThreaded(node, {x, w, c.bias ? b : Tensor()}, 3);
  expectNear(threaded[0], expected, tol, tol);
}

TEST(ConvTest, Basic2D) {
  checkCase(OpType::Conv, ConvCase({2, 3, 13, 11}, 5, {3, 3}).withPads({1, 1, 1, 1}), 1);
  checkCase(OpType::Conv, ConvCase({2, 3, 13, 11}, 5, {3, 3}), 2);  // no padding
  checkCase(OpType::Conv, ConvCase({1, 2, 7, 9}, 3, {2, 4}).withPads({0, 1, 2, 0}), 3);
}

TEST(ConvTest, StridesDilationsAsymmetricPads) {
  checkCase(OpType::Conv, ConvCase({2, 3, 13, 11}, 5, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 4);
  checkCase(OpType::Conv,
            ConvCase({2, 5, 13, 11}, 4, {3, 3}).withStrides({2, 1}).withDilations({2, 2}).withPads({1, 0, 2, 1}), 5);
  checkCase(OpType::Conv,
            ConvCase({1, 3, 13, 11}, 2, {3, 2}).withStrides({1, 3}).withDilations({2, 3}).withPads({0, 2, 1, 0}), 6);
}

TEST(ConvTest, Pointwise) {
  checkCase(OpType::Conv, ConvCase({2, 5, 13, 11}, 7, {1, 1}), 7);                         // GEMM straight on X
  checkCase(OpType::Conv, ConvCase({2, 5, 13, 11}, 7, {1, 1}).withStrides({2, 2}), 8);     // strided: im2col
  checkCase(OpType::Conv, ConvCase({1, 5, 13, 11}, 7, {1, 1}).withPads({1, 0, 0, 1}), 9);  // padded: im2col
}

TEST(ConvTest, Groups) {
  checkCase(
      OpType::Conv,
      ConvCase({2, 6, 13, 11}, 4, {3, 3}).withStrides({1, 1}).withDilations({1, 1}).withPads({1, 1, 1, 1}).withGroup(2),
      10);
  checkCase(OpType::Conv, ConvCase({1, 9, 11, 7}, 6, {3, 1}).withStrides({2, 1}).withPads({0, 0, 1, 0}).withGroup(3),
            11);
}

TEST(ConvTest, Depthwise) {
  checkCase(
      OpType::Conv,
      ConvCase({2, 5, 13, 11}, 5, {3, 3}).withStrides({1, 1}).withDilations({1, 1}).withPads({1, 1, 1, 1}).withGroup(5),
      12);
  checkCase(OpType::Conv,
            ConvCase({2, 5, 13, 11}, 10, {3, 3})
                .withStrides({2, 2})
                .withDilations({2, 1})
                .withPads({2, 1, 0, 2})
                .withGroup(5),
            13);
  checkCase(OpType::Conv, ConvCase({1, 1, 13, 11}, 3, {5, 3}).withStrides({1, 2}).withPads({2, 1, 2, 1}),
            14);  // one channel, group 1
}

TEST(ConvTest, AutoPad) {
  for (std::string mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(mode);
    ConvCase c = ConvCase({2, 3, 13, 11}, 5, {4, 3}).withStrides({2, 2});
    c.autoPad = mode;
    checkCase(OpType::Conv, c, 15);
    c.dilations = {2, 1};
    c.strides = {1, 3};
    checkCase(OpType::Conv, c, 16);
    c.group = 3;
    c.outChannels = 3;
    checkCase(OpType::Conv, c, 17);  // depthwise path
  }
}

TEST(ConvTest, OneAndThreeDimensional) {
  checkCase(OpType::Conv, ConvCase({2, 3, 13}, 5, {3}).withStrides({2}).withPads({1, 1}), 18);
  checkCase(OpType::Conv,
            ConvCase({2, 4, 13}, 4, {3}).withStrides({1}).withDilations({2}).withPads({2, 2}).withGroup(4), 19);
  checkCase(OpType::Conv, ConvCase({1, 3, 5, 6, 7}, 4, {3, 2, 3}).withStrides({1, 2, 1}).withPads({1, 0, 1, 1, 1, 0}),
            20);
  checkCase(OpType::Conv,
            ConvCase({2, 2, 5, 6, 7}, 4, {2, 2, 2})
                .withStrides({2, 1, 2})
                .withDilations({1, 2, 1})
                .withAutoPad("SAME_UPPER")
                .withGroup(2),
            21);
}

TEST(ConvTest, NoBiasActivationKernelShapeAttr) {
  ConvCase c = ConvCase({2, 3, 13, 11}, 5, {3, 3}).withPads({1, 1, 1, 1});
  c.bias = false;
  c.kernelShapeAttr = true;
  checkCase(OpType::Conv, c, 22);
  c.bias = true;
  c.activation = "Relu";
  checkCase(OpType::Conv, c, 23);
  c.activation = "Clip";
  c.group = 3;
  c.outChannels = 6;
  checkCase(OpType::Conv, c, 24);
}

TEST(ConvTest, LargerShapesCrossTiles) {
  // More than 256 output columns, more than 128 reduction rows and a row count that leaves
  // remainders after blocks of four.
  checkCase(OpType::Conv, ConvCase({1, 16, 23, 19}, 37, {3, 3}).withPads({1, 1, 1, 1}), 25, DataType::Float32, 1e-3);
}

TEST(ConvTest, OtherFloatTypes) {
  checkCase(OpType::Conv, ConvCase({2, 3, 9, 7}, 4, {3, 3}).withStrides({2, 1}).withPads({1, 1, 1, 1}), 26,
            DataType::Float64, 1e-9);
  checkCase(OpType::Conv, ConvCase({1, 3, 9, 7}, 4, {3, 3}).withPads({1, 1, 1, 1}), 27, DataType::Float16, 2e-2);
  checkCase(OpType::Conv, ConvCase({1, 4, 9, 7}, 4, {3, 3}).withGroup(4), 28, DataType::BFloat16, 5e-2);
}

TEST(ConvTransposeTest, Basic) {
  checkCase(OpType::ConvTranspose, ConvCase({2, 3, 7, 5}, 4, {3, 3}), 30);
  checkCase(OpType::ConvTranspose, ConvCase({2, 3, 7, 5}, 4, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 31);
  checkCase(OpType::ConvTranspose,
            ConvCase({1, 5, 7, 5}, 3, {4, 3}).withStrides({2, 3}).withDilations({2, 1}).withPads({1, 0, 2, 1}), 32);
}

TEST(ConvTransposeTest, OutputPaddingGroupsActivation) {
  ConvCase c = ConvCase({2, 4, 7, 5}, 6, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}).withOutputPadding({1, 1});
  c.group = 2;
  checkCase(OpType::ConvTranspose, c, 33);
  c.activation = "Relu";
  c.bias = false;
  c.kernelShapeAttr = true;
  checkCase(OpType::ConvTranspose, c, 34);
  checkCase(
      OpType::ConvTranspose,
      ConvCase({1, 4, 6, 5}, 4, {3, 3}).withStrides({2, 2}).withDilations({1, 1}).withPads({1, 1, 1, 1}).withGroup(4),
      35);
}

TEST(ConvTransposeTest, OutputShapeAndAutoPad) {
  ConvCase c = ConvCase({2, 3, 7, 5}, 4, {3, 3}).withStrides({2, 2});
  c.outputShape = {14, 11};
  checkCase(OpType::ConvTranspose, c, 36);
  c.autoPad = "SAME_UPPER";
  checkCase(OpType::ConvTranspose, c, 37);
  c.outputShape = {};
  checkCase(OpType::ConvTranspose, c, 38);
  c.autoPad = "SAME_LOWER";
  checkCase(OpType::ConvTranspose, c, 39);
  c.autoPad = "VALID";
  checkCase(OpType::ConvTranspose, c, 40);
  c.autoPad = "";
  c.outputShape = {20, 13};  // larger than the full result: the rim is bias only
  checkCase(OpType::ConvTranspose, c, 41);
}

TEST(ConvTransposeTest, OneAndThreeDimensionalOtherTypes) {
  checkCase(OpType::ConvTranspose,
            ConvCase({2, 3, 13}, 5, {3}).withStrides({2}).withPads({1, 0}).withOutputPadding({1}), 42);
  checkCase(OpType::ConvTranspose,
            ConvCase({1, 2, 4, 5, 3}, 4, {2, 3, 2})
                .withStrides({2, 1, 2})
                .withDilations({1, 1, 2})
                .withPads({0, 1, 1, 1, 0, 0}),
            43);
  checkCase(OpType::ConvTranspose, ConvCase({2, 3, 7, 5}, 4, {3, 3}).withStrides({2, 2}), 44, DataType::Float64, 1e-9);
  checkCase(OpType::ConvTranspose, ConvCase({1, 3, 7, 5}, 4, {3, 3}).withStrides({2, 2}), 45, DataType::Float16, 2e-2);
}

Status runConv(OpType type, Node node, const Shape& xs, const Shape& ws, const Shape& bs = {},
               DataType dtype = DataType::Float32) {
  node.type = type;
  std::vector<OpInput> inputs{in(randomTensor(dtype, xs, 1)), constant(randomTensor(dtype, ws, 2))};
  if (!bs.empty()) inputs.push_back(constant(randomTensor(dtype, bs, 3)));
  std::vector<Tensor> outs;
  return runOp(node, inputs, 1, &outs);
}

TEST(ConvTest, Errors) {
  Node n;
  EXPECT_FALSE(runConv(OpType::Conv, n, {1, 3, 8, 8}, {4, 2, 3, 3}).isOk());       // W channels
  EXPECT_FALSE(runConv(OpType::Conv, n, {1, 3, 8, 8}, {4, 3, 3}).isOk());          // W rank
  EXPECT_FALSE(runConv(OpType::Conv, n, {1, 3, 8, 8}, {4, 3, 3, 3}, {5}).isOk());  // bias
  EXPECT_FALSE(runConv(OpType::Conv, n, {1, 3, 2, 2}, {4, 3, 3, 3}).isOk());       // kernel too big
  EXPECT_FALSE(runConv(OpType::Conv, n, {3, 8}, {4, 3}).isOk());                   // no spatial dim
  EXPECT_FALSE(runConv(OpType::Conv, n, {1, 3, 8, 8}, {4, 3, 3, 3}, {}, DataType::Int32).isOk());
  Node g;
  g.setInt("group", 2);
  EXPECT_FALSE(runConv(OpType::Conv, g, {1, 3, 8, 8}, {4, 1, 3, 3}).isOk());  // 3 % 2
  g.setInt("group", 0);
  EXPECT_FALSE(runConv(OpType::Conv, g, {1, 3, 8, 8}, {4, 3, 3, 3}).isOk());
  Node p;
  p.setInts("pads", {1, 1});
  EXPECT_FALSE(runConv(OpType::Conv, p, {1, 3, 8, 8}, {4, 3, 3, 3}).isOk());
  p.setInts("pads", {1, 1, -1, 1});
  EXPECT_FALSE(runConv(OpType::Conv, p, {1, 3, 8, 8}, {4, 3, 3, 3}).isOk());
  Node s;
  s.setInts("strides", {0, 1});
  EXPECT_FALSE(runConv(OpType::Conv, s, {1, 3, 8, 8}, {4, 3, 3, 3}).isOk());
  Node a;
  a.setString("auto_pad", "SAME");
  EXPECT_FALSE(runConv(OpType::Conv, a, {1, 3, 8, 8}, {4, 3, 3, 3}).isOk());
  Node k;
  k.setInts("kernel_shape", {3, 2});
  EXPECT_FALSE(runConv(OpType::Conv, k, {1, 3, 8, 8}, {4, 3, 3, 3}).isOk());
  Node act;
  act.setString("activation", "Softplus");
  EXPECT_FALSE(runConv(OpType::Conv, act, {1, 3, 8, 8}, {4, 3, 3, 3}).isOk());
  EXPECT_FALSE(runConv(OpType::Conv, n, {1, 1, 3, 3, 3, 3}, {1, 1, 1, 1, 1, 1}).isOk());  // 4 spatial dims
}

// Conv with the residual Z (input 3): act(conv(X, W) + B + Z), checked against the naive
// convolution without activation plus Z, activated here; through the CPU backend (runOp), the
// reference kernel directly, and the reference on three threads.
void checkResidualCase(const ConvCase& c, uint32_t seed, DataType dtype = DataType::Float32, double tol = 1e-4) {
  SCOPED_TRACE("residual case with x " + shapeToString(c.x) + " kernel " + shapeToString(c.kernel) + " seed " +
               std::to_string(seed));
  Shape ws{c.outChannels, c.x[1] / c.group};
  for (int64_t k : c.kernel) ws.push_back(k);
  Tensor x = randomTensor(dtype, c.x, seed);
  Tensor w = randomTensor(dtype, ws, seed + 1);
  Tensor b = randomTensor(dtype, {c.outChannels}, seed + 2);
  ConvCase plain = c;
  plain.activation.clear();
  Tensor expected = naiveConv(plain, x, w, c.bias ? &b : nullptr);
  Tensor z = randomTensor(dtype, expected.shape(), seed + 3, -2.0, 2.0);
  for (int64_t i = 0; i < expected.elements(); ++i)
    storeFromDouble(dtype, expected.data(), i, activate(c.activation, at(expected, i) + at(z, i)));
  Node node = makeNode(OpType::Conv, c);
  const std::vector<OpInput> inputs{in(x), constant(w), c.bias ? constant(b) : absent(), in(z)};
  std::vector<Tensor> outs;
  Status st = runOp(node, inputs, 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(outs[0], expected, tol, tol);
  std::vector<Tensor> ref;
  st = referenceOp(node, inputs, 1, &ref);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(ref[0], expected, tol, tol);
  std::vector<Tensor> threaded = runThreaded(node, {x, w, c.bias ? b : Tensor(), z}, 3);
  expectNear(threaded[0], expected, tol, tol);
}

ConvCase withActivation(ConvCase c, const std::string& act, bool bias = true) {
  c.activation = act;
  c.bias = bias;
  return c;
}

TEST(ConvResidualTest, BiasActivationAndAbsentBias) {
  const ConvCase c = ConvCase({2, 3, 7, 5}, 5, {3, 3}).withPads({1, 1, 1, 1});
  checkResidualCase(c, 1);
  checkResidualCase(withActivation(c, "Relu"), 2);
  checkResidualCase(withActivation(c, "Relu", false), 3);  // inputs {X, W, -1, Z}
  checkResidualCase(withActivation(c, "Clip", false), 4);
  checkResidualCase(withActivation(ConvCase({1, 4, 3, 7}, 6, {1, 1}), "Relu"), 5);  // pointwise
}

TEST(ConvResidualTest, StridesPadsGroupsDepthwise) {
  ConvCase strided = ConvCase({1, 3, 7, 5}, 4, {3, 3}).withStrides({2, 2}).withPads({1, 0, 1, 2});
  checkResidualCase(withActivation(strided, "Relu"), 10);
  checkResidualCase(withActivation(ConvCase({2, 6, 7, 5}, 4, {3, 2}).withGroup(2).withPads({1, 1, 0, 0}), "Relu"), 11);
  checkResidualCase(withActivation(ConvCase({1, 5, 7, 5}, 5, {3, 3}).withGroup(5).withPads({1, 1, 1, 1}), "Relu"),
                    12);  // depthwise
  ConvCase multiplier = ConvCase({1, 3, 9, 7}, 6, {5, 5}).withGroup(3).withStrides({2, 2}).withPads({2, 2, 2, 2});
  checkResidualCase(withActivation(multiplier, "Clip", false), 13);  // channel multiplier 2
  checkResidualCase(withActivation(ConvCase({2, 4, 3, 7, 5}, 4, {3, 3, 3}).withPads({1, 1, 1, 1, 1, 1}), "Relu"),
                    14);  // 3-D
  checkResidualCase(withActivation(ConvCase({1, 4, 3, 7, 5}, 4, {3, 3, 3}).withGroup(4).withPads({1, 1, 1, 1, 1, 1}),
                                   "Relu"),
                    15);  // 3-D depthwise
  checkResidualCase(withActivation(ConvCase({1, 4, 11}, 3, {3}).withStrides({2}), "Relu"), 16);  // 1-D
}

TEST(ConvResidualTest, OtherFloatTypes) {
  const ConvCase c = withActivation(ConvCase({1, 3, 7, 5}, 4, {3, 3}).withPads({1, 1, 1, 1}), "Relu");
  checkResidualCase(c, 20, DataType::Float64, 1e-9);
  checkResidualCase(c, 21, DataType::Float16, 2e-2);
}

TEST(ConvResidualTest, ModelFileRoundTrip) {
  // {X, W, -1, Z}: the absent bias in the middle survives writing and reading the model file.
  Node node = makeNode(OpType::Conv, withActivation(ConvCase({1, 3, 7, 5}, 4, {3, 3}).withPads({1, 1, 1, 1}), "Relu"));
  Tensor x = randomTensor(DataType::Float32, {1, 3, 7, 5}, 30), w = randomTensor(DataType::Float32, {4, 3, 3, 3}, 31);
  Tensor z = randomTensor(DataType::Float32, {1, 4, 7, 5}, 32);
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(node, {in(x), constant(w), absent(), in(z)}, 1, &feeds);
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(writeModel(*model, &bytes).isOk());
  auto back = std::make_shared<Model>();
  Status st = readModel(bytes.data(), bytes.size(), back.get());
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(back->graph.nodes.size(), 1u);
  const std::vector<int>& ins = back->graph.nodes[0].inputs;
  ASSERT_EQ(ins.size(), 4u);
  EXPECT_EQ(ins[2], -1);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(back, &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  std::vector<Tensor> outs;
  st = session->run(feeds, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  std::vector<Tensor> ref;
  ASSERT_TRUE(referenceOp(node, {in(x), constant(w), absent(), in(z)}, 1, &ref).isOk());
  expectNear(outs[0], ref[0], 1e-5, 1e-5);
}

TEST(ConvResidualTest, Errors) {
  Node node;
  node.type = OpType::Conv;
  node.name = "conv_with_z";
  auto run = [&](const Shape& zs, DataType zt) {
    std::vector<Tensor> outs;
    return runOp(node,
                 {in(randomTensor(DataType::Float32, {1, 3, 8, 8}, 1)),
                  constant(randomTensor(DataType::Float32, {4, 3, 3, 3}, 2)), absent(), in(randomTensor(zt, zs, 3))},
                 1, &outs);
  };
  EXPECT_TRUE(run({1, 4, 6, 6}, DataType::Float32).isOk());
  for (const Shape& bad : {Shape{1, 4, 6, 5}, Shape{1, 4, 1, 1}, Shape{4, 6, 6}, Shape{2, 4, 6, 6}}) {
    Status st = run(bad, DataType::Float32);
    ASSERT_FALSE(st.isOk()) << shapeToString(bad);
    EXPECT_NE(st.message().find("residual"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(shapeToString(bad)), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("[1, 4, 6, 6]"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("conv_with_z"), std::string::npos) << st.message();
  }
  Status st = run({1, 4, 6, 6}, DataType::Float64);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("residual"), std::string::npos) << st.message();
}

TEST(ConvTransposeTest, Errors) {
  Node n;
  EXPECT_FALSE(runConv(OpType::ConvTranspose, n, {1, 3, 8, 8}, {4, 2, 3, 3}).isOk());       // W dim 0
  EXPECT_FALSE(runConv(OpType::ConvTranspose, n, {1, 3, 8, 8}, {3, 2, 3, 3}, {3}).isOk());  // bias
  Node op;
  op.setInts("output_padding", {1});
  EXPECT_FALSE(runConv(OpType::ConvTranspose, op, {1, 3, 8, 8}, {3, 2, 3, 3}).isOk());
  Node os;
  os.setInts("output_shape", {5, 5, 5});
  EXPECT_FALSE(runConv(OpType::ConvTranspose, os, {1, 3, 8, 8}, {3, 2, 3, 3}).isOk());
  Node pads;
  pads.setInts("pads", {3, 3, 3, 3});  // 1 x 1 input, kernel 3: nothing left
  EXPECT_FALSE(runConv(OpType::ConvTranspose, pads, {1, 3, 1, 1}, {3, 2, 3, 3}).isOk());
}

}  // namespace
}  // namespace osprey::test
