// Compress (select slices by a bool mask), OneHot, CumSum/CumProd (running sums and products
// along an axis) and ReverseSequence (reverse the first len[b] steps of every batch entry).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "ops/op_util.h"

namespace osprey {

namespace {

Status requireFixedSize(const TensorView& v, const char* what) {
  if (dataTypeSize(v.dtype) == 0) return Status::unsupported(dtypeError(v, what));
  return Status::ok();
}

// ---- Compress ----

// The slices Compress keeps, and the split of data they are taken along.
Status compressPlan(const Node& node, const TensorViews& in, AxisSplit* s, std::vector<int64_t>* kept, int64_t* axis) {
  const TensorView& data = in[0];
  const TensorView& cond = in[1];
  if (cond.dtype != DataType::Bool) return Status::invalidModel("condition must be bool, not " + std::string(dataTypeName(cond.dtype)));
  if (cond.rank() != 1) return Status::invalidModel("condition must be 1-D, got shape " + shapeToString(cond.shape));
  if (!cond.hasValue()) return Status::invalidArgument("the value of condition must be known to compute Compress's shape");
  *axis = -1;
  if (node.hasAttr("axis")) {
    if (data.rank() == 0) return Status::invalidModel("input must have rank 1 or more when axis is given, got a scalar");
    OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), data.rank(), axis).withContext("input shape " + shapeToString(data.shape)));
    *s = splitAt(data.shape, *axis);
  } else {
    *s = {1, data.elements(), 1};
  }
  const bool* c = cond.as<const bool>();
  kept->clear();
  for (int64_t j = 0; j < cond.elements(); ++j) {
    if (!c[j]) continue;
    if (j >= s->n)
      return Status::invalidArgument("condition selects position " + std::to_string(j) + " beyond the " + std::to_string(s->n) +
                                     " slices of input " + shapeToString(data.shape));
    kept->push_back(j);
  }
  return Status::ok();
}

Status compressShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFixedSize(in[0], "input"));
  AxisSplit s;
  std::vector<int64_t> kept;
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(compressPlan(node, in, &s, &kept, &axis));
  out[0].dtype = in[0].dtype;
  if (axis < 0) {
    out[0].shape = {static_cast<int64_t>(kept.size())};
  } else {
    out[0].shape = in[0].shape;
    out[0].shape[axis] = static_cast<int64_t>(kept.size());
  }
  return Status::ok();
}

Status compressKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  AxisSplit s;
  std::vector<int64_t> kept;
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(compressPlan(node, in, &s, &kept, &axis));
  const size_t block = dataTypeSize(in[0].dtype) * static_cast<size_t>(s.inner);
  const int64_t k = static_cast<int64_t>(kept.size());
  const auto* src = static_cast<const uint8_t*>(in[0].data);
  auto* dst = static_cast<uint8_t*>(out[0].data);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t j = 0; j < k; ++j) std::memcpy(dst + (o * k + j) * block, src + (o * s.n + kept[j]) * block, block);
  return Status::ok();
}

// ---- OneHot ----

Status oneHotParams(const Node& node, const TensorViews& in, int64_t* depth, int64_t* axis) {
  if (!dispatchNumeric(in[0].dtype, [](auto) {}) || in[0].dtype == DataType::Bool)
    return Status::unsupported(dtypeError(in[0], "indices"));
  if (in[1].elements() != 1)
    return Status::invalidModel("depth (input 1) must hold one value, got shape " + shapeToString(in[1].shape));
  if (!in[1].hasValue()) return Status::invalidArgument("depth (input 1) must be known when shapes are computed");
  if (!dispatchNumeric(in[1].dtype, [](auto) {})) return Status::invalidModel(dtypeError(in[1], "depth (input 1)"));
  // A non-integer depth is cast to int64, as the ONNX spec says; an integer one is read exactly.
  const double approx = loadAsDouble(in[1].dtype, in[1].data, 0);
  if (std::isnan(approx) || !loadAsInt64(in[1].dtype, in[1].data, 0, depth) || *depth < 0)
    return Status::invalidArgument("depth " + std::to_string(approx) + " must be non-negative");
  if (in[2].elements() != 2)
    return Status::invalidModel("values (input 2) must hold [off, on], got shape " + shapeToString(in[2].shape));
  const int64_t outRank = in[0].rank() + 1;
  return normalizeAxis(node.getInt("axis", -1), outRank, axis).withContext("output rank " + std::to_string(outRank));
}

