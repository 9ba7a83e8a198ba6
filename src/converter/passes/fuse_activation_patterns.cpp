// Activations exported as several ops, fused into the one op the backends run in one pass:
// x * Tanh(Softplus(x)) into Mish (YOLOv4-style exports before opset 18) and x * HardSigmoid(x)
// with alpha 1/6 and beta 1/2 into HardSwish (MobileNetV3 exports before opset 14).
#include <cmath>

#include "converter/passes/passes.h"
#include "converter/passes/pattern_util.h"

namespace osprey::passes {

namespace {

bool isFloat(const Graph& g, int t) {
  const DataType d = g.tensors[t].dtype;
  return d == DataType::Float32 || d == DataType::Undefined;
}

// The one-input op of `type` that produces `t` (read by one op only) from `x`; else null.
const Node* unaryOf(const Graph& g, const GraphUses& uses, int t, OpType type, int x) {
  const Node* n = uses.soleUseProducer(g, t, type);
  return n && n->inputs.size() == 1 && n->inputs[0] == x && n->outputs.size() == 1 ? n : nullptr;
}

}  // namespace

int fuseActivationPatterns(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Node& mul = g.nodes[k];
    if (mul.type != OpType::Mul || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      const int gate = mul.inputs[side], x = mul.inputs[1 - side];
      if (gate < 0 || x < 0 || gate == x || !isFloat(g, x)) continue;
      if (const Node* tanh = uses.soleUseProducer(g, gate, OpType::Tanh); tanh && tanh->inputs.size() == 1) {
        const Node* softplus = unaryOf(g, uses, tanh->inputs[0], OpType::Softplus, x);
        if (!softplus) continue;
        drop[uses.producer[gate]] = drop[uses.producer[tanh->inputs[0]]] = true;
        mul.type = OpType::Mish;
      } else if (const Node* hs = unaryOf(g, uses, gate, OpType::HardSigmoid, x)) {
        const float alpha = hs->getFloat("alpha", 0.2f), beta = hs->getFloat("beta", 0.5f);
        if (std::fabs(alpha - 1.f / 6.f) > 1e-6f || beta != 0.5f) continue;
        drop[uses.producer[gate]] = true;
        mul.type = OpType::HardSwish;
      } else {
        continue;
      }
      mul.inputs = {x};
      mul.attrs.clear();
      ++fused;
      break;
    }
  }
  eraseNodes(g, drop);
  return fused;
}

}  // namespace osprey::passes
