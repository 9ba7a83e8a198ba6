// The TFLite frontend on models written here with the generated FlatBuffers builder: a small
// CNN converted and run (with its Transpose count), and hostile files (truncated, corrupt,
// indices out of range, constants that do not match their shapes, unsupported ops).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "converter/converter.h"
#include "osprey/interpreter.h"
#include "tflite_generated.h"

namespace osprey {
namespace {

// One subgraph, written with the generated builder; each test bends one part of it.
struct TfliteModelSpec {
  struct TensorSpec {
    std::vector<int32_t> shape;
    tflite::TensorType type = tflite::TensorType_FLOAT32;
    uint32_t buffer = 0;
    std::string name;
    std::vector<float> scales = {};  // quantized tensors: per tensor, or per axis along qdim
    std::vector<int64_t> zeroPoints = {};
    int32_t qdim = 0;
  };
  struct OpSpec {
    uint32_t opcode = 0;
    std::vector<int32_t> inputs, outputs;
    std::function<flatbuffers::Offset<void>(flatbuffers::FlatBufferBuilder&)> options;
    tflite::BuiltinOptions optionsType = tflite::BuiltinOptions_NONE;
  };
  std::vector<std::pair<tflite::BuiltinOperator, std::string>> opcodes;
  std::vector<std::vector<uint8_t>> buffers = {{}};
  // Buffers kept after the FlatBuffer (models over 2 GB): index -> {offset, size}.
  std::map<size_t, std::pair<uint64_t, uint64_t>> external;
  std::vector<TensorSpec> tensors;
  std::vector<OpSpec> ops;
  std::vector<int32_t> inputs, outputs;

  int tensor(std::vector<int32_t> shape, std::string name) {
    tensors.push_back({std::move(shape), tflite::TensorType_FLOAT32, 0, std::move(name)});
    return static_cast<int>(tensors.size()) - 1;
  }
  int constant(std::vector<int32_t> shape, const std::vector<float>& values, std::string name) {
    std::vector<uint8_t> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    buffers.push_back(std::move(bytes));
    tensors.push_back({std::move(shape), tflite::TensorType_FLOAT32, static_cast<uint32_t>(buffers.size() - 1), std::move(name)});
    return static_cast<int>(tensors.size()) - 1;
  }
  // An integer tensor with scales; `bytes` empty for an activation.
  int quantized(std::vector<int32_t> shape, tflite::TensorType type, std::vector<float> scales,
                std::vector<int64_t> zeroPoints, std::string name, std::vector<uint8_t> bytes = {}, int32_t qdim = 0) {
    uint32_t buffer = 0;
    if (!bytes.empty()) {
      buffers.push_back(std::move(bytes));
      buffer = static_cast<uint32_t>(buffers.size() - 1);
    }
    tensors.push_back({std::move(shape), type, buffer, std::move(name), std::move(scales), std::move(zeroPoints), qdim});
    return static_cast<int>(tensors.size()) - 1;
  }
  uint32_t opcode(tflite::BuiltinOperator op, std::string custom = "") {
    for (size_t i = 0; i < opcodes.size(); ++i)
      if (opcodes[i].first == op && opcodes[i].second == custom) return static_cast<uint32_t>(i);
    opcodes.push_back({op, custom});
    return static_cast<uint32_t>(opcodes.size() - 1);
  }

