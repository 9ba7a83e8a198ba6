// CastLike (Cast to the dtype of input 1), Size, EyeLike, Trilu and Hardmax (opset 13: one
// axis, default -1).
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "ops/op_util.h"

namespace osprey {

namespace {

// CastLike is Cast with `to` taken from input 1; its other attributes (saturate, round_mode)
// mean the same, so the node is handed to Cast with `to` added.
Node castNodeFor(const Node& node, DataType target) {
  Node cast = node;
  cast.type = OpType::Cast;
  cast.setInt("to", static_cast<int64_t>(target));
  return cast;
}

Status castLikeShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (in[1].dtype == DataType::Undefined) return Status::invalidModel("target_type (input 1) has no dtype");
  TensorViews first{in[0]};
  return kOpDef_Cast.shape(castNodeFor(node, in[1].dtype), first, out);
}

Status castLikeKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  TensorViews first{in[0]};
  return kOpDef_Cast.reference(castNodeFor(node, in[1].dtype), first, out, pool);
}

Status sizeShape(const Node&, const TensorViews&, TensorViews& out) {
  out[0].dtype = DataType::Int64;
  out[0].shape = {};
  return Status::ok();
}

Status sizeKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool*) {
  out[0].as<int64_t>()[0] = in[0].elements();
  return Status::ok();
}

bool isNumeric(DataType t) {
  return dispatchNumeric(t, [](auto) {});
}

// EyeLike: ones on diagonal k (k > 0 above the main one) of a 2-D tensor shaped like the input,
// of attribute dtype (default: the input's dtype).
Status eyeLikeShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (in[0].rank() != 2) return Status::invalidModel("input must be 2-D, got shape " + shapeToString(in[0].shape));
  DataType dtype = in[0].dtype;
  if (node.hasAttr("dtype")) {
    const int64_t d = node.getInt("dtype", 0);
    if (d <= 0 || d > 1000 || !isKnownDataType(static_cast<int32_t>(d)))
      return Status::invalidModel("attribute dtype is " + std::to_string(d) + ", which is not a dtype");
    dtype = static_cast<DataType>(d);
    if (!isNumeric(dtype))
      return Status::unsupported(std::string("attribute dtype is ") + dataTypeName(dtype) + ", which EyeLike does not support");
  } else if (!isNumeric(dtype)) {
    return Status::unsupported(dtypeError(in[0], "input"));
  }
  out[0].dtype = dtype;
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status eyeLikeKernel(const Node& node, const TensorViews&, TensorViews& out, ThreadPool*) {
  std::memset(out[0].data, 0, out[0].bytes());
  const int64_t rows = out[0].shape[0], cols = out[0].shape[1];
  // Clamped so that i + k cannot overflow; any k beyond the matrix gives all zeros.
  const int64_t k = std::clamp<int64_t>(node.getInt("k", 0), -rows - 1, cols + 1);
  dispatchNumeric(out[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = out[0].as<T>();
    for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i) {
      if constexpr (std::is_same_v<T, bool>)
        y[i * cols + i + k] = true;
      else
        y[i * cols + i + k] = T(1.f);
    }
  });
  return Status::ok();
}

// Trilu: keeps the elements on and above (upper=1) or on and below (upper=0) diagonal k of
// the last two dimensions and zeroes the rest. Zero is the all-zero bit pattern in every
// numeric dtype, so rows are copied as bytes.
Status triluShape(const Node& node, const TensorViews& in, TensorViews& out) {
  if (in[0].rank() < 2)
    return Status::invalidModel("input must have rank 2 or more, got shape " + shapeToString(in[0].shape));
  if (dataTypeSize(in[0].dtype) == 0 || in[0].dtype == DataType::String)
    return Status::unsupported(dtypeError(in[0], "input"));
  if (in.size() > 1 && in[1].present) {
    if (in[1].dtype != DataType::Int64)
      return Status::invalidModel(std::string("k (input 1) must be int64, not ") + dataTypeName(in[1].dtype));
    if (in[1].elements() != 1)
      return Status::invalidModel("k (input 1) must be a scalar, got shape " + shapeToString(in[1].shape));
  }
  const int64_t upper = node.getInt("upper", 1);
  if (upper != 0 && upper != 1)
    return Status::invalidModel("attribute upper is " + std::to_string(upper) + "; expected 0 or 1");
  return sameAsFirstInput(node, in, out);
}

Status triluKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const Shape& s = in[0].shape;
  const int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  int64_t k = in.size() > 1 && in[1].present ? in[1].as<const int64_t>()[0] : 0;
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
  const bool upper = node.getInt("upper", 1) != 0;
  const size_t elem = dataTypeSize(in[0].dtype);
  const int64_t matrices = rows * cols == 0 ? 0 : in[0].elements() / (rows * cols);
  const auto* x = static_cast<const uint8_t*>(in[0].data);
  auto* y = static_cast<uint8_t*>(out[0].data);
  std::memset(y, 0, out[0].bytes());
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      // Kept columns: j - i >= k (upper) or j - i <= k (lower).
      const int64_t begin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      const int64_t end = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      const int64_t row = (m * rows + i) * cols;
      if (end > begin) std::memcpy(y + (row + begin) * elem, x + (row + begin) * elem, (end - begin) * elem);
    }
  }
  return Status::ok();
}

Status hardmaxSplit(const Node& node, const Shape& shape, AxisSplit* s) {
  int64_t axis;
  Status st = normalizeAxis(node.getInt("axis", -1), static_cast<int64_t>(shape.size()), &axis);
  if (!st.isOk()) return Status::invalidModel("attribute " + st.message() + " (input shape " + shapeToString(shape) + ")");
  *s = splitAt(shape, axis);
  return Status::ok();
}

Status hardmaxShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "input"));
  AxisSplit s;
  OSPREY_RETURN_IF_ERROR(hardmaxSplit(node, in[0].shape, &s));
  return sameAsFirstInput(node, in, out);
}

// 1 at the first maximum along the axis (the first NaN, if any, as numpy.argmax picks it).
Status hardmaxKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  AxisSplit s;
  OSPREY_RETURN_IF_ERROR(hardmaxSplit(node, in[0].shape, &s));
  dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    for (int64_t i = 0; i < in[0].elements(); ++i) y[i] = T(C(0));
    if (s.n == 0) return;
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t j = 0; j < s.inner; ++j) {
        const int64_t base = o * s.n * s.inner + j;
        int64_t best = 0;
        C bestValue = C(x[base]);
        for (int64_t a = 1; a < s.n && bestValue == bestValue; ++a) {
          const C v = C(x[base + a * s.inner]);
          if (v > bestValue || v != v) {
            best = a;
            bestValue = v;
          }
        }
        y[base + best * s.inner] = T(C(1));
      }
    }
  });
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_CastLike = {OpType::CastLike, "CastLike", 2, 2, 1, 1, castLikeShape, castLikeKernel, nullptr, 0, false};
const OpDef kOpDef_Size = {OpType::Size, "Size", 1, 1, 1, 1, sizeShape, sizeKernel, nullptr, 0, false, true};
const OpDef kOpDef_EyeLike = {OpType::EyeLike, "EyeLike", 1, 1, 1, 1, eyeLikeShape, eyeLikeKernel, nullptr, 0, false, true};
const OpDef kOpDef_Trilu = {OpType::Trilu, "Trilu", 1, 2, 1, 1, triluShape, triluKernel, nullptr, 0, false};
const OpDef kOpDef_Hardmax = {OpType::Hardmax, "Hardmax", 1, 1, 1, 1, hardmaxShape, hardmaxKernel, nullptr, 0, false};

}  // namespace osprey
