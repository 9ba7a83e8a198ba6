// GatherElements, GatherND, ScatterElements, ScatterND: element- and slice-wise indexing by
// runtime index tensors (int32 or int64, negative values count from the end). Gathers and
// plain scatters move bytes, so they take any fixed-size dtype; scatters with a reduction
// (add, mul, max, min) combine values of numeric dtypes (bool: add is or, mul is and).
// Scatter (opset 9-10) is imported as ScatterElements.
#include <algorithm>
#include <cstring>
#include <string>

#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class Reduction { None, Add, Mul, Max, Min };

Status readReduction(const Node& node, Reduction* r) {
  const std::string s = node.getString("reduction", "none");
  if (s == "none") *r = Reduction::None;
  else if (s == "add") *r = Reduction::Add;
  else if (s == "mul") *r = Reduction::Mul;
  else if (s == "max") *r = Reduction::Max;
  else if (s == "min") *r = Reduction::Min;
  else return Status::invalidModel("reduction '" + s + "' is not one of none, add, mul, max, min");
  return Status::ok();
}

Status requireIndexDtype(const TensorView& v, const char* what) {
  if (v.dtype == DataType::Int32 || v.dtype == DataType::Int64) return Status::ok();
  return Status::invalidModel(std::string(what) + " must be int32 or int64, not " + dataTypeName(v.dtype));
}

Status requireFixedSize(const TensorView& v, const char* what) {
  if (dataTypeSize(v.dtype) == 0) return Status::unsupported(dtypeError(v, what));
  return Status::ok();
}

int64_t rawIndex(const TensorView& indices, int64_t j) {
  return indices.dtype == DataType::Int64 ? indices.as<const int64_t>()[j] : indices.as<const int32_t>()[j];
}

// Reads index j, wrapping negatives; errors when it falls outside [0, size).
Status indexAt(const TensorView& indices, int64_t j, int64_t size, int64_t* out) {
  const int64_t raw = rawIndex(indices, j);
  const int64_t idx = raw < 0 ? raw + size : raw;
  if (idx < 0 || idx >= size)
    return Status::invalidArgument("index " + std::to_string(raw) + " (at position " + std::to_string(j) +
                                   " of indices) is out of range for a dimension of size " + std::to_string(size));
  *out = idx;
  return Status::ok();
}

// dst[i] = combine(dst[i], src[i]) for n elements of dtype.
void combine(DataType dtype, Reduction r, void* dst, const void* src, int64_t n) {
  if (r == Reduction::None) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dataTypeSize(dtype));
    return;
  }
  dispatchNumeric(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    // Integers wrap like Add and Mul do (int64 overflow would be undefined); bool is or / and.
    auto add = [](C a, C b) -> C {
      if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) return wrappingAdd(a, b);
      else if constexpr (std::is_same_v<C, bool>) return a || b;
      else return a + b;
    };
    auto mul = [](C a, C b) -> C {
      if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) return wrappingMul(a, b);
      else if constexpr (std::is_same_v<C, bool>) return a && b;
      else return a * b;
    };
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    for (int64_t i = 0; i < n; ++i) {
      const C a = C(d[i]), b = C(s[i]);
      switch (r) {
        case Reduction::Add: d[i] = T(add(a, b)); break;
        case Reduction::Mul: d[i] = T(mul(a, b)); break;
        case Reduction::Max: d[i] = T(std::max(a, b)); break;
        default: d[i] = T(std::min(a, b)); break;
      }
    }
  });
}

// ---- GatherElements / ScatterElements ----

// Checks that `indices` can address `data` along `axis` (same rank, other dims no larger).
Status elementsAxis(const Node& node, const TensorView& data, const TensorView& indices, int64_t* axis) {
  if (data.rank() == 0) return Status::invalidModel("data must have rank 1 or more, got a scalar");
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), data.rank(), axis).withContext("data shape " + shapeToString(data.shape)));
  if (indices.rank() != data.rank())
    return Status::invalidModel("indices " + shapeToString(indices.shape) + " must have the rank of data " + shapeToString(data.shape));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != *axis && indices.shape[d] > data.shape[d])
      return Status::invalidModel("indices " + shapeToString(indices.shape) + " exceed data " + shapeToString(data.shape) +
                                  " in dimension " + std::to_string(d));
  return Status::ok();
}

