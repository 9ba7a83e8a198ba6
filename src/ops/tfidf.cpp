// TfIdfVectorizer: counts the pool's n-grams in each row of tokens (int32 / int64 or strings), an
// n-gram's items `skip + 1` apart for every skip up to max_skip_count (unigrams once), into the
// output columns ngram_indexes names; TF gives the counts, IDF the weight of each n-gram present,
// TFIDF count times weight.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

struct Pool {
  std::map<std::vector<std::string>, int64_t> grams;  // n-gram (tokens as text) -> its place in the pool
  int64_t size = 0;                                   // n-grams in the pool
  std::vector<int64_t> columns;
  std::vector<float> weights;
  int64_t minN = 1, maxN = 1, maxSkip = 0, width = 0;
  std::string mode;
};

Status readPool(const Node& node, Pool* p) {
  p->minN = node.getInt("min_gram_length", 1);
  p->maxN = node.getInt("max_gram_length", 1);
  p->maxSkip = node.getInt("max_skip_count", 0);
  p->mode = node.getString("mode", "TF");
  p->columns = node.getInts("ngram_indexes");
  p->weights = node.getFloats("weights");
  const std::vector<int64_t> counts = node.getInts("ngram_counts");
  if (p->minN < 1 || p->maxN < p->minN || p->maxSkip < 0 || p->maxN > 64)
    return Status::invalidModel("min_gram_length, max_gram_length and max_skip_count are out of range");
  if (p->mode != "TF" && p->mode != "IDF" && p->mode != "TFIDF") return Status::invalidModel("mode must be TF, IDF or TFIDF");
  std::vector<std::string> pool;
  if (const Attribute* s = node.attr("pool_strings")) pool = s->strings;
  for (int64_t v : node.getInts("pool_int64s")) pool.push_back(std::to_string(v));
  // ngram_counts[k]: where the (k + 1)-grams start in the pool.
  size_t at = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const size_t end = k + 1 < counts.size() ? static_cast<size_t>(counts[k + 1]) : pool.size();
    if (counts[k] < 0 || static_cast<size_t>(counts[k]) != at || end < at || end > pool.size() || (end - at) % (k + 1))
      return Status::invalidModel("ngram_counts does not divide the pool into n-grams");
    for (; at < end; at += k + 1) {
      std::vector<std::string> gram(pool.begin() + at, pool.begin() + at + k + 1);
      p->grams.emplace(std::move(gram), p->size++);
    }
  }
  if (static_cast<int64_t>(p->columns.size()) != p->size)
    return Status::invalidModel("ngram_indexes must name one output column per n-gram of the pool");
  if (!p->weights.empty() && p->weights.size() != p->columns.size()) return Status::invalidModel("weights must have one value per n-gram");
  for (int64_t c : p->columns) {
    if (c < 0) return Status::invalidModel("ngram_indexes must not be negative");
    p->width = std::max(p->width, c + 1);
  }
  return Status::ok();
}

Status tfidfShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const TensorView& x = in[0];
  if (x.dtype != DataType::Int32 && x.dtype != DataType::Int64 && x.dtype != DataType::String)
    return Status::unsupported(dtypeError(x, "X"));
  if (x.rank() != 1 && x.rank() != 2) return Status::invalidArgument("X must be [C] or [N, C], not " + shapeToString(x.shape));
  Pool p;
  OSPREY_RETURN_IF_ERROR(readPool(node, &p));
  out[0].dtype = DataType::Float32;
  out[0].shape = x.rank() == 1 ? Shape{p.width} : Shape{x.shape[0], p.width};
  return Status::ok();
}

Status tfidfKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  Pool p;
  OSPREY_RETURN_IF_ERROR(readPool(node, &p));
  const TensorView& x = in[0];
  const int64_t rows = x.rank() == 1 ? 1 : x.shape[0], length = x.shape.back();
  auto token = [&](int64_t i) {
    return x.dtype == DataType::String ? (*x.strings)[i] : std::to_string(static_cast<int64_t>(loadAsDouble(x.dtype, x.data, i)));
  };
  std::vector<double> counts(static_cast<size_t>(p.size));
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(counts.begin(), counts.end(), 0.0);
    std::vector<std::string> tokens;
    for (int64_t i = 0; i < length; ++i) tokens.push_back(token(r * length + i));
    for (int64_t n = p.minN; n <= p.maxN; ++n)
      for (int64_t skip = 0; skip <= (n == 1 ? 0 : p.maxSkip); ++skip)
        for (int64_t start = 0; start + (n - 1) * (skip + 1) < length; ++start) {
          std::vector<std::string> gram;
          for (int64_t k = 0; k < n; ++k) gram.push_back(tokens[start + k * (skip + 1)]);
          auto hit = p.grams.find(gram);
          if (hit != p.grams.end()) counts[hit->second] += 1;
        }
    float* y = out[0].as<float>() + r * p.width;
    std::fill(y, y + p.width, 0.f);
    for (size_t g = 0; g < counts.size(); ++g) {
      const double w = p.weights.empty() ? 1.0 : p.weights[g];
      const double v = p.mode == "TF" ? counts[g] : p.mode == "IDF" ? (counts[g] > 0 ? w : 0.0) : counts[g] * w;
      y[p.columns[g]] = static_cast<float>(v);
    }
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_TfIdfVectorizer = {OpType::TfIdfVectorizer, "TfIdfVectorizer", 1, 1, 1, 1, tfidfShape, tfidfKernel, nullptr, 0, false};

}  // namespace osprey
