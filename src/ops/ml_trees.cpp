// TreeEnsembleRegressor and TreeEnsembleClassifier (ai.onnx.ml opsets 1 and 3), as
// scikit-learn converters write them: nodes keyed by (tree id, node id) with LEAF nodes among them,
// each leaf adding weights to one or more targets (classes); aggregated over trees, base values
// added, then post-transformed. The classifier's labels are the best-scoring classes; with two
// labels and one class's weights only (boosted binary models) the other class's score is derived
// as ONNX Runtime does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/dtype.h"
#include "ops/ml_util.h"
#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class Branch { Leq, Lt, Gte, Gt, Eq, Neq, Leaf };

struct LegacyTrees {
  std::vector<Branch> modes;
  std::vector<int64_t> features, trueNext, falseNext;  // node indices
  std::vector<bool> missingTrue;
  std::vector<double> values;
  std::vector<std::vector<std::pair<int64_t, double>>> leafWeights;  // per node: (target, weight)
  std::vector<int64_t> roots;
  std::vector<double> base;
  int64_t targets = 0;
  std::string aggregate = "SUM", post = "NONE";
};

std::vector<double> floatsOrTensor(const Node& node, const std::string& name) {
  std::vector<double> v;
  if (const Attribute* a = node.attr(name + "_as_tensor"); a && a->tensor) {
    const TensorInfo& t = *a->tensor;
    const int64_t n = shapeElements(t.shape);
    if (n > 0 && static_cast<size_t>(n) * dataTypeSize(t.dtype) <= t.data.size)
      for (int64_t i = 0; i < n; ++i) v.push_back(loadAsDouble(t.dtype, t.data.bytes.get(), i));
    return v;
  }
  for (float f : node.getFloats(name)) v.push_back(f);
  return v;
}

