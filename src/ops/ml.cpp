// ONNX-ML ops (domain ai.onnx.ml) of scikit-learn style models: Binarizer, ArrayFeatureExtractor,
// LabelEncoder (opset 4: keys and values as lists or tensors), TreeEnsemble (opset 5), ZipMap (a
// sequence of maps: Tensor::map); the older tree ensembles are in ml_trees.cpp, the linear models in
// ml_linear.cpp. Attributes
// given as lists or as tensor attributes are read the same way (mlValues).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.h"
#include "ops/ml_util.h"
#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// ---- Binarizer: 1 where x > threshold, else 0 ----

Status binarizerShape(const Node&, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "X"));
  out[0].dtype = in[0].dtype;
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status binarizerKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const double threshold = node.getFloat("threshold", 0.f);
  for (int64_t i = 0; i < in[0].elements(); ++i)
    storeFromDouble(out[0].dtype, out[0].data, i, loadAsDouble(in[0].dtype, in[0].data, i) > threshold ? 1.0 : 0.0);
  return Status::ok();
}

// ---- ArrayFeatureExtractor: X's last axis at the indices Y ([1, k] for a 1-D X) ----

Status featureShape(const Node&, const TensorViews& in, TensorViews& out) {
  const TensorView &x = in[0], &y = in[1];
  if (x.rank() < 1) return Status::invalidArgument("X must have at least one axis");
  if (y.dtype != DataType::Int64) return Status::invalidModel(dtypeError(y, "Y (indices)"));
  if (x.dtype == DataType::String) return Status::unsupported("string features");
  out[0].dtype = x.dtype;
  out[0].shape = x.rank() == 1 ? Shape{1} : Shape(x.shape.begin(), x.shape.end() - 1);
  out[0].shape.push_back(y.elements());
  return Status::ok();
}

Status featureKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const TensorView& x = in[0];
  const int64_t width = x.shape.back(), rows = width ? x.elements() / width : 0, k = in[1].elements();
  const int64_t* idx = in[1].as<const int64_t>();
  for (int64_t j = 0; j < k; ++j)
    if (idx[j] < 0 || idx[j] >= width)
      return Status::invalidArgument("index " + std::to_string(idx[j]) + " is outside the last axis of X, of " +
                                     std::to_string(width));
  const size_t es = dataTypeSize(x.dtype);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(static_cast<uint8_t*>(out[0].data) + (r * k + j) * es, static_cast<const uint8_t*>(x.data) + (r * width + idx[j]) * es, es);
  return Status::ok();
}

// ---- values of an attribute given as a list or as a tensor attribute ----

struct MlValues {
  DataType dtype = DataType::Undefined;  // Undefined: not given
  std::vector<double> numbers;
  std::vector<std::string> strings;
  size_t size() const { return dtype == DataType::String ? strings.size() : numbers.size(); }
};

// The tensor attribute `name`, where given.
Status tensorValues(const Node& node, const std::string& name, MlValues* out) {
  const Attribute* a = node.attr(name);
  if (!a || !a->tensor) return Status::ok();
  const TensorInfo& t = *a->tensor;
  out->dtype = t.dtype;
  if (t.dtype == DataType::String) {
    out->strings = t.data.strings;
    return Status::ok();
  }
  const int64_t n = shapeElements(t.shape);
  if (n < 0 || static_cast<size_t>(n) * dataTypeSize(t.dtype) > t.data.size)
    return Status::invalidModel("attribute '" + name + "' is short of data");
  for (int64_t i = 0; i < n; ++i) out->numbers.push_back(loadAsDouble(t.dtype, t.data.bytes.get(), i));
  return Status::ok();
}

