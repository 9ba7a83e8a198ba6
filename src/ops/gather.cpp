// Gather: picks slices of data along `axis` by index. The indices are usually runtime data,
// so this is a reference kernel; when they are known at resize time (constant indices, a
// frequent x[:, 3]) the op lowers to one box copy per index instead.
#include <cstring>

#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// Above this many known indices the lowering declines; the kernel handles any count.
constexpr int64_t kMaxLoweredIndices = 1024;

struct GatherDims {
  int64_t axis = 0, outer = 1, axisLen = 0, inner = 1, count = 0;  // count: number of indices
};

Status gatherDims(const Node& node, const TensorViews& inputs, GatherDims* g) {
  const Shape& data = inputs[0].shape;
  if (data.empty()) return Status::invalidModel("data must have rank 1 or more, got a scalar");
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), inputs[0].rank(), &g->axis)
                             .withContext("data shape " + shapeToString(data)));
  for (int64_t d = 0; d < g->axis; ++d) g->outer *= data[d];
  for (size_t d = g->axis + 1; d < data.size(); ++d) g->inner *= data[d];
  g->axisLen = data[g->axis];
  g->count = inputs[1].elements();
  return Status::ok();
}

Status readIndex(const TensorView& indices, int64_t j, int64_t axisLen, int64_t* out) {
  const int64_t raw = indices.dtype == DataType::Int64 ? indices.as<const int64_t>()[j] : indices.as<const int32_t>()[j];
  const int64_t idx = raw < 0 ? raw + axisLen : raw;
  if (idx < 0 || idx >= axisLen)
    return Status::invalidArgument("index " + std::to_string(raw) + " (at position " + std::to_string(j) +
                                   " of indices) is out of range for a dimension of size " + std::to_string(axisLen));
  *out = idx;
  return Status::ok();
}

Status gatherShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  if (inputs[1].dtype != DataType::Int32 && inputs[1].dtype != DataType::Int64)
    return Status::invalidModel("indices must be int32 or int64, not " + std::string(dataTypeName(inputs[1].dtype)));
  GatherDims g;
  OSPREY_RETURN_IF_ERROR(gatherDims(node, inputs, &g));
  const Shape& data = inputs[0].shape;
  Shape out(data.begin(), data.begin() + g.axis);
  out.insert(out.end(), inputs[1].shape.begin(), inputs[1].shape.end());
  out.insert(out.end(), data.begin() + g.axis + 1, data.end());
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = out;
  return Status::ok();
}

Status gatherReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool*) {
  GatherDims g;
  OSPREY_RETURN_IF_ERROR(gatherDims(node, inputs, &g));
  const size_t block = static_cast<size_t>(g.inner) * dataTypeSize(inputs[0].dtype);
  const auto* src = static_cast<const uint8_t*>(inputs[0].data);
  auto* dst = static_cast<uint8_t*>(outputs[0].data);
  for (int64_t j = 0; j < g.count; ++j) {
    int64_t idx;
    OSPREY_RETURN_IF_ERROR(readIndex(inputs[1], j, g.axisLen, &idx));
    for (int64_t o = 0; o < g.outer; ++o)
      std::memcpy(dst + (o * g.count + j) * block, src + (o * g.axisLen + idx) * block, block);
  }
  return Status::ok();
}

Status lowerGather(const Node& node, const TensorViews& inputs, const TensorViews&, std::vector<RasterPlan>& plans) {
  if (!inputs[1].hasValue()) return Status::ok();  // declined: indices arrive at run time
  GatherDims g;
  OSPREY_RETURN_IF_ERROR(gatherDims(node, inputs, &g));
  if (g.count > kMaxLoweredIndices) return Status::ok();
  RasterPlan plan;
  for (int64_t j = 0; j < g.count; ++j) {
    int64_t idx;
    OSPREY_RETURN_IF_ERROR(readIndex(inputs[1], j, g.axisLen, &idx));
    appendBoxCopy(plan.regions, 0, idx * g.inner, {g.axisLen * g.inner, 1}, j * g.inner, {g.count * g.inner, 1},
                  {g.outer, g.inner});
  }
  plans.assign(1, std::move(plan));
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Gather = {OpType::Gather, "Gather", 2, 2, 1, 1, gatherShape, gatherReference, lowerGather, 0, false};

}  // namespace osprey
