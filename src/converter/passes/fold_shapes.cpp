// With every graph input's shape fixed, the shape of every tensor is fixed too, except where it
// depends on values only known at run time. This pass computes those shapes with the runtime's
// own shape functions, records them in TensorInfo for later passes, and replaces Shape/Size by
// constants so that the shape arithmetic after them folds. The runtime rejects inputs that
// contradict a fixed declared shape (SessionImpl::resize), so the constants cannot go stale.
#include "converter/passes/passes.h"
#include "ops/evaluate.h"

namespace osprey::passes {

namespace {

bool staticShape(const TensorInfo& t) {
  if (!t.hasShape || t.dtype == DataType::Undefined) return false;
  for (int64_t d : t.shape)
    if (d < 0) return false;
  return true;
}

bool hasSubgraph(const Node& node) {
  for (auto& a : node.attrs)
    if (a.kind == Attribute::Kind::Graph) return true;
  return false;
}

// Shapes and dtypes of the node's outputs from known input shapes and constant values, as the
// runtime computes them at resize; false when any of that is unknown or the shape function fails.
bool inferNode(const Graph& g, const Node& node, const std::vector<bool>& known, TensorViews* outViews) {
  const OpDef& def = opDef(node.type);
  if (hasSubgraph(node) || !def.shape || def.hostOnly) return false;
  TensorViews in(node.inputs.size()), out(node.outputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int idx = node.inputs[i];
    if (idx < 0) {
      in[i].present = false;
      continue;
    }
    const TensorInfo& t = g.tensors[idx];
    if (!known[idx] || t.dtype == DataType::Sequence || t.optional) return false;
    in[i].dtype = t.dtype;
    in[i].shape = t.shape;
    if (t.isConstant) {
      if (t.dtype == DataType::String)
        in[i].strings = &t.data.strings;
      else
        in[i].data = const_cast<uint8_t*>(t.data.bytes ? t.data.bytes.get() : reinterpret_cast<const uint8_t*>(""));
    } else if (((def.valueInputs >> i) & 1u) || def.dataDependentShape) {
      return false;  // the shape needs a value known only at run time
    }
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) out[i].present = node.outputs[i] >= 0;
  // Shapes only: lowering adds nothing to them, and its regions can outnumber the elements of
  // a large output (a fuzzer's Tile of huge multiples took gigabytes here).
  if (!computeShapes(node, in, out).isOk()) return false;
  *outViews = std::move(out);
  return true;
}

}  // namespace

int foldShapes(Graph& g) {
  for (int i : g.inputs)
    if (!g.tensors[i].hasShape) return 0;
  for (int i : g.inputs)
    for (int64_t d : g.tensors[i].shape)
      if (d < 0) return 0;
  std::vector<bool> known(g.tensors.size(), false);
  for (size_t i = 0; i < g.tensors.size(); ++i) known[i] = g.tensors[i].isConstant && g.tensors[i].hasShape;
  for (int i : g.inputs) known[i] = staticShape(g.tensors[i]);
  int rewritten = 0;
  std::vector<Node> kept;
  for (auto& node : g.nodes) {
    bool allKnown = true, allConstant = true;
    for (int i : node.inputs) {
      if (i < 0) continue;
      allKnown &= known[i];
      allConstant &= g.tensors[i].isConstant;
    }
    // Constants and Shape/Size of a known shape become constants (the latter is what this pass
    // is for; the former lets the shape arithmetic after them fold in the same walk).
    const bool shapesOnly = opDef(node.type).readsShapesOnly;
    if (!hasSubgraph(node) && ((allConstant && foldNode(g, node, false)) || (allKnown && shapesOnly && foldNode(g, node, true)))) {
      for (int o : node.outputs)
        if (o >= 0) known[o] = true;
      ++rewritten;
      continue;
    }
    TensorViews out;
    if (allKnown && inferNode(g, node, known, &out)) {
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        const int o = node.outputs[i];
        if (o < 0 || g.tensors[o].isConstant) continue;
        TensorInfo& t = g.tensors[o];
        t.dtype = out[i].dtype;
        t.shape = out[i].shape;
        t.hasShape = true;
        t.dimNames.clear();
        known[o] = true;
      }
    }
    kept.push_back(std::move(node));
  }
  g.nodes = std::move(kept);
  return rewritten;
}

}  // namespace osprey::passes