  std::vector<uint8_t> build() const {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<tflite::Buffer>> bufs;
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (auto it = external.find(i); it != external.end()) {
        bufs.push_back(tflite::CreateBuffer(b, 0, it->second.first, it->second.second));
        continue;
      }
      b.ForceVectorAlignment(buffers[i].size(), 1, 16);
      bufs.push_back(tflite::CreateBuffer(b, buffers[i].empty() ? 0 : b.CreateVector(buffers[i])));
    }
    std::vector<flatbuffers::Offset<tflite::Tensor>> ts;
    for (auto& t : tensors) {
      flatbuffers::Offset<tflite::QuantizationParameters> q = 0;
      if (!t.scales.empty())
        q = tflite::CreateQuantizationParameters(b, 0, 0, b.CreateVector(t.scales), b.CreateVector(t.zeroPoints),
                                                 tflite::QuantizationDetails_NONE, 0, t.qdim);
      ts.push_back(tflite::CreateTensor(b, b.CreateVector(t.shape), t.type, t.buffer, b.CreateString(t.name), q));
    }
    std::vector<flatbuffers::Offset<tflite::Operator>> os;
    for (auto& o : ops) {
      auto options = o.options ? o.options(b) : 0;
      os.push_back(tflite::CreateOperator(b, o.opcode, b.CreateVector(o.inputs), b.CreateVector(o.outputs), o.optionsType, options));
    }
    std::vector<flatbuffers::Offset<tflite::OperatorCode>> codes;
    for (auto& [op, custom] : opcodes)
      codes.push_back(tflite::CreateOperatorCode(b, static_cast<int8_t>(std::min<int>(op, 127)),
                                                 custom.empty() ? 0 : b.CreateString(custom), 1, op));
    auto sub = tflite::CreateSubGraph(b, b.CreateVector(ts), b.CreateVector(inputs), b.CreateVector(outputs), b.CreateVector(os));
    auto model = tflite::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(std::vector{sub}), 0, b.CreateVector(bufs));
    tflite::FinishModelBuffer(b, model);
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  }
};

std::vector<float> randomValues(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// conv (SAME, stride 2, RELU6) -> depthwise -> add -> max pool -> concat -> mean over H, W ->
// fully connected.
TfliteModelSpec smallCnn() {
  TfliteModelSpec m;
  int x = m.tensor({1, 8, 8, 3}, "image");
  m.inputs = {x};
  int w = m.constant({4, 3, 3, 3}, randomValues(108, 1), "w"), b = m.constant({4}, randomValues(4, 2), "b");
  int c = m.tensor({1, 4, 4, 4}, "conv");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_CONV_2D), {x, w, b}, {c},
                   [](flatbuffers::FlatBufferBuilder& fb) {
                     return tflite::CreateConv2DOptions(fb, tflite::Padding_SAME, 2, 2, tflite::ActivationFunctionType_RELU6).Union();
                   },
                   tflite::BuiltinOptions_Conv2DOptions});
  int dw = m.constant({1, 3, 3, 4}, randomValues(36, 3), "dw"), db = m.constant({4}, randomValues(4, 4), "db");
  int d = m.tensor({1, 4, 4, 4}, "depthwise");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_DEPTHWISE_CONV_2D), {c, dw, db}, {d},
                   [](flatbuffers::FlatBufferBuilder& fb) {
                     return tflite::CreateDepthwiseConv2DOptions(fb, tflite::Padding_SAME, 1, 1, 1).Union();
                   },
                   tflite::BuiltinOptions_DepthwiseConv2DOptions});
  int s = m.tensor({1, 4, 4, 4}, "sum");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_ADD), {c, d}, {s}, nullptr, tflite::BuiltinOptions_NONE});
  int p = m.tensor({1, 2, 2, 4}, "pool");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_MAX_POOL_2D), {s}, {p},
                   [](flatbuffers::FlatBufferBuilder& fb) {
                     return tflite::CreatePool2DOptions(fb, tflite::Padding_VALID, 2, 2, 2, 2).Union();
                   },
                   tflite::BuiltinOptions_Pool2DOptions});
  int cat = m.tensor({1, 2, 2, 8}, "concat");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_CONCATENATION), {p, p}, {cat},
                   [](flatbuffers::FlatBufferBuilder& fb) { return tflite::CreateConcatenationOptions(fb, 3).Union(); },
                   tflite::BuiltinOptions_ConcatenationOptions});
  m.buffers.push_back({1, 0, 0, 0, 2, 0, 0, 0});  // int32 axes [1, 2]
  m.tensors.push_back({{2}, tflite::TensorType_INT32, static_cast<uint32_t>(m.buffers.size() - 1), "axes"});
  int axes = static_cast<int>(m.tensors.size()) - 1;
  int mean = m.tensor({1, 8}, "mean");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_MEAN), {cat, axes}, {mean},
                   [](flatbuffers::FlatBufferBuilder& fb) { return tflite::CreateReducerOptions(fb, false).Union(); },
                   tflite::BuiltinOptions_ReducerOptions});
  int fw = m.constant({5, 8}, randomValues(40, 5), "fc_w"), fb = m.constant({5}, randomValues(5, 6), "fc_b");
  int y = m.tensor({1, 5}, "logits");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_FULLY_CONNECTED), {mean, fw, fb}, {y}, nullptr, tflite::BuiltinOptions_NONE});
  m.outputs = {y};
  return m;
}

