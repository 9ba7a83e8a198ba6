// Ops whose inputs are all constants are computed once, here, with the same host evaluation the
// runtime uses at resize.
#include "converter/passes/passes.h"
#include "ops/evaluate.h"
#include "ops/flops.h"

namespace osprey::passes {

namespace {
// Folding must not turn a small recipe (ConstantOfShape, Expand, Tile) into a large file.
constexpr size_t kMaxGrowthBytes = 1 << 20;
}  // namespace

bool foldNode(Graph& g, const Node& node, bool shapesOnly) {
  // Sequences and optionals are values of a run, never constants.
  if (opDef(node.type).hostOnly) return false;
  for (int o : node.outputs)
    if (o >= 0 && (g.tensors[o].dtype == DataType::Sequence || g.tensors[o].optional)) return false;
  size_t inputBytes = 0;
  TensorViews in(node.inputs.size()), out(node.outputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    int idx = node.inputs[i];
    if (idx < 0) {
      in[i].present = false;
      continue;
    }
    const TensorInfo& t = g.tensors[idx];
    in[i].dtype = t.dtype;
    in[i].shape = t.shape;
    if (shapesOnly && !t.isConstant) {  // readsShapesOnly ops: the shape is all they read
      if (!t.hasShape || t.dtype == DataType::Undefined) return false;
      for (int64_t d : t.shape)
        if (d < 0) return false;
      continue;
    }
    if (!t.isConstant || t.dtype == DataType::String) return false;
    in[i].data = const_cast<uint8_t*>(t.data.bytes.get());
    inputBytes += t.data.size;
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) out[i].present = node.outputs[i] >= 0;
  // A failing op is left for the runtime, which reports it with the shapes it sees.
  if (!computeShapes(node, in, out).isOk()) return false;
  size_t outputBytes = 0;
  bool stringOut = false;
  for (auto& o : out) {
    outputBytes += o.bytes();
    stringOut |= o.dtype == DataType::String;
  }
  // Sizes are checked before lowering, whose regions can outnumber the output's elements.
  if (stringOut || outputBytes > inputBytes + kMaxGrowthBytes || !worthFolding(node, in, out)) return false;
  std::vector<RasterPlan> rasters;
  if (!computeLowering(node, in, out, &rasters).isOk() || (rasters.empty() && !opDef(node.type).reference))
    return false;
  std::vector<std::shared_ptr<uint8_t>> blocks;
  for (auto& o : out) {
    if (!o.present) continue;
    blocks.push_back(allocateHost(o.bytes()));
    if (!blocks.back()) return false;
    o.data = blocks.back().get();
  }
  if (!executeOnHost(node, in, out, rasters, nullptr).isOk()) return false;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] < 0) continue;
    TensorInfo& t = g.tensors[node.outputs[i]];
    t.dtype = out[i].dtype;
    t.shape = out[i].shape;
    t.hasShape = true;
    t.isConstant = true;
    t.data = ConstantData::copyOf(out[i].data, out[i].bytes());
  }
  return true;
}

Status foldConstants(Graph& g, int* folded) {
  *folded = 0;
  std::vector<Node> kept;
  for (auto& node : g.nodes) {
    if (foldNode(g, node, false)) {
      ++*folded;
      continue;
    }
    kept.push_back(std::move(node));
  }
  g.nodes = std::move(kept);
  return Status::ok();
}

}  // namespace osprey::passes
