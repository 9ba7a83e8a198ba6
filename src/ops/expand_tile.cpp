// Expand (bidirectional broadcast to a shape) and Tile (repeat along each axis). Both lower
// to box copies whose repeated dimensions read the source with stride 0.
#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status readShapeInput(const TensorView& v, const char* what, std::vector<int64_t>* out) {
  if (v.rank() != 1) return Status::invalidModel(std::string(what) + " must be 1-D, got shape " + shapeToString(v.shape));
  OSPREY_RETURN_IF_ERROR(v.readInts(out, what));
  for (int64_t d : *out)
    if (d < 0) return Status::invalidModel(std::string(what) + " " + shapeToString(*out) + " has a negative value");
  return Status::ok();
}

Status expandShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  std::vector<int64_t> shape;
  OSPREY_RETURN_IF_ERROR(readShapeInput(inputs[1], "shape input", &shape));
  Shape out;
  OSPREY_RETURN_IF_ERROR(broadcastShapes(inputs[0].shape, shape, &out));
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

Status lowerExpand(const Node&, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  const Shape& out = outputs[0].shape;
  plans.assign(1, RasterPlan());
  appendBoxCopy(plans[0].regions, 0, 0, broadcastStrides(inputs[0].shape, out.size(), out), 0, stridesOf(out), out);
  return Status::ok();
}

Status tileShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  std::vector<int64_t> repeats;
  OSPREY_RETURN_IF_ERROR(readShapeInput(inputs[1], "repeats", &repeats));
  if (static_cast<int64_t>(repeats.size()) != inputs[0].rank())
    return Status::invalidModel("repeats " + shapeToString(repeats) + " must have one entry per dimension of input shape " +
                                shapeToString(inputs[0].shape));
  Shape out = inputs[0].shape;
  for (size_t d = 0; d < out.size(); ++d)
    if (__builtin_mul_overflow(out[d], repeats[d], &out[d]))
      return Status::invalidModel("repeats " + shapeToString(repeats) + " take input shape " +
                                  shapeToString(inputs[0].shape) + " beyond int64");
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

// Output dimension d is viewed as [repeats[d], in[d]]: the repeat index moves the destination
// by one input-sized block and leaves the source where it is.
Status lowerTile(const Node&, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  const Shape& in = inputs[0].shape;
  const Shape& out = outputs[0].shape;
  const std::vector<int64_t> inStrides = stridesOf(in), outStrides = stridesOf(out);
  Shape sizes;
  std::vector<int64_t> srcStrides, dstStrides;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t repeats = in[d] == 0 ? 0 : out[d] / in[d];
    sizes.insert(sizes.end(), {repeats, in[d]});
    srcStrides.insert(srcStrides.end(), {0, inStrides[d]});
    dstStrides.insert(dstStrides.end(), {in[d] * outStrides[d], outStrides[d]});
  }
  plans.assign(1, RasterPlan());
  appendBoxCopy(plans[0].regions, 0, 0, srcStrides, 0, dstStrides, sizes);
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Expand = {OpType::Expand, "Expand", 2, 2, 1, 1, expandShape, nullptr, lowerExpand, 1u << 1, false};
const OpDef kOpDef_Tile = {OpType::Tile, "Tile", 2, 2, 1, 1, tileShape, nullptr, lowerTile, 1u << 1, false};

}  // namespace osprey
