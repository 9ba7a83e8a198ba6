// InstanceNormalization, GroupNormalization (opset 21: per-channel scale and bias), LRN,
// LpNormalization, MeanVarianceNormalization and RMSNormalization. Statistics accumulate in
// double so the oracle loses no digits over long rows; results round once to the output type.
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status readEpsilon(const Node& node, float fallback, double* eps) {
  const float e = node.getFloat("epsilon", fallback);
  if (!(e >= 0.f)) return Status::invalidModel("attribute epsilon is " + std::to_string(e) + "; it must be >= 0");
  *eps = e;
  return Status::ok();
}

Status requirePerChannel(const TensorView& v, int64_t channels, const char* what) {
  if (v.shape != Shape{channels})
    return Status::invalidModel(std::string(what) + " " + shapeToString(v.shape) + " must have shape [" +
                                std::to_string(channels) + "] (one value per channel)");
  return Status::ok();
}

// Normalises `blocks` contiguous runs of `size` elements to zero mean and unit variance, then
// applies y = n * scale[ch] + bias[ch] with ch = channelOf(block, j).
template <class T, class ChannelOf>
void normalizeBlocks(const T* x, T* y, int64_t blocks, int64_t size, double eps, const T* scale, const T* bias,
                     ChannelOf&& channelOf, ThreadPool* pool) {
  using C = ComputeType<T>;
  parallelFor(pool, blocks, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* xb = x + b * size;
      T* yb = y + b * size;
      double sum = 0;
      for (int64_t j = 0; j < size; ++j) sum += static_cast<double>(C(xb[j]));
      const double mean = size ? sum / static_cast<double>(size) : 0.0;
      double sq = 0;
      for (int64_t j = 0; j < size; ++j) {
        const double d = static_cast<double>(C(xb[j])) - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt((size ? sq / static_cast<double>(size) : 0.0) + eps);
      for (int64_t j = 0; j < size; ++j) {
        const int64_t ch = channelOf(b, j);
        const double n = (static_cast<double>(C(xb[j])) - mean) * inv;
        yb[j] = T(C(n * static_cast<double>(C(scale[ch])) + static_cast<double>(C(bias[ch]))));
      }
    }
  });
}

Status channelNormCheck(const TensorViews& in, const char* what) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "input"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 2));
  if (in[0].rank() < 2)
    return Status::invalidModel(std::string(what) + ": input " + shapeToString(in[0].shape) +
                                " must have rank 2 or more (N, C, ...)");
  return Status::ok();
}

// ---- InstanceNormalization ----

Status instanceNormShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(channelNormCheck(in, "InstanceNormalization"));
  const int64_t c = in[0].shape[1];
  OSPREY_RETURN_IF_ERROR(requirePerChannel(in[1], c, "scale (input 1)"));
  OSPREY_RETURN_IF_ERROR(requirePerChannel(in[2], c, "B (input 2)"));
  double eps;
  OSPREY_RETURN_IF_ERROR(readEpsilon(node, 1e-5f, &eps));
  return sameAsFirstInput(node, in, out);
}

Status instanceNormKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  double eps;
  OSPREY_RETURN_IF_ERROR(readEpsilon(node, 1e-5f, &eps));
  const int64_t n = in[0].shape[0], c = in[0].shape[1];
  const int64_t size = n * c != 0 ? in[0].elements() / (n * c) : 0;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    normalizeBlocks(in[0].as<const T>(), out[0].as<T>(), n * c, size, eps, in[1].as<const T>(), in[2].as<const T>(),
                    [c](int64_t b, int64_t) { return b % c; }, pool);
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "input"));
}

// ---- GroupNormalization ----

Status groupCount(const Node& node, const TensorView& x, int64_t* groups) {
  if (!node.hasAttr("num_groups")) return Status::invalidModel("attribute num_groups is required");
  *groups = node.getInt("num_groups", 1);
  if (*groups < 1 || x.shape[1] % *groups != 0)
    return Status::invalidModel("num_groups " + std::to_string(*groups) + " must be positive and divide the " +
                                std::to_string(x.shape[1]) + " channels of input " + shapeToString(x.shape));
  return Status::ok();
}

Status groupNormShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(channelNormCheck(in, "GroupNormalization"));
  int64_t groups;
  OSPREY_RETURN_IF_ERROR(groupCount(node, in[0], &groups));
  const int64_t c = in[0].shape[1];
  OSPREY_RETURN_IF_ERROR(requirePerChannel(in[1], c, "scale (input 1)"));
  OSPREY_RETURN_IF_ERROR(requirePerChannel(in[2], c, "bias (input 2)"));
  const int64_t stash = node.getInt("stash_type", 1);
  if (stash != 1 && stash != static_cast<int64_t>(DataType::Float64) &&
      stash != static_cast<int64_t>(DataType::Float16) && stash != static_cast<int64_t>(DataType::BFloat16))
    return Status::invalidModel("attribute stash_type is " + std::to_string(stash) + "; expected a float dtype");
  double eps;
  OSPREY_RETURN_IF_ERROR(readEpsilon(node, 1e-5f, &eps));
  return sameAsFirstInput(node, in, out);
}