Status oneHotShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFixedSize(in[2], "values (input 2)"));
  int64_t depth, axis;
  OSPREY_RETURN_IF_ERROR(oneHotParams(node, in, &depth, &axis));
  out[0].dtype = in[2].dtype;
  out[0].shape = in[0].shape;
  out[0].shape.insert(out[0].shape.begin() + axis, depth);
  return Status::ok();
}

Status oneHotKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t depth, axis;
  OSPREY_RETURN_IF_ERROR(oneHotParams(node, in, &depth, &axis));
  const size_t elem = dataTypeSize(in[2].dtype);
  const auto* values = static_cast<const uint8_t*>(in[2].data);
  auto* y = static_cast<uint8_t*>(out[0].data);
  const int64_t total = out[0].elements();
  for (int64_t i = 0; i < total; ++i) std::memcpy(y + i * elem, values, elem);
  int64_t inner = 1;
  for (int64_t d = axis; d < in[0].rank(); ++d) inner *= in[0].shape[d];
  const int64_t count = in[0].elements();
  for (int64_t j = 0; j < count; ++j) {
    if (std::isnan(loadAsDouble(in[0].dtype, in[0].data, j))) continue;  // all off
    int64_t idx;
    loadAsInt64(in[0].dtype, in[0].data, j, &idx);  // saturated far-out indices stay out of range
    if (idx < 0) idx += depth;
    if (idx < 0 || idx >= depth) continue;  // out-of-range indices give an all-off row
    const int64_t o = j / inner, i = j % inner;
    std::memcpy(y + ((o * depth + idx) * inner + i) * elem, values + elem, elem);
  }
  return Status::ok();
}

// ---- CumSum / CumProd ----

Status cumAxis(const TensorViews& in, int64_t* axis) {
  if (in[1].elements() != 1) return Status::invalidModel("axis (input 1) must hold one value, got shape " + shapeToString(in[1].shape));
  if (in[1].dtype != DataType::Int32 && in[1].dtype != DataType::Int64)
    return Status::invalidModel("axis (input 1) must be int32 or int64, not " + std::string(dataTypeName(in[1].dtype)));
  if (in[0].rank() == 0) return Status::invalidModel("x must have rank 1 or more, got a scalar");
  if (!in[1].hasValue()) return Status::ok();  // checked again by the kernel
  std::vector<int64_t> a;
  OSPREY_RETURN_IF_ERROR(in[1].readInts(&a, "axis (input 1)"));
  return normalizeAxis(a[0], in[0].rank(), axis).withContext("x shape " + shapeToString(in[0].shape));
}

Status cumShape(const Node&, const TensorViews& in, TensorViews& out) {
  if (in[0].dtype == DataType::Bool || !dispatchNumeric(in[0].dtype, [](auto) {}))
    return Status::unsupported(dtypeError(in[0], "x"));
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(cumAxis(in, &axis));
  return sameAsFirstInput(Node(), in, out);
}

template <bool kProduct>
Status cumKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t axis = 0;
  OSPREY_RETURN_IF_ERROR(cumAxis(in, &axis));
  const bool exclusive = node.getInt("exclusive", 0) != 0, reverse = node.getInt("reverse", 0) != 0;
  const AxisSplit s = splitAt(in[0].shape, axis);
  dispatchNumeric(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      using C = ComputeType<T>;
      // Integer arithmetic wraps like the element type (in uint64, to stay defined).
      using Acc = std::conditional_t<std::is_integral_v<C>, uint64_t, C>;
      const T* x = in[0].as<const T>();
      T* y = out[0].as<T>();
      for (int64_t o = 0; o < s.outer; ++o)
        for (int64_t i = 0; i < s.inner; ++i) {
          Acc acc = kProduct ? Acc(1) : Acc(0);
          for (int64_t step = 0; step < s.n; ++step) {
            const int64_t k = reverse ? s.n - 1 - step : step;
            const int64_t at = (o * s.n + k) * s.inner + i;
            const Acc v = static_cast<Acc>(C(x[at]));  // sign-extends, so wrapping stays right
            if (!exclusive) acc = kProduct ? Acc(acc * v) : Acc(acc + v);
            y[at] = T(static_cast<C>(acc));
            if (exclusive) acc = kProduct ? Acc(acc * v) : Acc(acc + v);
          }
        }
    }
  });
  return Status::ok();
}

