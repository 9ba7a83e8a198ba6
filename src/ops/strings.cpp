// String ops: StringConcat, StringSplit, StringNormalizer, RegexFullMatch. A run's strings are host
// values (as sequences are: docs/architecture.md), so these run on the host between planned stages
// (OpDef::hostRun) on the inputs' strings. Case changes and whitespace are ASCII's; other bytes of
// UTF-8 text pass through unchanged.
#include <algorithm>
#include <cctype>
#include <regex>

#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status stringInput(const TensorViews& in, size_t i, const char* what) {
  if (i >= in.size() || !in[i].present || in[i].dtype != DataType::String || !in[i].strings ||
      static_cast<int64_t>(in[i].strings->size()) != in[i].elements())
    return Status::invalidArgument(std::string("input ") + what + " must be a string tensor");
  return Status::ok();
}

Tensor stringTensor(const Shape& shape) { return Tensor(DataType::String, shape); }

Status stringConcat(const Node&, const TensorViews& in, std::vector<Tensor>* out) {
  OSPREY_RETURN_IF_ERROR(stringInput(in, 0, "X"));
  OSPREY_RETURN_IF_ERROR(stringInput(in, 1, "Y"));
  Shape shape;
  OSPREY_RETURN_IF_ERROR(broadcastShapes(in[0].shape, in[1].shape, &shape));
  Tensor y = stringTensor(shape);
  const auto sa = broadcastStrides(in[0].shape, shape.size(), shape), sb = broadcastStrides(in[1].shape, shape.size(), shape);
  forEachBroadcast(shape, sa, sb, [&](int64_t o, int64_t a, int64_t b) { y.strings()[o] = (*in[0].strings)[a] + (*in[1].strings)[b]; });
  *out = {y};
  return Status::ok();
}

// Python's str.split: on `delimiter`, or on runs of whitespace (leading and trailing ignored) when
// it is empty; at most `maxsplit` splits when it is not negative.
std::vector<std::string> split(const std::string& s, const std::string& delimiter, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (delimiter.empty()) {
    size_t i = 0;
    auto space = [&](size_t k) { return std::isspace(static_cast<unsigned char>(s[k])) != 0; };
    while (true) {
      while (i < s.size() && space(i)) ++i;
      if (i == s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t end = s.size();
        while (end > i && space(end - 1)) --end;
        parts.push_back(s.substr(i, end - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !space(j)) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t at = s.find(delimiter, start);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

// Y: the substrings along a new last axis as long as the most any element has ("" after an
// element's own), Z: how many each element has.
Status stringSplit(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  OSPREY_RETURN_IF_ERROR(stringInput(in, 0, "X"));
  const std::string delimiter = node.getString("delimiter", "");
  const int64_t maxsplit = node.getInt("maxsplit", -1);
  std::vector<std::vector<std::string>> parts;
  size_t longest = 0;
  for (const std::string& s : *in[0].strings) {
    parts.push_back(split(s, delimiter, maxsplit));
    longest = std::max(longest, parts.back().size());
  }
  Shape shape = in[0].shape;
  shape.push_back(static_cast<int64_t>(longest));
  Tensor y = stringTensor(shape);
  Tensor z(DataType::Int64, in[0].shape);
  for (size_t e = 0; e < parts.size(); ++e) {
    z.data<int64_t>()[e] = static_cast<int64_t>(parts[e].size());
    for (size_t k = 0; k < parts[e].size(); ++k) y.strings()[e * longest + k] = std::move(parts[e][k]);
  }
  *out = {y, z};
  return Status::ok();
}

std::string changeCase(std::string s, const std::string& action) {
  if (action == "LOWER")
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (action == "UPPER")
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// Drops the stopwords (compared as is or ignoring case), then changes case. X is [C] or [1, C];
// when nothing is left the output is one empty string ([1] or [1, 1]).
Status stringNormalizer(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  OSPREY_RETURN_IF_ERROR(stringInput(in, 0, "X"));
  const Shape& xs = in[0].shape;
  if (!(xs.size() == 1 || (xs.size() == 2 && xs[0] == 1)))
    return Status::invalidArgument("input X must be [C] or [1, C], not " + shapeToString(xs));
  const std::string action = node.getString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    return Status::invalidModel("case_change_action must be NONE, LOWER or UPPER, not '" + action + "'");
  const bool caseSensitive = node.getInt("is_case_sensitive", 0) != 0;
  const Attribute* stop = node.attr("stopwords");
  std::vector<std::string> stopwords = stop ? stop->strings : std::vector<std::string>();
  if (!caseSensitive)
    for (std::string& w : stopwords) w = changeCase(w, "LOWER");
  std::vector<std::string> kept;
  for (const std::string& s : *in[0].strings) {
    const std::string key = caseSensitive ? s : changeCase(s, "LOWER");
    if (std::find(stopwords.begin(), stopwords.end(), key) == stopwords.end()) kept.push_back(changeCase(s, action));
  }
  if (kept.empty()) kept.push_back("");
  const int64_t n = static_cast<int64_t>(kept.size());
  Tensor y = stringTensor(xs.size() == 1 ? Shape{n} : Shape{1, n});
  y.strings() = std::move(kept);
  *out = {y};
  return Status::ok();
}

Status regexFullMatch(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  OSPREY_RETURN_IF_ERROR(stringInput(in, 0, "X"));
  const std::string pattern = node.getString("pattern", "");
  Tensor y(DataType::Bool, in[0].shape);
  // std::regex (ECMAScript) stands in for RE2: the same syntax for classes, groups, alternation,
  // anchors and counted repetition. Its matcher recurses, so it can fail on long inputs: an error.
  try {
    const std::regex re(pattern, std::regex::ECMAScript);
    for (size_t e = 0; e < in[0].strings->size(); ++e) y.data<bool>()[e] = std::regex_match((*in[0].strings)[e], re);
  } catch (const std::regex_error& e) {
    return Status::invalidArgument("pattern '" + pattern + "': " + e.what());
  }
  *out = {y};
  return Status::ok();
}

}  // namespace

#define OSPREY_STRING_OP(op, ins, outs, fn) \
  const OpDef kOpDef_##op = {OpType::op, #op, ins, ins, outs, outs, nullptr, nullptr, nullptr, 0, true, false, 0, fn, true}
OSPREY_STRING_OP(StringConcat, 2, 1, stringConcat);
OSPREY_STRING_OP(StringSplit, 1, 2, stringSplit);
OSPREY_STRING_OP(StringNormalizer, 1, 1, stringNormalizer);
OSPREY_STRING_OP(RegexFullMatch, 1, 1, regexFullMatch);
#undef OSPREY_STRING_OP

}  // namespace osprey
