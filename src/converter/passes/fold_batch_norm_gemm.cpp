// BatchNormalization after a MatMul or Gemm with constant weights (BatchNorm1d after a Linear
// layer, as in re-identification heads and tabular models) folded into the weights and a bias:
// on a 2-D [N, C] output BN scales and shifts each output column.
#include <cmath>

#include "converter/passes/passes.h"
#include "converter/passes/pattern_util.h"

namespace osprey::passes {

namespace {

int addFloats(Graph& g, const std::string& name, const Shape& shape, const std::vector<float>& values) {
  TensorInfo t;
  t.name = name;
  t.dtype = DataType::Float32;
  t.shape = shape;
  t.hasShape = true;
  t.isConstant = true;
  t.data = ConstantData::copyOf(values.data(), values.size() * sizeof(float));
  return g.addTensor(t);
}

bool isRank2(const Graph& g, int t) { return t >= 0 && g.tensors[t].hasShape && g.tensors[t].shape.size() == 2; }

}  // namespace

int foldBatchNormIntoGemm(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& bn = g.nodes[k];
    if (bn.type != OpType::BatchNormalization || bn.inputs.size() < 5 || bn.outputs.size() != 1) continue;
    if (bn.getInt("training_mode", 0) != 0) continue;
    const int x = bn.inputs[0];
    const Node* mm = uses.soleUseProducer(g, x, OpType::MatMul);
    const Node* gemm = mm ? nullptr : uses.soleUseProducer(g, x, OpType::Gemm);
    const Node* producer = mm ? mm : gemm;
    if (!producer || producer->hasAttr("activation") || producer->inputs.size() < 2 || !isRank2(g, x)) continue;
    if (mm && (mm->inputs.size() != 2 || !isRank2(g, mm->inputs[0]))) continue;
    const bool transA = gemm && gemm->getInt("transA", 0) != 0, transB = gemm && gemm->getInt("transB", 0) != 0;
    int64_t wCount = 0;
    const float* w = floatConstantData(g, producer->inputs[1], &wCount);
    if (!w || !isRank2(g, producer->inputs[1])) continue;
    const Shape& wShape = g.tensors[producer->inputs[1]].shape;
    const int64_t cout = transB ? wShape[0] : wShape[1], kdim = transB ? wShape[1] : wShape[0];
    if (g.tensors[x].shape[1] != cout) continue;
    // Gemm's C: absent, or a constant of one value or one per column.
    std::vector<float> bias(static_cast<size_t>(cout), 0.f);
    if (gemm && gemm->inputs.size() > 2 && gemm->inputs[2] >= 0) {
      int64_t n = 0;
      const float* c = floatConstantData(g, gemm->inputs[2], &n);
      const Shape& cShape = g.tensors[gemm->inputs[2]].shape;
      if (!c || (n != 1 && n != cout) || (n == cout && cShape.size() == 2 && cShape[0] != 1)) continue;
      const float beta = gemm->getFloat("beta", 1.f);
      for (int64_t j = 0; j < cout; ++j) bias[j] = beta * c[n == 1 ? 0 : j];
    }
    int64_t counts[4];
    const float* p[4];
    bool ok = true;
    for (int i = 0; i < 4; ++i) {
      p[i] = floatConstantData(g, bn.inputs[1 + i], &counts[i]);
      ok = ok && p[i] && counts[i] == cout;
    }
    if (!ok) continue;
    const float alpha = gemm ? gemm->getFloat("alpha", 1.f) : 1.f;
    const float eps = bn.getFloat("epsilon", 1e-5f);
    std::vector<float> newW(w, w + wCount);
    for (int64_t j = 0; j < cout; ++j) {
      const double factor = p[0][j] / std::sqrt(static_cast<double>(p[3][j]) + eps);
      for (int64_t i = 0; i < kdim; ++i) {
        float& v = newW[transB ? j * kdim + i : i * cout + j];
        v = static_cast<float>(v * alpha * factor);
      }
      bias[j] = static_cast<float>((bias[j] - p[2][j]) * factor + p[1][j]);
    }
    Node& target = g.nodes[uses.producer[x]];
    const std::string base = target.name.empty() ? bn.name : target.name;
    const int wi = addFloats(g, base + "_bnfolded_weight", wShape, newW);
    const int bi = addFloats(g, base + "_bnfolded_bias", {cout}, bias);
    target.type = OpType::Gemm;
    target.attrs.clear();
    if (transB) target.setInt("transB", 1);
    if (transA) target.setInt("transA", 1);
    target.inputs = {target.inputs[0], wi, bi};
    target.outputs = bn.outputs;
    drop[k] = true;
    ++fused;
  }
  eraseNodes(g, drop);
  return fused;
}

}  // namespace osprey::passes
