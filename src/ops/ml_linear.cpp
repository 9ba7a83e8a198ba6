// ONNX-ML's linear models and feature transforms as skl2onnx writes scikit-learn's: LinearRegressor,
// LinearClassifier, Scaler ((x - offset) * scale) and Normalizer (rows to unit MAX / L1 / L2 norm).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.h"
#include "ops/ml_util.h"
#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// scores[r][t] = x[r] . coefficients[t] + intercepts[t]
Status linearScores(const Node& node, const TensorView& x, int64_t targets, std::vector<std::vector<double>>* scores) {
  const std::vector<float> w = node.getFloats("coefficients"), b = node.getFloats("intercepts");
  const int64_t features = featuresOf(x);
  if (targets < 1 || static_cast<int64_t>(w.size()) != targets * features)
    return Status::invalidArgument(std::to_string(w.size()) + " coefficients do not make " + std::to_string(targets) +
                                   " rows of the input's " + std::to_string(features) + " features");
  if (!b.empty() && static_cast<int64_t>(b.size()) != targets) return Status::invalidModel("intercepts must have one value per target");
  scores->assign(static_cast<size_t>(rowsOf(x)), std::vector<double>(static_cast<size_t>(targets)));
  for (int64_t r = 0; r < rowsOf(x); ++r)
    for (int64_t t = 0; t < targets; ++t) {
      double acc = b.empty() ? 0.0 : b[t];
      for (int64_t f = 0; f < features; ++f) acc += static_cast<double>(w[t * features + f]) * loadAsDouble(x.dtype, x.data, r * features + f);
      (*scores)[r][t] = acc;
    }
  return Status::ok();
}

Status regressorShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(checkFeatures(in[0]));
  OSPREY_RETURN_IF_ERROR(checkPostTransform(node.getString("post_transform", "NONE")));
  out[0].dtype = DataType::Float32;
  out[0].shape = {rowsOf(in[0]), node.getInt("targets", 1)};
  return Status::ok();
}

Status regressorKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  std::vector<std::vector<double>> scores;
  OSPREY_RETURN_IF_ERROR(linearScores(node, in[0], node.getInt("targets", 1), &scores));
  const std::string post = node.getString("post_transform", "NONE");
  for (size_t r = 0; r < scores.size(); ++r) {
    applyPostTransform(post, &scores[r]);
    for (size_t t = 0; t < scores[r].size(); ++t) out[0].as<float>()[r * scores[r].size() + t] = static_cast<float>(scores[r][t]);
  }
  return Status::ok();
}

// Y: the best class's label per row, Z: the scores. One row of coefficients for two labels is the
// binary form: its score s is the second class's, the first's is -s (or 1 - p after LOGISTIC).
Status linearClassifier(const Node& node, const TensorViews& in, std::vector<Tensor>* out) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(checkFeatures(x));
  const std::string post = node.getString("post_transform", "NONE");
  OSPREY_RETURN_IF_ERROR(checkPostTransform(post));
  const Attribute* stringLabels = node.attr("classlabels_strings");
  const std::vector<int64_t> intLabels = node.getInts("classlabels_ints");
  const int64_t labels = stringLabels ? static_cast<int64_t>(stringLabels->strings.size()) : static_cast<int64_t>(intLabels.size());
  if (labels < 1) return Status::invalidModel("classlabels_ints or classlabels_strings must be given");
  const int64_t features = featuresOf(x), rowsOfW = static_cast<int64_t>(node.getFloats("coefficients").size()) / std::max<int64_t>(features, 1);
  std::vector<std::vector<double>> scores;
  OSPREY_RETURN_IF_ERROR(linearScores(node, x, rowsOfW, &scores));
  const bool binary = rowsOfW == 1 && labels == 2;
  if (!binary && rowsOfW != labels) return Status::invalidModel(std::to_string(rowsOfW) + " coefficient rows for " + std::to_string(labels) + " labels");
  const int64_t rows = rowsOf(x), columns = binary ? 2 : labels;
  Tensor y = stringLabels ? Tensor(DataType::String, {rows}) : Tensor(DataType::Int64, {rows});
  Tensor z(DataType::Float32, {rows, columns});
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double>& s = scores[r];
    int64_t best = 0;
    applyPostTransform(post, &s);
    if (binary) {
      const bool probability = post == "LOGISTIC";
      best = probability ? (s[0] > 0.5 ? 1 : 0) : (s[0] > 0 ? 1 : 0);
      s = {probability ? 1.0 - s[0] : -s[0], s[0]};
    } else {
      best = std::max_element(s.begin(), s.end()) - s.begin();
    }
    if (stringLabels) y.strings()[r] = stringLabels->strings[best];
    else y.data<int64_t>()[r] = intLabels[best];
    for (int64_t c = 0; c < columns; ++c) z.data<float>()[r * columns + c] = static_cast<float>(s[c]);
  }
  *out = {y, z};
  return Status::ok();
}