// `prefix` + "_int64s" / "_floats" / "_strings" (or the singular default_*), or `prefix` + "_tensor".
Status mlValues(const Node& node, const std::string& prefix, bool single, MlValues* out) {
  const std::string ints = prefix + (single ? "_int64" : "_int64s"), floats = prefix + (single ? "_float" : "_floats");
  const std::string strings = prefix + (single ? "_string" : "_strings"), tensor = prefix + "_tensor";
  if (node.attr(tensor)) {
    OSPREY_RETURN_IF_ERROR(tensorValues(node, tensor, out));
  } else if (const Attribute* a = node.attr(strings)) {
    out->dtype = DataType::String;
    out->strings = single ? std::vector<std::string>{a->s} : a->strings;
  } else if (const Attribute* a = node.attr(ints)) {
    out->dtype = DataType::Int64;
    if (single) out->numbers = {static_cast<double>(a->i)};
    for (int64_t v : single ? std::vector<int64_t>() : a->ints) out->numbers.push_back(static_cast<double>(v));
  } else if (const Attribute* a = node.attr(floats)) {
    out->dtype = DataType::Float32;
    if (single) out->numbers = {a->f};
    for (float v : single ? std::vector<float>() : a->floats) out->numbers.push_back(v);
  }
  return Status::ok();
}

// ---- LabelEncoder: each input value's value in the map, or the default ----

Status labelEncoder(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  MlValues keys, values, fallback;
  OSPREY_RETURN_IF_ERROR(mlValues(node, "keys", false, &keys));
  OSPREY_RETURN_IF_ERROR(mlValues(node, "values", false, &values));
  OSPREY_RETURN_IF_ERROR(mlValues(node, "default", true, &fallback));
  if (keys.dtype == DataType::Undefined || values.dtype == DataType::Undefined || keys.size() != values.size())
    return Status::invalidModel("keys and values must be given, as many of each");
  const TensorView& x = in[0];
  const bool stringKeys = keys.dtype == DataType::String;
  if ((x.dtype == DataType::String) != stringKeys || (!stringKeys && (dataTypeSize(x.dtype) == 0 || x.dtype == DataType::Bool)))
    return Status::invalidArgument(std::string("input of ") + dataTypeName(x.dtype) + " does not match keys of " + dataTypeName(keys.dtype));
  if (stringKeys && (!x.strings || static_cast<int64_t>(x.strings->size()) != x.elements()))
    return Status::internal("the string input has no strings");
  // Defaults as ONNX Runtime's: -1, -0.0, "_Unused".
  if (fallback.dtype == DataType::Undefined || fallback.size() == 0) {
    fallback = MlValues();
    fallback.dtype = values.dtype;
    if (values.dtype == DataType::String) fallback.strings = {"_Unused"};
    else fallback.numbers = {values.dtype == DataType::Float32 || values.dtype == DataType::Float64 ? -0.0 : -1.0};
  }
  Tensor y(values.dtype, x.shape);
  for (int64_t i = 0; i < x.elements(); ++i) {
    size_t k = 0;
    if (stringKeys) {
      k = std::find(keys.strings.begin(), keys.strings.end(), (*x.strings)[i]) - keys.strings.begin();
    } else {
      const double v = loadAsDouble(x.dtype, x.data, i);
      k = std::find_if(keys.numbers.begin(), keys.numbers.end(), [&](double key) { return key == v || (std::isnan(key) && std::isnan(v)); }) -
          keys.numbers.begin();
    }
    const bool found = k < keys.size();
    if (values.dtype == DataType::String)
      y.strings()[i] = found ? values.strings[k] : fallback.strings[0];
    else
      storeFromDouble(values.dtype, y.data(), i, found ? values.numbers[k] : fallback.numbers[0]);
  }
  *out = {y};
  return Status::ok();
}

// ---- TreeEnsemble (opset 5) ----

enum Mode : int { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };

struct Trees {
  std::vector<int64_t> roots, features, trueIds, falseIds, trueLeaf, falseLeaf, missingTrue, leafTargets;
  std::vector<int> modes;
  std::vector<double> splits, leafWeights;
  std::vector<std::vector<double>> members;  // per node (BRANCH_MEMBER nodes only)
  int64_t targets = 0, aggregate = 1, post = 0;
};

