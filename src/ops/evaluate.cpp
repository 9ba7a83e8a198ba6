#include "ops/evaluate.h"

#include <cstdlib>
#include <cstring>

#include "geometry/raster.h"

namespace osprey {

Status computeShapes(const Node& node, TensorViews& inputs, TensorViews& outputs) {
  const OpDef& def = opDef(node.type);
  // Shape functions and kernels compute strides and byte sizes in int64 without checking.
  for (auto& in : inputs)
    if (in.present && !shapeBytesFit(in.shape, dataTypeSize(in.dtype)))
      return Status::invalidArgument(node.describe() + " reads a tensor of shape " + shapeToString(in.shape) +
                                     ", whose size overflows 64 bits");
  if (!def.shape) return Status::internal(node.describe() + " runs only on the host, on whole values (OpDef::hostRun)");
  OSPREY_RETURN_IF_ERROR_IN(def.shape(node, inputs, outputs), node.describe());
  for (auto& o : outputs) {
    for (int64_t d : o.shape)
      if (d < 0) return Status::internal(node.describe() + " computed a negative dimension");
    if (!shapeBytesFit(o.shape, dataTypeSize(o.dtype)))
      return Status::invalidModel(node.describe() + " gives an output of shape " + shapeToString(o.shape) +
                                  ", whose size overflows 64 bits");
  }
  return Status::ok();
}

Status computeLowering(const Node& node, const TensorViews& inputs, const TensorViews& outputs,
                       std::vector<RasterPlan>* rasters) {
  const OpDef& def = opDef(node.type);
  rasters->clear();
  // Nothing to write: empty plans, since one made over a 2^34-long empty axis would not fit.
  if (def.lower && outputsAllEmpty(outputs)) {
    rasters->assign(outputs.size(), RasterPlan());
    return Status::ok();
  }
  if (def.lower) {
    OSPREY_RETURN_IF_ERROR_IN(def.lower(node, inputs, outputs, *rasters), node.describe());
    for (auto& plan : *rasters) fuseRegions(plan.regions);
  }
  return Status::ok();
}

Status computeShapesAndLowering(const Node& node, TensorViews& inputs, TensorViews& outputs,
                                std::vector<RasterPlan>* rasters) {
  rasters->clear();
  OSPREY_RETURN_IF_ERROR(computeShapes(node, inputs, outputs));
  return computeLowering(node, inputs, outputs, rasters);
}

bool outputsAllEmpty(const TensorViews& outputs) {
  bool any = false;
  for (const TensorView& o : outputs) {
    if (!o.present) continue;
    if (o.elements() != 0) return false;
    any = true;
  }
  return any;
}

Status executeOnHost(const Node& node, const TensorViews& inputs, TensorViews& outputs,
                     const std::vector<RasterPlan>& rasters, ThreadPool* pool) {
  if (outputsAllEmpty(outputs)) return Status::ok();
  if (!rasters.empty()) {
    std::vector<const void*> srcs;
    for (auto& v : inputs) srcs.push_back(v.data);
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].present)
        executeRaster(rasters[i], srcs, outputs[i].data, outputs[i].elements(),
                      static_cast<int>(dataTypeSize(outputs[i].dtype)), static_cast<int>(outputs[i].dtype));
    return Status::ok();
  }
  const OpDef& def = opDef(node.type);
  if (!def.reference) return Status::unsupported(node.describe() + " has no reference kernel");
  OSPREY_RETURN_IF_ERROR_IN(def.reference(node, inputs, outputs, pool), node.describe());
  return Status::ok();
}

std::shared_ptr<uint8_t> allocateHost(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
  if (!p) return nullptr;
  std::memset(p, 0, rounded);
  return std::shared_ptr<uint8_t>(p, [](uint8_t* q) { std::free(q); });
}

}  // namespace osprey
