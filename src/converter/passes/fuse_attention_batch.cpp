// A batch-first nn.MultiheadAttention (BERT's and ViT's encoder layers) exports its
// sequence-first body between two Transposes:
//   x [B, S, E] -Transpose [1, 0, 2]-> [S, B, E] -> projections (MatMul, bias) -> Slices of q, k, v
//   -> Attention on (1, S, N * D) views (N = B * H heads, fuseAttention) -> Reshape, output
//   projection -> [S, B, E] -Transpose [1, 0, 2]-> [B, S, E]
// PyTorch 2's packed projection splits q, k and v as Gathers of a Transpose of its output
// (unflatten to [S, B, 3, E], unsqueeze, swap the 3 to the front, squeeze); those become Slices of
// the projection's last axis first, which read the same elements.
// Apart from the attention, every op of the body works on rows of the last axis alone, so it
// gives the same rows when the rows come batch-first; and head n = b * H + h of the (1, S, N * D)
// view is head h of batch b of the (B, S, H * D) view. So both Transposes go, the body runs on
// [B, S, E] rows, and the Attention batches over B with H heads: two copies of the activations
// fewer per layer.
#include <algorithm>
#include <set>

#include "converter/passes/pattern_util.h"

namespace osprey::passes {

namespace {

const std::vector<int64_t> kSwapFirstTwo{1, 0, 2};

// The static [d0, d1, d2] shape of a tensor (false when it is unknown or of another rank).
bool shape3(const Graph& g, int t, Shape* s) {
  const TensorInfo& info = g.tensors[t];
  if (!info.hasShape || info.shape.size() != 3) return false;
  for (int64_t d : info.shape)
    if (d <= 0) return false;
  *s = info.shape;
  return true;
}

// A product of rows by constant 2-D weights: MatMul(A, W[K, N] [, bias]) or Gemm(A, B [, C])
// with A untransposed and C one row at most (a C of several rows is tied to the row order); its
// input 0 is the rows.
bool rowProduct(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.inputs.size() < 2 || n.inputs[1] < 0) return false;
  const TensorInfo& w = g.tensors[n.inputs[1]];
  if (!w.isConstant || w.shape.size() != 2) return false;
  if (n.type == OpType::MatMul) return true;
  if (n.type != OpType::Gemm || n.getInt("transA", 0) != 0) return false;
  if (n.inputs.size() < 3 || n.inputs[2] < 0) return true;
  const TensorInfo& c = g.tensors[n.inputs[2]];
  return c.hasShape && (c.shape.size() <= 1 || (c.shape.size() == 2 && c.shape[0] == 1));
}

// A Slice of the last axis of a rank-3 tensor, its parameters constant.
bool lastAxisSlice(const Graph& g, const Node& n) {
  AxisSlice s;
  return constantAxisSlice(g, n, &s) && (s.axis == -1 || s.axis == 2);
}

// Gather(Squeeze(Transpose(Unsqueeze(Reshape(P [S, B, K * E] -> [S, B, K, E]), 0), [3, 1, 2, 0, 4]),
// 3), i) on axis 0 as Slice(P, i * E, (i + 1) * E, last axis); the chain goes when every Gather of
// it has gone (dead code).
int slicePackedProjections(Graph& g) {
  GraphUses uses(g);
  int rewritten = 0;
  auto producerOf = [&](int t, OpType type) -> const Node* {
    if (t < 0 || uses.producer[t] < 0 || uses.isOutput[t]) return nullptr;
    const Node& n = g.nodes[uses.producer[t]];
    return n.type == type && n.outputs.size() == 1 ? &n : nullptr;
  };
  auto axesAre = [&](const Node& n, int64_t axis) {
    std::vector<int64_t> axes;
    const bool fromInput = n.inputs.size() > 1 && int64Constant(g, n.inputs[1], &axes);
    if (!fromInput) axes = n.getInts("axes");
    return axes == std::vector<int64_t>{axis};
  };
  for (Node& gather : g.nodes) {
    if (gather.type != OpType::Gather || gather.inputs.size() != 2 || gather.getInt("axis", 0) != 0) continue;
    std::vector<int64_t> index;
    const TensorInfo& indexInfo = g.tensors[gather.inputs[1]];
    if (!int64Constant(g, gather.inputs[1], &index) || index.size() != 1 || !indexInfo.shape.empty()) continue;
    const Node* squeeze = producerOf(gather.inputs[0], OpType::Squeeze);
    const Node* transpose = squeeze && axesAre(*squeeze, 3) ? producerOf(squeeze->inputs[0], OpType::Transpose) : nullptr;
    if (!transpose || transpose->getInts("perm") != std::vector<int64_t>{3, 1, 2, 0, 4}) continue;
    const Node* unsqueeze = producerOf(transpose->inputs[0], OpType::Unsqueeze);
    const Node* split = unsqueeze && axesAre(*unsqueeze, 0) ? producerOf(unsqueeze->inputs[0], OpType::Reshape) : nullptr;
    Shape packed, parts;
    if (!split || !shape3(g, split->inputs[0], &packed)) continue;
    const TensorInfo& splitInfo = g.tensors[split->outputs[0]];
    if (!splitInfo.hasShape || splitInfo.shape.size() != 4) continue;
    parts = splitInfo.shape;
    const int64_t chunks = parts[2], width = parts[3];
    if (parts[0] != packed[0] || parts[1] != packed[1] || chunks * width != packed[2] || width <= 0) continue;
    const int64_t i = index[0] < 0 ? index[0] + chunks : index[0];
    if (i < 0 || i >= chunks) continue;
    const std::string name = gather.name + "_slice";
    const int starts = newInt64Constant(g, name + "_starts", {i * width});
    const int ends = newInt64Constant(g, name + "_ends", {(i + 1) * width});
    const int axes = newInt64Constant(g, name + "_axes", {-1});
    gather.type = OpType::Slice;
    gather.attrs.clear();
    gather.inputs = {split->inputs[0], starts, ends, axes};
    ++rewritten;
  }
  return rewritten;
}

struct Match {
  std::vector<int> inputTransposes;   // the [B, S, E] -> [S, B, E] Transposes
  std::vector<int> upstream;          // projections and Slices between them and the views
  std::vector<int> views;             // q, k, v Reshapes to (1, S, N * D)
  std::vector<int> downstream;        // ops after the Attention up to the last Transpose
  int outputTranspose = -1;
  int64_t batch = 0, seq = 0;
};

// One of q, k, v back from the Attention: Reshape <- [Slice of the last axis] <- row product <-
// Transpose [1, 0, 2] of a static [B, S, E].
bool matchInput(const Graph& g, const GraphUses& uses, int t, Match* m) {
  const Node* view = uses.soleUseProducer(g, t, OpType::Reshape);
  std::vector<int64_t> target;
  if (!view || view->inputs.size() != 2 || !int64Constant(g, view->inputs[1], &target) || target.size() != 3 ||
      target[0] != 1)
    return false;
  m->views.push_back(uses.producer[t]);
  int rows = view->inputs[0];
  if (rows < 0 || uses.producer[rows] < 0) return false;
  if (lastAxisSlice(g, g.nodes[uses.producer[rows]])) {
    m->upstream.push_back(uses.producer[rows]);
    rows = g.nodes[uses.producer[rows]].inputs[0];
    if (rows < 0 || uses.producer[rows] < 0) return false;
  }
  const Node& projection = g.nodes[uses.producer[rows]];
  if (!rowProduct(g, projection) || projection.type != OpType::MatMul) return false;
  m->upstream.push_back(uses.producer[rows]);
  const int transposed = projection.inputs[0];
  if (transposed < 0 || uses.producer[transposed] < 0) return false;
  const Node& tr = g.nodes[uses.producer[transposed]];
  Shape x;
  if (tr.type != OpType::Transpose || tr.getInts("perm") != kSwapFirstTwo || !shape3(g, tr.inputs[0], &x)) return false;
  if ((m->batch && m->batch != x[0]) || target[1] != x[1]) return false;
  m->batch = x[0];
  m->inputTransposes.push_back(uses.producer[transposed]);
  return true;
}

// The ops after the Attention, each the sole reader of the one before: Reshapes, row products
// and Adds of a constant, up to a Transpose [1, 0, 2] of [S, B, E'].
bool matchOutput(const Graph& g, const GraphUses& uses, int t, Match* m) {
  for (;;) {
    if (uses.isOutput[t] || uses.readers[t].size() != 1) return false;
    const int k = uses.readers[t][0];
    const Node& n = g.nodes[k];
    if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] != t) return false;
    if (n.type == OpType::Transpose) {
      Shape s;
      if (n.getInts("perm") != kSwapFirstTwo || !shape3(g, t, &s) || s[0] != m->seq || s[1] != m->batch) return false;
      m->outputTranspose = k;
      return true;
    }
    bool rowWise = rowProduct(g, n);
    if (n.type == OpType::Reshape) {
      std::vector<int64_t> target;
      rowWise = n.inputs.size() == 2 && int64Constant(g, n.inputs[1], &target) &&
                ((target.size() == 2 && target[0] == m->seq * m->batch) ||
                 (target.size() == 3 && target[0] == m->seq && target[1] == m->batch));
    } else if (n.type == OpType::Add && n.inputs.size() == 2) {
      const TensorInfo& c = g.tensors[n.inputs[1]];
      rowWise = c.isConstant && c.hasShape && c.shape.size() <= 1;
    }
    if (!rowWise) return false;
    m->downstream.push_back(k);
    t = n.outputs[0];
  }
}