Status readTrees(const Node& node, Trees* t) {
  auto ints = [&](const char* name, std::vector<int64_t>* v) { *v = node.getInts(name); };
  ints("tree_roots", &t->roots);
  ints("nodes_featureids", &t->features);
  ints("nodes_truenodeids", &t->trueIds);
  ints("nodes_falsenodeids", &t->falseIds);
  ints("nodes_trueleafs", &t->trueLeaf);
  ints("nodes_falseleafs", &t->falseLeaf);
  ints("nodes_missing_value_tracks_true", &t->missingTrue);
  ints("leaf_targetids", &t->leafTargets);
  MlValues modes, splits, weights, members;
  OSPREY_RETURN_IF_ERROR(tensorValues(node, "nodes_modes", &modes));
  OSPREY_RETURN_IF_ERROR(tensorValues(node, "nodes_splits", &splits));
  OSPREY_RETURN_IF_ERROR(tensorValues(node, "leaf_weights", &weights));
  OSPREY_RETURN_IF_ERROR(tensorValues(node, "membership_values", &members));
  for (double m : modes.numbers) t->modes.push_back(static_cast<int>(m));
  t->splits = splits.numbers;
  t->leafWeights = weights.numbers;
  t->targets = node.getInt("n_targets", 0);
  t->aggregate = node.getInt("aggregate_function", 1);
  t->post = node.getInt("post_transform", 0);
  const size_t n = t->features.size();
  if (t->modes.size() != n || t->splits.size() != n || t->trueIds.size() != n || t->falseIds.size() != n ||
      t->trueLeaf.size() != n || t->falseLeaf.size() != n || (!t->missingTrue.empty() && t->missingTrue.size() != n))
    return Status::invalidModel("the nodes_* attributes must all have one value per node");
  if (t->leafTargets.size() != t->leafWeights.size()) return Status::invalidModel("leaf_targetids and leaf_weights differ in length");
  if (t->targets < 1) return Status::invalidModel("n_targets must be positive");
  if (t->aggregate < 0 || t->aggregate > 3) return Status::invalidModel("aggregate_function must be 0 to 3");
  OSPREY_RETURN_IF_ERROR(checkPostTransform(postTransformName(t->post)));
  t->members.resize(n);
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    if (t->modes[i] < kLeq || t->modes[i] > kMember) return Status::invalidModel("node " + std::to_string(i) + " has mode " + std::to_string(t->modes[i]));
    if (t->modes[i] != kMember) continue;
    while (at < members.numbers.size() && !std::isnan(members.numbers[at])) t->members[i].push_back(members.numbers[at++]);
    ++at;  // the NaN that ends the set
  }
  for (size_t i = 0; i < n; ++i) {
    for (auto [id, leaf] : {std::pair{t->trueIds[i], t->trueLeaf[i]}, std::pair{t->falseIds[i], t->falseLeaf[i]}})
      if (id < 0 || static_cast<size_t>(id) >= (leaf ? t->leafWeights.size() : n))
        return Status::invalidModel("node " + std::to_string(i) + " points outside the " + (leaf ? "leaves" : "nodes"));
  }
  for (int64_t r : t->roots)
    if (r < 0 || static_cast<size_t>(r) >= n) return Status::invalidModel("a tree root points outside the nodes");
  for (int64_t target : t->leafTargets)
    if (target < 0 || target >= t->targets) return Status::invalidModel("a leaf's target is outside n_targets");
  return Status::ok();
}

Status treeShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "X"));
  if (in[0].rank() != 2) return Status::invalidArgument("X must be [N, features], not " + shapeToString(in[0].shape));
  out[0].dtype = in[0].dtype;
  out[0].shape = {in[0].shape[0], node.getInt("n_targets", 0)};
  return Status::ok();
}

bool goesTrue(const Trees& t, int64_t node, double x) {
  // A missing value (NaN) takes the true branch where the node says so; else it compares as NaN does.
  if (std::isnan(x) && !t.missingTrue.empty() && t.missingTrue[node] != 0) return true;
  const double s = t.splits[node];
  switch (t.modes[node]) {
    case kLeq: return x <= s;
    case kLt: return x < s;
    case kGte: return x >= s;
    case kGt: return x > s;
    case kEq: return x == s;
    case kNeq: return x != s;
    default: return std::find(t.members[node].begin(), t.members[node].end(), x) != t.members[node].end();
  }
}

