// BatchNormalization: Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (dimension 1).
// In inference form mean and var are inputs; with training_mode = 1 they are the batch's own
// (over every axis but 1, the variance without Bessel's correction), and the optional outputs
// running_mean / running_var are input * momentum + batch * (1 - momentum). Models use it to
// standardise weights (timm's NF-Nets: BatchNorm over a reshaped constant), which then folds.
#include <cmath>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

const char* const kParamNames[] = {"scale", "B", "input_mean", "input_var"};

Status batchNormShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  const bool training = node.getInt("training_mode", 0) != 0;
  for (size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i].present && !training)
      return Status::invalidModel("outputs running_mean and running_var exist only in training mode");
  const TensorView& x = inputs[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "X"));
  if (x.rank() < 2)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 2 or more (N, C, ...)");
  for (int i = 1; i <= 4; ++i) {
    OSPREY_RETURN_IF_ERROR(requireFloatDtype(inputs[i], kParamNames[i - 1]));
    if (inputs[i].shape != Shape{x.shape[1]})
      return Status::invalidModel(std::string(kParamNames[i - 1]) + " " + shapeToString(inputs[i].shape) +
                                  " must have shape [" + std::to_string(x.shape[1]) + "] (the channels of X " +
                                  shapeToString(x.shape) + ")");
  }
  // scale/B and mean/var may each have their own float type (T1, T2), but pairwise agree.
  if (inputs[1].dtype != inputs[2].dtype) return Status::invalidModel("scale and B must have the same dtype");
  if (inputs[3].dtype != inputs[4].dtype)
    return Status::invalidModel("input_mean and input_var must have the same dtype");
  outputs[0].dtype = x.dtype;
  outputs[0].shape = x.shape;
  for (size_t i = 1; i < outputs.size(); ++i) {
    outputs[i].dtype = inputs[3].dtype;
    outputs[i].shape = {x.shape[1]};
  }
  return Status::ok();
}

// Per channel of x: the mean and the variance (divided by the count) over every other axis, in double.
void batchStatistics(const TensorView& x, std::vector<double>* mean, std::vector<double>* var) {
  const int64_t channels = x.shape[1], batch = x.shape[0];
  const int64_t size = batch * channels ? x.elements() / (batch * channels) : 0;
  mean->assign(channels, 0.0);
  var->assign(channels, 0.0);
  const double count = static_cast<double>(batch * size);
  if (count == 0) return;
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t i = (n * channels + c) * size, e = i + size; i < e; ++i) sum += loadAsDouble(x.dtype, x.data, i);
    const double m = sum / count;
    double squares = 0;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t i = (n * channels + c) * size, e = i + size; i < e; ++i) {
        const double d = loadAsDouble(x.dtype, x.data, i) - m;
        squares += d * d;
      }
    (*mean)[c] = m;
    (*var)[c] = squares / count;
  }
}

Status batchNormReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool* pool) {
  const TensorView& x = inputs[0];
  const int64_t channels = x.shape[1];
  const int64_t planes = x.shape[0] * channels;
  const int64_t size = planes ? x.elements() / planes : 0;
  const double epsilon = node.getFloat("epsilon", 1e-5f);
  const bool training = node.getInt("training_mode", 0) != 0;
  std::vector<double> batchMean, batchVar;
  if (training) {
    batchStatistics(x, &batchMean, &batchVar);
    const double momentum = node.getFloat("momentum", 0.9f);
    for (size_t o = 1; o < outputs.size(); ++o) {
      if (!outputs[o].present) continue;
      const std::vector<double>& batch = o == 1 ? batchMean : batchVar;
      for (int64_t c = 0; c < channels; ++c)
        storeFromDouble(outputs[o].dtype, outputs[o].data, c,
                        loadAsDouble(inputs[2 + o].dtype, inputs[2 + o].data, c) * momentum + batch[c] * (1 - momentum));
    }
  }
  // Folded per channel into y = x * mul + add, computed in double.
  std::vector<double> mul(channels), add(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const double scale = loadAsDouble(inputs[1].dtype, inputs[1].data, c);
    const double bias = loadAsDouble(inputs[2].dtype, inputs[2].data, c);
    const double mean = training ? batchMean[c] : loadAsDouble(inputs[3].dtype, inputs[3].data, c);
    const double var = training ? batchVar[c] : loadAsDouble(inputs[4].dtype, inputs[4].data, c);
    mul[c] = scale / std::sqrt(var + epsilon);
    add[c] = bias - mean * mul[c];
  }
  bool ok = dispatchFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xs = x.as<const T>();
    T* ys = outputs[0].as<T>();
    parallelFor(pool, planes, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const C m = static_cast<C>(mul[p % channels]), a = static_cast<C>(add[p % channels]);
        for (int64_t i = p * size; i < (p + 1) * size; ++i) ys[i] = static_cast<T>(static_cast<C>(xs[i]) * m + a);
      }
    });
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(x, "X"));
}

}  // namespace

const OpDef kOpDef_BatchNormalization = {OpType::BatchNormalization,
                                         "BatchNormalization",
                                         5,
                                         5,
                                         1,
                                         3,
                                         batchNormShape,
                                         batchNormReference,
                                         nullptr,
                                         0,
                                         false};

}  // namespace osprey