Status convert(const std::vector<uint8_t>& bytes, Model* model) {
  return convertTfliteBytes(bytes.data(), bytes.size(), model);
}

TEST(TfliteImport, SmallCnnKeepsNchwWithFewTransposes) {
  auto model = std::make_shared<Model>();
  ASSERT_TRUE(convert(smallCnn().build(), model.get()).isOk());
  int transposes = 0;
  for (const Node& n : model->graph.nodes) transposes += n.type == OpType::Transpose;
  EXPECT_LE(transposes, 2);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ASSERT_EQ(interp->inputs().size(), 1u);
  EXPECT_EQ(interp->inputs()[0].name, "image");
  EXPECT_EQ(interp->inputs()[0].shape, (Shape{1, 8, 8, 3}));
  EXPECT_EQ(interp->outputs()[0].name, "logits");
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  std::vector<float> input = randomValues(192, 7);
  std::vector<Tensor> outputs;
  Status st = session->run({{"image", Tensor::wrap(DataType::Float32, {1, 8, 8, 3}, input.data())}}, &outputs);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(outputs[0].shape(), (Shape{1, 5}));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(std::isfinite(outputs[0].data<float>()[i]));
}

std::vector<float> runCnn(const std::vector<uint8_t>& bytes) {
  auto model = std::make_shared<Model>();
  Status st = convertTfliteBytes(bytes.data(), bytes.size(), model.get());
  EXPECT_TRUE(st.isOk()) << st.message();
  std::shared_ptr<Interpreter> interp;
  std::unique_ptr<Session> session;
  if (!st.isOk() || !Interpreter::fromModel(model, &interp).isOk() ||
      !interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk())
    return {};
  std::vector<float> input = randomValues(192, 7);
  std::vector<Tensor> outputs;
  if (!session->run({{"image", Tensor::wrap(DataType::Float32, {1, 8, 8, 3}, input.data())}}, &outputs).isOk()) return {};
  return std::vector<float>(outputs[0].data<float>(), outputs[0].data<float>() + 5);
}

// The conv's filters (buffer 1) after the FlatBuffer, as writers of models over 2 GB put them.
TEST(TfliteImport, ExternalBuffersAreReadFromTheFile) {
  const std::vector<float> inlined = runCnn(smallCnn().build());
  ASSERT_EQ(inlined.size(), 5u);
  TfliteModelSpec m = smallCnn();
  const std::vector<uint8_t> filters = m.buffers[1];
  m.external[1] = {~uint64_t{0} >> 1, filters.size()};  // a placeholder of the final encoding's size
  const size_t flatSize = m.build().size();
  const size_t offset = (flatSize + 15) / 16 * 16;
  m.external[1] = {offset, filters.size()};
  std::vector<uint8_t> file = m.build();
  ASSERT_EQ(file.size(), flatSize);
  file.resize(offset);
  file.insert(file.end(), filters.begin(), filters.end());
  EXPECT_EQ(runCnn(file), inlined);

  file.resize(file.size() - 4);  // the buffer now ends past the file
  Model model;
  Status st = convertTfliteBytes(file.data(), file.size(), &model);
  EXPECT_EQ(st.code(), StatusCode::InvalidModel);
  EXPECT_NE(st.message().find("outside the"), std::string::npos) << st.message();
}