// Every reader of the tensors the match produces lies inside the match.
bool closed(const Graph& g, const GraphUses& uses, const Match& m, int attention) {
  std::set<int> inside(m.upstream.begin(), m.upstream.end());
  inside.insert(m.views.begin(), m.views.end());
  inside.insert(m.downstream.begin(), m.downstream.end());
  inside.insert({attention, m.outputTranspose});
  std::vector<int> producers(m.inputTransposes);
  producers.insert(producers.end(), m.upstream.begin(), m.upstream.end());
  producers.insert(producers.end(), m.downstream.begin(), m.downstream.end());
  for (int k : producers) {
    const int t = g.nodes[k].outputs[0];
    if (uses.isOutput[t]) return false;
    for (int r : uses.readers[t])
      if (!inside.count(r)) return false;
  }
  return true;
}

void swapLeadingDims(TensorInfo& t) {
  if (t.hasShape && t.shape.size() == 3) std::swap(t.shape[0], t.shape[1]), t.dimNames.clear();
}

void rewrite(Graph& g, const Match& m, int attentionNode, std::vector<bool>* drop) {
  const int64_t B = m.batch, S = m.seq;
  for (int k : m.inputTransposes) {
    const int from = g.nodes[k].outputs[0], to = g.nodes[k].inputs[0];
    for (int u : m.upstream)
      if (g.nodes[u].inputs[0] == from) g.nodes[u].inputs[0] = to;
    (*drop)[k] = true;
  }
  for (int k : m.upstream) swapLeadingDims(g.tensors[g.nodes[k].outputs[0]]);
  Node& attention = g.nodes[attentionNode];
  for (int k : m.views) {
    Node& view = g.nodes[k];
    std::vector<int64_t> target;
    int64Constant(g, view.inputs[1], &target);
    const std::vector<int64_t> batched{B, S, target[2] / B};
    view.inputs[1] = newInt64Constant(g, view.name + "_batched", batched);
    TensorInfo& t = g.tensors[view.outputs[0]];
    t.shape = batched, t.hasShape = true, t.dimNames.clear();
  }
  attention.setInt("q_num_heads", attention.getInt("q_num_heads", 0) / B);
  attention.setInt("kv_num_heads", attention.getInt("kv_num_heads", 0) / B);
  TensorInfo& merged = g.tensors[attention.outputs[0]];
  merged.shape = {B, S, merged.shape[2] / B}, merged.dimNames.clear();
  for (int k : m.downstream) {
    Node& n = g.nodes[k];
    if (n.type == OpType::Reshape) {
      std::vector<int64_t> target;
      int64Constant(g, n.inputs[1], &target);
      if (target.size() == 3) n.inputs[1] = newInt64Constant(g, n.name + "_batched", {B, S, target[2]});
    }
    swapLeadingDims(g.tensors[n.outputs[0]]);
  }
  // The last op writes what the output Transpose wrote.
  Node& last = g.nodes[m.downstream.empty() ? attentionNode : m.downstream.back()];
  last.outputs[0] = g.nodes[m.outputTranspose].outputs[0];
  (*drop)[m.outputTranspose] = true;
}

}  // namespace

