// The TensorFlow frontend on GraphDefs written here with a few protobuf wire helpers: ops
// against naive loops over TensorFlow's NHWC definitions, how many Transposes the layout
// handling leaves, and errors that name the file, node or op.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"
#include "converter/converter.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

constexpr int kFloat = 1, kInt32 = 3;

struct Wire {
  std::string out;
  void varint(uint64_t v) {
    do {
      uint8_t b = v & 0x7f;
      v >>= 7;
      out.push_back(static_cast<char>(b | (v ? 0x80 : 0)));
    } while (v);
  }
  void tag(int field, int wire) { varint(static_cast<uint64_t>(field) << 3 | wire); }
  Wire& bytes(int field, const std::string& s) {
    tag(field, 2);
    varint(s.size());
    out += s;
    return *this;
  }
  Wire& num(int field, int64_t v) {
    tag(field, 0);
    varint(static_cast<uint64_t>(v));
    return *this;
  }
};

std::string shapeProto(const std::vector<int64_t>& dims) {
  Wire s;
  for (int64_t d : dims) s.bytes(2, Wire().num(1, d).out);
  return s.out;
}

// A TensorProto holding raw little-endian bytes (tensor_content).
template <class T>
std::string tensorProto(int dtype, const std::vector<int64_t>& dims, const std::vector<T>& v) {
  return Wire().num(1, dtype).bytes(2, shapeProto(dims)).bytes(4, std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T))).out;
}
// The same given as typed int_val values, packed.
std::string intValTensor(const std::vector<int64_t>& dims, const std::vector<int32_t>& v) {
  Wire packed;
  for (int32_t x : v) packed.varint(static_cast<uint64_t>(static_cast<int64_t>(x)));
  return Wire().num(1, kInt32).bytes(2, shapeProto(dims)).bytes(7, packed.out).out;
}

namespace attr {
std::string type(int t) { return Wire().num(6, t).out; }
std::string i(int64_t v) { return Wire().num(3, v).out; }
std::string b(bool v) { return Wire().num(5, v).out; }
std::string s(const std::string& v) { return Wire().bytes(2, v).out; }
std::string shape(const std::vector<int64_t>& dims) { return Wire().bytes(7, shapeProto(dims)).out; }
std::string tensor(const std::string& t) { return Wire().bytes(8, t).out; }
std::string ints(const std::vector<int64_t>& v) {
  Wire packed;
  for (int64_t x : v) packed.varint(static_cast<uint64_t>(x));
  return Wire().bytes(1, Wire().bytes(3, packed.out).out).out;
}
}  // namespace attr

std::string node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
                 const std::map<std::string, std::string>& attrs = {}) {
  Wire n;
  n.bytes(1, name).bytes(2, op);
  for (const std::string& in : inputs) n.bytes(3, in);
  for (const auto& [k, v] : attrs) n.bytes(5, Wire().bytes(1, k).bytes(2, v).out);
  return n.out;
}

std::string placeholder(const std::string& name, const std::vector<int64_t>& dims) {
  return node(name, "Placeholder", {}, {{"dtype", attr::type(kFloat)}, {"shape", attr::shape(dims)}});
}
std::string floatConst(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
  return node(name, "Const", {}, {{"dtype", attr::type(kFloat)}, {"value", attr::tensor(tensorProto(kFloat, dims, v))}});
}
std::string intConst(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int32_t>& v) {
  return node(name, "Const", {}, {{"dtype", attr::type(kInt32)}, {"value", attr::tensor(intValTensor(dims, v))}});
}

std::string graph(const std::vector<std::string>& nodes) {
  Wire g;
  for (const std::string& n : nodes) g.bytes(1, n);
  return g.out;
}

Status convert(const std::string& bytes, Model* m, const ConvertOptions& options = {}) {
  return convertTensorflowBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "model.pb", m, options);
}