// Calls fn(j, dataOffset) for every element j of `indices`, dataOffset being its data position
// with the axis coordinate replaced by the index value.
template <class Fn>
Status forEachElementIndex(const TensorView& data, const TensorView& indices, int64_t axis, Fn&& fn) {
  const std::vector<int64_t> strides = stridesOf(data.shape);
  const Shape& shape = indices.shape;
  const int64_t total = indices.elements();
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t base = 0;  // data offset of idx with the axis coordinate left out
  for (int64_t j = 0; j < total; ++j) {
    int64_t k;
    OSPREY_RETURN_IF_ERROR(indexAt(indices, j, data.shape[axis], &k));
    OSPREY_RETURN_IF_ERROR(fn(j, base + k * strides[axis]));
    for (size_t d = shape.size(); d-- > 0;) {
      if (static_cast<int64_t>(d) != axis) base += strides[d];
      if (++idx[d] < shape[d]) break;
      if (static_cast<int64_t>(d) != axis) base -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
  return Status::ok();
}

Status gatherElementsShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFixedSize(in[0], "data"));
  OSPREY_RETURN_IF_ERROR(requireIndexDtype(in[1], "indices"));
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(elementsAxis(node, in[0], in[1], &axis));
  if (in[0].shape[axis] == 0 && in[1].elements() > 0)
    return Status::invalidModel("cannot gather from axis " + std::to_string(axis) + " of size 0");
  out[0].dtype = in[0].dtype;
  out[0].shape = in[1].shape;
  return Status::ok();
}

Status gatherElementsKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(elementsAxis(node, in[0], in[1], &axis));
  const size_t elem = dataTypeSize(in[0].dtype);
  const auto* src = static_cast<const uint8_t*>(in[0].data);
  auto* dst = static_cast<uint8_t*>(out[0].data);
  return forEachElementIndex(in[0], in[1], axis, [&](int64_t j, int64_t offset) {
    std::memcpy(dst + j * elem, src + offset * elem, elem);
    return Status::ok();
  });
}

Status scatterCommonShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFixedSize(in[0], "data"));
  OSPREY_RETURN_IF_ERROR(requireIndexDtype(in[1], "indices"));
  if (in[2].dtype != in[0].dtype)
    return Status::invalidModel("updates has dtype " + std::string(dataTypeName(in[2].dtype)) + " but data has " +
                                dataTypeName(in[0].dtype));
  Reduction r;
  OSPREY_RETURN_IF_ERROR(readReduction(node, &r));
  if (r != Reduction::None && !dispatchNumeric(in[0].dtype, [](auto) {}))
    return Status::unsupported(dtypeError(in[0], "data (with a reduction)"));
  out[0].dtype = in[0].dtype;
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status scatterElementsShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(scatterCommonShape(node, in, out));
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(elementsAxis(node, in[0], in[1], &axis));
  if (in[2].shape != in[1].shape)
    return Status::invalidModel("updates " + shapeToString(in[2].shape) + " must have the shape of indices " +
                                shapeToString(in[1].shape));
  return Status::ok();
}

Status scatterElementsKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(elementsAxis(node, in[0], in[1], &axis));
  Reduction r;
  OSPREY_RETURN_IF_ERROR(readReduction(node, &r));
  const size_t elem = dataTypeSize(in[0].dtype);
  std::memcpy(out[0].data, in[0].data, in[0].bytes());
  const auto* upd = static_cast<const uint8_t*>(in[2].data);
  auto* dst = static_cast<uint8_t*>(out[0].data);
  return forEachElementIndex(in[0], in[1], axis, [&](int64_t j, int64_t offset) {
    combine(in[0].dtype, r, dst + offset * elem, upd + j * elem, 1);
    return Status::ok();
  });
}

// ---- GatherND / ScatterND ----

struct NdDims {
  int64_t batch = 1;       // product of the batch dims
  int64_t tuples = 1;      // index tuples per batch
  int64_t depth = 0;       // m: coordinates per tuple
  int64_t slice = 1;       // elements per addressed slice
  int64_t dataBatch = 1;   // data elements per batch
  std::vector<int64_t> dims, strides;  // the m addressed data dims and their strides
};

Status ndDims(const TensorView& data, const TensorView& indices, int64_t batchDims, NdDims* g) {
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1)
    return Status::invalidModel("data " + shapeToString(data.shape) + " and indices " + shapeToString(indices.shape) +
                                " must both have rank 1 or more");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return Status::invalidModel("batch_dims " + std::to_string(batchDims) + " must be in [0, " +
                                std::to_string(std::min(r, q)) + ")");
  g->depth = indices.shape[q - 1];
  if (g->depth < 1 || g->depth > r - batchDims)
    return Status::invalidModel("the last dimension of indices " + shapeToString(indices.shape) + " must be in [1, " +
                                std::to_string(r - batchDims) + "] for data " + shapeToString(data.shape));
  for (int64_t d = 0; d < batchDims; ++d) {
    if (data.shape[d] != indices.shape[d])
      return Status::invalidModel("batch dimension " + std::to_string(d) + " differs: data " + shapeToString(data.shape) +
                                  ", indices " + shapeToString(indices.shape));
    g->batch *= data.shape[d];
  }
  for (int64_t d = batchDims; d < q - 1; ++d) g->tuples *= indices.shape[d];
  const std::vector<int64_t> strides = stridesOf(data.shape);
  for (int64_t k = 0; k < g->depth; ++k) {
    g->dims.push_back(data.shape[batchDims + k]);
    g->strides.push_back(strides[batchDims + k]);
  }
  for (int64_t d = batchDims + g->depth; d < r; ++d) g->slice *= data.shape[d];
  for (int64_t d = batchDims; d < r; ++d) g->dataBatch *= data.shape[d];
  return Status::ok();
}

