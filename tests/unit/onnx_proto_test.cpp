// The ONNX wire-format decoder: real models from the ONNX node tests, a hand-encoded model
// that touches every field kind, and hostile input (truncation, corruption, deep nesting).
#include "converter/onnx/onnx_proto.h"

#include "converter/converter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace osprey::onnx {
namespace {

namespace fs = std::filesystem;

// ---- a minimal protobuf encoder, enough to write test messages by hand ----
class Pb {
 public:
  Pb& varint(uint32_t field, uint64_t v) { return tag(field, 0).raw(v); }
  Pb& fixed32(uint32_t field, uint32_t bits) {
    tag(field, 5);
    buf.append(reinterpret_cast<const char*>(&bits), 4);
    return *this;
  }
  Pb& fixed64(uint32_t field, uint64_t bits) {
    tag(field, 1);
    buf.append(reinterpret_cast<const char*>(&bits), 8);
    return *this;
  }
  Pb& f32(uint32_t field, float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return fixed32(field, bits);
  }
  Pb& bytes(uint32_t field, std::string_view s) {
    tag(field, 2).raw(s.size());
    buf.append(s);
    return *this;
  }
  Pb& msg(uint32_t field, const Pb& m) { return bytes(field, m.buf); }
  Pb& packedVarints(uint32_t field, std::initializer_list<int64_t> vs) {
    Pb p;
    for (int64_t v : vs) p.raw(static_cast<uint64_t>(v));
    return bytes(field, p.buf);
  }
  Pb& packedFloats(uint32_t field, std::initializer_list<float> vs) {
    std::string s;
    for (float f : vs) s.append(reinterpret_cast<const char*>(&f), 4);
    return bytes(field, s);
  }
  Pb& tag(uint32_t field, int wire) { return raw(uint64_t(field) << 3 | wire); }
  Pb& raw(uint64_t v) {
    while (v >= 0x80) {
      buf += static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf += static_cast<char>(v);
    return *this;
  }
  std::vector<uint8_t> vec() const { return std::vector<uint8_t>(buf.begin(), buf.end()); }
  std::string buf;
};

Status parse(const std::vector<uint8_t>& b, ModelProto* m) { return parseModel(b.data(), b.size(), m); }
Status parse(const Pb& p, ModelProto* m) { return parse(p.vec(), m); }

Pb tensorType(int elem, std::initializer_list<Pb> dims, bool withShape = true) {
  Pb shape;
  for (const Pb& d : dims) shape.msg(1, d);
  Pb tt;
  tt.varint(1, elem);
  if (withShape) tt.msg(2, shape);
  return Pb().msg(1, tt);
}
Pb valueInfo(const std::string& name, const Pb& type) { return Pb().bytes(1, name).msg(2, type); }
Pb modelAround(const Pb& graph) { return Pb().varint(1, 8).msg(8, Pb().bytes(1, "").varint(2, 13)).msg(7, graph); }

// A model exercising every field kind. Graph comes last, so that every strict prefix of the
// bytes is either missing the graph or cuts it short.
Pb handModel() {
  uint16_t halfs[2] = {0x3c00, 0xc000};  // float16 1.0, -2.0
  Pb conv;
  conv.bytes(1, "x").bytes(1, "w").bytes(2, "y").bytes(3, "n0").bytes(4, "Conv");
  conv.msg(5, Pb().bytes(1, "kernel_shape").packedVarints(8, {3, 3}).varint(20, kAttrInts));
  conv.msg(5, Pb().bytes(1, "pads").varint(8, 1).varint(8, 1).varint(8, 0).varint(8, 2).varint(20, kAttrInts));
  conv.msg(5, Pb().bytes(1, "alpha").f32(2, 0.5f));  // no type field: inferred as FLOAT
  conv.msg(5, Pb().bytes(1, "mode").bytes(4, "constant"));
  conv.msg(5, Pb().bytes(1, "scales").packedFloats(7, {1.5f, -2.0f}).varint(20, kAttrFloats));
  conv.msg(5, Pb().bytes(1, "neg").varint(3, static_cast<uint64_t>(-5)).varint(20, kAttrInt));
  conv.msg(5, Pb().bytes(1, "value").varint(20, kAttrTensor)
                  .msg(5, Pb().varint(1, 2).varint(2, 10).varint(5, halfs[0]).varint(5, halfs[1])));
  conv.fixed64(99, 123).fixed32(98, 7).bytes(97, "ignored");  // unknown fields are skipped
  Pb body;
  body.bytes(2, "body").msg(1, Pb().bytes(1, "a").bytes(2, "b").bytes(4, "Identity"));
  Pb loop;
  loop.bytes(2, "z").bytes(4, "Loop").bytes(7, "ai.onnx").msg(5, Pb().bytes(1, "body").msg(6, body).varint(20, kAttrGraph));

  std::string w(36, '\0');
  for (int i = 0; i < 9; ++i) {
    float f = static_cast<float>(i);
    std::memcpy(&w[i * 4], &f, 4);
  }
  Pb g;
  g.msg(1, conv).msg(1, loop).bytes(2, "hand").bytes(10, "doc string, skipped");
  g.msg(5, Pb().packedVarints(1, {1, 1, 3, 3}).varint(2, 1).bytes(8, "w").bytes(9, w));
  g.msg(5, Pb().varint(1, 2).varint(2, 7).bytes(8, "i64").varint(7, 7).varint(7, static_cast<uint64_t>(-8)));
  g.msg(5, Pb().varint(1, 2).varint(2, 2).bytes(8, "u8").packedVarints(5, {1, 255}));
  g.msg(5, Pb().varint(1, 1).varint(2, 12).bytes(8, "u32").varint(11, 4000000000u));
  g.msg(5, Pb().varint(2, 11).bytes(8, "f64").fixed64(10, 0x3ff0000000000000ull));  // scalar 1.0
  g.msg(5, Pb().varint(1, 2).varint(2, 8).bytes(8, "str").bytes(6, "ab").bytes(6, ""));
  g.msg(5, Pb().varint(1, 4).varint(2, 14).bytes(8, "f8").bytes(9, "abcdefghabcdefghabcdefghabcdefgh"));  // complex64: unknown
  g.msg(5, Pb().varint(1, 1000).varint(2, 1).bytes(8, "ext").varint(14, 1)
               .msg(13, Pb().bytes(1, "location").bytes(2, "weights.bin")));
  g.msg(11, valueInfo("x", tensorType(1, {Pb().bytes(2, "N"), Pb().varint(1, 3), Pb()})));
  g.msg(11, valueInfo("seq", Pb().msg(4, Pb().msg(1, tensorType(7, {})))));
  g.msg(12, valueInfo("y", tensorType(1, {}, false)));
  g.msg(13, valueInfo("opt", Pb().msg(9, Pb().msg(1, tensorType(9, {})))));
  g.msg(13, valueInfo("scalar", tensorType(1, {})));

  Pb m;
  m.varint(1, 8).varint(1000, 5);
  m.msg(8, Pb().bytes(1, "").varint(2, 13)).msg(8, Pb().bytes(1, "com.microsoft").varint(2, 1));
  m.bytes(2, "osprey-test").bytes(3, "0.1");
  m.msg(7, g);
  return m;
}

const TensorProto* findInit(const GraphProto& g, const std::string& name) {
  for (const TensorProto& t : g.initializers)
    if (t.name == name) return &t;
  return nullptr;
}
template <class T>
T elem(const TensorProto& t, size_t i) {
  T v;
  std::memcpy(&v, t.data.data() + i * sizeof(T), sizeof(T));
  return v;
}

TEST(OnnxProto, HandModelDecodesEveryFieldKind) {
  ModelProto m;
  Status s = parse(handModel(), &m);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(m.irVersion, 8);
  EXPECT_EQ(m.producerName, "osprey-test");
  EXPECT_EQ(m.producerVersion, "0.1");
  EXPECT_EQ(m.opsetFor(""), 13);
  EXPECT_EQ(m.opsetFor("ai.onnx"), 13);
  EXPECT_EQ(m.opsetFor("com.microsoft"), 1);
  EXPECT_EQ(m.opsetFor("ai.onnx.ml"), -1);

  const GraphProto& g = m.graph;
  EXPECT_EQ(g.name, "hand");
  ASSERT_EQ(g.nodes.size(), 2u);
  const NodeProto& conv = g.nodes[0];
  EXPECT_EQ(conv.opType, "Conv");
  EXPECT_EQ(conv.name, "n0");
  EXPECT_EQ(conv.inputs, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(conv.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(conv.attr("missing"), nullptr);
  ASSERT_NE(conv.attr("kernel_shape"), nullptr);
  EXPECT_EQ(conv.attr("kernel_shape")->ints, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(conv.attr("pads")->ints, (std::vector<int64_t>{1, 1, 0, 2}));
  EXPECT_EQ(conv.attr("alpha")->type, kAttrFloat);
  EXPECT_EQ(conv.attr("alpha")->f, 0.5f);
  EXPECT_EQ(conv.attr("mode")->type, kAttrString);
  EXPECT_EQ(conv.attr("mode")->s, "constant");
  EXPECT_EQ(conv.attr("scales")->floats, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(conv.attr("neg")->i, -5);
  const TensorProto& half = conv.attr("value")->t;
  EXPECT_EQ(half.dtype, DataType::Float16);
  ASSERT_EQ(half.data.size(), 4u);
  EXPECT_EQ(elem<uint16_t>(half, 0), 0x3c00);
  EXPECT_EQ(elem<uint16_t>(half, 1), 0xc000);

  const NodeProto& loop = g.nodes[1];
  EXPECT_EQ(loop.domain, "ai.onnx");
  ASSERT_NE(loop.attr("body"), nullptr);
  ASSERT_TRUE(loop.attr("body")->g);
  EXPECT_EQ(loop.attr("body")->g->name, "body");
  EXPECT_EQ(loop.attr("body")->g->nodes.at(0).opType, "Identity");

  const TensorProto* w = findInit(g, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, DataType::Float32);
  EXPECT_EQ(w->dims, (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(elem<float>(*w, 8), 8.0f);
  EXPECT_EQ(elem<int64_t>(*findInit(g, "i64"), 1), -8);
  EXPECT_EQ(findInit(g, "u8")->data, (std::vector<uint8_t>{1, 255}));
  EXPECT_EQ(elem<uint32_t>(*findInit(g, "u32"), 0), 4000000000u);
  EXPECT_EQ(findInit(g, "f64")->dims.size(), 0u);
  EXPECT_EQ(elem<double>(*findInit(g, "f64"), 0), 1.0);
  EXPECT_EQ(findInit(g, "str")->strings, (std::vector<std::string>{"ab", ""}));
  const TensorProto* f8 = findInit(g, "f8");
  EXPECT_EQ(f8->dtype, DataType::Undefined);
  EXPECT_EQ(f8->rawType, 14);
  EXPECT_TRUE(f8->data.empty());
  const TensorProto* ext = findInit(g, "ext");
  EXPECT_TRUE(ext->external);
  EXPECT_TRUE(ext->data.empty());
  ASSERT_EQ(ext->externalData.size(), 1u);
  EXPECT_EQ(ext->externalData[0].second, "weights.bin");

  ASSERT_EQ(g.inputs.size(), 2u);
  const ValueInfo& x = g.inputs[0];
  EXPECT_TRUE(x.hasShape);
  EXPECT_EQ(x.elemType, 1);
  EXPECT_EQ(x.dims, (std::vector<int64_t>{-1, 3, -1}));
  EXPECT_EQ(x.dimParams, (std::vector<std::string>{"N", "", ""}));
  EXPECT_EQ(g.inputs[1].kind, ValueInfo::kSequence);
  EXPECT_EQ(g.inputs[1].elemType, 7);
  EXPECT_FALSE(g.outputs.at(0).hasShape);
  EXPECT_EQ(g.valueInfo.at(0).kind, ValueInfo::kOptional);
  EXPECT_EQ(g.valueInfo.at(0).elemType, 9);
  EXPECT_TRUE(g.valueInfo.at(1).hasShape);
  EXPECT_TRUE(g.valueInfo.at(1).dims.empty());
}

// Osprey's Conv takes a residual as input 3 and its MatMul a bias as input 2 (converter
// fusions); an ONNX Conv with 4 inputs or an ONNX MatMul with 3 is still malformed.
TEST(OnnxImport, ConvAndMatMulKeepOnnxArity) {
  auto modelWith = [](const std::string& op, std::initializer_list<const char*> inputs, bool trailingEmpty) {
    Pb node;
    for (const char* name : inputs) node.bytes(1, name);
    if (trailingEmpty) node.bytes(1, "");
    node.bytes(2, "y").bytes(3, "node0").bytes(4, op);
    Pb g;
    g.msg(1, node).bytes(2, "arity");
    const Pb type = tensorType(1, {Pb().varint(1, 1), Pb().varint(1, 3), Pb().varint(1, 4), Pb().varint(1, 4)});
    for (const char* name : inputs) g.msg(11, valueInfo(name, type));
    g.msg(12, valueInfo("y", tensorType(1, {}, false)));
    return modelAround(g).vec();
  };
  auto convert = [](const std::vector<uint8_t>& bytes) {
    Model model;
    return convertOnnxBytes(bytes.data(), bytes.size(), &model);
  };
  Status st = convert(modelWith("Conv", {"x", "w", "b", "z"}, false));
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("ONNX Conv 'node0' has 4 inputs"), std::string::npos) << st.message();
  st = convert(modelWith("MatMul", {"a", "b", "c"}, false));
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("ONNX MatMul 'node0' has 3 inputs"), std::string::npos) << st.message();
  // An omitted trailing optional input is no input.
  st = convert(modelWith("MatMul", {"a", "b"}, true));
  EXPECT_EQ(st.message().find("inputs; ONNX"), std::string::npos) << st.message();
  st = convert(modelWith("Conv", {"x", "w", "b"}, true));
  EXPECT_EQ(st.message().find("inputs; ONNX"), std::string::npos) << st.message();
}

// A model file is read through a mapping; a pipe, which cannot be mapped, is read to its end.
TEST(OnnxImport, ModelFromAFileAndFromAPipe) {
  Pb node;
  node.bytes(1, "x").bytes(2, "y").bytes(3, "relu0").bytes(4, "Relu");
  Pb g;
  g.msg(1, node).bytes(2, "pipe");
  g.msg(11, valueInfo("x", tensorType(1, {Pb().varint(1, 2), Pb().varint(1, 3)})));
  g.msg(12, valueInfo("y", tensorType(1, {}, false)));
  const std::vector<uint8_t> bytes = modelAround(g).vec();
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "relu_" + std::to_string(::getpid()) + ".onnx";
  const std::string fifo = dir + "relu_" + std::to_string(::getpid()) + ".fifo";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  Model fromFile, fromPipe;
  Status st = convertOnnxFile(file, &fromFile);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size()); });
  auto reading = std::async(std::launch::async, [&] { return convertOnnxFile(fifo, &fromPipe); });
  if (reading.wait_for(std::chrono::seconds(20)) == std::future_status::timeout) {
    // A reader that opened the pipe twice waits for a second writer: send it an empty one.
    ADD_FAILURE() << "reading the pipe blocked";
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  st = reading.get();
  writer.join();
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(fromFile.graph.nodes.size(), 1u);
  ASSERT_EQ(fromPipe.graph.nodes.size(), 1u);
  EXPECT_EQ(fromPipe.graph.nodes[0].type, fromFile.graph.nodes[0].type);
  std::remove(file.c_str());
  std::remove(fifo.c_str());
  st = convertOnnxFile(file, &fromFile);
  EXPECT_EQ(st.code(), StatusCode::NotFound);
  EXPECT_NE(st.message().find(file), std::string::npos) << st.message();
}

TEST(OnnxProto, EveryTruncationIsAnError) {
  std::vector<uint8_t> bytes = handModel().vec();
  for (size_t n = 0; n < bytes.size(); ++n) {
    ModelProto m;
    Status s = parseModel(bytes.data(), n, &m);
    ASSERT_FALSE(s) << "prefix of " << n << " of " << bytes.size() << " bytes parsed";
    EXPECT_FALSE(s.message().empty());
    EXPECT_TRUE(m.graph.nodes.empty()) << "failure left a partial result";
  }
  ModelProto m;
  Status s = parseModel(bytes.data(), bytes.size() - 1, &m);
  EXPECT_EQ(s.message().rfind("truncated ONNX model: field 'graph'", 0), 0u) << s.message();
}

TEST(OnnxProto, RandomCorruptionNeverCrashes) {
  const std::vector<uint8_t> base = handModel().vec();
  std::mt19937 rng(1234);
  int parsed = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    std::vector<uint8_t> b = base;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !b.empty(); ++e) {
      size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0: b[at] = static_cast<uint8_t>(rng()); break;
        case 1: b[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 2: b.insert(b.begin() + static_cast<long>(at), static_cast<uint8_t>(rng())); break;
        case 3: b.erase(b.begin() + static_cast<long>(at)); break;
      }
    }
    ModelProto m;
    Status s = parse(b, &m);
    if (s) {
      ++parsed;
    } else {
      EXPECT_FALSE(s.message().empty());
    }
  }
  // Some edits land in names or float bits and still parse; most break the structure.
  EXPECT_LT(parsed, 5000);
}

TEST(OnnxProto, DeepNestingIsRejectedWithoutStackOverflow) {
  Pb g = Pb().bytes(2, "leaf");
  for (int i = 0; i < 300; ++i) {  // far past the limit; the encoder is quadratic, so not more
    Pb node = Pb().bytes(4, "If").msg(5, Pb().bytes(1, "then_branch").msg(6, g).varint(20, kAttrGraph));
    g = Pb().msg(1, node);
  }
  ModelProto m;
  Status s = parse(modelAround(g), &m);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("nested more than"), std::string::npos) << s.message();
}

TEST(OnnxProto, RejectsWhatIsNotAModel) {
  ModelProto m;
  EXPECT_NE(parseModel(nullptr, 0, &m).message().find("empty"), std::string::npos);
  EXPECT_EQ(parse(Pb().varint(1, 8), &m).message(), "not an ONNX model: no graph");
  EXPECT_NE(parse(Pb().varint(1, 8).msg(7, Pb()), &m).message().find("no opset_import"), std::string::npos);
  // Before IR version 3, opset 1 of the default domain is implied.
  ASSERT_TRUE(parse(Pb().varint(1, 2).msg(7, Pb()), &m));
  EXPECT_EQ(m.opsetFor(""), 1);
  const char text[] = "this is plain text, not protobuf";
  EXPECT_FALSE(parseModel(reinterpret_cast<const uint8_t*>(text), sizeof(text), &m));
}

TEST(OnnxProto, WireErrorsAreReported) {
  ModelProto m;
  Status s = parse(Pb().varint(1, 8).tag(7, 3).tag(7, 4), &m);  // a group
  EXPECT_EQ(s.code(), StatusCode::Unsupported);
  EXPECT_NE(s.message().find("group"), std::string::npos);
  std::vector<uint8_t> longVarint = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  EXPECT_NE(parse(longVarint, &m).message().find("longer than 10 bytes"), std::string::npos);
  s = parse(Pb().varint(1, 8).varint(7, 1), &m);  // graph as a varint
  EXPECT_NE(s.message().find("field 'graph' (ModelProto) has wire type 0"), std::string::npos) << s.message();
  std::vector<uint8_t> zeroTag = {0x00};
  EXPECT_NE(parse(zeroTag, &m).message().find("invalid field number 0"), std::string::npos);
  // An inner length that disagrees with its enclosing message is corruption, not truncation.
  Pb bad = Pb().varint(1, 8).tag(7, 2).raw(3).tag(2, 2).raw(10).raw('a').msg(8, Pb().varint(2, 13));
  s = parse(bad, &m);
  EXPECT_NE(s.message().find("overruns its enclosing message"), std::string::npos) << s.message();
  // A packed fixed32 list whose length is not a multiple of 4.
  Pb attr = Pb().bytes(1, "f").bytes(7, "abcde");
  s = parse(modelAround(Pb().msg(1, Pb().bytes(4, "Op").msg(5, attr))), &m);
  EXPECT_NE(s.message().find("not a multiple of 4"), std::string::npos) << s.message();
}

Status parseInit(const Pb& tensor) {
  ModelProto m;
  return parse(modelAround(Pb().msg(5, tensor)), &m);
}

TEST(OnnxProto, TensorContentsAreValidated) {
  Status s = parseInit(Pb().packedVarints(1, {2, 3}).varint(2, 1).bytes(8, "w").bytes(9, std::string(20, '\0')));
  EXPECT_NE(s.message().find("tensor 'w' (float32 [2, 3]) has 20 bytes of raw_data, expected 24"), std::string::npos) << s.message();
  s = parseInit(Pb().varint(1, 1).varint(2, 1).bytes(8, "both").bytes(9, "abcd").f32(4, 1.0f));
  EXPECT_NE(s.message().find("both raw_data and float_data"), std::string::npos) << s.message();
  s = parseInit(Pb().varint(1, 1).varint(2, 7).bytes(8, "wrong").f32(4, 1.0f));
  EXPECT_NE(s.message().find("int64_data"), std::string::npos) << s.message();
  s = parseInit(Pb().varint(1, static_cast<uint64_t>(-2)).varint(2, 1).bytes(8, "neg"));
  EXPECT_NE(s.message().find("negative dimension"), std::string::npos) << s.message();
  s = parseInit(Pb().varint(1, 1).bytes(8, "untyped").bytes(9, "abcd"));
  EXPECT_NE(s.message().find("no data_type"), std::string::npos) << s.message();
  s = parseInit(Pb().varint(1, 3).varint(2, 8).bytes(8, "strs").bytes(6, "a"));
  EXPECT_NE(s.message().find("has 1 strings, expected 3"), std::string::npos) << s.message();
  s = parseInit(Pb().packedVarints(1, {1 << 30, 1 << 30, 1 << 30}).varint(2, 1).bytes(8, "huge"));
  EXPECT_FALSE(s);
  Pb manyDims = Pb().varint(2, 1).bytes(8, "rank");
  for (int i = 0; i < 2000; ++i) manyDims.varint(1, 1);
  EXPECT_NE(parseInit(manyDims).message().find("2000 dimensions"), std::string::npos);
  EXPECT_TRUE(parseInit(Pb().varint(1, 0).varint(2, 1).bytes(8, "empty")));  // zero elements, no data
}

TEST(OnnxProto, ParseTensorDirect) {
  Pb t = Pb().packedVarints(1, {2}).varint(2, 1).bytes(8, "t").packedFloats(4, {0.25f, -1.0f});
  std::vector<uint8_t> b = t.vec();
  TensorProto out;
  ASSERT_TRUE(parseTensor(b.data(), b.size(), &out));
  EXPECT_EQ(out.name, "t");
  EXPECT_EQ(elem<float>(out, 1), -1.0f);
  for (size_t n = 0; n < b.size(); ++n) EXPECT_FALSE(parseTensor(b.data(), n, &out)) << "prefix " << n;
}

// ---- real files from the ONNX node tests ----

std::string nodeTestDir() {
  if (const char* env = std::getenv("OSPREY_SHARED_DIR")) return std::string(env) + "/onnx-node-tests";
#ifdef OSPREY_SOURCE_DIR
  return std::string(OSPREY_SOURCE_DIR) + "/../shared/onnx-node-tests";
#else
  return "../shared/onnx-node-tests";
#endif
}

#define REQUIRE_NODE_TEST(name)                                                                   \
  const std::string dir = nodeTestDir() + "/" + (name);                                          \
  if (!fs::exists(dir + "/model.onnx"))                                                           \
    GTEST_SKIP() << "ONNX node test data not found at " << dir << " (set OSPREY_SHARED_DIR)"

TensorProto loadTensor(const std::string& path) {
  TensorProto t;
  Status s = loadTensorFile(path, &t);
  EXPECT_TRUE(s) << s.message();
  return t;
}

TEST(OnnxProtoReal, ConvWithStridesPadding) {
  REQUIRE_NODE_TEST("test_conv_with_strides_padding");
  ModelProto m;
  Status s = loadModelFile(dir + "/model.onnx", &m);
  ASSERT_TRUE(s) << s.message();
  EXPECT_GE(m.irVersion, 3);
  EXPECT_GT(m.opsetFor(""), 0);
  ASSERT_EQ(m.graph.nodes.size(), 1u);
  const NodeProto& n = m.graph.nodes[0];
  EXPECT_EQ(n.opType, "Conv");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "W"}));
  EXPECT_EQ(n.attr("kernel_shape")->ints, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(n.attr("pads")->ints, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(n.attr("strides")->ints, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(n.attr("strides")->type, kAttrInts);
  ASSERT_EQ(m.graph.inputs.size(), 2u);
  EXPECT_EQ(m.graph.inputs[0].dims, (std::vector<int64_t>{1, 1, 7, 5}));
  EXPECT_EQ(m.graph.inputs[0].elemType, 1);
  EXPECT_EQ(m.graph.outputs.at(0).dims, (std::vector<int64_t>{1, 1, 4, 3}));

  TensorProto x = loadTensor(dir + "/test_data_set_0/input_0.pb");
  EXPECT_EQ(x.dtype, DataType::Float32);
  EXPECT_EQ(x.dims, (std::vector<int64_t>{1, 1, 7, 5}));
  EXPECT_EQ(x.data.size(), 35u * 4);
  EXPECT_EQ(loadTensor(dir + "/test_data_set_0/output_0.pb").data.size(), 12u * 4);

  // Protobuf writes opset_import after graph; a cut anywhere must still be caught.
  std::ifstream in(dir + "/model.onnx", std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t len = 0; len < bytes.size(); ++len) EXPECT_FALSE(parseModel(bytes.data(), len, &m)) << "prefix " << len;
}

TEST(OnnxProtoReal, GatherInt64Indices) {
  REQUIRE_NODE_TEST("test_gather_0");
  ModelProto m;
  ASSERT_TRUE(loadModelFile(dir + "/model.onnx", &m));
  EXPECT_EQ(m.graph.nodes.at(0).opType, "Gather");
  TensorProto data = loadTensor(dir + "/test_data_set_0/input_0.pb");
  EXPECT_EQ(data.dims, (std::vector<int64_t>{5, 4, 3, 2}));
  EXPECT_EQ(data.data.size(), 120u * 4);
  TensorProto idx = loadTensor(dir + "/test_data_set_0/input_1.pb");
  EXPECT_EQ(idx.dtype, DataType::Int64);
  EXPECT_EQ(idx.name, "indices");
  EXPECT_EQ(idx.data.size(), 3u * 8);
}

TEST(OnnxProtoReal, ConstantWithFloatDataAttribute) {
  REQUIRE_NODE_TEST("test_constant");
  ModelProto m;
  ASSERT_TRUE(loadModelFile(dir + "/model.onnx", &m));
  const AttributeProto* v = m.graph.nodes.at(0).attr("value");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, kAttrTensor);
  EXPECT_EQ(v->t.dims, (std::vector<int64_t>{5, 5}));
  TensorProto expected = loadTensor(dir + "/test_data_set_0/output_0.pb");  // the same values, as raw_data
  EXPECT_EQ(v->t.data, expected.data);
}

TEST(OnnxProtoReal, StringsAndFloat16) {
  {
    REQUIRE_NODE_TEST("test_string_concat");
    TensorProto out = loadTensor(dir + "/test_data_set_0/output_0.pb");
    EXPECT_EQ(out.dtype, DataType::String);
    EXPECT_EQ(out.strings, (std::vector<std::string>{"abc.com", "def.net"}));
  }
  {
    REQUIRE_NODE_TEST("test_cast_FLOAT_to_FLOAT16");
    TensorProto out = loadTensor(dir + "/test_data_set_0/output_0.pb");
    EXPECT_EQ(out.dtype, DataType::Float16);
    EXPECT_EQ(out.data.size(), 12u * 2);
  }
}

// SequenceProto / OptionalProto by hand: elem_type (2), tensor_values / tensor_value (3),
// sequence_value (5); each tensor dims [2], float, raw_data.
TEST(OnnxProto, SequenceAndOptionalValues) {
  const std::vector<uint8_t> tensor = {0x08, 0x02, 0x10, 0x01, 0x4a, 0x08, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
  auto wrapped = [&](uint8_t field, const std::vector<uint8_t>& inner) {
    std::vector<uint8_t> v = {static_cast<uint8_t>(field << 3 | 2), static_cast<uint8_t>(inner.size())};
    v.insert(v.end(), inner.begin(), inner.end());
    return v;
  };
  std::vector<uint8_t> sequence = {0x10, 0x01};
  for (int k = 0; k < 2; ++k) {
    const std::vector<uint8_t> item = wrapped(3, tensor);
    sequence.insert(sequence.end(), item.begin(), item.end());
  }
  ValueProto v;
  ASSERT_TRUE(parseValue(sequence.data(), sequence.size(), ValueProto::kSequence, &v).isOk());
  EXPECT_TRUE(v.isSequence);
  ASSERT_EQ(v.tensors.size(), 2u);
  EXPECT_EQ(v.tensors[1].dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(v.tensors[1].data.size(), 8u);

  std::vector<uint8_t> optional = {0x10, 0x03};
  const std::vector<uint8_t> held = wrapped(5, sequence);
  optional.insert(optional.end(), held.begin(), held.end());
  ASSERT_TRUE(parseValue(optional.data(), optional.size(), ValueProto::kOptional, &v).isOk());
  EXPECT_TRUE(v.hasValue && v.isSequence);
  EXPECT_EQ(v.tensors.size(), 2u);
  const std::vector<uint8_t> none = {0x10, 0x01};
  ASSERT_TRUE(parseValue(none.data(), none.size(), ValueProto::kOptional, &v).isOk());
  EXPECT_FALSE(v.hasValue);

  // An optional whose elem_type names a tensor but that holds a sequence; a sequence of sequences;
  // every truncation.
  optional[1] = 0x01;
  EXPECT_EQ(parseValue(optional.data(), optional.size(), ValueProto::kOptional, &v).code(), StatusCode::InvalidModel);
  const std::vector<uint8_t> nested = wrapped(5, sequence);
  EXPECT_EQ(parseValue(nested.data(), nested.size(), ValueProto::kSequence, &v).code(), StatusCode::Unsupported);
  for (size_t cut = 1; cut < sequence.size(); ++cut) {
    const Status st = parseValue(sequence.data(), cut, ValueProto::kSequence, &v);
    if (cut == 2 || cut == 2 + wrapped(3, tensor).size()) continue;  // ends between fields: a shorter valid message
    EXPECT_FALSE(st.isOk()) << "cut at " << cut;
  }
}

TEST(OnnxProtoReal, UnknownTypesAndSequencesAreErrorsOrUndefinedNotCrashes) {
  {
    REQUIRE_NODE_TEST("test_dequantizelinear_e4m3fn_float16");  // float8: one byte per element
    TensorProto t = loadTensor(dir + "/test_data_set_0/input_0.pb");
    EXPECT_EQ(t.dtype, DataType::Float8E4M3FN);
    EXPECT_EQ(t.rawType, 17);
    EXPECT_EQ(static_cast<int64_t>(t.data.size()), t.elementCount());
  }
  {
    REQUIRE_NODE_TEST("test_split_to_sequence_1");  // a SequenceProto, not a TensorProto
    TensorProto t;
    EXPECT_FALSE(loadTensorFile(dir + "/test_data_set_0/output_0.pb", &t));
  }
  TensorProto t;
  EXPECT_EQ(loadTensorFile("/nonexistent/osprey/x.pb", &t).code(), StatusCode::NotFound);
}

}  // namespace
}  // namespace osprey::onnx