std::vector<float> values(int64_t n, uint32_t seed) {
  Tensor t = randomTensor(DataType::Float32, {n}, seed, -1, 1);
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

// x[n, h, w, c] of an NHWC tensor.
float nhwc(const Tensor& t, int64_t n, int64_t h, int64_t w, int64_t c) {
  const Shape& s = t.shape();
  return t.data<float>()[((n * s[1] + h) * s[2] + w) * s[3] + c];
}

TEST(TensorflowImport, ConvBiasRelu6PoolMeanMatMulSoftmaxMatchNaiveLoops) {
  const int64_t H = 5, W = 6, C = 2, M = 4, K = 3, N = 3;
  const std::vector<float> f = values(K * K * C * M, 1), b = values(M, 2), w = values(M * N, 3);
  const std::string g = graph({
      placeholder("x", {1, H, W, C}),
      floatConst("filter", {K, K, C, M}, f),
      floatConst("bias", {M}, b),
      floatConst("w", {M, N}, w),
      intConst("axes", {2}, {1, 2}),
      node("conv", "Conv2D", {"x", "filter"},
           {{"T", attr::type(kFloat)}, {"strides", attr::ints({1, 2, 2, 1})}, {"padding", attr::s("SAME")}}),
      node("biased", "BiasAdd", {"conv", "bias", "^x"}),
      node("act", "Relu6", {"biased"}),
      node("pool", "MaxPool", {"act"},
           {{"ksize", attr::ints({1, 2, 2, 1})}, {"strides", attr::ints({1, 1, 1, 1})}, {"padding", attr::s("VALID")}}),
      node("mean", "Mean", {"pool", "axes"}, {{"keep_dims", attr::b(false)}}),
      node("logits", "MatMul", {"mean", "w"}),
      node("prob", "Softmax", {"logits"}),
  });
  Model model;
  Status st = convert(g, &model);
  ASSERT_TRUE(st) << st.message();
  // The input is moved to NCHW once; the pools and the mean read it there.
  EXPECT_EQ(countOps(model.graph, OpType::Transpose), 1);
  const Tensor x = randomTensor(DataType::Float32, {1, H, W, C}, 4, -2, 2);
  const Tensor y = runGraph(model.graph, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{1, N}));
  // SAME, stride 2: 3 x 3 outputs; padding H: 2 (1 before), W: 1 (0 before).
  const int64_t OH = 3, OW = 3, padH = 1, padW = 0;
  std::vector<float> act(OH * OW * M);
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow)
      for (int64_t m = 0; m < M; ++m) {
        double s = b[m];
        for (int64_t kh = 0; kh < K; ++kh)
          for (int64_t kw = 0; kw < K; ++kw)
            for (int64_t c = 0; c < C; ++c) {
              const int64_t ih = oh * 2 - padH + kh, iw = ow * 2 - padW + kw;
              if (ih >= 0 && ih < H && iw >= 0 && iw < W) s += f[((kh * K + kw) * C + c) * M + m] * nhwc(x, 0, ih, iw, c);
            }
        act[(oh * OW + ow) * M + m] = static_cast<float>(std::min(6.0, std::max(0.0, s)));
      }
  std::vector<double> mean(M, 0.0);
  for (int64_t ph = 0; ph < 2; ++ph)
    for (int64_t pw = 0; pw < 2; ++pw)
      for (int64_t m = 0; m < M; ++m) {
        float v = -1e30f;
        for (int64_t h = ph; h < ph + 2; ++h)
          for (int64_t q = pw; q < pw + 2; ++q) v = std::max(v, act[(h * OW + q) * M + m]);
        mean[m] += v / 4.0;
      }
  std::vector<double> logits(N, 0.0);
  double total = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) logits[n] += mean[m] * w[m * N + n];
  const double top = *std::max_element(logits.begin(), logits.end());
  for (double& l : logits) total += (l = std::exp(l - top));
  for (int64_t n = 0; n < N; ++n) EXPECT_NEAR(at(y, n), logits[n] / total, 1e-5) << n;
  EXPECT_EQ(model.graph.tensors[model.graph.outputs[0]].name, "prob");
}

// Depthwise conv, a broadcast constant, an add with the (NHWC) input, concat on channels and a
// pad stay NCHW: one Transpose in, one out.
TEST(TensorflowImport, DepthwiseBroadcastConcatPadStayNchw) {
  const int64_t H = 3, W = 4, C = 2, Mult = 2;
  const std::vector<float> f = values(3 * 3 * C * Mult, 5), scale = values(C * Mult, 6);
  const std::string g = graph({
      placeholder("x", {1, H, W, C}),
      floatConst("dw", {3, 3, C, Mult}, f),
      floatConst("scale", {C * Mult}, scale),
      intConst("axis", {}, {-1}),
      intConst("pads", {4, 2}, {0, 0, 1, 0, 0, 1, 0, 0}),
      node("d", "DepthwiseConv2dNative", {"x", "dw"}, {{"strides", attr::ints({1, 1, 1, 1})}, {"padding", attr::s("SAME")}}),
      node("s", "Mul", {"d", "scale"}),
      node("cat", "ConcatV2", {"s", "x", "axis"}, {{"N", attr::i(2)}}),
      node("pad", "Pad", {"cat", "pads"}),
  });
  Model model;
  Status st = convert(g, &model);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(countOps(model.graph, OpType::Transpose), 2);
  const Tensor x = randomTensor(DataType::Float32, {1, H, W, C}, 7, -1, 1);
  const Tensor y = runGraph(model.graph, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{1, H + 1, W + 1, C * Mult + C}));
  for (int64_t h = 0; h <= H; ++h)
    for (int64_t w = 0; w <= W; ++w)
      for (int64_t c = 0; c < C * Mult + C; ++c) {
        double expect = 0;
        if (h >= 1 && w < W) {
          if (c < C * Mult) {
            const int64_t in = c / Mult, m = c % Mult;
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = h - 1 - 1 + kh, iw = w - 1 + kw;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) expect += f[((kh * 3 + kw) * C + in) * Mult + m] * nhwc(x, 0, ih, iw, in);
              }
            expect *= scale[c];
          } else {
            expect = nhwc(x, 0, h - 1, w, c - C * Mult);
          }
        }
        EXPECT_NEAR(nhwc(y, 0, h, w, c), expect, 1e-5) << h << "," << w << "," << c;
      }
}