Status readLegacy(const Node& node, const char* prefix, int64_t targets, LegacyTrees* t) {
  const auto treeIds = node.getInts("nodes_treeids"), nodeIds = node.getInts("nodes_nodeids");
  const auto trueIds = node.getInts("nodes_truenodeids"), falseIds = node.getInts("nodes_falsenodeids");
  const auto missing = node.getInts("nodes_missing_value_tracks_true");
  const Attribute* modes = node.attr("nodes_modes");
  t->features = node.getInts("nodes_featureids");
  t->values = floatsOrTensor(node, "nodes_values");
  const size_t n = treeIds.size();
  if (!modes || modes->strings.size() != n || nodeIds.size() != n || t->features.size() != n || trueIds.size() != n ||
      falseIds.size() != n || t->values.size() != n || (!missing.empty() && missing.size() != n))
    return Status::invalidModel("the nodes_* attributes must all have one value per node");
  std::map<std::pair<int64_t, int64_t>, int64_t> index;
  for (size_t i = 0; i < n; ++i)
    if (!index.emplace(std::pair{treeIds[i], nodeIds[i]}, static_cast<int64_t>(i)).second)
      return Status::invalidModel("tree " + std::to_string(treeIds[i]) + " has node " + std::to_string(nodeIds[i]) + " twice");
  static const std::pair<const char*, Branch> kModes[] = {{"BRANCH_LEQ", Branch::Leq}, {"BRANCH_LT", Branch::Lt},
                                                          {"BRANCH_GTE", Branch::Gte}, {"BRANCH_GT", Branch::Gt},
                                                          {"BRANCH_EQ", Branch::Eq},   {"BRANCH_NEQ", Branch::Neq},
                                                          {"LEAF", Branch::Leaf}};
  std::vector<bool> child(n, false);
  t->trueNext.assign(n, -1);
  t->falseNext.assign(n, -1);
  t->missingTrue.assign(n, false);
  t->leafWeights.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    auto m = std::find_if(std::begin(kModes), std::end(kModes), [&](auto& k) { return modes->strings[i] == k.first; });
    if (m == std::end(kModes)) return Status::unsupported("node mode '" + modes->strings[i] + "'");
    t->modes.push_back(m->second);
    t->missingTrue[i] = !missing.empty() && missing[i] != 0;
    if (m->second == Branch::Leaf) continue;
    for (auto [id, next] : {std::pair{trueIds[i], &t->trueNext[i]}, std::pair{falseIds[i], &t->falseNext[i]}}) {
      auto it = index.find({treeIds[i], id});
      if (it == index.end() || it->second == static_cast<int64_t>(i))
        return Status::invalidModel("tree " + std::to_string(treeIds[i]) + " node " + std::to_string(nodeIds[i]) +
                                    " branches to a node it does not have");
      *next = it->second;
      child[it->second] = true;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (!child[i]) t->roots.push_back(static_cast<int64_t>(i));
  const std::string p = prefix;
  const auto leafTrees = node.getInts(p + "_treeids"), leafNodes = node.getInts(p + "_nodeids"), leafTargets = node.getInts(p + "_ids");
  const auto weights = floatsOrTensor(node, p + "_weights");
  if (leafNodes.size() != leafTrees.size() || leafTargets.size() != leafTrees.size() || weights.size() != leafTrees.size())
    return Status::invalidModel("the " + p + "_* attributes must all have one value per leaf weight");
  for (size_t k = 0; k < leafTrees.size(); ++k) {
    auto it = index.find({leafTrees[k], leafNodes[k]});
    if (it == index.end()) return Status::invalidModel("a leaf weight names a node the trees do not have");
    if (leafTargets[k] < 0 || leafTargets[k] >= targets) return Status::invalidModel("a leaf weight's target is outside the targets");
    t->leafWeights[it->second].emplace_back(leafTargets[k], weights[k]);
  }
  t->targets = targets;
  t->base = floatsOrTensor(node, "base_values");
  if (!t->base.empty() && static_cast<int64_t>(t->base.size()) != targets && !(targets == 2 && t->base.size() == 1))
    return Status::invalidModel("base_values must have one value per target");
  t->aggregate = node.getString("aggregate_function", "SUM");
  t->post = node.getString("post_transform", "NONE");
  if (t->aggregate != "SUM" && t->aggregate != "AVERAGE" && t->aggregate != "MIN" && t->aggregate != "MAX")
    return Status::invalidModel("aggregate_function '" + t->aggregate + "'");
  return checkPostTransform(t->post);
}

bool goesTrue(const LegacyTrees& t, int64_t node, double x) {
  if (std::isnan(x) && t.missingTrue[node]) return true;
  const double s = t.values[node];
  switch (t.modes[node]) {
    case Branch::Leq: return x <= s;
    case Branch::Lt: return x < s;
    case Branch::Gte: return x >= s;
    case Branch::Gt: return x > s;
    case Branch::Eq: return x == s;
    default: return x != s;
  }
}

// Aggregated scores of row r (before base values and post transform); `hit`: targets a leaf reached.
Status rawScores(const LegacyTrees& t, const TensorView& x, int64_t r, std::vector<double>* score, std::vector<bool>* hit) {
  const int64_t features = x.shape.back();
  score->assign(static_cast<size_t>(t.targets), 0.0);
  hit->assign(static_cast<size_t>(t.targets), false);
  for (int64_t at : t.roots) {
    for (size_t steps = 0; t.modes[at] != Branch::Leaf; ++steps) {
      if (steps > t.modes.size()) return Status::invalidModel("a tree has a cycle");
      const int64_t f = t.features[at];
      if (f < 0 || f >= features) return Status::invalidArgument("a node reads feature " + std::to_string(f) + " of " + std::to_string(features));
      at = goesTrue(t, at, loadAsDouble(x.dtype, x.data, r * features + f)) ? t.trueNext[at] : t.falseNext[at];
    }
    for (auto [target, w] : t.leafWeights[at]) {
      double& s = (*score)[target];
      if (t.aggregate == "MIN" && (*hit)[target]) s = std::min(s, w);
      else if (t.aggregate == "MAX" && (*hit)[target]) s = std::max(s, w);
      else s += w;
      (*hit)[target] = true;
    }
  }
  if (t.aggregate == "AVERAGE" && !t.roots.empty())
    for (double& s : *score) s /= static_cast<double>(t.roots.size());
  return Status::ok();
}

Status regressorShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(checkFeatures(in[0]));
  out[0].dtype = DataType::Float32;
  out[0].shape = {rowsOf(in[0]), node.getInt("n_targets", 1)};
  return Status::ok();
}

