// Computing an op on the host from known inputs: the session's constant folding at resize and
// the converter's constant folding share this.
#pragma once
#include <memory>
#include <vector>

#include "ops/op_def.h"

namespace osprey {

// Shape computation, with the sizes of inputs and outputs checked against 64 bits.
Status computeShapes(const Node& node, TensorViews& inputs, TensorViews& outputs);
// The op's lowering to Raster, where it has one and its outputs hold any element; `rasters` is
// empty when the op is not lowered. Sessions check the outputs' sizes in between, since a
// lowering may allocate per output index.
Status computeLowering(const Node& node, const TensorViews& inputs, const TensorViews& outputs,
                       std::vector<RasterPlan>* rasters);
// Both, for callers without a memory limit (the converter's folding).
Status computeShapesAndLowering(const Node& node, TensorViews& inputs, TensorViews& outputs,
                                std::vector<RasterPlan>* rasters);
// Executes the op on the host: outputs already hold their shape, dtype and allocated data.
Status executeOnHost(const Node& node, const TensorViews& inputs, TensorViews& outputs,
                     const std::vector<RasterPlan>& rasters, ThreadPool* pool);
// True when the op has outputs and none holds an element: its kernel has nothing to write, yet
// would still loop over the non-zero dims, 2^58 times for an empty [2^58, 0] input.
bool outputsAllEmpty(const TensorViews& outputs);
// A 64-byte aligned, zeroed host block.
std::shared_ptr<uint8_t> allocateHost(size_t bytes);

}  // namespace osprey
