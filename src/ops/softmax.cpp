// Softmax and LogSoftmax (opset 13): normalise along one axis (default -1), independently for
// every index of the other axes. The maximum along the axis is subtracted before exp so large
// inputs do not overflow; sums accumulate in double.
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// The [outer, n, inner] split around the `axis` attribute.
Status splitAtAttr(const Node& node, const Shape& shape, AxisSplit* s) {
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", -1), static_cast<int64_t>(shape.size()), &axis));
  *s = splitAt(shape, axis);
  return Status::ok();
}

Status softmaxShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "input"));
  AxisSplit s;
  Status st = splitAtAttr(node, in[0].shape, &s);
  if (!st.isOk())
    return Status::invalidModel("attribute " + st.message() + " (input shape " + shapeToString(in[0].shape) + ")");
  return sameAsFirstInput(node, in, out);
}

// One outer index: n rows of `inner` elements each, normalised down the rows. `e` holds
// exp(x - max) between the passes (the output itself when it has the compute type).
template <class T, bool kLog>
void softmaxBlock(const T* x, T* y, int64_t n, int64_t inner, ComputeType<T>* e, double* sum, ComputeType<T>* mx) {
  using C = ComputeType<T>;
  for (int64_t j = 0; j < inner; ++j) {
    mx[j] = C(x[j]);
    sum[j] = 0.0;
  }
  for (int64_t a = 1; a < n; ++a) {
    const T* row = x + a * inner;
    for (int64_t j = 0; j < inner; ++j) {
      C v = C(row[j]);
      if (v > mx[j] || v != v) mx[j] = v;
    }
  }
  for (int64_t a = 0; a < n; ++a) {
    const T* row = x + a * inner;
    C* er = e + a * inner;
    for (int64_t j = 0; j < inner; ++j) {
      er[j] = std::exp(C(row[j]) - mx[j]);
      sum[j] += static_cast<double>(er[j]);
    }
  }
  for (int64_t a = 0; a < n; ++a) {
    const T* row = x + a * inner;
    const C* er = e + a * inner;
    T* yr = y + a * inner;
    for (int64_t j = 0; j < inner; ++j) {
      if constexpr (kLog) {
        yr[j] = T(C(row[j]) - mx[j] - C(std::log(sum[j])));
      } else {
        yr[j] = T(C(static_cast<double>(er[j]) / sum[j]));
      }
    }
  }
}

template <class T, bool kLog>
void softmaxFor(const TensorView& in, TensorView& out, const AxisSplit& s, ThreadPool* pool) {
  using C = ComputeType<T>;
  const T* x = in.as<const T>();
  T* y = out.as<T>();
  const int64_t block = s.n * s.inner;
  if (block == 0) return;
  auto work = [&](int64_t o0, int64_t o1) {
    std::vector<double> sum(static_cast<size_t>(s.inner));
    std::vector<C> mx(static_cast<size_t>(s.inner)), scratch;
    // For softmax in the compute type the output holds exp(x - max) between passes.
    constexpr bool kInPlace = std::is_same_v<T, C> && !kLog;
    if (!kInPlace) scratch.resize(static_cast<size_t>(block));
    for (int64_t o = o0; o < o1; ++o) {
      C* e;
      if constexpr (kInPlace)
        e = y + o * block;
      else
        e = scratch.data();
      softmaxBlock<T, kLog>(x + o * block, y + o * block, s.n, s.inner, e, sum.data(), mx.data());
    }
  };
  if (s.outer * block >= 4096) {
    parallelFor(pool, s.outer, work);
  } else {
    work(0, s.outer);
  }
}

template <bool kLog>
Status softmaxKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  AxisSplit s;
  OSPREY_RETURN_IF_ERROR(splitAtAttr(node, in[0].shape, &s));
  bool ok = dispatchFloat(in[0].dtype,
                          [&](auto tag) { softmaxFor<typename decltype(tag)::type, kLog>(in[0], out[0], s, pool); });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "input"));
}

}  // namespace

const OpDef kOpDef_Softmax = {OpType::Softmax,      "Softmax", 1, 1,    1, 1, softmaxShape,
                              softmaxKernel<false>, nullptr,   0, false};
const OpDef kOpDef_LogSoftmax = {OpType::LogSoftmax, "LogSoftmax",        1,       1, 1,    1,
                                 softmaxShape,       softmaxKernel<true>, nullptr, 0, false};

}  // namespace osprey
