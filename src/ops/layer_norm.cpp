// LayerNormalization (opset 17): each index of X's leading dims [0, axis) is normalised over
// the trailing dims [axis, rank) to zero mean and unit variance, then scaled by Scale and
// shifted by the optional B (both broadcast to X's shape). Optional outputs Mean and
// InvStdDev have X's shape with the normalised dims set to 1 and the dtype named by
// stash_type, which is also the precision of the statistics (double for 11, float otherwise).
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status stashDtype(const Node& node, DataType* out) {
  int64_t s = node.getInt("stash_type", 1);
  switch (s) {
    case static_cast<int64_t>(DataType::Float32):
    case static_cast<int64_t>(DataType::Float64):
    case static_cast<int64_t>(DataType::Float16):
    case static_cast<int64_t>(DataType::BFloat16):
      *out = static_cast<DataType>(s);
      return Status::ok();
    default:
      return Status::invalidModel("attribute stash_type is " + std::to_string(s) + "; expected a float dtype");
  }
}

Status broadcastsTo(const TensorView& v, const Shape& target, const char* what) {
  Shape s;
  Status st = broadcastShapes(target, v.shape, &s);
  if (!st.isOk() || s != target)
    return Status::invalidModel(std::string(what) + " of shape " + shapeToString(v.shape) +
                                " does not broadcast to X of shape " + shapeToString(target));
  return Status::ok();
}

Status layerNormShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "input X"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 2));
  int64_t axis;
  Status st = normalizeAxis(node.getInt("axis", -1), x.rank(), &axis);
  if (!st.isOk())
    return Status::invalidModel("attribute " + st.message() + " (X has shape " + shapeToString(x.shape) + ")");
  float eps = node.getFloat("epsilon", 1e-5f);
  if (!(eps >= 0.f)) return Status::invalidModel("attribute epsilon is " + std::to_string(eps) + "; it must be >= 0");
  OSPREY_RETURN_IF_ERROR(broadcastsTo(in[1], x.shape, "Scale (input 1)"));
  if (in.size() > 2 && in[2].present) OSPREY_RETURN_IF_ERROR(broadcastsTo(in[2], x.shape, "B (input 2)"));
  DataType stash;
  OSPREY_RETURN_IF_ERROR(stashDtype(node, &stash));
  out[0].dtype = x.dtype;
  out[0].shape = x.shape;
  Shape reduced = x.shape;
  for (size_t d = static_cast<size_t>(axis); d < reduced.size(); ++d) reduced[d] = 1;
  for (size_t i = 1; i < out.size(); ++i) {
    out[i].dtype = stash;
    out[i].shape = reduced;
  }
  return Status::ok();
}

// Where Scale / B element (outer o, normalised j) lives: outerOff(o) + innerOff[j].
struct ParamIndex {
  std::vector<int64_t> outerStrides;  // over dims [0, axis)
  std::vector<int64_t> innerOff;      // per normalised element
  bool contiguous = true;             // innerOff[j] == j and no dependence on o

  ParamIndex(const Shape& param, const Shape& xShape, int64_t axis) {
    const size_t rank = xShape.size();
    std::vector<int64_t> st = broadcastStrides(param, rank, xShape);
    outerStrides.assign(st.begin(), st.begin() + axis);
    for (int64_t s : outerStrides) contiguous &= s == 0;
    int64_t n = 1;
    for (size_t d = static_cast<size_t>(axis); d < rank; ++d) n *= xShape[d];
    innerOff.resize(static_cast<size_t>(n));
    std::vector<int64_t> idx(rank, 0);
    int64_t off = 0;
    for (int64_t j = 0; j < n; ++j) {
      innerOff[j] = off;
      contiguous &= off == j;
      for (size_t d = rank; d-- > static_cast<size_t>(axis);) {
        off += st[d];
        if (++idx[d] < xShape[d]) break;
        off -= st[d] * xShape[d];
        idx[d] = 0;
      }
    }
  }
  int64_t outerOffset(int64_t o, const Shape& xShape) const {
    int64_t off = 0;
    for (size_t d = outerStrides.size(); d-- > 0;) {
      off += (o % xShape[d]) * outerStrides[d];
      o /= xShape[d];
    }
    return off;
  }
};

template <class T, class S>
void layerNormFor(const Node& node, const TensorViews& in, TensorViews& out, int64_t axis, ThreadPool* pool) {
  using C = ComputeType<T>;
  using A = std::conditional_t<std::is_same_v<S, double>, double, float>;  // statistics precision
  const Shape& shape = in[0].shape;
  int64_t outer = 1, n = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) (d < axis ? outer : n) *= shape[d];
  const A eps = A(node.getFloat("epsilon", 1e-5f));
  const bool hasBias = in.size() > 2 && in[2].present;
  const ParamIndex scaleIdx(in[1].shape, shape, axis);
  const ParamIndex biasIdx(hasBias ? in[2].shape : Shape{}, shape, axis);
  const T* x = in[0].as<const T>();
  const T* scale = in[1].as<const T>();
  const T* bias = hasBias ? in[2].as<const T>() : nullptr;
  T* y = out[0].as<T>();
  S* meanOut = out.size() > 1 && out[1].present ? out[1].as<S>() : nullptr;
  S* invOut = out.size() > 2 && out[2].present ? out[2].as<S>() : nullptr;
  auto work = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const T* xr = x + o * n;
      T* yr = y + o * n;
      double sum = 0;  // double sums: the oracle should not lose digits over long rows
      for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(A(C(xr[j])));
      const A mean = A(sum / static_cast<double>(n));
      double sq = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double d = static_cast<double>(A(C(xr[j])) - mean);
        sq += d * d;
      }
      const A inv = A(1) / std::sqrt(A(sq / static_cast<double>(n)) + eps);
      if (meanOut) meanOut[o] = S(mean);
      if (invOut) invOut[o] = S(inv);
      const T* sr = scale + scaleIdx.outerOffset(o, shape);
      const T* br = hasBias ? bias + biasIdx.outerOffset(o, shape) : nullptr;
      if (scaleIdx.contiguous && (!br || biasIdx.contiguous)) {
        for (int64_t j = 0; j < n; ++j) {
          const C normalized = C(T((A(C(xr[j])) - mean) * inv));  // the spec rounds to X's type here
          yr[j] = T(normalized * C(sr[j]) + (br ? C(br[j]) : C(0)));
        }
      } else {
        for (int64_t j = 0; j < n; ++j) {
          const C normalized = C(T((A(C(xr[j])) - mean) * inv));  // the spec rounds to X's type here
          yr[j] = T(normalized * C(sr[scaleIdx.innerOff[j]]) + (br ? C(br[biasIdx.innerOff[j]]) : C(0)));
        }
      }
    }
  };
  if (outer * n >= 4096) {
    parallelFor(pool, outer, work);
  } else {
    work(0, outer);
  }
}

Status layerNormKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", -1), in[0].rank(), &axis));
  DataType stash;
  OSPREY_RETURN_IF_ERROR(stashDtype(node, &stash));
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatchFloat(
        stash, [&](auto stashTag) { layerNormFor<T, typename decltype(stashTag)::type>(node, in, out, axis, pool); });
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "input X"));
}

}  // namespace

const OpDef kOpDef_LayerNormalization = {
    OpType::LayerNormalization, "LayerNormalization", 2, 3, 1, 3, layerNormShape, layerNormKernel, nullptr, 0, false};

}  // namespace osprey
