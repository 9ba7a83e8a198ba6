// Fusions: BatchNormalization folded into the preceding Conv's weights, activations folded
// into Conv / ConvTranspose / Gemm as the `activation` attribute, and x * Sigmoid(x) into Swish.
#include <cmath>
#include <limits>

#include "converter/passes/passes.h"
#include "ops/activation.h"

namespace osprey::passes {

namespace {

const TensorInfo* floatConstant(const Graph& g, int idx) {
  if (idx < 0) return nullptr;
  const TensorInfo& t = g.tensors[idx];
  return t.isConstant && t.dtype == DataType::Float32 ? &t : nullptr;
}

const float* floats(const TensorInfo& t) { return reinterpret_cast<const float*>(t.data.bytes.get()); }

bool isGraphOutput(const Graph& g, int t) {
  for (int o : g.outputs)
    if (o == t) return true;
  return false;
}

// Clip with constant (or absent) bounds becomes a fused Clip activation.
bool clipActivation(const Graph& g, const Node& n, FusedActivation* act) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
    if (n.inputs[i] < 0) continue;
    const TensorInfo* t = floatConstant(g, n.inputs[i]);
    if (!t || t->data.size != 4) return false;
    (i == 1 ? lo : hi) = floats(*t)[0];
  }
  act->kind = FusedActivation::Kind::Clip;
  act->a = lo;
  act->b = hi;
  return true;
}

}  // namespace

int foldBatchNormIntoConv(Graph& g) {
  int fused = 0;
  std::vector<int> readers = readerCounts(g), producer = producers(g);
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& bn = g.nodes[k];
    if (bn.type != OpType::BatchNormalization || bn.inputs.size() < 5 || bn.outputs.size() != 1) continue;
    if (bn.getInt("training_mode", 0) != 0) continue;  // normalises by the batch's statistics
    int x = bn.inputs[0];
    if (x < 0 || producer[x] < 0 || readers[x] != 1 || isGraphOutput(g, x)) continue;
    Node& conv = g.nodes[producer[x]];
    if (conv.type != OpType::Conv || conv.hasAttr("activation")) continue;
    const TensorInfo* w = floatConstant(g, conv.inputs[1]);
    const TensorInfo* b = conv.inputs.size() > 2 ? floatConstant(g, conv.inputs[2]) : nullptr;
    if (!w || w->shape.empty() || (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !b)) continue;
    const TensorInfo *scale = floatConstant(g, bn.inputs[1]), *shift = floatConstant(g, bn.inputs[2]),
                     *mean = floatConstant(g, bn.inputs[3]), *var = floatConstant(g, bn.inputs[4]);
    const int64_t cout = w->shape[0];
    auto sized = [&](const TensorInfo* t) { return t && shapeElements(t->shape) == cout; };
    if (!sized(scale) || !sized(shift) || !sized(mean) || !sized(var)) continue;
    const float eps = bn.getFloat("epsilon", 1e-5f);
    const int64_t perChannel = shapeElements(w->shape) / cout;
    std::vector<float> newW(floats(*w), floats(*w) + shapeElements(w->shape)), newB(cout);
    for (int64_t c = 0; c < cout; ++c) {
      double factor = floats(*scale)[c] / std::sqrt(static_cast<double>(floats(*var)[c]) + eps);
      for (int64_t j = 0; j < perChannel; ++j) newW[c * perChannel + j] = static_cast<float>(newW[c * perChannel + j] * factor);
      double bias = b ? floats(*b)[c] : 0.0;
      newB[c] = static_cast<float>((bias - floats(*mean)[c]) * factor + floats(*shift)[c]);
    }
    TensorInfo wt = *w, bt;
    wt.name = w->name + "_bnfolded";
    wt.data = ConstantData::copyOf(newW.data(), newW.size() * 4);
    bt.name = conv.name + "_bnfolded_bias";
    bt.dtype = DataType::Float32;
    bt.shape = {cout};
    bt.isConstant = true;
    bt.data = ConstantData::copyOf(newB.data(), newB.size() * 4);
    conv.inputs[1] = g.addTensor(wt);
    int bi = g.addTensor(bt);
    if (conv.inputs.size() > 2) {
      conv.inputs[2] = bi;
    } else {
      conv.inputs.push_back(bi);
    }
    conv.outputs[0] = bn.outputs[0];
    drop[k] = true;
    ++fused;
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
  return fused;
}

int fuseSwish(Graph& g) {
  int fused = 0;
  std::vector<int> readers = readerCounts(g), producer = producers(g);
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& mul = g.nodes[k];
    if (mul.type != OpType::Mul || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      const int gate = mul.inputs[side], x = mul.inputs[1 - side];
      if (gate < 0 || x < 0 || gate == x || producer[gate] < 0 || readers[gate] != 1 || isGraphOutput(g, gate)) continue;
      const Node& sigmoid = g.nodes[producer[gate]];
      if (sigmoid.type != OpType::Sigmoid || sigmoid.inputs.size() != 1 || sigmoid.inputs[0] != x) continue;
      // Float only: Swish, like Sigmoid, is defined for float types.
      const DataType d = g.tensors[x].dtype;
      if (d != DataType::Float32 && d != DataType::Undefined) continue;
      drop[producer[gate]] = true;
      mul.type = OpType::Swish;
      mul.name += "_swish";
      mul.inputs = {x};
      mul.attrs.clear();
      mul.setFloat("alpha", 1.f);
      ++fused;
      break;
    }
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
  return fused;
}

int fuseActivations(Graph& g) {
  int fused = 0;
  std::vector<int> readers = readerCounts(g), producer = producers(g);
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& act = g.nodes[k];
    if (act.inputs.empty() || act.outputs.size() != 1) continue;
    FusedActivation fa;
    bool fusable = act.type == OpType::Clip ? clipActivation(g, act, &fa) : FusedActivation::fromOp(act, &fa);
    if (!fusable) continue;
    int x = act.inputs[0];
    if (x < 0 || producer[x] < 0 || readers[x] != 1 || isGraphOutput(g, x)) continue;
    Node& op = g.nodes[producer[x]];
    // A MatMul only when it is known to be float: it may be integer, and activations compute in float.
    bool target = op.type == OpType::Conv || op.type == OpType::ConvTranspose || op.type == OpType::Gemm ||
                  (op.type == OpType::MatMul && g.tensors[x].dtype == DataType::Float32);
    if (!target || op.hasAttr("activation") || op.outputs.size() != 1) continue;
    fa.store(op);
    op.outputs[0] = act.outputs[0];
    producer[act.outputs[0]] = producer[x];
    drop[k] = true;
    ++fused;
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
  return fused;
}

}  // namespace osprey::passes
