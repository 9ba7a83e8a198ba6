// The tensor-bundle reader of TensorFlow SavedModels: SSTables and bundle entries written here
// byte by byte as leveldb and TensorFlow lay them out, read back, and damaged to check that
// each fault is a named error; and the signature graph of a small TF2 MetaGraph (a call into a
// function reading a variable) against its expected inlined form, and v2 While / If with
// function bodies run after import.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "converter/tensorflow/saved_model.h"
#include "converter/tensorflow/tensor_bundle.h"
#include "converter/tensorflow/tf_import.h"
#include "graph_builder.h"

namespace osprey::test {
namespace {

using tf::TableEntry;

void putVarint(std::string& out, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(b | (v ? 0x80 : 0)));
  } while (v);
}

void putFixed32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

// A block of prefix-compressed entries with a restart point every `restartEvery` entries.
std::string block(const std::vector<TableEntry>& entries, size_t restartEvery = 2) {
  std::string out, last;
  std::vector<uint32_t> restarts;
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t shared = 0;
    if (i % restartEvery == 0) restarts.push_back(static_cast<uint32_t>(out.size()));
    else
      while (shared < last.size() && shared < entries[i].key.size() && last[shared] == entries[i].key[shared]) ++shared;
    putVarint(out, shared);
    putVarint(out, entries[i].key.size() - shared);
    putVarint(out, entries[i].value.size());
    out += entries[i].key.substr(shared) + entries[i].value;
    last = entries[i].key;
  }
  if (restarts.empty()) restarts.push_back(0);
  for (uint32_t r : restarts) putFixed32(out, r);
  putFixed32(out, static_cast<uint32_t>(restarts.size()));
  return out;
}

// Appends a block and its trailer to `file`; returns its handle's bytes.
std::string appendBlock(std::string& file, const std::string& contents, uint8_t type = 0) {
  std::string handle;
  putVarint(handle, file.size());
  putVarint(handle, contents.size());
  std::string trailed = contents + static_cast<char>(type);
  file += trailed;
  putFixed32(file, tf::maskCrc32c(tf::crc32c(reinterpret_cast<const uint8_t*>(trailed.data()), trailed.size())));
  return handle;
}

// A table of two data blocks, as TensorFlow's table builder writes one.
std::string table(const std::vector<TableEntry>& entries, uint8_t type = 0) {
  std::string file;
  const size_t half = entries.size() / 2;
  std::vector<TableEntry> index;
  const std::vector<TableEntry> first(entries.begin(), entries.begin() + half), second(entries.begin() + half, entries.end());
  if (!first.empty()) index.push_back({first.back().key, appendBlock(file, block(first), type)});
  index.push_back({second.back().key + "~", appendBlock(file, block(second), type)});
  const std::string metaindex = appendBlock(file, block({}));
  const std::string indexHandle = appendBlock(file, block(index, 1));
  std::string footer = metaindex + indexHandle;
  footer.resize(40, '\0');
  const uint64_t magic = 0xdb4775248b80fb57ull;
  footer.append(reinterpret_cast<const char*>(&magic), 8);
  return file + footer;
}

Status read(const std::string& bytes, std::vector<TableEntry>* out) {
  return tf::readSSTable(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "variables.index", out);
}

const std::vector<TableEntry> kEntries = {{"", "header"},
                                          {"layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE", "b"},
                                          {"layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE", "kernel"},
                                          {"layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE", ""},
                                          {"save_counter/.ATTRIBUTES/VARIABLE_VALUE", "counter"}};

TEST(TensorflowBundle, Crc32cMatchesTheStandardCheckValue) {
  const std::string digits = "123456789";
  EXPECT_EQ(tf::crc32c(reinterpret_cast<const uint8_t*>(digits.data()), digits.size()), 0xe3069283u);
}

