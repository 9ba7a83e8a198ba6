#include "ops/op_util.h"

namespace osprey {

Status normalizeAxis(int64_t axis, int64_t rank, int64_t* out) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return Status::invalidModel("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  *out = a;
  return Status::ok();
}

Status normalizeAxes(const std::vector<int64_t>& axes, int64_t rank, std::vector<int64_t>* out) {
  out->clear();
  for (int64_t a : axes) {
    int64_t n;
    OSPREY_RETURN_IF_ERROR(normalizeAxis(a, rank, &n));
    for (int64_t seen : *out)
      if (seen == n) return Status::invalidModel("axis " + std::to_string(a) + " is repeated");
    out->push_back(n);
  }
  return Status::ok();
}

Status broadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  size_t rank = std::max(a.size(), b.size());
  Shape r(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return Status::invalidArgument("shapes " + shapeToString(a) + " and " + shapeToString(b) + " do not broadcast");
    r[i] = da == 1 ? db : da;
  }
  *out = r;
  return Status::ok();
}

std::vector<int64_t> broadcastStrides(const Shape& shape, size_t rank, const Shape& outShape) {
  std::vector<int64_t> s(rank);
  broadcastStrides(shape, rank, outShape, s.data());
  return s;
}

void broadcastStrides(const Shape& shape, size_t rank, const Shape& outShape, int64_t* strides) {
  std::fill(strides, strides + rank, 0);
  int64_t stride = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    size_t o = rank - shape.size() + i;
    strides[o] = (shape[i] == 1 && outShape[o] != 1) ? 0 : stride;
    stride *= shape[i];
  }
}

AxisSplit splitAt(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < axis; ++d) s.outer *= shape[d];
  s.n = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

std::string dtypeError(const TensorView& v, const char* what) {
  return std::string(what) + " has dtype " + dataTypeName(v.dtype) + ", which this op does not support";
}

Status requireSameDtype(const TensorViews& inputs, size_t first, size_t last) {
  for (size_t i = first + 1; i <= last && i < inputs.size(); ++i)
    if (inputs[i].present && inputs[i].dtype != inputs[first].dtype)
      return Status::invalidModel("input " + std::to_string(i) + " has dtype " + dataTypeName(inputs[i].dtype) +
                                  " but input " + std::to_string(first) + " has " + dataTypeName(inputs[first].dtype));
  return Status::ok();
}

Status requireFloatDtype(const TensorView& v, const char* what) {
  switch (v.dtype) {
    case DataType::Float32:
    case DataType::Float64:
    case DataType::Float16:
    case DataType::BFloat16: return Status::ok();
    default: return Status::unsupported(dtypeError(v, what));
  }
}

Status sameAsFirstInput(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = inputs[0].shape;
  return Status::ok();
}

Status TensorView::readInts(std::vector<int64_t>* out, const char* what) const {
  if (!hasValue()) return Status::invalidArgument(std::string(what) + " must be known when shapes are computed");
  out->resize(static_cast<size_t>(elements()));
  if (dtype == DataType::Int64) {
    for (int64_t i = 0; i < elements(); ++i) (*out)[i] = as<const int64_t>()[i];
  } else if (dtype == DataType::Int32) {
    for (int64_t i = 0; i < elements(); ++i) (*out)[i] = as<const int32_t>()[i];
  } else {
    return Status::invalidModel(std::string(what) + " must be int32 or int64, not " + dataTypeName(dtype));
  }
  return Status::ok();
}

Status TensorView::readFloats(std::vector<float>* out, const char* what) const {
  if (!hasValue()) return Status::invalidArgument(std::string(what) + " must be known when shapes are computed");
  out->resize(static_cast<size_t>(elements()));
  bool ok = dispatchNumeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < elements(); ++i) (*out)[i] = static_cast<float>(static_cast<ComputeType<T>>(as<const T>()[i]));
  });
  if (!ok) return Status::invalidModel(std::string(what) + " has non-numeric dtype " + dataTypeName(dtype));
  return Status::ok();
}

}  // namespace osprey
