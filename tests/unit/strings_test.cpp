// String ops (ops/strings.cpp) and strings as a run's host values: string inputs and outputs,
// planned ops after a string comparison, Python's str.split semantics, errors.
#include <gtest/gtest.h>

#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

Tensor strings(const Shape& shape, std::vector<std::string> values) {
  Tensor t(DataType::String, shape);
  t.strings() = std::move(values);
  return t;
}

Status runAll(const Graph& g, const std::map<std::string, Tensor>& feeds, std::vector<Tensor>* out) {
  return cpuSessionOf(g)->run(feeds, out);
}

TEST(Strings, SplitFollowsPythonStrSplit) {
  struct Case {
    std::string delimiter;
    int64_t maxsplit;
    std::vector<std::string> in;
    std::vector<std::vector<std::string>> parts;
  };
  const std::vector<Case> cases = {
      {"", -1, {"  a b\tc ", "", "one"}, {{"a", "b", "c"}, {}, {"one"}}},
      {"", 1, {"  a b  c  ", "x"}, {{"a", "b  c"}, {"x"}}},
      {".", -1, {"a..b", "", ".x."}, {{"a", "", "b"}, {""}, {"", "x", ""}}},
      {"--", 1, {"a--b--c", "abc"}, {{"a", "b--c"}, {"abc"}}},
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    const int x = b.input("x", {static_cast<int64_t>(c.in.size())}, DataType::String);
    const int y = b.op(OpType::StringSplit, {x});
    Node& n = b.g.nodes.back();
    if (!c.delimiter.empty()) n.setString("delimiter", c.delimiter);
    if (c.maxsplit >= 0) n.setInt("maxsplit", c.maxsplit);
    TensorInfo count;
    count.name = "count";
    count.hasShape = false;
    n.outputs.push_back(b.g.addTensor(count));
    b.output(y);
    b.output(n.outputs[1]);
    std::vector<Tensor> out;
    const Status st = runAll(b.g, {{"x", strings({static_cast<int64_t>(c.in.size())}, c.in)}}, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    size_t longest = 0;
    for (auto& p : c.parts) longest = std::max(longest, p.size());
    ASSERT_EQ(out[0].shape(), (Shape{static_cast<int64_t>(c.in.size()), static_cast<int64_t>(longest)}));
    for (size_t e = 0; e < c.in.size(); ++e) {
      EXPECT_EQ(out[1].data<int64_t>()[e], static_cast<int64_t>(c.parts[e].size())) << "'" << c.in[e] << "'";
      for (size_t k = 0; k < longest; ++k)
        EXPECT_EQ(out[0].strings()[e * longest + k], k < c.parts[e].size() ? c.parts[e][k] : "") << "'" << c.in[e] << "' part " << k;
    }
  }
}

TEST(Strings, NormalizerDropsStopwordsThenChangesCase) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4}, DataType::String);
  const int y = b.op(OpType::StringNormalizer, {x});
  Node& n = b.g.nodes.back();
  n.setString("case_change_action", "UPPER");
  Attribute stop;
  stop.name = "stopwords";
  stop.kind = Attribute::Kind::Strings;
  stop.strings = {"monday", "Tuesday"};
  n.setAttr(stop);
  b.output(y);
  std::vector<Tensor> out;
  ASSERT_TRUE(runAll(b.g, {{"x", strings({1, 4}, {"Monday", "tuesday", "wed", "MONDAY"})}}, &out).isOk());
  EXPECT_EQ(out[0].shape(), (Shape{1, 1}));  // case-insensitive: three stopwords gone
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"WED"}));
  b.g.nodes.back().setInt("is_case_sensitive", 1);
  ASSERT_TRUE(runAll(b.g, {{"x", strings({1, 4}, {"Monday", "tuesday", "wed", "monday"})}}, &out).isOk());
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{"MONDAY", "TUESDAY", "WED"}));
  ASSERT_TRUE(runAll(b.g, {{"x", strings({1, 1}, {"monday"})}}, &out).isOk());
  EXPECT_EQ(out[0].shape(), (Shape{1, 1}));  // nothing left: one empty string
  EXPECT_EQ(out[0].strings(), (std::vector<std::string>{""}));
}

// x, y strings -> Equal -> Cast to float -> Add a constant (planned after the host op); and
// StringConcat broadcast, RegexFullMatch.
TEST(Strings, HostValuesBeforePlannedOps) {
  GraphBuilder b;
  const int x = b.input("x", {3}, DataType::String);
  const int y = b.input("y", {1}, DataType::String);
  const int eq = b.op(OpType::Equal, {x, y});
  const int asFloat = b.op(OpType::Cast, {eq});
  b.g.nodes.back().setInt("to", static_cast<int64_t>(DataType::Float32));
  const int sum = b.op(OpType::Add, {asFloat, b.floats({10, 20, 30}, {3})});
  const int joined = b.op(OpType::StringConcat, {x, y});
  const int match = b.op(OpType::RegexFullMatch, {joined});
  b.g.nodes.back().setString("pattern", "[a-z]+!");
  b.output(sum);
  b.output(joined);
  b.output(match);
  auto session = cpuSessionOf(b.g);
  for (const char* suffix : {"!", "?"}) {
    std::vector<Tensor> out;
    const Status st = session->run({{"x", strings({3}, {"ab", "!", "cd"})}, {"y", strings({1}, {suffix})}}, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    const bool bang = std::string(suffix) == "!";
    EXPECT_EQ(out[0].data<float>()[1], bang ? 21.f : 20.f);
    EXPECT_EQ(out[0].data<float>()[0], 10.f);
    EXPECT_EQ(out[1].strings(), (std::vector<std::string>{std::string("ab") + suffix, std::string("!") + suffix, std::string("cd") + suffix}));
    EXPECT_EQ(out[2].data<bool>()[0], bang);
    EXPECT_FALSE(out[2].data<bool>()[1]);
  }
}

TEST(Strings, ErrorsNameTheOp) {
  GraphBuilder b;
  const int x = b.input("x", {1}, DataType::String);
  b.output(b.op(OpType::RegexFullMatch, {x}));
  b.g.nodes.back().setString("pattern", "(unclosed");
  std::vector<Tensor> out;
  Status st = runAll(b.g, {{"x", strings({1}, {"a"})}}, &out);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("(RegexFullMatch): pattern '(unclosed'"), std::string::npos) << st.message();
  st = runAll(b.g, {{"x", Tensor(DataType::Float32, {1})}}, &out);
  EXPECT_NE(st.message().find("the model expects string"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace osprey::test