TEST(TensorflowBundle, SSTableEntriesReadBackWithSharedPrefixes) {
  std::vector<TableEntry> got;
  ASSERT_TRUE(read(table(kEntries), &got));
  ASSERT_EQ(got.size(), kEntries.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].key, kEntries[i].key);
    EXPECT_EQ(got[i].value, kEntries[i].value);
  }
}

TEST(TensorflowBundle, EveryTruncationIsANamedErrorNeverACrash) {
  const std::string good = table(kEntries);
  std::vector<TableEntry> got;
  for (size_t cut = 0; cut < good.size(); ++cut) {
    Status st = read(good.substr(0, cut), &got);
    ASSERT_FALSE(st) << cut;
    EXPECT_NE(st.message().find("TensorFlow variables index variables.index"), std::string::npos) << st.message();
  }
  Status st = read(good.substr(0, 20), &got);
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();
}

TEST(TensorflowBundle, DamagedBytesAreRefused) {
  const std::string good = table(kEntries);
  std::vector<TableEntry> got;
  for (size_t at = 0; at + 48 < good.size(); ++at) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    EXPECT_FALSE(read(bad, &got)) << "flipped byte " << at;  // every block is checksummed
  }
  Status st = read(table(kEntries, 1), &got);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  EXPECT_NE(st.message().find("compressed"), std::string::npos) << st.message();
}

TEST(TensorflowBundle, OutOfOrderKeysAndOverlongSharedPrefixesAreRefused) {
  std::vector<TableEntry> got;
  Status st = read(table({{"b", "1"}, {"a", "2"}}), &got);
  EXPECT_NE(st.message().find("not in order"), std::string::npos) << st.message();
  // A first entry claiming to share bytes with a key before it.
  std::string contents;
  putVarint(contents, 3);
  putVarint(contents, 1);
  putVarint(contents, 0);
  contents += "k";
  putFixed32(contents, 0);
  putFixed32(contents, 1);
  std::string file;
  const std::string data = appendBlock(file, contents);
  const std::string metaindex = appendBlock(file, block({}));
  const std::string index = appendBlock(file, block({{"z", data}}, 1));
  std::string footer = metaindex + index;
  footer.resize(40, '\0');
  const uint64_t magic = 0xdb4775248b80fb57ull;
  footer.append(reinterpret_cast<const char*>(&magic), 8);
  st = read(file + footer, &got);
  EXPECT_NE(st.message().find("shares more of the previous key"), std::string::npos) << st.message();
}

