// Small helpers shared by op definitions: axes, broadcasting, attribute checks.
#pragma once
#include <string>
#include <vector>

#include "core/dtype.h"
#include "ops/op_def.h"

namespace osprey {

// Maps a possibly negative axis into [0, rank); error names the axis when out of range.
Status normalizeAxis(int64_t axis, int64_t rank, int64_t* out);
Status normalizeAxes(const std::vector<int64_t>& axes, int64_t rank, std::vector<int64_t>* out);
// Which axes of in[0] a Reduce* node reduces (the axes of input 1, or of the attribute of older
// opsets; none given: all); `noop` when it is an identity (noop_with_empty_axes and no axes).
Status reducedAxes(const Node& node, const TensorViews& in, std::vector<bool>* reduced, bool* noop);
// Multidirectional (numpy) broadcast of two shapes.
Status broadcastShapes(const Shape& a, const Shape& b, Shape* out);
// Strides (in elements) of `shape` as seen from a broadcast output of rank `rank`: 0 on
// broadcast dimensions.
std::vector<int64_t> broadcastStrides(const Shape& shape, size_t rank, const Shape& outShape);
// The same into strides[0, rank), for callers that must not allocate.
void broadcastStrides(const Shape& shape, size_t rank, const Shape& outShape, int64_t* strides);
// Calls fn(outIndex, offsetA, offsetB) for every element of outShape.
template <class Fn>
void forEachBroadcast(const Shape& outShape, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, Fn&& fn) {
  const size_t rank = outShape.size();
  const int64_t total = shapeElements(outShape);
  if (total == 0) return;
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  const int64_t inner = rank ? outShape[rank - 1] : 1;
  const int64_t ia = rank ? sa[rank - 1] : 0, ib = rank ? sb[rank - 1] : 0;
  for (int64_t o = 0; o < total; o += inner) {
    for (int64_t x = 0; x < inner; ++x) fn(o + x, oa + x * ia, ob + x * ib);
    for (int d = static_cast<int>(rank) - 2; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < outShape[d]) break;
      oa -= sa[d] * outShape[d];
      ob -= sb[d] * outShape[d];
      idx[d] = 0;
    }
  }
}

// A shape seen as [outer, n, inner] around one (normalised) axis.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit splitAt(const Shape& shape, int64_t axis);

Status requireSameDtype(const TensorViews& inputs, size_t first, size_t last);
Status requireFloatDtype(const TensorView& v, const char* what);
std::string dtypeError(const TensorView& v, const char* what);

// Identity's OpDef::hostRun (ops/sequence.cpp): passes a sequence or an absent optional through.
Status identityOnHost(const Node& node, const TensorViews& inputs, std::vector<Tensor>* outputs);
// The input as a value of its own: a sequence or an absent optional as it is, a tensor copied.
Tensor hostValueOf(const TensorView& v);

// Shape function for ops whose single output matches input 0.
Status sameAsFirstInput(const Node& node, const TensorViews& inputs, TensorViews& outputs);

}  // namespace osprey