// ---- ReverseSequence ----

Status reverseParams(const Node& node, const TensorViews& in, int64_t* batchAxis, int64_t* timeAxis) {
  *batchAxis = node.getInt("batch_axis", 1);
  *timeAxis = node.getInt("time_axis", 0);
  if (!((*batchAxis == 0 && *timeAxis == 1) || (*batchAxis == 1 && *timeAxis == 0)))
    return Status::invalidModel("batch_axis " + std::to_string(*batchAxis) + " and time_axis " + std::to_string(*timeAxis) +
                                " must be 0 and 1 in some order");
  if (in[0].rank() < 2) return Status::invalidModel("input must have rank 2 or more, got shape " + shapeToString(in[0].shape));
  if (in[1].dtype != DataType::Int64) return Status::invalidModel("sequence_lens must be int64, not " + std::string(dataTypeName(in[1].dtype)));
  if (in[1].rank() != 1 || in[1].shape[0] != in[0].shape[*batchAxis])
    return Status::invalidModel("sequence_lens " + shapeToString(in[1].shape) + " must be 1-D with one length per batch entry of input " +
                                shapeToString(in[0].shape));
  return Status::ok();
}

Status reverseShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFixedSize(in[0], "input"));
  int64_t b, t;
  OSPREY_RETURN_IF_ERROR(reverseParams(node, in, &b, &t));
  return sameAsFirstInput(node, in, out);
}

Status reverseKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t batchAxis, timeAxis;
  OSPREY_RETURN_IF_ERROR(reverseParams(node, in, &batchAxis, &timeAxis));
  const int64_t batch = in[0].shape[batchAxis], time = in[0].shape[timeAxis];
  int64_t inner = 1;
  for (size_t d = 2; d < in[0].shape.size(); ++d) inner *= in[0].shape[d];
  const size_t block = dataTypeSize(in[0].dtype) * static_cast<size_t>(inner);
  // Element strides (in blocks) of the batch and time axes.
  const int64_t batchStride = batchAxis == 0 ? time : 1, timeStride = timeAxis == 0 ? batch : 1;
  const auto* src = static_cast<const uint8_t*>(in[0].data);
  auto* dst = static_cast<uint8_t*>(out[0].data);
  std::memcpy(dst, src, in[0].bytes());
  const int64_t* lens = in[1].as<const int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lens[b];
    if (len < 0 || len > time)
      return Status::invalidArgument("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len) +
                                     " is outside [0, " + std::to_string(time) + "]");
    for (int64_t t = 0; t < len; ++t)
      std::memcpy(dst + (b * batchStride + t * timeStride) * block, src + (b * batchStride + (len - 1 - t) * timeStride) * block,
                  block);
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Compress = {OpType::Compress, "Compress", 2, 2, 1, 1, compressShape, compressKernel, nullptr, 0b10, false};
const OpDef kOpDef_OneHot = {OpType::OneHot, "OneHot", 3, 3, 1, 1, oneHotShape, oneHotKernel, nullptr, 0b10, false};
const OpDef kOpDef_CumSum = {OpType::CumSum, "CumSum", 2, 2, 1, 1, cumShape, cumKernel<false>, nullptr, 0, false};
const OpDef kOpDef_CumProd = {OpType::CumProd, "CumProd", 2, 2, 1, 1, cumShape, cumKernel<true>, nullptr, 0, false};
const OpDef kOpDef_ReverseSequence = {OpType::ReverseSequence, "ReverseSequence", 2, 2, 1, 1,
                                      reverseShape, reverseKernel, nullptr, 0, false};

}  // namespace osprey
