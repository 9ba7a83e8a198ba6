// Transformer fusions: the exported decompositions of LayerNormalization and erf-GELU become
// the single ONNX ops, which backends run in one pass over the data.
#include <cstring>

#include "converter/passes/pattern_util.h"

namespace osprey::passes {

namespace {

// The other input of a two-input node, given one of them; -1 when `known` is not an input.
int otherInput(const Node& n, int known) {
  if (n.inputs.size() != 2) return -1;
  if (n.inputs[0] == known) return n.inputs[1];
  if (n.inputs[1] == known) return n.inputs[0];
  return -1;
}

// A ReduceMean over exactly the last axis of `x`, keeping dims.
bool meanOverLastAxis(const Graph& g, const Node& r, int x) {
  if (r.type != OpType::ReduceMean || r.inputs.size() != 2 || r.inputs[0] != x || r.outputs.size() != 1) return false;
  if (r.getInt("keepdims", 1) != 1) return false;
  const TensorInfo& axes = g.tensors[r.inputs[1]];
  if (r.inputs[1] < 0 || !axes.isConstant || axes.dtype != DataType::Int64 || axes.data.size != 8) return false;
  int64_t axis;
  std::memcpy(&axis, axes.data.bytes.get(), 8);
  const TensorInfo& xi = g.tensors[x];
  if (axis == -1) return true;
  return xi.hasShape && !xi.shape.empty() && axis == static_cast<int64_t>(xi.shape.size()) - 1;
}

// The last dimension of `t` when the converter knows it, else -1.
int64_t knownLastDim(const Graph& g, int t) {
  const TensorInfo& info = g.tensors[t];
  return info.hasShape && !info.shape.empty() ? info.shape.back() : -1;
}

// Per-channel affine parameter of the normalised axis: a rank-1 float constant whose length
// matches the last dimension of x where that is known (so broadcasting cannot grow the output).
bool affineParam(const Graph& g, int t, int x) {
  int64_t n = 0;
  if (!floatConstantData(g, t, &n) || g.tensors[t].shape.size() != 1) return false;
  const int64_t last = knownLastDim(g, x);
  return last < 0 || last == n || n == 1;
}

bool isFloatTensor(const Graph& g, int t) {
  const DataType d = g.tensors[t].dtype;
  return d == DataType::Float32 || d == DataType::Undefined;  // Undefined: not recorded by the exporter
}

}  // namespace

int fuseLayerNorm(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& mean = g.nodes[k];
    if (drop[k] || mean.type != OpType::ReduceMean || mean.inputs.empty()) continue;
    const int x = mean.inputs[0];
    if (x < 0 || !meanOverLastAxis(g, mean, x) || !isFloatTensor(g, x)) continue;
    // x - mean, read by the square and by the final division.
    const int subK = uses.soleReader(g, mean.outputs[0], OpType::Sub);
    if (subK < 0 || g.nodes[subK].inputs != std::vector<int>{x, mean.outputs[0]}) continue;
    const int centred = g.nodes[subK].outputs[0];
    if (uses.isOutput[centred] || uses.readers[centred].size() != 2) continue;
    int squareK = -1, divK = -1;
    for (int r : uses.readers[centred]) {
      const Node& n = g.nodes[r];
      float two = 0;
      if (n.type == OpType::Pow && n.inputs.size() == 2 && n.inputs[0] == centred && scalarConstant(g, n.inputs[1], &two) &&
          two == 2.f)
        squareK = r;
      else if (n.type == OpType::Mul && n.inputs == std::vector<int>{centred, centred})
        squareK = r;
      else if (n.type == OpType::Div && n.inputs.size() == 2 && n.inputs[0] == centred)
        divK = r;
    }
    if (squareK < 0 || divK < 0) continue;
    const int varK = uses.soleReader(g, g.nodes[squareK].outputs[0], OpType::ReduceMean);
    if (varK < 0 || !meanOverLastAxis(g, g.nodes[varK], g.nodes[squareK].outputs[0])) continue;
    const int addEpsK = uses.soleReader(g, g.nodes[varK].outputs[0], OpType::Add);
    float eps = 0;
    if (addEpsK < 0 || !scalarConstant(g, otherInput(g.nodes[addEpsK], g.nodes[varK].outputs[0]), &eps) || !(eps >= 0.f))
      continue;
    const int sqrtK = uses.soleReader(g, g.nodes[addEpsK].outputs[0], OpType::Sqrt);
    if (sqrtK < 0 || uses.soleReader(g, g.nodes[sqrtK].outputs[0], OpType::Div) != divK ||
        g.nodes[divK].inputs[1] != g.nodes[sqrtK].outputs[0])
      continue;
    // Optional scale (Mul by gamma) and shift (Add beta).
    std::vector<int> chain{static_cast<int>(k), subK, squareK, varK, addEpsK, sqrtK, divK};
    int out = g.nodes[divK].outputs[0], gamma = -1, beta = -1;
    const int mulK = uses.soleReader(g, out, OpType::Mul);
    if (mulK >= 0 && affineParam(g, otherInput(g.nodes[mulK], out), x)) {
      gamma = otherInput(g.nodes[mulK], out);
      chain.push_back(mulK);
      out = g.nodes[mulK].outputs[0];
      const int addK = uses.soleReader(g, out, OpType::Add);
      if (addK >= 0 && affineParam(g, otherInput(g.nodes[addK], out), x)) {
        beta = otherInput(g.nodes[addK], out);
        chain.push_back(addK);
        out = g.nodes[addK].outputs[0];
      }
    }
    if (gamma < 0) {  // LayerNormalization needs a scale: ones of the (known) normalised length
      const int64_t n = knownLastDim(g, x);
      if (n <= 0) continue;
      TensorInfo ones;
      ones.name = g.nodes[divK].name + "_ln_scale";
      ones.dtype = DataType::Float32;
      ones.shape = {n};
      ones.isConstant = true;
      std::vector<float> v(static_cast<size_t>(n), 1.f);
      ones.data = ConstantData::copyOf(v.data(), v.size() * 4);
      gamma = g.addTensor(ones);
    }
    // The fused op takes the place of the chain's last node, after every input it reads.
    Node ln;
    ln.type = OpType::LayerNormalization;
    ln.name = g.nodes[chain.back()].name + "_layernorm";
    ln.inputs = {x, gamma};
    if (beta >= 0) ln.inputs.push_back(beta);
    ln.outputs = {out};
    ln.setInt("axis", -1);
    ln.setFloat("epsilon", eps);
    for (size_t i = 0; i + 1 < chain.size(); ++i) drop[chain[i]] = true;
    g.nodes[chain.back()] = std::move(ln);
    ++fused;
  }
  eraseNodes(g, drop);
  return fused;
}

