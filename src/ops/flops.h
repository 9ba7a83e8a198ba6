#pragma once
#include "ops/op_def.h"

namespace osprey {
// Floating-point operations of one op at the given shapes (2 per multiply-add); ops other
// than Conv, ConvTranspose, MatMul and Gemm count one per output element.
int64_t opFlops(const Node& node, const TensorViews& inputs, const TensorViews& outputs);
}  // namespace osprey