// A Conv read twice, once through an Identity: the BiasAdd behind the Identity must not be
// folded into the Conv, which the Relu reads too.
TEST(TensorflowImport, ConvReadTwiceKeepsItsBiasAddApart) {
  const std::vector<float> f = values(2 * 3, 10);
  const std::string g = graph({
      placeholder("x", {1, 1, 1, 2}),
      floatConst("filter", {1, 1, 2, 3}, f),
      floatConst("bias", {3}, {10.f, 20.f, 30.f}),
      node("conv", "Conv2D", {"x", "filter"}, {{"strides", attr::ints({1, 1, 1, 1})}, {"padding", attr::s("VALID")}}),
      node("same", "Identity", {"conv"}),
      node("biased", "BiasAdd", {"same", "bias"}),
      node("relu", "Relu", {"conv"}),
  });
  Model model;
  Status st = convert(g, &model);
  ASSERT_TRUE(st) << st.message();
  const Tensor x = randomTensor(DataType::Float32, {1, 1, 1, 2}, 11, -1, 1);
  const std::vector<Tensor> y = runGraphOutputs(model.graph, {{"x", x}});
  ASSERT_EQ(y.size(), 2u);
  for (int64_t o = 0; o < 3; ++o) {
    const double conv = x.data<float>()[0] * f[o] + x.data<float>()[1] * f[3 + o];
    EXPECT_NEAR(y[0].data<float>()[o], conv + 10.0 * (o + 1), 1e-5) << o;
    EXPECT_NEAR(y[1].data<float>()[o], std::max(0.0, conv), 1e-5) << o;
  }
}