Status treeKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  Trees t;
  OSPREY_RETURN_IF_ERROR(readTrees(node, &t));
  const int64_t rows = in[0].shape[0], features = in[0].shape[1];
  for (int64_t f : t.features)
    if (f < 0 || f >= features) return Status::invalidArgument("a node reads feature " + std::to_string(f) + " of " + std::to_string(features));
  const size_t n = t.features.size();
  std::vector<double> score(static_cast<size_t>(t.targets));
  std::vector<bool> seen(static_cast<size_t>(t.targets));
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(score.begin(), score.end(), 0.0);
    std::fill(seen.begin(), seen.end(), false);
    for (int64_t root : t.roots) {
      int64_t at = root;
      bool leaf = false;
      for (size_t steps = 0; !leaf; ++steps) {
        if (steps > n) return Status::invalidModel("a tree has a cycle");
        const bool right = goesTrue(t, at, loadAsDouble(in[0].dtype, in[0].data, r * features + t.features[at]));
        leaf = (right ? t.trueLeaf : t.falseLeaf)[at] != 0;
        at = (right ? t.trueIds : t.falseIds)[at];
      }
      const size_t target = static_cast<size_t>(t.leafTargets[at]);
      const double w = t.leafWeights[at];
      if (t.aggregate <= 1 || !seen[target]) score[target] = seen[target] || t.aggregate <= 1 ? score[target] + w : w;
      else score[target] = t.aggregate == 2 ? std::min(score[target], w) : std::max(score[target], w);
      seen[target] = true;
    }
    if (t.aggregate == 0 && !t.roots.empty())
      for (double& s : score) s /= static_cast<double>(t.roots.size());
    applyPostTransform(postTransformName(t.post), &score);
    for (int64_t k = 0; k < t.targets; ++k) storeFromDouble(out[0].dtype, out[0].data, r * t.targets + k, score[k]);
  }
  return Status::ok();
}

// ---- ZipMap: each row of scores as a map from the class labels to them; a sequence of rows ----

Status zipMap(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  const TensorView& x = in[0];
  if (x.dtype != DataType::Float32 || (x.rank() != 1 && x.rank() != 2))
    return Status::invalidArgument("X must be float32 [N, C] or [C], not " + std::string(dataTypeName(x.dtype)) + " " + shapeToString(x.shape));
  const Attribute* strings = node.attr("classlabels_strings");
  const std::vector<int64_t> ints = node.getInts("classlabels_int64s");
  const int64_t classes = x.shape.back();
  if ((strings ? static_cast<int64_t>(strings->strings.size()) : static_cast<int64_t>(ints.size())) != classes)
    return Status::invalidArgument("X has " + std::to_string(classes) + " columns; the labels are not as many");
  Tensor keys = strings ? Tensor(DataType::String, {classes}) : Tensor(DataType::Int64, {classes});
  if (strings) keys.strings() = strings->strings;
  else std::copy(ints.begin(), ints.end(), keys.data<int64_t>());
  std::vector<Tensor> rows;
  for (int64_t r = 0; r < (x.rank() == 2 ? x.shape[0] : 1); ++r) {
    Tensor values(DataType::Float32, {classes});
    std::copy(x.as<const float>() + r * classes, x.as<const float>() + (r + 1) * classes, values.data<float>());
    rows.push_back(Tensor::map(keys, values));
  }
  *out = {Tensor::sequence(DataType::Map, std::move(rows))};
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_ZipMap = {OpType::ZipMap, "ZipMap", 1, 1, 1, 1, nullptr, nullptr, nullptr, 0, true, false, 0, zipMap, true};
const OpDef kOpDef_Binarizer = {OpType::Binarizer, "Binarizer", 1, 1, 1, 1, binarizerShape, binarizerKernel, nullptr, 0, false};
const OpDef kOpDef_ArrayFeatureExtractor = {OpType::ArrayFeatureExtractor, "ArrayFeatureExtractor", 2, 2, 1, 1,
                                            featureShape, featureKernel, nullptr, 0, false};
const OpDef kOpDef_LabelEncoder = {OpType::LabelEncoder, "LabelEncoder", 1, 1, 1, 1, nullptr, nullptr, nullptr, 0, true,
                                   false, 0, labelEncoder, true};
const OpDef kOpDef_TreeEnsemble = {OpType::TreeEnsemble, "TreeEnsemble", 1, 1, 1, 1, treeShape, treeKernel, nullptr, 0, false};

}  // namespace osprey
