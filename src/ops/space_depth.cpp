// DepthToSpace, SpaceToDepth (NCHW, blocksize b) and CenterCropPad: pure data movement,
// lowered to Raster box copies.
//
// DepthToSpace DCR: channel (b1 * b + b2) * C' + c goes to output channel c at pixel
// (h * b + b1, w * b + b2); CRD instead reads channel (c * b + b1) * b + b2. SpaceToDepth is the
// inverse of DCR. CenterCropPad crops or zero-pads the given axes around their centre
// (crop start and left padding round down).
#include <string>

#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

struct BlockDims {
  int64_t n, c, h, w, b;  // the input's NCHW and the block size
};

Status blockDims(const Node& node, const TensorView& x, BlockDims* d) {
  if (dataTypeSize(x.dtype) == 0) return Status::unsupported(dtypeError(x, "input"));
  if (x.rank() != 4) return Status::invalidModel("input must be 4-D NCHW, got shape " + shapeToString(x.shape));
  if (!node.hasAttr("blocksize")) return Status::invalidModel("blocksize attribute is required");
  const int64_t b = node.getInt("blocksize", 0);
  // Above the spatial or channel extent no shape can divide evenly; the bound also keeps b * b finite.
  if (b < 1 || b > (int64_t(1) << 24)) return Status::invalidModel("blocksize " + std::to_string(b) + " is out of range");
  *d = {x.shape[0], x.shape[1], x.shape[2], x.shape[3], b};
  return Status::ok();
}

Status depthModeIsCrd(const Node& node, bool* crd) {
  const std::string mode = node.getString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return Status::invalidModel("mode '" + mode + "' is not DCR or CRD");
  *crd = mode == "CRD";
  return Status::ok();
}

Status depthToSpaceShape(const Node& node, const TensorViews& in, TensorViews& out) {
  BlockDims d;
  OSPREY_RETURN_IF_ERROR(blockDims(node, in[0], &d));
  bool crd;
  OSPREY_RETURN_IF_ERROR(depthModeIsCrd(node, &crd));
  if (d.c % (d.b * d.b) != 0)
    return Status::invalidModel("channels " + std::to_string(d.c) + " of input " + shapeToString(in[0].shape) +
                                " are not divisible by blocksize^2 = " + std::to_string(d.b * d.b));
  out[0].dtype = in[0].dtype;
  out[0].shape = {d.n, d.c / (d.b * d.b), d.h * d.b, d.w * d.b};
  return Status::ok();
}

Status lowerDepthToSpace(const Node& node, const TensorViews& in, const TensorViews&, std::vector<RasterPlan>& plans) {
  BlockDims d;
  OSPREY_RETURN_IF_ERROR(blockDims(node, in[0], &d));
  bool crd;
  OSPREY_RETURN_IF_ERROR(depthModeIsCrd(node, &crd));
  const int64_t b = d.b, oc = d.c / (b * b), hw = d.h * d.w, ow = d.w * b;
  // Box over (n, b1, b2, c', h, w): the block offsets lead, so each region copies whole planes.
  const int64_t cStride = crd ? b * b * hw : hw;
  const int64_t b1Stride = crd ? b * hw : b * oc * hw, b2Stride = crd ? hw : oc * hw;
  const std::vector<int64_t> src = {d.c * hw, b1Stride, b2Stride, cStride, d.w, 1};
  const std::vector<int64_t> dst = {oc * d.h * b * ow, ow, 1, d.h * b * ow, b * ow, b};
  plans.assign(1, RasterPlan());
  appendBoxCopy(plans[0].regions, 0, 0, src, 0, dst, {d.n, b, b, oc, d.h, d.w});
  return Status::ok();
}

Status spaceToDepthShape(const Node& node, const TensorViews& in, TensorViews& out) {
  BlockDims d;
  OSPREY_RETURN_IF_ERROR(blockDims(node, in[0], &d));
  if (d.h % d.b != 0 || d.w % d.b != 0)
    return Status::invalidModel("spatial dims of input " + shapeToString(in[0].shape) + " are not divisible by blocksize " +
                                std::to_string(d.b));
  out[0].dtype = in[0].dtype;
  out[0].shape = {d.n, d.c * d.b * d.b, d.h / d.b, d.w / d.b};
  return Status::ok();
}