int foldAttentionBatchTransposes(Graph& g) {
  const int sliced = slicePackedProjections(g);
  if (sliced > 0) removeDeadCode(g);  // the old split's chain still reads the projection
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int folded = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& a = g.nodes[k];
    if (a.type != OpType::Attention || a.inputs.size() != 3 || a.outputs.size() != 1) continue;
    Match m;
    bool ok = true;
    for (int i = 0; i < 3 && ok; ++i) ok = matchInput(g, uses, a.inputs[i], &m);
    if (!ok) continue;
    Shape viewShape;
    if (!shape3(g, a.outputs[0], &viewShape) || viewShape[0] != 1) continue;
    m.seq = viewShape[1];
    const int64_t qHeads = a.getInt("q_num_heads", 0), kvHeads = a.getInt("kv_num_heads", qHeads);
    if (qHeads <= 0 || kvHeads <= 0 || qHeads % m.batch != 0 || kvHeads % m.batch != 0) continue;
    if (!matchOutput(g, uses, a.outputs[0], &m) || !closed(g, uses, m, static_cast<int>(k))) continue;
    // Shared nodes (one Transpose or projection read by q, k and v) are listed once per use.
    for (auto* list : {&m.inputTransposes, &m.upstream, &m.views}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    bool taken = false;
    for (int n : m.inputTransposes) taken |= drop[n];
    if (taken) continue;
    rewrite(g, m, static_cast<int>(k), &drop);
    ++folded;
  }
  eraseNodes(g, drop);
  return folded + sliced;
}

}  // namespace osprey::passes