Status groupNormKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  double eps;
  OSPREY_RETURN_IF_ERROR(readEpsilon(node, 1e-5f, &eps));
  int64_t groups;
  OSPREY_RETURN_IF_ERROR(groupCount(node, in[0], &groups));
  const int64_t n = in[0].shape[0], c = in[0].shape[1];
  const int64_t spatial = n * c != 0 ? in[0].elements() / (n * c) : 0;
  const int64_t perGroup = c / groups;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    normalizeBlocks(in[0].as<const T>(), out[0].as<T>(), n * groups, perGroup * spatial, eps, in[1].as<const T>(),
                    in[2].as<const T>(),
                    [&](int64_t b, int64_t j) { return (b % groups) * perGroup + (spatial ? j / spatial : 0); }, pool);
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "input"));
}

// ---- LRN ----

Status lrnShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "X"));
  if (in[0].rank() < 3)
    return Status::invalidModel("X " + shapeToString(in[0].shape) + " must have rank 3 or more (N, C, spatial...)");
  if (!node.hasAttr("size")) return Status::invalidModel("attribute size is required");
  if (node.getInt("size", 1) < 1)
    return Status::invalidModel("attribute size is " + std::to_string(node.getInt("size", 1)) + "; it must be >= 1");
  return sameAsFirstInput(node, in, out);
}

Status lrnKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  const int64_t size = node.getInt("size", 1);
  const double alpha = node.getFloat("alpha", 1e-4f), beta = node.getFloat("beta", 0.75f);
  const double bias = node.getFloat("bias", 1.0f);
  const int64_t n = in[0].shape[0], c = in[0].shape[1];
  const int64_t spatial = n * c != 0 ? in[0].elements() / (n * c) : 0;
  // Channels [ch - floor((size-1)/2), ch + ceil((size-1)/2)] take part, clipped to [0, C).
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Cm = ComputeType<T>;
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    parallelFor(pool, n * c, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t b = p / c, ch = p % c;
        const int64_t lo = std::max<int64_t>(0, ch - before), hi = std::min(c - 1, ch + after);
        for (int64_t s = 0; s < spatial; ++s) {
          double sq = 0;
          for (int64_t k = lo; k <= hi; ++k) {
            const double v = static_cast<double>(Cm(x[(b * c + k) * spatial + s]));
            sq += v * v;
          }
          const double v = static_cast<double>(Cm(x[p * spatial + s]));
          y[p * spatial + s] = T(Cm(v / std::pow(bias + alpha / static_cast<double>(size) * sq, beta)));
        }
      }
    });
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "X"));
}

// ---- LpNormalization ----

Status lpNormShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "input"));
  int64_t axis;
  Status st = normalizeAxis(node.getInt("axis", -1), in[0].rank(), &axis);
  if (!st.isOk())
    return Status::invalidModel("attribute " + st.message() + " (input shape " + shapeToString(in[0].shape) + ")");
  const int64_t p = node.getInt("p", 2);
  if (p != 1 && p != 2) return Status::invalidModel("attribute p is " + std::to_string(p) + "; it must be 1 or 2");
  return sameAsFirstInput(node, in, out);
}

Status lpNormKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", -1), in[0].rank(), &axis));
  const int64_t p = node.getInt("p", 2);
  int64_t outer = 1, len = in[0].shape[axis], inner = 1;
  for (int64_t d = 0; d < in[0].rank(); ++d) {
    if (d < axis) outer *= in[0].shape[d];
    if (d > axis) inner *= in[0].shape[d];
  }
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * len * inner + i;
        double norm = 0;
        for (int64_t a = 0; a < len; ++a) {
          const double v = static_cast<double>(C(x[base + a * inner]));
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        // A zero vector stays zero (the ONNX reference and test data), not 0 / 0.
        for (int64_t a = 0; a < len; ++a)
          y[base + a * inner] = T(C(norm == 0 ? 0.0 : static_cast<double>(C(x[base + a * inner])) / norm));
      }
    }
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "input"));
}

// ---- MeanVarianceNormalization ----

Status mvnAxes(const Node& node, int64_t rank, std::vector<bool>* reduced) {
  std::vector<int64_t> axes;
  Status st = normalizeAxes(node.getInts("axes", {0, 2, 3}), rank, &axes);
  if (!st.isOk()) return Status::invalidModel("attribute axes: " + st.message());
  reduced->assign(static_cast<size_t>(rank), false);
  for (int64_t a : axes) (*reduced)[a] = true;
  return Status::ok();
}

Status mvnShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "X"));
  std::vector<bool> reduced;
  OSPREY_RETURN_IF_ERROR(mvnAxes(node, in[0].rank(), &reduced));
  return sameAsFirstInput(node, in, out);
}

