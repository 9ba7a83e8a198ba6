// Slice: per axis a start, a step (possibly negative) and a count, clamped as ONNX Slice-13
// says. Lowers to one strided box copy (a negative step is a negative source stride).
#include <algorithm>

#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

struct SliceBox {
  std::vector<int64_t> start, step;  // per input dimension
  Shape shape;                       // the output
};

Status readValues(const TensorViews& inputs, size_t i, const char* what, std::vector<int64_t>* out) {
  if (inputs[i].rank() != 1)
    return Status::invalidModel(std::string(what) + " must be 1-D, got shape " + shapeToString(inputs[i].shape));
  return inputs[i].readInts(out, what);
}

Status computeSlice(const TensorViews& inputs, SliceBox* box) {
  const Shape& in = inputs[0].shape;
  const int64_t rank = inputs[0].rank();
  std::vector<int64_t> starts, ends, axes, steps;
  OSPREY_RETURN_IF_ERROR(readValues(inputs, 1, "starts", &starts));
  OSPREY_RETURN_IF_ERROR(readValues(inputs, 2, "ends", &ends));
  if (starts.size() != ends.size())
    return Status::invalidModel("starts " + shapeToString(starts) + " and ends " + shapeToString(ends) + " differ in length");
  if (inputs.size() > 3 && inputs[3].present) {
    std::vector<int64_t> raw;
    OSPREY_RETURN_IF_ERROR(readValues(inputs, 3, "axes", &raw));
    if (raw.size() != starts.size())
      return Status::invalidModel("axes " + shapeToString(raw) + " and starts " + shapeToString(starts) + " differ in length");
    OSPREY_RETURN_IF_ERROR(normalizeAxes(raw, rank, &axes).withContext("input shape " + shapeToString(in)));
  } else {
    if (static_cast<int64_t>(starts.size()) > rank)
      return Status::invalidModel("starts " + shapeToString(starts) + " has more entries than the input " + shapeToString(in) +
                                  " has dimensions");
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (inputs.size() > 4 && inputs[4].present) {
    OSPREY_RETURN_IF_ERROR(readValues(inputs, 4, "steps", &steps));
    if (steps.size() != starts.size())
      return Status::invalidModel("steps " + shapeToString(steps) + " and starts " + shapeToString(starts) + " differ in length");
  } else {
    steps.assign(starts.size(), 1);
  }
  box->start.assign(rank, 0);
  box->step.assign(rank, 1);
  box->shape = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], dim = in[a], step = steps[i];
    if (step == 0) return Status::invalidModel("steps " + shapeToString(steps) + " has a zero step");
    // Clamp before adding dim so that INT64_MIN/INT64_MAX markers cannot overflow.
    int64_t start = std::clamp<int64_t>(starts[i], -dim - 1, dim + 1);
    int64_t end = std::clamp<int64_t>(ends[i], -dim - 1, dim + 1);
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (dim == 0) {
      count = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? 1 - (start - end - 1) / step : 0;  // no -step: it may be INT64_MIN
    }
    box->start[a] = count > 0 ? start : 0;
    box->step[a] = count > 1 ? step : 1;  // keeps stride arithmetic in range for huge steps
    box->shape[a] = count;
  }
  return Status::ok();
}

Status sliceShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  SliceBox box;
  OSPREY_RETURN_IF_ERROR(computeSlice(inputs, &box));
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = box.shape;
  return Status::ok();
}

Status lowerSlice(const Node&, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  SliceBox box;
  OSPREY_RETURN_IF_ERROR(computeSlice(inputs, &box));
  const std::vector<int64_t> inStrides = stridesOf(inputs[0].shape);
  std::vector<int64_t> srcStrides(inStrides.size());
  int64_t srcOffset = 0;
  for (size_t d = 0; d < inStrides.size(); ++d) {
    srcOffset += box.start[d] * inStrides[d];
    srcStrides[d] = box.step[d] * inStrides[d];
  }
  plans.assign(1, RasterPlan());
  appendBoxCopy(plans[0].regions, 0, srcOffset, srcStrides, 0, stridesOf(outputs[0].shape), outputs[0].shape);
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Slice = {OpType::Slice, "Slice", 3, 5, 1, 1, sliceShape, nullptr, lowerSlice,
                            (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4), false};

}  // namespace osprey