Status featureMapShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(checkFeatures(in[0]));
  if (node.type == OpType::Normalizer) {
    const std::string norm = node.getString("norm", "MAX");
    if (norm != "MAX" && norm != "L1" && norm != "L2") return Status::invalidModel("norm must be MAX, L1 or L2, not '" + norm + "'");
  }
  out[0].dtype = DataType::Float32;
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status scalerKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const std::vector<float> offset = node.getFloats("offset"), scale = node.getFloats("scale");
  const int64_t features = featuresOf(in[0]);
  for (const std::vector<float>* v : {&offset, &scale})
    if (v->size() > 1 && static_cast<int64_t>(v->size()) != features)
      return Status::invalidArgument("offset and scale need one value or one per feature (" + std::to_string(features) + ")");
  auto at = [](const std::vector<float>& v, int64_t f, double fallback) { return v.empty() ? fallback : v.size() == 1 ? v[0] : v[f]; };
  for (int64_t i = 0; i < in[0].elements(); ++i) {
    const int64_t f = i % features;
    out[0].as<float>()[i] = static_cast<float>((loadAsDouble(in[0].dtype, in[0].data, i) - at(offset, f, 0.0)) * at(scale, f, 1.0));
  }
  return Status::ok();
}

Status normalizerKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const std::string norm = node.getString("norm", "MAX");
  const int64_t features = featuresOf(in[0]);
  for (int64_t r = 0; r < rowsOf(in[0]); ++r) {
    double n = norm == "MAX" ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t f = 0; f < features; ++f) {
      const double v = loadAsDouble(in[0].dtype, in[0].data, r * features + f);
      n = norm == "MAX" ? std::max(n, v) : norm == "L1" ? n + std::fabs(v) : n + v * v;
    }
    if (norm == "L2") n = std::sqrt(n);
    for (int64_t f = 0; f < features; ++f) {
      const double v = loadAsDouble(in[0].dtype, in[0].data, r * features + f);
      out[0].as<float>()[r * features + f] = static_cast<float>(n != 0 ? v / n : v);
    }
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_LinearRegressor = {OpType::LinearRegressor, "LinearRegressor", 1, 1, 1, 1, regressorShape, regressorKernel, nullptr, 0, false};
const OpDef kOpDef_LinearClassifier = {OpType::LinearClassifier, "LinearClassifier", 1, 1, 2, 2, nullptr, nullptr, nullptr, 0, true,
                                       false, 0, linearClassifier, true};
const OpDef kOpDef_Scaler = {OpType::Scaler, "Scaler", 1, 1, 1, 1, featureMapShape, scalerKernel, nullptr, 0, false};
const OpDef kOpDef_Normalizer = {OpType::Normalizer, "Normalizer", 1, 1, 1, 1, featureMapShape, normalizerKernel, nullptr, 0, false};

}  // namespace osprey
