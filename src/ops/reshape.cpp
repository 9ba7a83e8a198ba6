// Ops that keep every element in place and only change the shape (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, inference-mode Dropout). Each lowers to one contiguous Raster copy.
#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// The core cannot produce string outputs from a kernel or a Raster copy yet.
Status rejectStrings(const TensorView& v) {
  if (v.dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  return Status::ok();
}

Status lowerToCopy(const Node&, const TensorViews&, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  plans.assign(outputs.size(), RasterPlan());
  if (outputs[0].elements() > 0) plans[0].regions.push_back(contiguousRegion(0, outputs[0].elements()));
  return Status::ok();
}

Status reshapeShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  OSPREY_RETURN_IF_ERROR(rejectStrings(inputs[0]));
  if (inputs[1].rank() != 1)
    return Status::invalidModel("shape input must be 1-D, got shape " + shapeToString(inputs[1].shape));
  std::vector<int64_t> requested;
  OSPREY_RETURN_IF_ERROR(inputs[1].readInts(&requested, "shape input"));
  const bool allowZero = node.getInt("allowzero", 0) != 0;
  const Shape& in = inputs[0].shape;
  Shape out(requested.size());
  int inferred = -1;
  bool hasZero = false, overflow = false, emptyDim = false;
  int64_t known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t v = requested[i];
    if (v == -1) {
      if (inferred >= 0) return Status::invalidModel("shape " + shapeToString(requested) + " has more than one -1");
      inferred = static_cast<int>(i);
      continue;
    }
    if (v < -1) return Status::invalidModel("shape " + shapeToString(requested) + " has negative dimension " + std::to_string(v));
    if (v == 0) {
      hasZero = true;
      if (!allowZero) {
        if (i >= in.size())
          return Status::invalidModel("shape " + shapeToString(requested) + " copies dimension " + std::to_string(i) +
                                      " (0) but the input " + shapeToString(in) + " has rank " + std::to_string(in.size()));
        v = in[i];
      }
    }
    out[i] = v;
    // A wrapped product could match the element count by accident and pass a huge shape.
    overflow |= __builtin_mul_overflow(known, v, &known);
    emptyDim |= v == 0;
  }
  if (overflow && !emptyDim)
    return Status::invalidModel("shape " + shapeToString(requested) + " has more elements than int64 holds");
  if (emptyDim) known = 0;
  if (allowZero && hasZero && inferred >= 0)
    return Status::invalidModel("shape " + shapeToString(requested) + " has both 0 and -1, which allowzero=1 forbids");
  const int64_t total = inputs[0].elements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return Status::invalidModel("cannot reshape " + shapeToString(in) + " to " + shapeToString(requested) +
                                  ": the -1 dimension cannot be inferred");
    out[inferred] = total / known;
  } else if (known != total) {
    return Status::invalidModel("cannot reshape " + shapeToString(in) + " (" + std::to_string(total) + " elements) to " +
                                shapeToString(out));
  }
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

Status flattenShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  OSPREY_RETURN_IF_ERROR(rejectStrings(inputs[0]));
  const int64_t rank = inputs[0].rank();
  int64_t axis = node.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return Status::invalidModel("axis " + std::to_string(axis) + " is out of range [" + std::to_string(-rank) + ", " +
                                std::to_string(rank) + "] for input shape " + shapeToString(inputs[0].shape));
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= inputs[0].shape[d];
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = {outer, inner};
  return Status::ok();
}