TEST(TfliteImport, TruncatedAndCorruptBuffersAreErrors) {
  const std::vector<uint8_t> bytes = smallCnn().build();
  for (size_t size = 0; size < bytes.size(); size += std::max<size_t>(1, bytes.size() / 97)) {
    Model model;
    Status st = convertTfliteBytes(bytes.data(), size, &model);
    EXPECT_FALSE(st.isOk()) << "truncated to " << size << " bytes";
  }
  std::mt19937 gen(11);
  int failures = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> bad = bytes;
    for (int k = 0; k < 4; ++k) bad[8 + gen() % (bad.size() - 8)] = static_cast<uint8_t>(gen());
    Model model;
    failures += !convertTfliteBytes(bad.data(), bad.size(), &model).isOk();  // must not crash
  }
  EXPECT_GT(failures, 0);
}

TEST(TfliteImport, WrongIdentifierIsNamed) {
  std::vector<uint8_t> bytes = smallCnn().build();
  bytes[4] = 'X';
  Model model;
  Status st = convert(bytes, &model);
  EXPECT_EQ(st.code(), StatusCode::InvalidModel);
  EXPECT_NE(st.message().find("TFL3"), std::string::npos) << st.message();
}

TEST(TfliteImport, IndicesOutOfRangeAreErrors) {
  struct Case {
    const char* what;
    std::function<void(TfliteModelSpec&)> bend;
    const char* expected;
  };
  const Case cases[] = {
      {"op input", [](TfliteModelSpec& m) { m.ops[2].inputs[1] = 999; }, "tensor index 999"},
      {"op output", [](TfliteModelSpec& m) { m.ops[2].outputs[0] = -1; }, "output tensor index -1"},
      {"opcode", [](TfliteModelSpec& m) { m.ops[0].opcode = 77; }, "opcode_index 77"},
      {"buffer", [](TfliteModelSpec& m) { m.tensors[1].buffer = 500; }, "buffer index 500"},
      {"graph input", [](TfliteModelSpec& m) { m.inputs[0] = 4000; }, "tensor index 4000"},
      {"constant size", [](TfliteModelSpec& m) { m.tensors[1].shape = {4, 3, 3, 4}; }, "bytes of data"},
      {"read before written", [](TfliteModelSpec& m) { std::swap(m.ops[0], m.ops[1]); }, "before any op produces it"},
  };
  for (const Case& c : cases) {
    TfliteModelSpec m = smallCnn();
    c.bend(m);
    Model model;
    Status st = convert(m.build(), &model);
    EXPECT_EQ(st.code(), StatusCode::InvalidModel) << c.what << ": " << st.message();
    EXPECT_NE(st.message().find(c.expected), std::string::npos) << c.what << ": " << st.message();
  }
}

TEST(TfliteImport, UnsupportedOpsAreListedTogether) {
  TfliteModelSpec m;
  int x = m.tensor({2, 3}, "x"), a = m.tensor({2, 3}, "a"), b = m.tensor({2, 3}, "b"), c = m.tensor({2, 3}, "c"),
      d = m.tensor({2, 3}, "d");
  m.inputs = {x};
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_LSH_PROJECTION), {x}, {a}, nullptr, tflite::BuiltinOptions_NONE});
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_CUSTOM, "FancyOp"), {a}, {b}, nullptr, tflite::BuiltinOptions_NONE});
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_LSH_PROJECTION), {b}, {c}, nullptr, tflite::BuiltinOptions_NONE});
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_CALL_ONCE), {c}, {d}, nullptr, tflite::BuiltinOptions_NONE});
  m.outputs = {d};
  Model model;
  Status st = convert(m.build(), &model);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  for (const char* part : {"LSH_PROJECTION x2", "custom 'FancyOp' x1", "CALL_ONCE x1"})
    EXPECT_NE(st.message().find(part), std::string::npos) << st.message();
}

