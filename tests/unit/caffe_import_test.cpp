// The Caffe frontend: prototxt text, caffemodel weights (written here with a few protobuf wire
// helpers), the layers against naive loops written from Caffe's definitions, and errors that
// name the file, line or layer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"
#include "converter/converter.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

// Protobuf wire writing, enough for NetParameter / LayerParameter / BlobProto.
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
  void bytes(int field, const std::string& s) {
    tag(field, 2);
    varint(s.size());
    out += s;
  }
  void intField(int field, int64_t v) {
    tag(field, 0);
    varint(static_cast<uint64_t>(v));
  }
};

std::string blob(const std::vector<int64_t>& shape, const std::vector<float>& data) {
  Wire dims, b;
  for (int64_t d : shape) dims.varint(static_cast<uint64_t>(d));
  Wire shapeMsg;
  shapeMsg.bytes(1, dims.out);  // packed dims
  b.bytes(7, shapeMsg.out);
  b.bytes(5, std::string(reinterpret_cast<const char*>(data.data()), data.size() * 4));
  return b.out;
}

std::string layer(const std::string& name, const std::vector<std::string>& blobs, bool legacy = false) {
  Wire l;
  l.bytes(legacy ? 4 : 1, name);
  for (const std::string& b : blobs) l.bytes(legacy ? 6 : 7, b);
  return l.out;
}

std::string net(const std::vector<std::string>& layers, bool legacy = false) {
  Wire n;
  for (const std::string& l : layers) n.bytes(legacy ? 2 : 100, l);
  return n.out;
}

std::vector<float> values(int64_t n, uint32_t seed, double lo = -1, double hi = 1) {
  Tensor t = randomTensor(DataType::Float32, {n}, seed, lo, hi);
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

Status convert(const std::string& prototxt, const std::string& weights, Model* m) {
  return convertCaffeBytes(prototxt, "deploy.prototxt", reinterpret_cast<const uint8_t*>(weights.data()), weights.size(),
                           "net.caffemodel", m);
}

float at4(const Tensor& t, int64_t n, int64_t c, int64_t h, int64_t w) {
  const Shape& s = t.shape();
  return t.data<float>()[((n * s[1] + c) * s[2] + h) * s[3] + w];
}

TEST(CaffeImport, ConvReluPoolInnerProductSoftmaxMatchNaiveLoops) {
  const int64_t C = 2, H = 7, W = 9, M = 3, K = 3;
  const std::vector<float> w = values(M * C * K * K, 1), b = values(M, 2), ipw = values(4 * M * 2 * 3, 3), ipb = values(4, 4);
  const std::string prototxt = R"(name: "tiny"  # a comment
input: "data"
input_shape { dim: 1 dim: 2 dim: 7 dim: 9 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  convolution_param { num_output: 3 kernel_size: 3 pad: 1 stride: 2 } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1" inner_product_param { num_output: 4 } }
layer { name: "prob" type: "Softmax" bottom: "ip1" top: "prob" }
)";
  const std::string weights = net({layer("conv1", {blob({M, C, K, K}, w), blob({M}, b)}),
                                   layer("ip1", {blob({4, M * 2 * 3}, ipw), blob({4}, ipb)})});
  Model model;
  Status st = convert(prototxt, weights, &model);
  ASSERT_TRUE(st) << st.message();
  const Tensor x = randomTensor(DataType::Float32, {1, C, H, W}, 5, -1, 1);
  const Tensor y = runGraph(model.graph, {{"data", x}});
  ASSERT_EQ(y.shape(), (Shape{1, 4}));
  // conv 3x3 pad 1 stride 2: 4 x 5; relu; max 2x2 stride 2, ceil: 2 x 3.
  std::vector<float> conv(M * 4 * 5);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t oh = 0; oh < 4; ++oh)
      for (int64_t ow = 0; ow < 5; ++ow) {
        double s = b[m];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t kh = 0; kh < K; ++kh)
            for (int64_t kw = 0; kw < K; ++kw) {
              const int64_t ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
              if (ih >= 0 && ih < H && iw >= 0 && iw < W) s += w[((m * C + c) * K + kh) * K + kw] * at4(x, 0, c, ih, iw);
            }
        conv[(m * 4 + oh) * 5 + ow] = static_cast<float>(std::max(0.0, s));
      }
  std::vector<float> pooled(M * 2 * 3, -1e30f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t ph = 0; ph < 2; ++ph)
      for (int64_t pw = 0; pw < 3; ++pw)
        for (int64_t h = ph * 2; h < std::min<int64_t>(4, ph * 2 + 2); ++h)
          for (int64_t v = pw * 2; v < std::min<int64_t>(5, pw * 2 + 2); ++v)
            pooled[(m * 2 + ph) * 3 + pw] = std::max(pooled[(m * 2 + ph) * 3 + pw], conv[(m * 4 + h) * 5 + v]);
  std::vector<double> logits(4);
  double total = 0;
  for (int64_t n = 0; n < 4; ++n) {
    logits[n] = ipb[n];
    for (int64_t k = 0; k < M * 6; ++k) logits[n] += ipw[n * M * 6 + k] * pooled[k];
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  for (double& l : logits) total += (l = std::exp(l - top));
  for (int64_t n = 0; n < 4; ++n) EXPECT_NEAR(at(y, n), logits[n] / total, 1e-5) << n;
  EXPECT_EQ(model.graph.tensors[model.graph.outputs[0]].name, "prob");
}