// x[1:, tf.newaxis, 0, ::-2] of a [2, 3, 4] value: [1, 1, 2] = {x[1, 0, 3], x[1, 0, 1]}.
TEST(TensorflowImport, StridedSliceMasksAndReshape) {
  const std::string g = graph({
      placeholder("x", {2, 3, 4}),
      intConst("begin", {4}, {1, 0, 0, 0}),
      intConst("end", {4}, {0, 0, 1, 0}),
      intConst("strides", {4}, {1, 1, 1, -2}),
      intConst("shape", {1}, {-1}),
      node("s", "StridedSlice", {"x", "begin", "end", "strides"},
           {{"begin_mask", attr::i(0b1000)}, {"end_mask", attr::i(0b1001)}, {"new_axis_mask", attr::i(0b10)},
            {"shrink_axis_mask", attr::i(0b100)}}),
      node("flat", "Reshape", {"s", "shape"}),
  });
  Model model;
  Status st = convert(g, &model);
  ASSERT_TRUE(st) << st.message();
  const Tensor x = randomTensor(DataType::Float32, {2, 3, 4}, 8, -1, 1);
  const Tensor y = runGraph(model.graph, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(at(y, 0), x.data<float>()[12 + 3]);
  EXPECT_EQ(at(y, 1), x.data<float>()[12 + 1]);
}

// A v1 while loop (what tf.while_loop freezes to): i = 0; while i < 3: i += 1, x *= 2.
TEST(TensorflowImport, V1WhileLoopBecomesOneLoop) {
  const std::map<std::string, std::string> frame = {{"frame_name", attr::s("L")}};
  const std::string g = graph({
      placeholder("x", {2}),
      intConst("i0", {}, {0}),
      intConst("n", {}, {3}),
      intConst("one", {}, {1}),
      floatConst("two", {}, {2.f}),
      node("enter_i", "Enter", {"i0"}, frame),
      node("enter_x", "Enter", {"x"}, frame),
      node("merge_i", "Merge", {"enter_i", "next_i"}),
      node("merge_x", "Merge", {"enter_x", "next_x"}),
      node("less", "Less", {"merge_i", "n"}),
      node("cond", "LoopCond", {"less"}),
      node("switch_i", "Switch", {"merge_i", "cond"}),
      node("switch_x", "Switch", {"merge_x", "cond"}),
      node("add", "AddV2", {"switch_i:1", "one"}),
      node("mul", "Mul", {"switch_x:1", "two"}),
      node("next_i", "NextIteration", {"add"}),
      node("next_x", "NextIteration", {"mul"}),
      node("exit_x", "Exit", {"switch_x"}),
      node("out", "Identity", {"exit_x"}),
  });
  Model model;
  Status st = convert(g, &model);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(countOps(model.graph, OpType::Loop), 1);
  const Tensor x = randomTensor(DataType::Float32, {2}, 9, -1, 1);
  const Tensor y = runGraph(model.graph, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(at(y, 0), 8 * x.data<float>()[0]);
  EXPECT_EQ(at(y, 1), 8 * x.data<float>()[1]);
  EXPECT_EQ(model.graph.tensors[model.graph.outputs[0]].name, "out");
}

TEST(TensorflowImport, InputShapeOptionFillsUnknownDimensions) {
  const std::string g = graph({placeholder("x", {-1, 3}), node("y", "Relu", {"x"})});
  ConvertOptions options;
  options.inputShapes["x"] = {2, 3};
  Model model;
  Status st = convert(g, &model, options);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(model.graph.tensors[model.graph.inputs[0]].shape, (Shape{2, 3}));
  options.inputShapes = {{"nope", {1}}};
  st = convert(g, &model, options);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("'nope'"), std::string::npos) << st.message();
}

TEST(TensorflowImport, UnsupportedOpsAreListedTogether) {
  const std::string g = graph({
      placeholder("x", {2}),
      node("a", "FancyOp", {"x"}),
      node("b", "FancyOp", {"a"}),
      node("c", "OtherOp", {"b"}),
      node("dead", "NeverReached", {"x"}),
      node("out", "Relu", {"c"}),
  });
  Model model;
  Status st = convert(g, &model);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("unsupported TensorFlow ops: FancyOp x2, NeverReached x1, OtherOp x1"), std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
}

TEST(TensorflowImport, BadGraphsGiveOneLineErrors) {
  const std::string good = graph({placeholder("x", {2}), node("y", "Relu", {"x"})});
  Model model;
  for (size_t cut : {good.size() - 1, good.size() / 2, size_t{3}}) {
    Status st = convert(good.substr(0, cut), &model);
    ASSERT_FALSE(st) << cut;
    EXPECT_EQ(st.message().find("model.pb: truncated TensorFlow GraphDef: "), 0u) << st.message();
  }
  Status st = convert(graph({node("y", "Relu", {"missing"})}), &model);
  EXPECT_NE(st.message().find("node 'y' (Relu) reads 'missing', which no node makes"), std::string::npos) << st.message();
  st = convert(graph({node("a", "Relu", {"b"}), node("b", "Relu", {"a"}), node("out", "Relu", {"b"})}), &model);
  EXPECT_NE(st.message().find("cycle"), std::string::npos) << st.message();
  st = convert(graph({node("c", "Const", {}, {{"value", attr::tensor(tensorProto<float>(kFloat, {3}, {1.f, 2.f}))}}),
                      node("y", "Relu", {"c"})}),
               &model);
  EXPECT_NE(st.message().find("tensor_content of 8 bytes"), std::string::npos) << st.message();
  st = convert(graph({placeholder("x", {2}), node("y", "ConcatV2", {"x"})}), &model);
  EXPECT_NE(st.message().find("node 'y' (ConcatV2)"), std::string::npos) << st.message();
  st = convertTensorflowFile("/nonexistent/model.pb", &model);
  EXPECT_FALSE(st);
}

TEST(TensorflowImport, SavedModelDirectoryIsRecognisedAndItsDamageNamed) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "osprey_tf_saved_model_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "saved_model.pb") << "x";
  EXPECT_TRUE(isTensorflowModel(dir.string()));
  EXPECT_TRUE(isTensorflowModel("frozen.pb"));
  EXPECT_FALSE(isTensorflowModel("model.onnx"));
  Model model;
  Status st = convertTensorflowFile(dir.string(), &model);
  EXPECT_NE(st.message().find("saved_model.pb: truncated TensorFlow SavedModel: "), std::string::npos) << st.message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace osprey::test