// Calls fn(batch * tuples + t, dataOffset) for every index tuple.
template <class Fn>
Status forEachTuple(const TensorView& indices, const NdDims& g, Fn&& fn) {
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t t = 0; t < g.tuples; ++t) {
      const int64_t tuple = b * g.tuples + t;
      int64_t offset = b * g.dataBatch;
      for (int64_t k = 0; k < g.depth; ++k) {
        int64_t idx;
        OSPREY_RETURN_IF_ERROR(indexAt(indices, tuple * g.depth + k, g.dims[k], &idx));
        offset += idx * g.strides[k];
      }
      OSPREY_RETURN_IF_ERROR(fn(tuple, offset));
    }
  return Status::ok();
}

Shape ndSliceShape(const TensorView& data, const TensorView& indices, int64_t batchDims, int64_t depth) {
  Shape s(indices.shape.begin(), indices.shape.end() - 1);
  s.insert(s.end(), data.shape.begin() + batchDims + depth, data.shape.end());
  return s;
}

Status gatherNdShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFixedSize(in[0], "data"));
  if (in[1].dtype != DataType::Int64) return Status::invalidModel("indices must be int64, not " + std::string(dataTypeName(in[1].dtype)));
  const int64_t b = node.getInt("batch_dims", 0);
  NdDims g;
  OSPREY_RETURN_IF_ERROR(ndDims(in[0], in[1], b, &g));
  out[0].dtype = in[0].dtype;
  out[0].shape = ndSliceShape(in[0], in[1], b, g.depth);
  return Status::ok();
}

Status gatherNdKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  NdDims g;
  OSPREY_RETURN_IF_ERROR(ndDims(in[0], in[1], node.getInt("batch_dims", 0), &g));
  const size_t block = dataTypeSize(in[0].dtype) * static_cast<size_t>(g.slice);
  const auto* src = static_cast<const uint8_t*>(in[0].data);
  auto* dst = static_cast<uint8_t*>(out[0].data);
  const size_t elem = dataTypeSize(in[0].dtype);
  return forEachTuple(in[1], g, [&](int64_t tuple, int64_t offset) {
    std::memcpy(dst + tuple * block, src + offset * elem, block);
    return Status::ok();
  });
}

Status scatterNdShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(scatterCommonShape(node, in, out));
  NdDims g;
  OSPREY_RETURN_IF_ERROR(ndDims(in[0], in[1], 0, &g));
  const Shape expected = ndSliceShape(in[0], in[1], 0, g.depth);
  if (in[2].shape != expected)
    return Status::invalidModel("updates " + shapeToString(in[2].shape) + " must have shape " + shapeToString(expected) +
                                " for data " + shapeToString(in[0].shape) + " and indices " + shapeToString(in[1].shape));
  return Status::ok();
}

Status scatterNdKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  NdDims g;
  OSPREY_RETURN_IF_ERROR(ndDims(in[0], in[1], 0, &g));
  Reduction r;
  OSPREY_RETURN_IF_ERROR(readReduction(node, &r));
  std::memcpy(out[0].data, in[0].data, in[0].bytes());
  const size_t elem = dataTypeSize(in[0].dtype);
  const auto* upd = static_cast<const uint8_t*>(in[2].data);
  auto* dst = static_cast<uint8_t*>(out[0].data);
  return forEachTuple(in[1], g, [&](int64_t tuple, int64_t offset) {
    combine(in[0].dtype, r, dst + offset * elem, upd + tuple * g.slice * elem, g.slice);
    return Status::ok();
  });
}

}  // namespace

const OpDef kOpDef_GatherElements = {OpType::GatherElements, "GatherElements", 2, 2, 1, 1,
                                     gatherElementsShape, gatherElementsKernel, nullptr, 0, false};
const OpDef kOpDef_GatherND = {OpType::GatherND, "GatherND", 2, 2, 1, 1, gatherNdShape, gatherNdKernel, nullptr, 0, false};
const OpDef kOpDef_ScatterElements = {OpType::ScatterElements, "ScatterElements", 3, 3, 1, 1,
                                      scatterElementsShape, scatterElementsKernel, nullptr, 0, false};
const OpDef kOpDef_ScatterND = {OpType::ScatterND, "ScatterND", 3, 3, 1, 1, scatterNdShape, scatterNdKernel, nullptr, 0, false};

}  // namespace osprey