Status regressorKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  LegacyTrees t;
  OSPREY_RETURN_IF_ERROR(readLegacy(node, "target", node.getInt("n_targets", 1), &t));
  std::vector<double> score;
  std::vector<bool> hit;
  for (int64_t r = 0; r < rowsOf(in[0]); ++r) {
    OSPREY_RETURN_IF_ERROR(rawScores(t, in[0], r, &score, &hit));
    for (size_t k = 0; k < t.base.size() && k < score.size(); ++k) score[k] += t.base[k];
    applyPostTransform(t.post, &score);
    for (int64_t k = 0; k < t.targets; ++k) storeFromDouble(DataType::Float32, out[0].data, r * t.targets + k, score[k]);
  }
  return Status::ok();
}

int64_t classCount(const Node& node) {
  const Attribute* ints = node.attr("classlabels_int64s");
  const Attribute* strings = node.attr("classlabels_strings");
  return ints ? static_cast<int64_t>(ints->ints.size()) : strings ? static_cast<int64_t>(strings->strings.size()) : 0;
}

// Y: the labels (int64, or strings on the host), Z: the scores [N, classes].
Status classifier(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  OSPREY_RETURN_IF_ERROR(checkFeatures(in[0]));
  const int64_t classes = classCount(node);
  if (classes < 1) return Status::invalidModel("classlabels_int64s or classlabels_strings must be given");
  LegacyTrees t;
  OSPREY_RETURN_IF_ERROR(readLegacy(node, "class", classes, &t));
  const Attribute* stringLabels = node.attr("classlabels_strings");
  const std::vector<int64_t> intLabels = node.getInts("classlabels_int64s");
  // Boosted binary models give weights for one class only: that class's score is the model's.
  bool oneColumn = classes == 2, positive = true;
  int64_t scored = -1;
  for (const auto& leaf : t.leafWeights)
    for (auto [c, w] : leaf) {
      oneColumn = oneColumn && (scored < 0 || scored == c);
      scored = c;
      positive = positive && w >= 0;
    }
  oneColumn = oneColumn && scored >= 0;
  const int64_t rows = rowsOf(in[0]);
  Tensor labels = stringLabels ? Tensor(DataType::String, {rows}) : Tensor(DataType::Int64, {rows});
  Tensor scores(DataType::Float32, {rows, classes});
  std::vector<double> score;
  std::vector<bool> hit;
  for (int64_t r = 0; r < rows; ++r) {
    OSPREY_RETURN_IF_ERROR(rawScores(t, in[0], r, &score, &hit));
    int64_t best = 0;
    if (oneColumn) {
      double s = score[scored] + (t.base.empty() ? 0.0 : t.base.size() == 1 ? t.base[0] : t.base[scored]);
      if (t.post == "LOGISTIC") s = 1.0 / (1.0 + std::exp(-s));
      best = (t.post == "LOGISTIC" || positive) ? (s > 0.5 ? 1 : 0) : (s > 0 ? 1 : 0);
      score[1] = s;
      score[0] = t.post == "LOGISTIC" || positive ? 1.0 - s : -s;
    } else {
      for (size_t k = 0; k < t.base.size() && k < score.size(); ++k) score[k] += t.base[k];
      applyPostTransform(t.post, &score);
      best = std::max_element(score.begin(), score.end()) - score.begin();
    }
    if (stringLabels) labels.strings()[r] = stringLabels->strings[best];
    else labels.data<int64_t>()[r] = intLabels[best];
    for (int64_t k = 0; k < classes; ++k) scores.data<float>()[r * classes + k] = static_cast<float>(score[k]);
  }
  *out = {labels, scores};
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_TreeEnsembleRegressor = {OpType::TreeEnsembleRegressor, "TreeEnsembleRegressor", 1, 1, 1, 1,
                                            regressorShape, regressorKernel, nullptr, 0, false};
const OpDef kOpDef_TreeEnsembleClassifier = {OpType::TreeEnsembleClassifier, "TreeEnsembleClassifier", 1, 1, 2, 2,
                                             nullptr, nullptr, nullptr, 0, true, false, 0, classifier, true};

}  // namespace osprey
