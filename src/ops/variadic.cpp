// Variadic elementwise ops with multidirectional broadcasting over all inputs: Max, Min (any
// numeric dtype), Sum, Mean (float dtypes, as in ONNX). Max and Min propagate NaN like numpy.
// 16-bit floats accumulate in float and round once at the end.
#include <type_traits>

#include "ops/broadcast_rows.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class Combine { Max, Min, Sum, Mean };

Combine combineOf(OpType t) {
  switch (t) {
    case OpType::Max:
      return Combine::Max;
    case OpType::Min:
      return Combine::Min;
    case OpType::Sum:
      return Combine::Sum;
    default:
      return Combine::Mean;
  }
}

template <Combine K, class C>
inline C combine(C x, C y) {
  if constexpr (K == Combine::Max) {
    if constexpr (std::is_floating_point_v<C>)
      return (x > y || x != x) ? x : y;
    else
      return x > y ? x : y;
  } else if constexpr (K == Combine::Min) {
    if constexpr (std::is_floating_point_v<C>)
      return (x < y || x != x) ? x : y;
    else
      return x < y ? x : y;
  } else {
    return x + y;
  }
}

Status variadicShape(const Node& node, const TensorViews& in, TensorViews& out) {
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i].present) return Status::invalidModel("input " + std::to_string(i) + " is missing");
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, in.size() - 1));
  const Combine k = combineOf(node.type);
  if (k == Combine::Sum || k == Combine::Mean) {
    OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "input 0"));
  } else {
    bool ok = in[0].dtype != DataType::Bool && dispatchNumeric(in[0].dtype, [](auto) {});
    if (!ok) return Status::unsupported(dtypeError(in[0], "input 0"));
  }
  Shape s = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) OSPREY_RETURN_IF_ERROR(broadcastShapes(s, in[i].shape, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = s;
  return Status::ok();
}

template <Combine K, class T>
void variadicFor(const TensorViews& in, TensorView& out, ThreadPool* pool) {
  using C = ComputeType<T>;
  const int64_t n = out.elements();
  std::vector<C> buf;
  C* acc;
  if constexpr (std::is_same_v<T, C>) {
    acc = out.as<C>();
  } else {
    buf.resize(static_cast<size_t>(n));
    acc = buf.data();
  }
  const T* x0 = in[0].as<const T>();
  if (in.size() == 1) {
    for (int64_t i = 0; i < n; ++i) acc[i] = C(x0[i]);
  } else {
    broadcastBinary(out.shape, acc, x0, in[0].shape, in[1].as<const T>(), in[1].shape, pool,
                    [](T x, T y) { return combine<K, C>(C(x), C(y)); });
  }
  for (size_t k = 2; k < in.size(); ++k)  // in place: acc already has the output's shape
    broadcastBinary(out.shape, acc, static_cast<const C*>(acc), out.shape, in[k].as<const T>(), in[k].shape, pool,
                    [](C x, T y) { return combine<K, C>(x, C(y)); });
  if constexpr (K == Combine::Mean) {
    const C count = C(static_cast<double>(in.size()));
    for (int64_t i = 0; i < n; ++i) acc[i] /= count;
  }
  if constexpr (!std::is_same_v<T, C>) {
    T* o = out.as<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = T(acc[i]);
  }
}

template <Combine K>
Status variadicKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  bool done = false;
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return;
    } else if constexpr ((K == Combine::Sum || K == Combine::Mean) && !isFloatLike<T>) {
      return;
    } else {
      variadicFor<K, T>(in, out[0], pool);
      done = true;
    }
  });
  return done ? Status::ok() : Status::unsupported(dtypeError(in[0], "input 0"));
}

}  // namespace

const OpDef kOpDef_Max = {OpType::Max, "Max", 1,    -1, 1, 1, variadicShape, variadicKernel<Combine::Max>,
                          nullptr,     0,     false};
const OpDef kOpDef_Min = {OpType::Min, "Min", 1,    -1, 1, 1, variadicShape, variadicKernel<Combine::Min>,
                          nullptr,     0,     false};
const OpDef kOpDef_Sum = {OpType::Sum, "Sum", 1,    -1, 1, 1, variadicShape, variadicKernel<Combine::Sum>,
                          nullptr,     0,     false};
const OpDef kOpDef_Mean = {OpType::Mean, "Mean", 1,    -1, 1, 1, variadicShape, variadicKernel<Combine::Mean>,
                           nullptr,      0,      false};

}  // namespace osprey
