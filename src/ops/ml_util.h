// What the ONNX-ML models share: their feature input X ([N, features] or [features]) and their
// score transforms (post_transform): NONE, SOFTMAX, LOGISTIC and SOFTMAX_ZERO (a softmax over the
// nonzero scores; zeros stay zero). PROBIT is not supported.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/op_util.h"
#include "osprey/status.h"

namespace osprey {

inline Status checkFeatures(const TensorView& x) {
  if (x.dtype != DataType::Float32 && x.dtype != DataType::Float64 && x.dtype != DataType::Int64 && x.dtype != DataType::Int32)
    return Status::unsupported(dtypeError(x, "X"));
  if (x.rank() != 1 && x.rank() != 2) return Status::invalidArgument("X must be [N, features], not " + shapeToString(x.shape));
  return Status::ok();
}
inline int64_t rowsOf(const TensorView& x) { return x.rank() == 2 ? x.shape[0] : 1; }
inline int64_t featuresOf(const TensorView& x) { return x.shape.back(); }

inline Status checkPostTransform(const std::string& post) {
  if (post != "NONE" && post != "SOFTMAX" && post != "LOGISTIC" && post != "SOFTMAX_ZERO")
    return Status::unsupported("post_transform '" + post + "'");
  return Status::ok();
}

// The opset-5 TreeEnsemble's numbering: NONE 0, SOFTMAX 1, LOGISTIC 2, SOFTMAX_ZERO 3, PROBIT 4.
inline std::string postTransformName(int64_t code) {
  static const char* const kNames[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
  return code >= 0 && code <= 4 ? kNames[code] : std::to_string(code);
}

inline void applyPostTransform(const std::string& post, std::vector<double>* score) {
  if (post == "LOGISTIC") {
    for (double& s : *score) s = 1.0 / (1.0 + std::exp(-s));
  } else if (post == "SOFTMAX" || post == "SOFTMAX_ZERO") {
    const bool zero = post == "SOFTMAX_ZERO";
    double peak = -std::numeric_limits<double>::infinity(), sum = 0;
    for (double s : *score)
      if (!zero || s != 0) peak = std::max(peak, s);
    for (double& s : *score) sum += (s = zero && s == 0 ? 0.0 : std::exp(s - peak));
    for (double& s : *score) s = sum > 0 ? s / sum : 0.0;
  }
}

}  // namespace osprey