int fuseGelu(Graph& g, double tolerance) {
  constexpr double kSqrt2 = 1.4142135623730951;
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& erf = g.nodes[k];
    if (drop[k] || erf.type != OpType::Erf || erf.inputs.size() != 1 || erf.outputs.size() != 1) continue;
    // erf(x / sqrt2) or erf(x * (1 / sqrt2)).
    const int scaled = erf.inputs[0];
    if (scaled < 0 || uses.producer[scaled] < 0 || uses.isOutput[scaled] || uses.readers[scaled].size() != 1) continue;
    const int scaleK = uses.producer[scaled];
    const Node& scale = g.nodes[scaleK];
    float c = 0;
    if (scale.inputs.size() != 2) continue;
    // The constant is the divisor of a Div, either factor of a Mul.
    const int constSide = scale.type == OpType::Mul && scalarConstant(g, scale.inputs[0], &c) ? 0 : 1;
    if (!scalarConstant(g, scale.inputs[constSide], &c)) continue;
    if (!((scale.type == OpType::Div && closeTo(c, kSqrt2, tolerance)) ||
          (scale.type == OpType::Mul && closeTo(c, 1.0 / kSqrt2, tolerance))))
      continue;
    const int x = scale.inputs[1 - constSide];
    if (x < 0 || !isFloatTensor(g, x)) continue;
    // 1 + erf(.)
    const int onePlusK = uses.soleReader(g, erf.outputs[0], OpType::Add);
    float one = 0;
    if (onePlusK < 0 || !scalarConstant(g, otherInput(g.nodes[onePlusK], erf.outputs[0]), &one) || one != 1.f) continue;
    const int onePlus = g.nodes[onePlusK].outputs[0];
    // Then the factors x and 0.5 in any of the exported orders:
    //   (x * (1 + erf)) * 0.5,  (x * 0.5) * (1 + erf),  x * ((1 + erf) * 0.5).
    std::vector<int> chain{scaleK, static_cast<int>(k), onePlusK};
    const int mulK = uses.soleReader(g, onePlus, OpType::Mul);
    if (mulK < 0) continue;
    const int partner = otherInput(g.nodes[mulK], onePlus);
    float half = 0;
    int out = -1;
    if (partner == x) {  // (x * (1 + erf)) * 0.5
      const int halfK = uses.soleReader(g, g.nodes[mulK].outputs[0], OpType::Mul);
      if (halfK < 0 || !scalarConstant(g, otherInput(g.nodes[halfK], g.nodes[mulK].outputs[0]), &half) || half != 0.5f)
        continue;
      chain.push_back(mulK);
      chain.push_back(halfK);
      out = g.nodes[halfK].outputs[0];
    } else if (scalarConstant(g, partner, &half) && half == 0.5f) {  // x * ((1 + erf) * 0.5)
      const int xMulK = uses.soleReader(g, g.nodes[mulK].outputs[0], OpType::Mul);
      if (xMulK < 0 || otherInput(g.nodes[xMulK], g.nodes[mulK].outputs[0]) != x) continue;
      chain.push_back(mulK);
      chain.push_back(xMulK);
      out = g.nodes[xMulK].outputs[0];
    } else if (partner >= 0 && uses.producer[partner] >= 0 && !uses.isOutput[partner] &&
               uses.readers[partner].size() == 1) {  // (x * 0.5) * (1 + erf)
      const int halfK = uses.producer[partner];
      const Node& h = g.nodes[halfK];
      if (h.type != OpType::Mul || !scalarConstant(g, otherInput(h, x), &half) || half != 0.5f) continue;
      chain.insert(chain.begin(), halfK);
      chain.push_back(mulK);
      out = g.nodes[mulK].outputs[0];
    } else {
      continue;
    }
    // The chain's last node is after x's producer and every node of the chain.
    int last = chain[0];
    for (int n : chain) last = std::max(last, n);
    Node gelu;
    gelu.type = OpType::Gelu;
    gelu.name = g.nodes[last].name + "_gelu";
    gelu.inputs = {x};
    gelu.outputs = {out};
    for (int n : chain)
      if (n != last) drop[n] = true;
    g.nodes[last] = std::move(gelu);
    ++fused;
  }
  eraseNodes(g, drop);
  return fused;
}

}  // namespace osprey::passes
