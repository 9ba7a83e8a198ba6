// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 22 / 13). Input is (N, C) or
// (N, C, d1, ..., dk) and the target (N, d1, ..., dk) holds class indices. Each position's
// loss is -input[n, target, d...] times weight[target] (1 without weights); a target equal to
// ignore_index contributes nothing and has weight 0. reduction "mean" divides the sum by the
// summed weights of the positions that count (their count without weights), as the ONNX
// reference does. SoftmaxCrossEntropyLoss applies log-softmax over C first and can return it.
#include <cmath>
#include <string>
#include <vector>

#include "ops/op_util.h"

namespace osprey {

namespace {

enum class Reduction { None, Sum, Mean };

struct LossSetup {
  Reduction reduction = Reduction::Mean;
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
  int64_t batch = 0, classes = 0, inner = 1;  // input viewed as (N, C, inner)
};

Status setupLoss(const Node& node, const TensorViews& in, const char* inputName, LossSetup* s) {
  const TensorView &x = in[0], &target = in[1];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, inputName));
  if (target.dtype != DataType::Int32 && target.dtype != DataType::Int64)
    return Status::invalidModel("target (input 1) has dtype " + std::string(dataTypeName(target.dtype)) +
                                "; expected int32 or int64");
  if (x.rank() < 2)
    return Status::invalidModel(std::string(inputName) + " " + shapeToString(x.shape) +
                                " must have rank 2 or more (N, C, d1, ...)");
  Shape expected{x.shape[0]};
  for (int64_t d = 2; d < x.rank(); ++d) expected.push_back(x.shape[d]);
  if (target.shape != expected)
    return Status::invalidModel("target " + shapeToString(target.shape) + " must have shape " +
                                shapeToString(expected) + " for " + inputName + " " + shapeToString(x.shape));
  if (in.size() > 2 && in[2].present) {
    if (in[2].dtype != x.dtype)
      return Status::invalidModel("weight (input 2) has dtype " + std::string(dataTypeName(in[2].dtype)) +
                                  " but the input has " + dataTypeName(x.dtype));
    if (in[2].shape != Shape{x.shape[1]})
      return Status::invalidModel("weight " + shapeToString(in[2].shape) + " must have shape [" +
                                  std::to_string(x.shape[1]) + "] (one per class)");
  }
  const std::string r = node.getString("reduction", "mean");
  if (r == "none")
    s->reduction = Reduction::None;
  else if (r == "sum")
    s->reduction = Reduction::Sum;
  else if (r == "mean")
    s->reduction = Reduction::Mean;
  else
    return Status::invalidModel("reduction '" + r + "' is not none, sum or mean");
  s->hasIgnore = node.hasAttr("ignore_index");
  s->ignoreIndex = node.getInt("ignore_index", 0);
  s->batch = x.shape[0];
  s->classes = x.shape[1];
  s->inner = 1;
  for (int64_t d = 2; d < x.rank(); ++d) s->inner *= x.shape[d];
  return Status::ok();
}

Status lossShape(const Node& node, const TensorViews& in, TensorViews& out, const char* inputName) {
  LossSetup s;
  OSPREY_RETURN_IF_ERROR(setupLoss(node, in, inputName, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = s.reduction == Reduction::None ? in[1].shape : Shape{};
  if (out.size() > 1) {
    out[1].dtype = in[0].dtype;
    out[1].shape = in[0].shape;
  }
  return Status::ok();
}

Status nllShape(const Node& node, const TensorViews& in, TensorViews& out) {
  return lossShape(node, in, out, "input");
}
Status sceShape(const Node& node, const TensorViews& in, TensorViews& out) {
  return lossShape(node, in, out, "scores");
}

// The loss from log-probabilities `logp` laid out as (N, C, inner).
template <class T>
Status negativeLogLikelihood(const LossSetup& s, const ComputeType<T>* logp, const TensorView& target,
                             const TensorView* weight, TensorView& out) {
  using C = ComputeType<T>;
  const int64_t positions = s.batch * s.inner;
  std::vector<double> loss(static_cast<size_t>(positions));
  double weightSum = 0;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t d = 0; d < s.inner; ++d) {
      const int64_t p = n * s.inner + d;
      const int64_t cls =
          target.dtype == DataType::Int64 ? target.as<const int64_t>()[p] : target.as<const int32_t>()[p];
      if (s.hasIgnore && cls == s.ignoreIndex) {
        loss[p] = 0;
        continue;
      }
      if (cls < 0 || cls >= s.classes)
        return Status::invalidArgument("target value " + std::to_string(cls) + " at position " + std::to_string(p) +
                                       " is outside [0, " + std::to_string(s.classes) + ")");
      const double w = weight ? static_cast<double>(C(weight->as<const T>()[cls])) : 1.0;
      loss[p] = -static_cast<double>(logp[(n * s.classes + cls) * s.inner + d]) * w;
      weightSum += w;
    }
  }
  T* y = out.as<T>();
  if (s.reduction == Reduction::None) {
    for (int64_t p = 0; p < positions; ++p) y[p] = T(C(loss[p]));
    return Status::ok();
  }
  double sum = 0;
  for (double v : loss) sum += v;
  if (s.reduction == Reduction::Mean) {
    // Without weights or ignore_index every position counts once, which is what weightSum holds.
    sum /= weightSum;
  }
  y[0] = T(C(sum));
  return Status::ok();
}