template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// An int8 CONV_2D (per-channel weights, int32 bias, fused RELU6 that the output range holds)
// and FULLY_CONNECTED: imported in QDQ form and fused into QLinearConv and QGemm with no
// activation op left. The outputs are checked against TFLite's integer arithmetic
// (requantization in double): equal except one step where the exact value lies within 1e-3 of
// a rounding boundary.
TEST(TfliteImport, Int8ConvAndDenseBecomeIntegerOps) {
  TfliteModelSpec m;
  const float xs = 0.05f, ys = 6.f / 255.f, fs = 0.2f;
  int x = m.quantized({1, 4, 4, 3}, tflite::TensorType_INT8, {xs}, {3}, "image");
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> byte(-127, 127), small(-300, 300);
  std::vector<int8_t> w(2 * 3 * 3 * 3), fw(5 * 8);
  for (auto& v : w) v = static_cast<int8_t>(byte(gen));
  for (auto& v : fw) v = static_cast<int8_t>(byte(gen));
  std::vector<int32_t> bias = {small(gen), small(gen)}, fbias(5);
  for (auto& v : fbias) v = small(gen);
  const std::vector<float> ws = {0.01f, 0.02f};
  int wt = m.quantized({2, 3, 3, 3}, tflite::TensorType_INT8, ws, {0, 0}, "w", bytesOf(w), 0);
  int bt = m.quantized({2}, tflite::TensorType_INT32, {xs * ws[0], xs * ws[1]}, {0, 0}, "b", bytesOf(bias), 0);
  int c = m.quantized({1, 2, 2, 2}, tflite::TensorType_INT8, {ys}, {-128}, "conv");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_CONV_2D), {x, wt, bt}, {c},
                   [](flatbuffers::FlatBufferBuilder& fb) {
                     return tflite::CreateConv2DOptions(fb, tflite::Padding_SAME, 2, 2, tflite::ActivationFunctionType_RELU6).Union();
                   },
                   tflite::BuiltinOptions_Conv2DOptions});
  int shape = m.constant({2}, {}, "shape");
  m.buffers.back() = bytesOf(std::vector<int32_t>{1, 8});
  m.tensors[shape].type = tflite::TensorType_INT32;
  int flat = m.quantized({1, 8}, tflite::TensorType_INT8, {ys}, {-128}, "flat");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_RESHAPE), {c, shape}, {flat}, nullptr, tflite::BuiltinOptions_NONE});
  int fwt = m.quantized({5, 8}, tflite::TensorType_INT8, {fs}, {0}, "fw", bytesOf(fw));
  int fbt = m.quantized({5}, tflite::TensorType_INT32, {ys * fs}, {0}, "fb", bytesOf(fbias));
  int y = m.quantized({1, 5}, tflite::TensorType_INT8, {0.5f}, {1}, "logits");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_FULLY_CONNECTED), {flat, fwt, fbt}, {y}, nullptr, tflite::BuiltinOptions_NONE});
  m.inputs = {x};
  m.outputs = {y};

  auto model = std::make_shared<Model>();
  Status st = convert(m.build(), model.get());
  ASSERT_TRUE(st.isOk()) << st.message();
  std::map<OpType, int> count;
  for (const Node& n : model->graph.nodes) ++count[n.type];
  EXPECT_EQ(count[OpType::QLinearConv], 1);
  EXPECT_EQ(count[OpType::QGemm], 1);
  EXPECT_EQ(count[OpType::Clip] + count[OpType::Relu] + count[OpType::Conv] + count[OpType::Gemm], 0);

  std::vector<int8_t> input(48);
  for (auto& v : input) v = static_cast<int8_t>(byte(gen));
  std::shared_ptr<Interpreter> interp;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  std::vector<Tensor> outputs;
  st = session->run({{"image", Tensor::wrap(DataType::Int8, {1, 4, 4, 3}, input.data())}}, &outputs);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(outputs[0].dtype(), DataType::Int8);

  // TFLite's arithmetic, NHWC; `near` counts values within 1e-3 of a .5 boundary.
  auto requantize = [](double v, int zero, bool* near) {
    *near = std::abs(std::abs(v - std::floor(v)) - 0.5) < 1e-3;
    return static_cast<int>(std::clamp<double>(std::round(v) + zero, -128, 127));
  };
  std::vector<int> conv(8);
  bool near = false, anyNear = false;
  for (int oy = 0; oy < 2; ++oy)
    for (int ox = 0; ox < 2; ++ox)
      for (int oc = 0; oc < 2; ++oc) {
        int64_t acc = bias[oc];
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx)
            for (int ic = 0; ic < 3; ++ic) {
              const int iy = oy * 2 + ky, ix = ox * 2 + kx;  // SAME, stride 2, 4 -> 2: pad 0 before, 1 after
              if (iy >= 4 || ix >= 4) continue;
              acc += (input[(iy * 4 + ix) * 3 + ic] - 3) * w[((oc * 3 + ky) * 3 + kx) * 3 + ic];
            }
        conv[(oy * 2 + ox) * 2 + oc] = requantize(acc * (double(xs) * ws[oc] / ys), -128, &near);
        anyNear |= near;
      }
  for (int n = 0; n < 5; ++n) {
    int64_t acc = fbias[n];
    for (int k = 0; k < 8; ++k) acc += (conv[k] + 128) * fw[n * 8 + k];
    const int expected = requantize(acc * (double(ys) * fs / 0.5), 1, &near);
    const int got = outputs[0].data<int8_t>()[n];
    if (anyNear || near) EXPECT_LE(std::abs(got - expected), 1) << n;
    else EXPECT_EQ(got, expected) << n;
  }
}

