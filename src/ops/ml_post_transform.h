// The score transforms of the ONNX-ML models (post_transform): NONE, SOFTMAX, LOGISTIC and
// SOFTMAX_ZERO (a softmax over the nonzero scores; zeros stay zero). PROBIT is not supported.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "osprey/status.h"

namespace osprey {

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