Status lowerSpaceToDepth(const Node& node, const TensorViews& in, const TensorViews&, std::vector<RasterPlan>& plans) {
  BlockDims d;
  OSPREY_RETURN_IF_ERROR(blockDims(node, in[0], &d));
  const int64_t b = d.b, oh = d.h / b, ow = d.w / b, ohw = oh * ow;
  // Output channel (b1 * b + b2) * C + c holds input pixel (h * b + b1, w * b + b2) of channel c.
  const std::vector<int64_t> src = {d.c * d.h * d.w, d.w, 1, d.h * d.w, b * d.w, b};
  const std::vector<int64_t> dst = {d.c * b * b * ohw, b * d.c * ohw, d.c * ohw, ohw, ow, 1};
  plans.assign(1, RasterPlan());
  appendBoxCopy(plans[0].regions, 0, 0, src, 0, dst, {d.n, b, b, d.c, oh, ow});
  return Status::ok();
}

// ---- CenterCropPad ----

// Target size per dimension of the input (unchanged where no axis names it).
Status cropTargets(const Node& node, const TensorViews& in, Shape* target) {
  if (dataTypeSize(in[0].dtype) == 0) return Status::unsupported(dtypeError(in[0], "input_data"));
  const int64_t rank = in[0].rank();
  std::vector<int64_t> sizes;
  if (in[1].rank() != 1) return Status::invalidModel("shape (input 1) must be 1-D, got shape " + shapeToString(in[1].shape));
  OSPREY_RETURN_IF_ERROR(in[1].readInts(&sizes, "shape (input 1)"));
  std::vector<int64_t> axes;
  if (node.hasAttr("axes")) {
    OSPREY_RETURN_IF_ERROR(normalizeAxes(node.getInts("axes"), rank, &axes).withContext("axes of input_data " + shapeToString(in[0].shape)));
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (sizes.size() != axes.size())
    return Status::invalidModel("shape (input 1) has " + std::to_string(sizes.size()) + " values for " + std::to_string(axes.size()) +
                                " axes of input_data " + shapeToString(in[0].shape));
  *target = in[0].shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) return Status::invalidModel("shape (input 1) holds a negative size " + std::to_string(sizes[i]));
    (*target)[axes[i]] = sizes[i];
  }
  return Status::ok();
}

Status centerCropPadShape(const Node& node, const TensorViews& in, TensorViews& out) {
  Shape target;
  OSPREY_RETURN_IF_ERROR(cropTargets(node, in, &target));
  out[0].dtype = in[0].dtype;
  out[0].shape = target;
  return Status::ok();
}

Status lowerCenterCropPad(const Node& node, const TensorViews& in, const TensorViews&, std::vector<RasterPlan>& plans) {
  Shape target;
  OSPREY_RETURN_IF_ERROR(cropTargets(node, in, &target));
  const Shape& shape = in[0].shape;
  const std::vector<int64_t> srcStrides = stridesOf(shape), dstStrides = stridesOf(target);
  Shape box(shape.size());
  int64_t srcOffset = 0, dstOffset = 0;
  RasterPlan plan;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (target[d] <= shape[d]) {
      box[d] = target[d];
      srcOffset += (shape[d] - target[d]) / 2 * srcStrides[d];
    } else {
      box[d] = shape[d];
      dstOffset += (target[d] - shape[d]) / 2 * dstStrides[d];
      plan.fill = true;
    }
  }
  plan.fillValue = 0.0;
  appendBoxCopy(plan.regions, 0, srcOffset, srcStrides, dstOffset, dstStrides, box);
  plans.assign(1, std::move(plan));
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_DepthToSpace = {OpType::DepthToSpace, "DepthToSpace", 1, 1, 1, 1,
                                   depthToSpaceShape, nullptr, lowerDepthToSpace, 0, false};
const OpDef kOpDef_SpaceToDepth = {OpType::SpaceToDepth, "SpaceToDepth", 1, 1, 1, 1,
                                   spaceToDepthShape, nullptr, lowerSpaceToDepth, 0, false};
const OpDef kOpDef_CenterCropPad = {OpType::CenterCropPad, "CenterCropPad", 2, 2, 1, 1,
                                    centerCropPadShape, nullptr, lowerCenterCropPad, 0b10, false};

}  // namespace osprey
