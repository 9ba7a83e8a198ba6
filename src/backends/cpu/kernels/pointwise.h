// Which ops and fused activations the function table's pointwise kernel computes, and with what
// parameters. The kernels themselves: pointwise.cpp (portable) and pointwise_avx2.cpp.
#pragma once
#include "backends/cpu/kernels/cpu_functions.h"
#include "core/graph.h"
#include "ops/activation.h"

namespace osprey {

// A float op with one input that the pointwise kernel computes exactly as its reference kernel
// defines it (to within a few ulp for the transcendental ones).
bool pointwiseOfNode(const Node& node, Pointwise* out);
// The same for an activation fused into a Conv / Gemm / MatMul (Sigmoid, Swish and Gelu have
// table entries of their own and are not mapped here).
bool pointwiseOfActivation(const FusedActivation& act, Pointwise* out);

}  // namespace osprey