// A BundleEntryProto of a float tensor of `shape` at `offset` in shard 0.
std::string bundleEntry(const std::vector<int64_t>& shape, int64_t offset, const std::string& bytes) {
  std::string e, dims;
  putVarint(e, 1 << 3);
  putVarint(e, tf::DT_FLOAT);
  for (int64_t d : shape) {
    std::string dim;
    putVarint(dim, 1 << 3);
    putVarint(dim, static_cast<uint64_t>(d));
    putVarint(dims, 2 << 3 | 2);
    putVarint(dims, dim.size());
    dims += dim;
  }
  putVarint(e, 2 << 3 | 2);
  putVarint(e, dims.size());
  e += dims;
  putVarint(e, 4 << 3);
  putVarint(e, static_cast<uint64_t>(offset));
  putVarint(e, 5 << 3);
  putVarint(e, bytes.size());
  putVarint(e, 6 << 3 | 5);
  putFixed32(e, tf::maskCrc32c(tf::crc32c(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  return e;
}

TEST(TensorflowBundle, EntriesDescribeTensorsWhoseBytesAreChecked) {
  const std::vector<float> values = {1.5f, -2.f, 3.25f, 0.f, 7.f, -1.f};
  const std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  std::string header;
  putVarint(header, 1 << 3);
  putVarint(header, 1);
  const std::string index = table({{"", header}, {"w", bundleEntry({2, 3}, 0, bytes)}});
  tf::TensorBundle bundle;
  ASSERT_TRUE(bundle.parseIndex(reinterpret_cast<const uint8_t*>(index.data()), index.size(), "variables.index"));
  ASSERT_EQ(bundle.entries().count("w"), 1u);
  const tf::BundleEntry& entry = bundle.entries().at("w");
  tf::TfTensor t;
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  ASSERT_TRUE(tf::TensorBundle::decode("w", entry, data, bytes.size(), "shard", &t));
  EXPECT_EQ(t.shape, (Shape{2, 3}));
  EXPECT_EQ(std::memcmp(t.bytes.data(), values.data(), bytes.size()), 0);
  std::string damaged = bytes;
  damaged[5] ^= 1;
  Status st = tf::TensorBundle::decode("w", entry, reinterpret_cast<const uint8_t*>(damaged.data()), damaged.size(),
                                       "shard", &t);
  EXPECT_NE(st.message().find("variable 'w' in shard: the checksum"), std::string::npos) << st.message();
  st = tf::TensorBundle::decode("w", entry, data, bytes.size() - 4, "shard", &t);
  EXPECT_NE(st.message().find("do not hold DT_FLOAT [2, 3]"), std::string::npos) << st.message();

  const std::string headless = table({{"w", bundleEntry({2, 3}, 0, bytes)}});
  st = bundle.parseIndex(reinterpret_cast<const uint8_t*>(headless.data()), headless.size(), "variables.index");
  EXPECT_NE(st.message().find("no bundle header"), std::string::npos) << st.message();
}

// A node of a GraphDef or function body.
tf::NodeDef node(const std::string& name, const std::string& op, std::vector<std::string> inputs = {}) {
  tf::NodeDef n;
  n.name = name;
  n.op = op;
  n.inputs = std::move(inputs);
  return n;
}

void setFunc(tf::NodeDef& n, const std::string& key, const std::string& fn) {
  n.attrs[key].kind = tf::AttrValue::Kind::Func;
  n.attrs[key].func = fn;
}

TEST(TensorflowSavedModel, SignatureCallsAreInlinedAndVariablesRestored) {
  tf::MetaGraph meta;
  tf::GraphDef& g = meta.graph;
  g.nodes.push_back(node("w", "VarHandleOp"));
  g.nodes.push_back(node("serving_default_x", "Placeholder"));
  g.nodes.push_back(node("StatefulPartitionedCall", "StatefulPartitionedCall", {"serving_default_x", "w"}));
  setFunc(g.nodes.back(), "f", "signature_wrapper");
  g.nodes.push_back(node("saver_filename", "Placeholder"));
  g.nodes.push_back(node("restore", "StatefulPartitionedCall", {"saver_filename", "w"}));
  setFunc(g.nodes.back(), "f", "traced_restore");
  meta.restoreOp = "restore";
  tf::FunctionDef wrapper;
  wrapper.name = "signature_wrapper";
  wrapper.inputArgs = {"x", "unknown"};
  wrapper.outputArgs = {"identity"};
  wrapper.nodes = {node("call", "StatefulPartitionedCall", {"x", "unknown", "^other"}),
                   node("Identity", "Identity", {"call:output:0"})};
  setFunc(wrapper.nodes[0], "f", "body");
  wrapper.ret["identity"] = "Identity:output:0";
  tf::FunctionDef body;
  body.name = "body";
  body.inputArgs = {"x", "resource"};
  body.outputArgs = {"y"};
  body.nodes = {node("read", "ReadVariableOp", {"resource"}), node("MatMul", "MatMul", {"x", "read:value:0"}),
                node("bn", "FusedBatchNormV3", {"MatMul:product:0"}), node("out", "Relu", {"bn:batch_variance:0"})};
  body.ret["y"] = "out:activations:0";
  tf::FunctionDef restore;
  restore.name = "traced_restore";
  restore.inputArgs = {"prefix", "assign_w"};
  restore.outputArgs = {};
  tf::NodeDef names = node("names", "Const");
  names.attrs["value"].kind = tf::AttrValue::Kind::Tensor;
  names.attrs["value"].tensor = std::make_shared<tf::TfTensor>();
  names.attrs["value"].tensor->strings = {"w/.ATTRIBUTES/VARIABLE_VALUE"};
  restore.nodes = {names, node("RestoreV2", "RestoreV2", {"prefix", "names:output:0"}),
                   node("Identity", "Identity", {"RestoreV2:tensors:0"}),
                   node("assign", "AssignVariableOp", {"assign_w", "Identity:output:0"})};
  g.library = {wrapper, body, restore};
  tf::Signature sig;
  sig.name = "serving_default";
  sig.inputs = {{"x", "serving_default_x:0", tf::DT_FLOAT}};
  sig.outputs = {{"y", "StatefulPartitionedCall:0", tf::DT_FLOAT}};
  meta.signatures = {sig};

  std::vector<std::string> asked;
  auto readVariable = [&](const std::string& key, tf::TfTensor* out) {
    asked.push_back(key);
    out->tfType = tf::DT_FLOAT;
    out->shape = {1};
    out->bytes.assign(4, 0);
    return Status::ok();
  };
  tf::GraphDef flat;
  ASSERT_TRUE(tf::signatureGraph(meta, "", readVariable, &flat));
  EXPECT_EQ(asked, std::vector<std::string>{"w/.ATTRIBUTES/VARIABLE_VALUE"});
  std::map<std::string, tf::NodeDef> byName;
  for (const tf::NodeDef& n : flat.nodes) byName[n.name] = n;
  ASSERT_EQ(byName.size(), 8u);  // x, w, read, MatMul, bn, out, the wrapper's Identity, y: nothing of the restore
  EXPECT_EQ(byName["x"].op, "Placeholder");
  EXPECT_EQ(byName["w"].op, "Const");
  EXPECT_EQ(byName["StatefulPartitionedCall/call/read"].op, "Identity");
  EXPECT_EQ(byName["StatefulPartitionedCall/call/read"].inputs, std::vector<std::string>{"w:0"});
  EXPECT_EQ(byName["StatefulPartitionedCall/call/MatMul"].inputs,
            (std::vector<std::string>{"x:0", "StatefulPartitionedCall/call/read:0"}));
  // batch_variance is FusedBatchNormV3's third output.
  EXPECT_EQ(byName["StatefulPartitionedCall/call/out"].inputs, std::vector<std::string>{"StatefulPartitionedCall/call/bn:2"});
  EXPECT_EQ(byName["y"].op, "Identity");
  EXPECT_EQ(byName["y"].inputs, std::vector<std::string>{"StatefulPartitionedCall/Identity:0"});
  EXPECT_EQ(byName["StatefulPartitionedCall/Identity"].inputs, std::vector<std::string>{"StatefulPartitionedCall/call/out:0"});

  Status st = tf::signatureGraph(meta, "missing", readVariable, &flat);
  EXPECT_EQ(st.message(), "the SavedModel has no signature 'missing' (it has: serving_default; --signature NAME picks one)");
  g.library[0].nodes[0].attrs["f"].func = "signature_wrapper";  // calls itself
  st = tf::signatureGraph(meta, "", readVariable, &flat);
  EXPECT_NE(st.message().find("function calls nest deeper than 32"), std::string::npos) << st.message();
}

tf::NodeDef constant(const std::string& name, int32_t type, const void* value, size_t bytes) {
  tf::NodeDef n = node(name, "Const");
  n.attrs["value"].kind = tf::AttrValue::Kind::Tensor;
  n.attrs["value"].tensor = std::make_shared<tf::TfTensor>();
  n.attrs["value"].tensor->tfType = type;
  const auto* b = static_cast<const uint8_t*>(value);
  n.attrs["value"].tensor->bytes.assign(b, b + bytes);
  return n;
}

tf::FunctionDef function(const std::string& name, std::vector<std::string> args, std::vector<tf::NodeDef> nodes,
                         std::vector<std::pair<std::string, std::string>> rets) {
  tf::FunctionDef fn;
  fn.name = name;
  fn.inputArgs = std::move(args);
  fn.nodes = std::move(nodes);
  for (auto& [arg, value] : rets) fn.outputArgs.push_back(arg), fn.ret[arg] = value;
  return fn;
}

TEST(TensorflowSavedModel, V2WhileAndIfBodiesRunAsLoopAndIf) {
  // y = (x * 2^3 > 0) ? x * 2^3 * 2 : -(x * 2^3), by a StatelessWhile of 3 steps and a StatelessIf.
  const int32_t zero = 0, one = 1, three = 3;
  const float two = 2.f, fzero = 0.f;
  tf::MetaGraph meta;
  tf::NodeDef x = node("serving_default_x", "Placeholder");
  x.attrs["dtype"].kind = tf::AttrValue::Kind::Type;
  x.attrs["dtype"].type = tf::DT_FLOAT;
  x.attrs["shape"].kind = tf::AttrValue::Kind::Shape;
  meta.graph.nodes = {x, node("call", "StatefulPartitionedCall", {"serving_default_x"})};
  setFunc(meta.graph.nodes[1], "f", "main");
  tf::NodeDef loop = node("loop", "StatelessWhile", {"i0:output:0", "x"});
  setFunc(loop, "cond", "cond");
  setFunc(loop, "body", "body");
  tf::NodeDef branch = node("branch", "StatelessIf", {"positive:z:0", "loop:output:1"});
  setFunc(branch, "then_branch", "double_it");
  setFunc(branch, "else_branch", "negate");
  meta.graph.library = {
      function("main", {"x"},
               {constant("i0", tf::DT_INT32, &zero, 4), loop, constant("zero", tf::DT_FLOAT, &fzero, 4),
                node("positive", "Greater", {"loop:output:1", "zero:output:0"}), branch},
               {{"y", "branch:output:0"}}),
      function("cond", {"i", "v"}, {constant("n", tf::DT_INT32, &three, 4), node("less", "Less", {"i", "n:output:0"})},
               {{"c", "less:z:0"}}),
      function("body", {"i", "v"},
               {constant("one", tf::DT_INT32, &one, 4), constant("two", tf::DT_FLOAT, &two, 4),
                node("next_i", "AddV2", {"i", "one:output:0"}), node("next_v", "Mul", {"v", "two:output:0"})},
               {{"i_out", "next_i:z:0"}, {"v_out", "next_v:z:0"}}),
      function("double_it", {"v"}, {constant("two", tf::DT_FLOAT, &two, 4), node("m", "Mul", {"v", "two:output:0"})},
               {{"out", "m:z:0"}}),
      function("negate", {"v"}, {node("n", "Neg", {"v"})}, {{"out", "n:y:0"}}),
  };
  tf::Signature sig;
  sig.name = "serving_default";
  sig.inputs = {{"x", "serving_default_x:0", tf::DT_FLOAT}};
  sig.outputs = {{"y", "call:0", tf::DT_FLOAT}};
  meta.signatures = {sig};
  tf::GraphDef flat;
  ASSERT_TRUE(tf::signatureGraph(meta, "", {}, &flat));
  Model model;
  Status st = tf::importGraphDef(flat, {}, &model);
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(countOps(model.graph, OpType::Loop), 1);
  EXPECT_EQ(countOps(model.graph, OpType::If), 1);
  for (float input : {1.5f, -0.25f}) {
    Tensor in(DataType::Float32, {});
    *static_cast<float*>(in.data()) = input;
    const Tensor y = runGraph(model.graph, {{"x", in}});
    ASSERT_EQ(y.dtype(), DataType::Float32);
    ASSERT_EQ(y.elements(), 1);
    const float looped = input * 8.f;
    EXPECT_FLOAT_EQ(*static_cast<const float*>(y.data()), looped > 0 ? looped * 2.f : -looped) << input;
  }
}

}  // namespace
}  // namespace osprey::test
