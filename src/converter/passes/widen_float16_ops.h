// What widenFloat16 (widen_float16.h) knows of each op's dtypes: which ops compute the same in
// float32 as in float16 (only rounding differs), and the dtype of the outputs of the others.
#pragma once
#include <cstdint>
#include <functional>

#include "core/graph.h"

namespace osprey::passes::float16 {

// Whether an input or output is float16 in the graph as written. Unknown: the graph does not
// say (an undeclared input, the output of an op the rules below do not cover).
enum class Half { No, Yes, Unknown };

// For an op that may run on float32 in place of float16: its inputs of the op's float type T
// (bit i for input i), which must all be float16 or none; the others are indices, shapes, or
// floats of a type of their own (Resize's scales, Pow's exponent). False for the other ops.
bool widenable(const Node& node, uint32_t* typedInputs);

// The dtype of output `i` of a widenable op when it is not T (indices, masks, LayerNorm's
// statistics in stash_type); Undefined when it is T.
DataType fixedOutputDtype(const Node& node, size_t i);

// For an op whose output dtypes an attribute or one particular input sets (Cast's `to`,
// ConstantOfShape's value, CastLike's second input, If's branch outputs, ...): whether output
// `i` is float16, in *half; `input(k)` tells the same of input k. False for the other ops, whose
// float outputs are float16 only where a float input is.
bool halfFromAttributes(const Node& node, size_t i, const std::function<Half(size_t)>& input, Half* half);

}  // namespace osprey::passes::float16
