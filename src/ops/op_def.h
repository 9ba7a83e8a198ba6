// What every op provides, independent of any backend: shape computation, a reference kernel
// (the oracle every backend is tested against) and, for pure data movement, a lowering to Raster.
#pragma once
#include <vector>

#include "core/graph.h"
#include "core/tensor_view.h"
#include "core/raster_plan.h"

namespace osprey {

class ThreadPool;

using TensorViews = std::vector<TensorView>;

// Fills outputs[i].dtype and .shape. Inputs carry dtype and shape; .data is set when the value
// is known at resize time (constants and folded tensors).
using ShapeFn = Status (*)(const Node& node, const TensorViews& inputs, TensorViews& outputs);
// Computes outputs from inputs; all views hold data, outputs are allocated to their shapes.
using KernelFn = Status (*)(const Node& node, const TensorViews& inputs, TensorViews& outputs,
                            ThreadPool* pool);
// Describes each output as strided copies from the inputs (one RasterPlan per output, in
// output order). Leaving `plans` empty declines: the op then runs its reference kernel.
using LowerFn = Status (*)(const Node& node, const TensorViews& inputs, const TensorViews& outputs,
                           std::vector<RasterPlan>& plans);
// Runs the node on the host between planned stages, on whole values: an input view carries
// `value` where the host holds one (a sequence), `present` false for an absent optional; the
// results are any values (tensors, sequences, or empty Tensors for absent optionals).
using HostRunFn = Status (*)(const Node& node, const TensorViews& inputs, std::vector<Tensor>* outputs);

struct OpDef {
  OpType type = OpType::Invalid;
  const char* name = "";
  int minInputs = 1, maxInputs = 1;    // maxInputs -1: variadic
  int minOutputs = 1, maxOutputs = 1;
  ShapeFn shape = nullptr;
  KernelFn reference = nullptr;
  LowerFn lower = nullptr;
  uint32_t valueInputs = 0;      // bit i: shape computation needs the value of input i
  bool dataDependentShape = false;  // output shape needs every input's value (NonZero, ...)
  bool readsShapesOnly = false;     // the kernel reads input shapes, never values (Shape, Size)
  uint32_t mayBeEmpty = 0;          // bit i: input i holds its place but may be empty (Loop's M, cond)
  // How the node runs when it is a stage boundary (it reads or makes a sequence or an optional
  // value, or its shapes depend on data); null: the shape function and the reference kernel.
  HostRunFn hostRun = nullptr;
  bool hostOnly = false;  // never planned nor folded: it makes or reads sequences / optionals
};

// The definition of every op in ops.def.
const OpDef& opDef(OpType type);
// Checks each node against its OpDef: input and output counts, required inputs present.
Status checkOpArity(const Graph& graph);

// Each op's file defines its OpDef(s); an op listed in the catalog without one fails to link.
#define OSPREY_OP(name) extern const OpDef kOpDef_##name;
#include "core/ops.def"
#undef OSPREY_OP

}  // namespace osprey