TEST(CaffeImport, BatchNormScaleEltwiseConcatSlicePowerMatchNaiveLoops) {
  const int64_t C = 3, HW = 4;
  const std::vector<float> mean = values(C, 6), var = values(C, 7, 0.5, 2), gamma = values(C, 8), beta = values(C, 9);
  const std::string prototxt = R"(input: "x" input_dim: 1 input_dim: 3 input_dim: 2 input_dim: 2
layer { name: "bn" type: "BatchNorm" bottom: "x" top: "bn" batch_norm_param { eps: 0.001 } }
layer { name: "sc" type: "Scale" bottom: "bn" top: "bn" scale_param { bias_term: true } }
layer { name: "sum" type: "Eltwise" bottom: "bn" bottom: "x" top: "sum" eltwise_param { operation: SUM coeff: 2 coeff: -0.5 } }
layer { name: "cat" type: "Concat" bottom: "sum" bottom: "x" top: "cat" }
layer { name: "sl" type: "Slice" bottom: "cat" top: "a" top: "b" slice_param { axis: 1 slice_point: 2 } }
layer { name: "pw" type: "Power" bottom: "b" top: "p" power_param { power: 2 scale: 0.5 shift: 1 } }
)";
  std::vector<float> scaledMean = mean, scaledVar = var;
  for (float& v : scaledMean) v *= 2;  // stored as running sums, with a moving-average factor of 0.5
  for (float& v : scaledVar) v *= 2;
  const std::string weights = net({layer("bn", {blob({C}, scaledMean), blob({C}, scaledVar), blob({1}, {2.f})}),
                                   layer("sc", {blob({C}, gamma), blob({C}, beta)})});
  Model model;
  Status st = convert(prototxt, weights, &model);
  ASSERT_TRUE(st) << st.message();
  const Tensor x = randomTensor(DataType::Float32, {1, C, 2, 2}, 10, -2, 2);
  const std::vector<Tensor> out = runGraphOutputs(model.graph, {{"x", x}});
  ASSERT_EQ(out.size(), 2u);  // a, p
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 2, 2}));
  ASSERT_EQ(out[1].shape(), (Shape{1, 4, 2, 2}));
  std::vector<double> sum(C * HW), cat;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < HW; ++i) {
      const double v = at(x, c * HW + i);
      const double bn = (v - mean[c] / 1.0 * 1.0) / std::sqrt(var[c] + 0.001);
      sum[c * HW + i] = 2 * (bn * gamma[c] + beta[c]) - 0.5 * v;
    }
  cat = sum;
  for (int64_t i = 0; i < C * HW; ++i) cat.push_back(at(x, i));
  for (int64_t i = 0; i < 2 * HW; ++i) EXPECT_NEAR(at(out[0], i), cat[i], 1e-4) << i;
  for (int64_t i = 0; i < 4 * HW; ++i) EXPECT_NEAR(at(out[1], i), std::pow(1 + 0.5 * cat[2 * HW + i], 2), 1e-4) << i;
}