Status squeezeShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  OSPREY_RETURN_IF_ERROR(rejectStrings(inputs[0]));
  const Shape& in = inputs[0].shape;
  std::vector<bool> drop(in.size(), false);
  std::vector<int64_t> axes;
  if (inputs.size() > 1 && inputs[1].present) OSPREY_RETURN_IF_ERROR(inputs[1].readInts(&axes, "axes input"));
  if (axes.empty()) {  // absent (or empty, as ONNX Runtime reads it): every size-1 dimension
    for (size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
  } else {
    std::vector<int64_t> norm;
    OSPREY_RETURN_IF_ERROR(normalizeAxes(axes, inputs[0].rank(), &norm));
    for (int64_t a : norm) {
      if (in[a] != 1)
        return Status::invalidModel("cannot squeeze axis " + std::to_string(a) + " of shape " + shapeToString(in) +
                                    ": its size is not 1");
      drop[a] = true;
    }
  }
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

Status unsqueezeShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  OSPREY_RETURN_IF_ERROR(rejectStrings(inputs[0]));
  std::vector<int64_t> axes, norm;
  OSPREY_RETURN_IF_ERROR(inputs[1].readInts(&axes, "axes input"));
  const Shape& in = inputs[0].shape;
  const int64_t outRank = inputs[0].rank() + static_cast<int64_t>(axes.size());
  OSPREY_RETURN_IF_ERROR(normalizeAxes(axes, outRank, &norm));
  std::vector<bool> inserted(outRank, false);
  for (int64_t a : norm) inserted[a] = true;
  Shape out(outRank);
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d) out[d] = inserted[d] ? 1 : in[next++];
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

Status identityShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  OSPREY_RETURN_IF_ERROR(rejectStrings(inputs[0]));
  return sameAsFirstInput(node, inputs, outputs);
}

// Inference only: the output is the input and the mask is all true. Training mode with a
// nonzero ratio would need random numbers, which an inference engine does not reproduce.
Status dropoutShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  OSPREY_RETURN_IF_ERROR(rejectStrings(inputs[0]));
  const bool hasTrainingMode = inputs.size() > 2 && inputs[2].present;
  if (hasTrainingMode) {
    if (inputs[2].dtype != DataType::Bool || inputs[2].elements() != 1)
      return Status::invalidModel("training_mode must be a bool scalar, got " + std::string(dataTypeName(inputs[2].dtype)) +
                                  " of shape " + shapeToString(inputs[2].shape));
    if (!inputs[2].hasValue()) return Status::invalidArgument("training_mode must be known when shapes are computed");
    if (*inputs[2].as<const bool>()) {
      const bool hasRatio = inputs.size() > 1 && inputs[1].present;
      std::vector<float> ratio;
      bool zeroRatio = hasRatio && inputs[1].hasValue() && inputs[1].readFloats(&ratio, "ratio").isOk() &&
                       ratio.size() == 1 && ratio[0] == 0.f;
      if (!zeroRatio)
        return Status::unsupported("training_mode=true with a nonzero ratio (random dropout) is not supported");
    }
  }
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = inputs[0].shape;
  if (outputs.size() > 1) {
    outputs[1].dtype = DataType::Bool;
    outputs[1].shape = inputs[0].shape;
  }
  return Status::ok();
}

Status lowerDropout(const Node& node, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  OSPREY_RETURN_IF_ERROR(lowerToCopy(node, inputs, outputs, plans));
  if (plans.size() > 1) {
    plans[1].fill = true;  // the mask: nothing dropped
    plans[1].fillValue = 1.0;
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Reshape = {OpType::Reshape, "Reshape", 2, 2, 1, 1, reshapeShape, nullptr, lowerToCopy, 1u << 1, false};
const OpDef kOpDef_Flatten = {OpType::Flatten, "Flatten", 1, 1, 1, 1, flattenShape, nullptr, lowerToCopy, 0, false};
const OpDef kOpDef_Squeeze = {OpType::Squeeze, "Squeeze", 1, 2, 1, 1, squeezeShape, nullptr, lowerToCopy, 1u << 1, false};
const OpDef kOpDef_Unsqueeze = {OpType::Unsqueeze, "Unsqueeze", 2, 2, 1, 1, unsqueezeShape, nullptr, lowerToCopy, 1u << 1, false};
const OpDef kOpDef_Identity = {OpType::Identity, "Identity", 1, 1, 1, 1, identityShape, nullptr, lowerToCopy, 0, false,
                               false, 0, identityOnHost};
const OpDef kOpDef_Dropout = {OpType::Dropout, "Dropout", 1, 3, 1, 2, dropoutShape, nullptr, lowerDropout, 1u << 2, false};

}  // namespace osprey
