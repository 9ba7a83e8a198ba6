// Self-attention as PyTorch's nn.MultiheadAttention exports it (BERT and ViT encoders):
//   q/k/v [S, B, E] -Reshape [S, N, D]- Transpose -> [N, S, D]  (N = B * heads; K to [N, D, S])
//   Softmax(MatMul(Q / c, K^T)) -> MatMul(., V) -> Transpose [S, N, D] -> Reshape(s)
// Since [S, N, D] is [S, N * D] in memory, that is the ONNX Attention op on the 3-D views
// (1, S, N * D) with N heads: the q/k/v Reshapes retarget to (1, S, N * D), and the Reshapes
// that read the old [S, N, D] output read the Attention output, which holds the same elements
// in the same order.
// Newer exports (through scaled_dot_product_attention, PyTorch 2.x) view each [N, S, D] as
// [B, H, S, D] (B * H = N, the same memory), take K^T as Transpose [0, 1, 3, 2], scale q and
// K^T each by sqrt(scale) (constants once foldShapes has run), and merge the heads with
// Transpose [2, 0, 1, 3] to [S, B, H, D]: again [S, N * D] in memory, head n = b * H + h.
#include "converter/passes/pattern_util.h"

namespace osprey::passes {

namespace {

// One of q, k, v: Transpose(Reshape(src, [S, N, D]), perm), each intermediate read once.
struct HeadSplit {
  int transposeNode = -1, reshapeNode = -1;
  int64_t seq = 0, heads = 0, dim = 0;
};

bool headSplit(const Graph& g, const GraphUses& uses, int t, const std::vector<int64_t>& perm, HeadSplit* out) {
  const Node* tr = uses.soleUseProducer(g, t, OpType::Transpose);
  if (!tr || tr->inputs.size() != 1 || tr->getInts("perm") != perm) return false;
  const Node* rs = uses.soleUseProducer(g, tr->inputs[0], OpType::Reshape);
  std::vector<int64_t> shape;
  if (!rs || rs->inputs.size() != 2 || !int64Constant(g, rs->inputs[1], &shape) || shape.size() != 3) return false;
  for (int64_t d : shape)
    if (d <= 0) return false;  // 0 (copy a dim) or -1 (inferred) would not pin the layout
  out->transposeNode = uses.producer[t];
  out->reshapeNode = uses.producer[tr->inputs[0]];
  out->seq = shape[0], out->heads = shape[1], out->dim = shape[2];
  return true;
}

// The [B, H, S, D] view of a head split: Reshape(Transpose(Reshape(src, [S, N, D]), [1, 0, 2])).
bool headSplit4(const Graph& g, const GraphUses& uses, int t, HeadSplit* out, int* view) {
  const Node* rs = uses.soleUseProducer(g, t, OpType::Reshape);
  std::vector<int64_t> shape;
  if (!rs || rs->inputs.size() != 2 || !int64Constant(g, rs->inputs[1], &shape) || shape.size() != 4) return false;
  if (!headSplit(g, uses, rs->inputs[0], {1, 0, 2}, out)) return false;
  if (shape[0] <= 0 || shape[1] <= 0 || shape[0] * shape[1] != out->heads || shape[2] != out->seq || shape[3] != out->dim)
    return false;
  *view = uses.producer[t];
  return true;
}

// Follows `*t` back through a scaling by a scalar constant (x * c, c * x, x / c), if any,
// multiplying it into `*scale` and listing the op in `chain`.
void skipScale(const Graph& g, const GraphUses& uses, int* t, float* scale, std::vector<int>* chain) {
  if (*t < 0 || uses.producer[*t] < 0) return;
  const Node& n = g.nodes[uses.producer[*t]];
  if ((n.type != OpType::Div && n.type != OpType::Mul) || n.inputs.size() != 2 || !uses.soleUseProducer(g, *t, n.type))
    return;
  for (int side : {1, 0}) {
    float c = 0.f;
    if (side == 0 && n.type == OpType::Div) break;
    const int ci = n.inputs[side];
    if (!scalarConstant(g, ci, &c) || c == 0.f || g.tensors[ci].shape.size() > 1) continue;
    *scale *= n.type == OpType::Div ? 1.f / c : c;
    chain->push_back(uses.producer[*t]);
    *t = n.inputs[1 - side];
    return;
  }
}

}  // namespace

int fuseAttention(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& softmax = g.nodes[k];
    if (drop[k] || softmax.type != OpType::Softmax || softmax.inputs.size() != 1 || softmax.outputs.size() != 1) continue;
    const int64_t axis = softmax.getInt("axis", -1);
    std::vector<int> chain{static_cast<int>(k)};
    // Scores, optionally scaled after the product (Softmax(MatMul(q, kT) / c)) or on either
    // operand (MatMul(q / c, kT), MatMul(q * a, kT * b)).
    float scale = 1.f;
    int scores = softmax.inputs[0];
    skipScale(g, uses, &scores, &scale, &chain);
    const Node* qk = uses.soleUseProducer(g, scores, OpType::MatMul);
    if (!qk || qk->inputs.size() != 2) continue;
    chain.push_back(uses.producer[scores]);
    int q = qk->inputs[0], kt = qk->inputs[1];
    skipScale(g, uses, &q, &scale, &chain);
    skipScale(g, uses, &kt, &scale, &chain);
    const int pvK = uses.soleReader(g, softmax.outputs[0], OpType::MatMul);
    if (pvK < 0 || g.nodes[pvK].inputs.size() != 2 || g.nodes[pvK].inputs[0] != softmax.outputs[0]) continue;
    const int v = g.nodes[pvK].inputs[1];
    HeadSplit qs, ks, vs;
    std::vector<int64_t> mergePerm;
    int qView = -1, kView = -1, vView = -1;
    const Node* kTranspose = uses.soleUseProducer(g, kt, OpType::Transpose);
    if (headSplit(g, uses, q, {1, 0, 2}, &qs) && headSplit(g, uses, kt, {1, 2, 0}, &ks) &&
        headSplit(g, uses, v, {1, 0, 2}, &vs)) {
      mergePerm = {1, 0, 2};
    } else if (kTranspose && kTranspose->getInts("perm") == std::vector<int64_t>{0, 1, 3, 2} &&
               headSplit4(g, uses, q, &qs, &qView) && headSplit4(g, uses, kTranspose->inputs[0], &ks, &kView) &&
               headSplit4(g, uses, v, &vs, &vView)) {
      std::vector<int64_t> qShape, kShape, vShape;  // the same split into batch and heads
      int64Constant(g, g.nodes[qView].inputs[1], &qShape);
      int64Constant(g, g.nodes[kView].inputs[1], &kShape);
      int64Constant(g, g.nodes[vView].inputs[1], &vShape);
      if (qShape[1] != kShape[1] || vShape[1] != kShape[1]) continue;
      mergePerm = {2, 0, 1, 3};
      chain.push_back(uses.producer[kt]);
      chain.push_back(qView);
      chain.push_back(kView);
      chain.push_back(vView);
    } else {
      continue;
    }
    if (axis != -1 && axis != static_cast<int64_t>(mergePerm.size()) - 1) continue;  // the key axis
    if (qs.heads != ks.heads || vs.heads != ks.heads || qs.dim != ks.dim || vs.seq != ks.seq) continue;
    // The merge of heads: that Transpose, read only by Reshapes that pin every dimension.
    const int outK = uses.soleReader(g, g.nodes[pvK].outputs[0], OpType::Transpose);
    if (outK < 0 || g.nodes[outK].getInts("perm") != mergePerm) continue;
    const int merged = g.nodes[outK].outputs[0];
    bool mergeOk = !uses.isOutput[merged] && !uses.readers[merged].empty();
    for (int r : uses.readers[merged]) {
      const Node& n = g.nodes[r];
      std::vector<int64_t> shape;
      mergeOk &= n.type == OpType::Reshape && n.inputs.size() == 2 && n.inputs[0] == merged &&
                 int64Constant(g, n.inputs[1], &shape);
      for (int64_t d : shape) mergeOk &= d != 0;
    }
    if (!mergeOk) continue;
    chain.push_back(pvK);
    chain.push_back(qs.transposeNode);
    chain.push_back(ks.transposeNode);
    chain.push_back(vs.transposeNode);
    // Rewrite: q/k/v Reshapes to (1, S, N * D); the Attention op in place of the merge Transpose.
    for (const HeadSplit* s : {&qs, &ks, &vs}) {
      Node& rs = g.nodes[s->reshapeNode];
      const std::vector<int64_t> view{1, s->seq, s->heads * s->dim};
      rs.inputs[1] = newInt64Constant(g, rs.name + "_attention_view", view);
      TensorInfo& t = g.tensors[rs.outputs[0]];
      t.shape = view;
      t.hasShape = true;
      t.dimNames.clear();
    }
    TensorInfo& mergedInfo = g.tensors[merged];
    mergedInfo.shape = {1, qs.seq, qs.heads * vs.dim};
    mergedInfo.hasShape = true;
    mergedInfo.dimNames.clear();
    Node attention;
    attention.type = OpType::Attention;
    attention.name = g.nodes[outK].name + "_attention";
    attention.inputs = {g.nodes[qs.reshapeNode].outputs[0], g.nodes[ks.reshapeNode].outputs[0],
                        g.nodes[vs.reshapeNode].outputs[0]};
    attention.outputs = {merged};
    attention.setInt("q_num_heads", qs.heads);
    attention.setInt("kv_num_heads", ks.heads);
    attention.setFloat("scale", scale);
    for (int n : chain) drop[n] = true;
    g.nodes[outK] = std::move(attention);
    ++fused;
  }
  eraseNodes(g, drop);
  return fused;
}

}  // namespace osprey::passes