// Caffe's average pooling divides by the window clipped to the padded input, and its ceil
// rounding keeps a last window that starts inside the input or its begin padding.
TEST(CaffeImport, AveragePoolingCeilsAndDividesAsCaffe) {
  const std::string prototxt = R"(layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 1 dim: 1 dim: 6 dim: 6 } } }
layer { name: "pool" type: "Pooling" bottom: "x" top: "y" pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } })";
  Model model;
  Status st = convert(prototxt, "", &model);
  ASSERT_TRUE(st) << st.message();
  const Tensor x = randomTensor(DataType::Float32, {1, 1, 6, 6}, 11, -1, 1);
  const Tensor y = runGraph(model.graph, {{"x", x}});
  // pooled = ceil((6 + 2 - 3) / 2) + 1 = 4; (4 - 1) * 2 = 6 < 6 + 1, so all 4 stay.
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 4}));
  for (int64_t ph = 0; ph < 4; ++ph)
    for (int64_t pw = 0; pw < 4; ++pw) {
      const int64_t hs = ph * 2 - 1, ws = pw * 2 - 1;
      const int64_t he = std::min<int64_t>(hs + 3, 6 + 1), we = std::min<int64_t>(ws + 3, 6 + 1);
      const double size = static_cast<double>((he - hs) * (we - ws));
      double s = 0;
      for (int64_t h = std::max<int64_t>(hs, 0); h < std::min<int64_t>(he, 6); ++h)
        for (int64_t w = std::max<int64_t>(ws, 0); w < std::min<int64_t>(we, 6); ++w) s += at4(x, 0, 0, h, w);
      EXPECT_NEAR(at4(y, 0, 0, ph, pw), s / size, 1e-5) << ph << "," << pw;
    }
}

TEST(CaffeImport, LegacyV1LayersAndTheirWeightsImport) {
  const std::string prototxt = R"(input: "data" input_dim: 1 input_dim: 1 input_dim: 3 input_dim: 3
layers { name: "conv" type: CONVOLUTION bottom: "data" top: "conv" convolution_param { num_output: 1 kernel_size: 1 } }
layers { name: "act" type: TANH bottom: "conv" top: "out" })";
  // A legacy 4-D blob: num 1, channels 1, height 1, width 1 (no BlobShape).
  Wire legacyWeight;
  for (int f = 1; f <= 4; ++f) legacyWeight.intField(f, 1);
  const float two = 2.f;
  legacyWeight.bytes(5, std::string(reinterpret_cast<const char*>(&two), 4));
  Wire legacyBias;  // 1 x 1 x 1 x 1
  for (int f = 1; f <= 4; ++f) legacyBias.intField(f, 1);
  const float half = 0.5f;
  legacyBias.bytes(5, std::string(reinterpret_cast<const char*>(&half), 4));
  Model model;
  Status st = convert(prototxt, net({layer("conv", {legacyWeight.out, legacyBias.out}, true)}, true), &model);
  ASSERT_TRUE(st) << st.message();
  const Tensor x = randomTensor(DataType::Float32, {1, 1, 3, 3}, 12, -1, 1);
  const Tensor y = runGraph(model.graph, {{"data", x}});
  for (int64_t i = 0; i < 9; ++i) EXPECT_NEAR(at(y, i), std::tanh(2 * at(x, i) + 0.5), 1e-6);
}

