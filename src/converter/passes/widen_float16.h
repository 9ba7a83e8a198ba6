// Float16 models on a backend without float16 arithmetic (the CPU): instead of running every op
// of such a model on its reference kernel, a session runs a copy of the graph that is float32
// inside (runtime/float16_widening.h). The model, and the .osp the converter writes, stay as
// written.
#pragma once
#include "core/graph.h"

namespace osprey::passes {

// Rewrites g so that the ops that compute the same in float32, up to rounding (Conv, MatMul,
// elementwise math, normalisations, data movement ...), read and write float32 where g has
// float16. Float16 constants become float32 constants; Casts are inserted only where float16 must
// stay:
//  - the graph's inputs and outputs keep their dtypes;
//  - ops the rewrite does not cover (QuantizeLinear, If, Loop ...) run as written, on float16;
//  - a Cast to float16 still rounds, and is followed by a Cast back where a widened op reads it;
//  - a Cast of a widened tensor to float32 disappears.
// Returns the number of ops that now compute on float32 instead of float16. 0 leaves g as it
// was: it has nothing float16 to widen, or a float16 tensor meets, as an input of the same type
// of one op, a tensor whose dtype g does not tell.
int widenFloat16(Graph& g);

}  // namespace osprey::passes