// y = (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9), the spec's function body.
Status mvnKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const Shape& shape = in[0].shape;
  std::vector<bool> reduced;
  OSPREY_RETURN_IF_ERROR(mvnAxes(node, in[0].rank(), &reduced));
  // group[i]: the index of element i among the kept (non-reduced) coordinates.
  const int64_t total = in[0].elements();
  std::vector<int64_t> group(static_cast<size_t>(total));
  int64_t groups = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d]) groups *= shape[d];
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d]) g = g * shape[d] + idx[d];
    group[i] = g;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  const double count = groups ? static_cast<double>(total) / static_cast<double>(groups) : 0.0;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    std::vector<double> sum(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0);
    for (int64_t i = 0; i < total; ++i) sum[group[i]] += static_cast<double>(C(x[i]));
    for (auto& s : sum) s /= count;
    for (int64_t i = 0; i < total; ++i) {
      const double d = static_cast<double>(C(x[i])) - sum[group[i]];
      sq[group[i]] += d * d;
    }
    for (int64_t i = 0; i < total; ++i) {
      const double stddev = std::sqrt(sq[group[i]] / count);
      y[i] = T(C((static_cast<double>(C(x[i])) - sum[group[i]]) / (stddev + 1e-9)));
    }
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "X"));
}

// ---- RMSNormalization ----

Status rmsNormShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "X"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 1));
  int64_t axis;
  Status st = normalizeAxis(node.getInt("axis", -1), x.rank(), &axis);
  if (!st.isOk())
    return Status::invalidModel("attribute " + st.message() + " (X has shape " + shapeToString(x.shape) + ")");
  Shape b;
  if (!broadcastShapes(x.shape, in[1].shape, &b).isOk() || b != x.shape)
    return Status::invalidModel("scale " + shapeToString(in[1].shape) + " does not broadcast to X " +
                                shapeToString(x.shape));
  const int64_t stash = node.getInt("stash_type", 1);
  if (stash != 1 && stash != static_cast<int64_t>(DataType::Float64) &&
      stash != static_cast<int64_t>(DataType::Float16) && stash != static_cast<int64_t>(DataType::BFloat16))
    return Status::invalidModel("attribute stash_type is " + std::to_string(stash) + "; expected a float dtype");
  double eps;
  OSPREY_RETURN_IF_ERROR(readEpsilon(node, 1e-5f, &eps));
  return sameAsFirstInput(node, in, out);
}

Status rmsNormKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const Shape& shape = in[0].shape;
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", -1), in[0].rank(), &axis));
  double eps;
  OSPREY_RETURN_IF_ERROR(readEpsilon(node, 1e-5f, &eps));
  int64_t rows = 1, n = 1;
  for (int64_t d = 0; d < in[0].rank(); ++d) (d < axis ? rows : n) *= shape[d];
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    const T* scale = in[1].as<const T>();
    T* y = out[0].as<T>();
    std::vector<double> inv(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      double sq = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double v = static_cast<double>(C(x[r * n + j]));
        sq += v * v;
      }
      inv[r] = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
    }
    const std::vector<int64_t> xs = broadcastStrides(shape, shape.size(), shape);
    const std::vector<int64_t> ss = broadcastStrides(in[1].shape, shape.size(), shape);
    forEachBroadcast(shape, xs, ss, [&](int64_t i, int64_t, int64_t si) {
      y[i] = T(C(static_cast<double>(C(x[i])) * inv[i / n] * static_cast<double>(C(scale[si]))));
    });
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "X"));
}

}  // namespace

const OpDef kOpDef_InstanceNormalization = {OpType::InstanceNormalization,
                                            "InstanceNormalization",
                                            3,
                                            3,
                                            1,
                                            1,
                                            instanceNormShape,
                                            instanceNormKernel,
                                            nullptr,
                                            0,
                                            false};
const OpDef kOpDef_GroupNormalization = {
    OpType::GroupNormalization, "GroupNormalization", 3, 3, 1, 1, groupNormShape, groupNormKernel, nullptr, 0, false};
const OpDef kOpDef_LRN = {OpType::LRN, "LRN", 1, 1, 1, 1, lrnShape, lrnKernel, nullptr, 0, false};
const OpDef kOpDef_LpNormalization = {
    OpType::LpNormalization, "LpNormalization", 1, 1, 1, 1, lpNormShape, lpNormKernel, nullptr, 0, false};
const OpDef kOpDef_MeanVarianceNormalization = {OpType::MeanVarianceNormalization,
                                                "MeanVarianceNormalization",
                                                1,
                                                1,
                                                1,
                                                1,
                                                mvnShape,
                                                mvnKernel,
                                                nullptr,
                                                0,
                                                false};
const OpDef kOpDef_RMSNormalization = {
    OpType::RMSNormalization, "RMSNormalization", 2, 2, 1, 1, rmsNormShape, rmsNormKernel, nullptr, 0, false};

}  // namespace osprey
