// Transpose: output dimension i is input dimension perm[i]. Lowers to one strided box copy.
#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status readPerm(const Node& node, const TensorView& input, std::vector<int64_t>* perm) {
  const int64_t rank = input.rank();
  if (!node.hasAttr("perm")) {  // default: reverse the dimensions
    perm->resize(rank);
    for (int64_t i = 0; i < rank; ++i) (*perm)[i] = rank - 1 - i;
    return Status::ok();
  }
  *perm = node.getInts("perm");
  if (static_cast<int64_t>(perm->size()) != rank)
    return Status::invalidModel("perm " + shapeToString(*perm) + " has " + std::to_string(perm->size()) +
                                " entries but the input " + shapeToString(input.shape) + " has rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank || seen[p])
      return Status::invalidModel("perm " + shapeToString(*perm) + " is not a permutation of the input's " +
                                  std::to_string(rank) + " dimensions");
    seen[p] = true;
  }
  return Status::ok();
}

Status transposeShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  std::vector<int64_t> perm;
  OSPREY_RETURN_IF_ERROR(readPerm(node, inputs[0], &perm));
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = inputs[0].shape[perm[i]];
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

Status lowerTranspose(const Node& node, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  std::vector<int64_t> perm;
  OSPREY_RETURN_IF_ERROR(readPerm(node, inputs[0], &perm));
  const std::vector<int64_t> inStrides = stridesOf(inputs[0].shape);
  std::vector<int64_t> srcStrides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) srcStrides[i] = inStrides[perm[i]];
  plans.assign(1, RasterPlan());
  appendBoxCopy(plans[0].regions, 0, 0, srcStrides, 0, stridesOf(outputs[0].shape), outputs[0].shape);
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Transpose = {OpType::Transpose, "Transpose", 1, 1, 1, 1, transposeShape, nullptr, lowerTranspose, 0, false};

}  // namespace osprey