// A fused RELU whose range does not hold the output's (zero point above the lowest code) stays
// an op, and clamps as TFLite's integer kernels do.
TEST(TfliteImport, Int8ActivationOutsideTheOutputRangeStays) {
  TfliteModelSpec m;
  int a = m.quantized({1, 4}, tflite::TensorType_INT8, {0.1f}, {0}, "a");
  int b = m.quantized({1, 4}, tflite::TensorType_INT8, {0.1f}, {0}, "b");
  int y = m.quantized({1, 4}, tflite::TensorType_INT8, {0.1f}, {0}, "y");
  m.ops.push_back({m.opcode(tflite::BuiltinOperator_ADD), {a, b}, {y},
                   [](flatbuffers::FlatBufferBuilder& fb) {
                     return tflite::CreateAddOptions(fb, tflite::ActivationFunctionType_RELU).Union();
                   },
                   tflite::BuiltinOptions_AddOptions});
  m.inputs = {a, b};
  m.outputs = {y};
  auto model = std::make_shared<Model>();
  Status st = convert(m.build(), model.get());
  ASSERT_TRUE(st.isOk()) << st.message();
  std::shared_ptr<Interpreter> interp;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  std::vector<int8_t> av = {-50, 20, 100, -3}, bv = {10, -30, 100, 2};
  std::vector<Tensor> outputs;
  st = session->run({{"a", Tensor::wrap(DataType::Int8, {1, 4}, av.data())}, {"b", Tensor::wrap(DataType::Int8, {1, 4}, bv.data())}},
                    &outputs);
  ASSERT_TRUE(st.isOk()) << st.message();
  const std::vector<int8_t> expected = {0, 0, 127, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(outputs[0].data<int8_t>()[i], expected[i]) << i;
}

TEST(TfliteImport, FileErrorsNameTheFile) {
  const std::string path = ::testing::TempDir() + "/broken_model.tflite";
  std::vector<uint8_t> bytes = smallCnn().build();
  bytes.resize(bytes.size() / 2);
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  std::shared_ptr<Interpreter> interp;
  Status st = Interpreter::fromFile(path, &interp);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("broken_model.tflite"), std::string::npos) << st.message();
  Model model;
  st = convertTfliteFile(path, &model);
  EXPECT_NE(st.message().find("broken_model.tflite"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace osprey
