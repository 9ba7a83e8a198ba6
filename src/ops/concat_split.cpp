// Concat and Split: each input (output) is one box of the output (input) along `axis`.
#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status concatAxis(const Node& node, const TensorView& first, int64_t* axis) {
  if (!node.hasAttr("axis")) return Status::invalidModel("the axis attribute is required");
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), first.rank(), axis)
                             .withContext("input shape " + shapeToString(first.shape)));
  return Status::ok();
}

Status concatShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs.empty()) return Status::invalidModel("needs at least one input");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].present) return Status::invalidModel("input " + std::to_string(i) + " is missing");
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  OSPREY_RETURN_IF_ERROR(requireSameDtype(inputs, 0, inputs.size() - 1));
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(concatAxis(node, inputs[0], &axis));
  Shape out = inputs[0].shape;
  out[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = inputs[i].shape;
    bool compatible = s.size() == out.size();
    for (size_t d = 0; compatible && d < s.size(); ++d) compatible = static_cast<int64_t>(d) == axis || s[d] == out[d];
    if (!compatible)
      return Status::invalidModel("input " + std::to_string(i) + " has shape " + shapeToString(s) + ", which does not match " +
                                  shapeToString(inputs[0].shape) + " outside axis " + std::to_string(axis));
    out[axis] += s[axis];
  }
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

Status lowerConcat(const Node& node, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(concatAxis(node, inputs[0], &axis));
  const std::vector<int64_t> dstStrides = stridesOf(outputs[0].shape);
  plans.assign(1, RasterPlan());
  int64_t offset = 0;  // along axis
  for (size_t i = 0; i < inputs.size(); ++i) {
    appendBoxCopy(plans[0].regions, static_cast<int>(i), 0, stridesOf(inputs[i].shape), offset * dstStrides[axis], dstStrides,
                  inputs[i].shape);
    offset += inputs[i].shape[axis];
  }
  return Status::ok();
}

// Sizes of the outputs along the axis: from the `split` input, or equal parts of
// ceil(dim / count) with a smaller last part (Split-18), count being num_outputs or the
// number of outputs.
Status splitSizes(const Node& node, const TensorViews& inputs, size_t numOutputs, int64_t* axis, std::vector<int64_t>* sizes) {
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), inputs[0].rank(), axis)
                             .withContext("input shape " + shapeToString(inputs[0].shape)));
  const int64_t dim = inputs[0].shape[*axis];
  const bool hasSplit = inputs.size() > 1 && inputs[1].present;
  if (hasSplit && node.hasAttr("num_outputs"))
    return Status::invalidModel("give either the split input or the num_outputs attribute, not both");
  if (hasSplit) {
    OSPREY_RETURN_IF_ERROR(inputs[1].readInts(sizes, "split input"));
    if (sizes->size() != numOutputs)
      return Status::invalidModel("split " + shapeToString(*sizes) + " has " + std::to_string(sizes->size()) +
                                  " entries for " + std::to_string(numOutputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *sizes) {
      if (s < 0) return Status::invalidModel("split " + shapeToString(*sizes) + " has a negative size");
      sum += s;
    }
    if (sum != dim)
      return Status::invalidModel("split " + shapeToString(*sizes) + " adds up to " + std::to_string(sum) + ", not to " +
                                  std::to_string(dim) + " (axis " + std::to_string(*axis) + " of " +
                                  shapeToString(inputs[0].shape) + ")");
    return Status::ok();
  }
  int64_t count = static_cast<int64_t>(numOutputs);
  if (node.hasAttr("num_outputs")) {
    int64_t n = node.getInt("num_outputs", 0);
    if (n != count)
      return Status::invalidModel("num_outputs is " + std::to_string(n) + " but the op has " + std::to_string(count) + " outputs");
  }
  if (count < 1) return Status::invalidModel("needs at least one output");
  const int64_t part = (dim + count - 1) / count;
  const int64_t last = dim - part * (count - 1);
  if (last < 0)
    return Status::invalidModel("cannot split " + std::to_string(dim) + " elements into " + std::to_string(count) +
                                " parts of " + std::to_string(part) + " with a smaller last part");
  sizes->assign(count, part);
  sizes->back() = last;
  return Status::ok();
}

Status splitShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  int64_t axis;
  std::vector<int64_t> sizes;
  OSPREY_RETURN_IF_ERROR(splitSizes(node, inputs, outputs.size(), &axis, &sizes));
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].dtype = inputs[0].dtype;
    outputs[i].shape = inputs[0].shape;
    outputs[i].shape[axis] = sizes[i];
  }
  return Status::ok();
}

Status lowerSplit(const Node& node, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  int64_t axis;
  std::vector<int64_t> sizes;
  OSPREY_RETURN_IF_ERROR(splitSizes(node, inputs, outputs.size(), &axis, &sizes));
  const std::vector<int64_t> srcStrides = stridesOf(inputs[0].shape);
  plans.assign(outputs.size(), RasterPlan());
  int64_t offset = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    appendBoxCopy(plans[i].regions, 0, offset * srcStrides[axis], srcStrides, 0, stridesOf(outputs[i].shape),
                  outputs[i].shape);
    offset += sizes[i];
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Concat = {OpType::Concat, "Concat", 1, -1, 1, 1, concatShape, nullptr, lowerConcat, 0, false};
const OpDef kOpDef_Split = {OpType::Split, "Split", 1, 2, 1, -1, splitShape, nullptr, lowerSplit, 1u << 1, false};

}  // namespace osprey
