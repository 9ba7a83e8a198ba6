#pragma once
#include "ops/op_def.h"

namespace osprey {
// Floating-point operations of one op at the given shapes (2 per multiply-add); ops other
// than Conv, ConvTranspose, MatMul and Gemm count one per output element.
int64_t opFlops(const Node& node, const TensorViews& inputs, const TensorViews& outputs);

// Whether an op whose inputs are all known is cheap enough to compute once, at conversion or
// resize. Past this (a pooling window of millions of taps) it stays an op, run under the run's
// time limit, instead of stalling a conversion or a resize that has none.
inline bool worthFolding(const Node& node, const TensorViews& inputs, const TensorViews& outputs) {
  constexpr int64_t kMaxFoldFlops = int64_t{1} << 26;
  return opFlops(node, inputs, outputs) <= kMaxFoldFlops;
}
}  // namespace osprey