// PriorBox is shape arithmetic on its bottoms: with a Caffe net's static shapes, conversion leaves
// one constant feeding DetectionOutput (its values: python/tests/test_caffe_models.py).
TEST(CaffeImport, PriorBoxFoldsToAConstantBeforeDetectionOutput) {
  const std::string prototxt = R"(input: "f" input_shape { dim: 1 dim: 2 dim: 3 dim: 5 }
input: "img" input_shape { dim: 1 dim: 3 dim: 30 dim: 50 }
input: "loc" input_shape { dim: 1 dim: 240 }
input: "conf" input_shape { dim: 1 dim: 120 }
layer { name: "p" type: "PriorBox" bottom: "f" bottom: "img" top: "p"
  prior_box_param { min_size: 8 max_size: 16 aspect_ratio: 2 variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 } }
layer { name: "d" type: "DetectionOutput" bottom: "loc" bottom: "conf" bottom: "p" top: "d"
  detection_output_param { num_classes: 2 code_type: CENTER_SIZE nms_param { nms_threshold: 0.45 } } })";
  Model model;
  Status st = convert(prototxt, "", &model);
  ASSERT_TRUE(st) << st.message();
  ASSERT_EQ(model.graph.nodes.size(), 1u);
  const Node& d = model.graph.nodes[0];
  EXPECT_EQ(d.type, OpType::DetectionOutput);
  const TensorInfo& priors = model.graph.tensors[d.inputs[2]];
  EXPECT_TRUE(priors.isConstant);
  EXPECT_EQ(priors.shape, (Shape{1, 2, 3 * 5 * 4 * 4}));
}

TEST(CaffeImport, ErrorsNameTheFileLineOrLayer) {
  Model m;
  Status st = convert("input: \"x\"\nlayer { name: \"a\" type: \"ReLU\" bottom: \"x\" top: \"y\"\n", "", &m);
  EXPECT_NE(st.message().find("deploy.prototxt:3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("missing '}'"), std::string::npos) << st.message();

  const std::string base = "input: \"x\" input_dim: 1 input_dim: 1 input_dim: 2 input_dim: 2\n";
  st = convert(base + R"(layer { name: "p" type: "SPP" bottom: "x" top: "p" }
layer { name: "q" type: "Foo" bottom: "x" top: "q" } layer { name: "r" type: "Foo" bottom: "q" top: "r" })",
               "", &m);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  EXPECT_NE(st.message().find("Foo (2), SPP (1)"), std::string::npos) << st.message();

  st = convert(base + R"(layer { name: "c" type: "Convolution" bottom: "x" top: "c" convolution_param { num_output: 2 kernel_size: 1 } })",
               "", &m);
  EXPECT_NE(st.message().find("layer 'c' (Convolution): has no weights"), std::string::npos) << st.message();

  st = convert(base + R"(layer { name: "c" type: "ReLU" bottom: "nothing" top: "c" })", "", &m);
  EXPECT_NE(st.message().find("reads blob 'nothing'"), std::string::npos) << st.message();

  st = convert(base + R"(layer { name: "c" type: "ReLU" bottom: "x" top: "c" relu_param { negative_slope: abc } })", "", &m);
  EXPECT_NE(st.message().find("deploy.prototxt:2: 'negative_slope' must be a number"), std::string::npos) << st.message();

  const std::string weights = net({layer("c", {blob({2, 1, 1, 1}, {1.f, 2.f})})});
  st = convert(base + R"(layer { name: "c" type: "ReLU" bottom: "x" top: "c" })", weights.substr(0, weights.size() - 3), &m);
  EXPECT_NE(st.message().find("truncated Caffe weights net.caffemodel"), std::string::npos) << st.message();

  st = convert(base + R"(layer { name: "c" type: "ReLU" bottom: "x" top: "c" })", net({layer("c", {blob({3}, {1.f, 2.f})})}), &m);
  EXPECT_NE(st.message().find("holds 2 values"), std::string::npos) << st.message();

  // Weights of another kernel than the prototxt's: 2 x 1 x 3 x 3 filters for kernel_size 1.
  const std::string conv = R"(layer { name: "c" type: "Convolution" bottom: "x" top: "c" convolution_param { num_output: 2 kernel_size: 1 bias_term: false } })";
  st = convert(base + conv, net({layer("c", {blob({2, 1, 3, 3}, std::vector<float>(18, 1.f))})}), &m);
  EXPECT_NE(st.message().find("layer 'c' (Convolution): weights [2, 1, 3, 3] do not match"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace osprey::test