template <class T>
Status nllFor(const LossSetup& s, const TensorViews& in, TensorViews& out) {
  using C = ComputeType<T>;
  const T* x = in[0].as<const T>();
  std::vector<C> logp(static_cast<size_t>(in[0].elements()));
  for (size_t i = 0; i < logp.size(); ++i) logp[i] = C(x[i]);
  const TensorView* weight = in.size() > 2 && in[2].present ? &in[2] : nullptr;
  return negativeLogLikelihood<T>(s, logp.data(), in[1], weight, out[0]);
}

template <class T>
Status sceFor(const LossSetup& s, const TensorViews& in, TensorViews& out) {
  using C = ComputeType<T>;
  const T* x = in[0].as<const T>();
  std::vector<C> logp(static_cast<size_t>(in[0].elements()));
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t d = 0; d < s.inner; ++d) {
      const int64_t base = n * s.classes * s.inner + d;
      C mx = C(x[base]);
      for (int64_t c = 1; c < s.classes; ++c) mx = std::max(mx, C(x[base + c * s.inner]));
      double sum = 0;
      for (int64_t c = 0; c < s.classes; ++c) sum += std::exp(static_cast<double>(C(x[base + c * s.inner]) - mx));
      const C logSum = C(std::log(sum));
      for (int64_t c = 0; c < s.classes; ++c) logp[base + c * s.inner] = C(x[base + c * s.inner]) - mx - logSum;
    }
  }
  if (out.size() > 1 && out[1].present) {
    T* lp = out[1].as<T>();
    for (size_t i = 0; i < logp.size(); ++i) lp[i] = T(logp[i]);
  }
  const TensorView* weight = in.size() > 2 && in[2].present ? &in[2] : nullptr;
  return negativeLogLikelihood<T>(s, logp.data(), in[1], weight, out[0]);
}

template <bool kSoftmax>
Status lossKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  LossSetup s;
  OSPREY_RETURN_IF_ERROR(setupLoss(node, in, kSoftmax ? "scores" : "input", &s));
  Status st;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    st = kSoftmax ? sceFor<T>(s, in, out) : nllFor<T>(s, in, out);
  });
  if (!ok) return Status::unsupported(dtypeError(in[0], kSoftmax ? "scores" : "input"));
  return st;
}

}  // namespace

const OpDef kOpDef_NegativeLogLikelihoodLoss = {OpType::NegativeLogLikelihoodLoss,
                                                "NegativeLogLikelihoodLoss",
                                                2,
                                                3,
                                                1,
                                                1,
                                                nllShape,
                                                lossKernel<false>,
                                                nullptr,
                                                0,
                                                false};
const OpDef kOpDef_SoftmaxCrossEntropyLoss = {OpType::SoftmaxCrossEntropyLoss,
                                              "SoftmaxCrossEntropyLoss",
                                              2,
                                              3,
                                              1,
                                              2,
                                              sceShape,
                                              lossKernel<true>,
                                              nullptr,
                                              0,
                                              false};

}  // namespace osprey
