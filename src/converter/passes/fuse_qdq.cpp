// QDQ graphs (what onnxruntime.quantization.quantize_static writes with QuantFormat.QDQ) into
// Osprey's integer ops. Each quantized op arrives as DequantizeLinear -> float op ->
// QuantizeLinear, weights as byte constants behind a DequantizeLinear; the pass rewrites the
// float op into its integer form reading the bytes (QLinearConv, QLinearMatMul, QGemm,
// MatMulIntegerToFloat here; the elementwise, pooling and data-movement ops in
// fuse_qdq_pointwise.cpp). It runs before constant folding, which would otherwise turn
// DequantizeLinear(weight) into float weights. Anything that does not match exactly keeps its
// float path (docs/quantization.md, "QDQ graphs").
#include <cmath>

#include "converter/passes/qdq_match.h"

namespace osprey::passes {

namespace qdq {

namespace {

// DequantizeLinear of a constant: the weight operand of an integer op.
bool constantWeightOf(const Graph& g, const GraphUses& uses, int t, QuantParams* w) {
  return dequantizeOf(g, uses, t, w) && g.tensors[w->bytes].isConstant && g.tensors[w->bytes].hasShape;
}

// Inputs as the integer ops take them: omitted optional inputs at the end are left off.
std::vector<int> trimmed(std::vector<int> inputs) {
  while (!inputs.empty() && inputs.back() < 0) inputs.pop_back();
  return inputs;
}

// The products scale[i] = factor * w.scales[i], in float32 as ONNX Runtime forms them.
std::vector<float> productScales(float factor, const QuantParams& w) {
  std::vector<float> s(w.scales.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = factor * w.scales[i];
  return s;
}

// Conv's bias as QLinearConv's int32 B, in the scale x_scale * w_scale[c]; -1 when it has none,
// -2 when it cannot be used.
int convBias(Rewriter& rw, const Node& conv, const QuantParams& x, const QuantParams& w, int64_t channels) {
  if (conv.inputs.size() < 3 || conv.inputs[2] < 0) return -1;
  ConstantBias bias;
  std::vector<int32_t> ints;
  if (!constantBias(rw.g, rw.uses, conv.inputs[2], &bias) || bias.shape != Shape{channels} ||
      !biasIntegers(bias, productScales(x.scales[0], w), channels, &ints))
    return -2;
  return rw.constant(conv.name + "_bias_int32", DataType::Int32, {channels}, ints.data(), ints.size() * 4);
}

// DQ(x) -> Conv(., DQ(w), [B]) [-> Relu] -> Q  =>  QLinearConv(x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp, B)
bool fuseConv(Rewriter& rw, int k) {
  const Graph& g = rw.g;
  const Node& conv = g.nodes[k];
  if (conv.inputs.size() < 2 || conv.inputs.size() > 3 || conv.outputs.size() != 1 || conv.hasAttr("activation"))
    return false;
  QuantParams x, w, y;
  if (!perTensorDequantizeOf(g, rw.uses, conv.inputs[0], &x) || !constantWeightOf(g, rw.uses, conv.inputs[1], &w))
    return false;
  const Shape wShape = g.tensors[w.bytes].shape;
  const int64_t rank = static_cast<int64_t>(wShape.size());
  // QLinearConv's kernel covers 1 to 3 spatial dimensions; w_scale is per tensor or per output channel.
  if (rank < 3 || rank > 5 || !perAxisAlong(w, 0, rank, wShape[0])) return false;
  int out = conv.outputs[0];
  const int relu = rw.uses.soleReader(g, out, OpType::Relu);
  if (relu >= 0) out = g.nodes[relu].outputs[0];
  if (!soleQuantizeOf(g, rw.uses, out, &y)) return false;
  // Saturating at the lowest code is Relu only where that code is 0.0.
  if (relu >= 0 && y.zeroPoints[0] != lowestOf(y.type)) return false;
  const int bias = convBias(rw, conv, x, w, wShape[0]);
  if (bias == -2) return false;
  const std::string& name = conv.name;
  rw.setInputs(k, trimmed({x.bytes, x.scale, rw.zeroPoint(x, name + "_x_zp"), w.bytes, w.scale,
                           rw.zeroPoint(w, name + "_w_zp"), y.scale, rw.zeroPoint(y, name + "_y_zp"), bias}));
  rw.g.nodes[k].type = OpType::QLinearConv;
  if (relu >= 0) rw.absorb(k, relu, DataType::Float32);
  rw.takeOutput(k, y);
  return true;
}

// A float32 constant of shape [n] added to `product` by its only reader: the bias of
// MatMulIntegerToFloat. Returns the Add's node index (-1: none) and the bias in *bias.
int matMulBiasAdd(const Graph& g, const GraphUses& uses, int product, int64_t n, int* bias) {
  const int add = uses.soleReader(g, product, OpType::Add);
  if (add < 0 || g.nodes[add].inputs.size() != 2) return -1;
  const Node& a = g.nodes[add];
  const int other = a.inputs[0] == product ? a.inputs[1] : a.inputs[0];
  int64_t count = 0;
  if (other == product || !floatConstantData(g, other, &count) || g.tensors[other].shape != Shape{n}) return -1;
  *bias = other;
  return add;
}

// Two activations multiplied (attention's scores and its weighted values): both of static
// shape, of one rank, with the same batch dimensions, as the CPU's integer MatMul takes them
// (one of A's matrices by one of B's, no broadcasting).
bool sameBatches(const Graph& g, int a, int b) {
  const TensorInfo &ta = g.tensors[a], &tb = g.tensors[b];
  if (!ta.hasShape || !tb.hasShape || ta.shape.size() != tb.shape.size() || tb.shape.size() < 2) return false;
  for (size_t i = 0; i < ta.shape.size(); ++i)
    if (ta.shape[i] < 0 || tb.shape[i] < 0 || (i + 2 < ta.shape.size() && ta.shape[i] != tb.shape[i])) return false;
  return true;
}

// DQ(a) -> MatMul(., DQ(b)) -> Q  =>  QLinearMatMul(a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp); with a
// float result instead (optionally + a constant bias [N])  =>  MatMulIntegerToFloat(a, b, a_s,
// b_s, a_zp, b_zp, bias).
bool fuseMatMul(Rewriter& rw, int k) {
  const Graph& g = rw.g;
  const Node& mm = g.nodes[k];
  if (mm.inputs.size() != 2 || mm.outputs.size() != 1) return false;
  QuantParams a, b, y;
  if (!perTensorDequantizeOf(g, rw.uses, mm.inputs[0], &a)) return false;
  if (!constantWeightOf(g, rw.uses, mm.inputs[1], &b) &&
      !(perTensorDequantizeOf(g, rw.uses, mm.inputs[1], &b) && sameBatches(g, a.bytes, b.bytes)))
    return false;
  const Shape bShape = g.tensors[b.bytes].shape;
  const int64_t rank = static_cast<int64_t>(bShape.size());
  // b_scale per tensor or per column (the last axis), as both integer ops take it.
  if (rank < 2 || !perAxisAlong(b, rank - 1, rank, bShape.back())) return false;
  const std::string& name = mm.name;
  const int product = mm.outputs[0];
  // QLinearMatMul's y_zero_point has A's type.
  if (soleQuantizeOf(g, rw.uses, product, &y) && y.type == a.type) {
    rw.setInputs(k, {a.bytes, a.scale, rw.zeroPoint(a, name + "_a_zp"), b.bytes, b.scale,
                     rw.zeroPoint(b, name + "_b_zp"), y.scale, rw.zeroPoint(y, name + "_y_zp")});
    rw.g.nodes[k].type = OpType::QLinearMatMul;
    rw.takeOutput(k, y);
    return true;
  }
  int bias = -1;
  const int add = matMulBiasAdd(g, rw.uses, product, bShape.back(), &bias);
  rw.setInputs(k, trimmed({a.bytes, b.bytes, a.scale, b.scale, rw.zeroPoint(a, name + "_a_zp"),
                           rw.zeroPoint(b, name + "_b_zp"), bias}));
  rw.g.nodes[k].type = OpType::MatMulIntegerToFloat;
  if (add >= 0)
    rw.absorb(k, add, DataType::Float32);
  else
    rw.g.tensors[product].dtype = DataType::Float32;
  return true;
}

// Gemm's C as QGemm's int32 C of shape [N] in the scale alpha * a_scale * b_scale[n]; -1 when
// there is none, -2 when it cannot be used.
int gemmBias(Rewriter& rw, const Node& gemm, const QuantParams& a, const QuantParams& b, float alpha, int64_t n) {
  if (gemm.inputs.size() < 3 || gemm.inputs[2] < 0) return -1;
  // QGemm adds C before scaling and ignores beta, as ONNX Runtime's does.
  if (gemm.getFloat("beta", 1.f) != 1.f) return -2;
  ConstantBias bias;
  if (!constantBias(rw.g, rw.uses, gemm.inputs[2], &bias)) return -2;
  // One value, or one per column ([N] or [1, N]); per-row C would need QGemm's [M, N] form.
  const Shape& s = bias.shape;
  const bool perColumn = (s.size() == 1 && s[0] == n) || (s.size() == 2 && s[0] == 1 && s[1] == n);
  if (bias.values.size() != 1 && !perColumn) return -2;
  std::vector<int32_t> ints;
  if (!biasIntegers(bias, productScales(alpha * a.scales[0], b), n, &ints)) return -2;
  return rw.constant(gemm.name + "_c_int32", DataType::Int32, {n}, ints.data(), ints.size() * 4);
}

// DQ(a) -> Gemm(., DQ(b), C) [-> Q]  =>  QGemm(a, a_s, a_zp, b, b_s, b_zp, C, [y_s, y_zp]).
bool fuseGemm(Rewriter& rw, int k) {
  const Graph& g = rw.g;
  const Node& gemm = g.nodes[k];
  if (gemm.inputs.size() < 2 || gemm.inputs.size() > 3 || gemm.outputs.size() != 1 || gemm.hasAttr("activation"))
    return false;
  QuantParams a, b, y;
  if (!perTensorDequantizeOf(g, rw.uses, gemm.inputs[0], &a) || !constantWeightOf(g, rw.uses, gemm.inputs[1], &b))
    return false;
  // ONNX Runtime's QGemm takes uint8 A with either B, or int8 A with int8 B.
  if (a.type == DataType::Int8 && b.type != DataType::Int8) return false;
  const Shape bShape = g.tensors[b.bytes].shape;
  const bool transB = gemm.getInt("transB", 0) != 0;
  if (bShape.size() != 2) return false;
  const int64_t n = bShape[transB ? 0 : 1];
  if (!perAxisAlong(b, transB ? 0 : 1, 2, n)) return false;
  const float alpha = gemm.getFloat("alpha", 1.f);
  if (!std::isfinite(alpha) || alpha == 0.f) return false;
  const int c = gemmBias(rw, gemm, a, b, alpha, n);
  if (c == -2) return false;
  const std::string& name = gemm.name;
  // QGemm wants b_zero_point of b_scale's size.
  int bZero = b.zeroPoint;
  if (bZero < 0 && !b.perTensor()) {
    const std::vector<uint8_t> zeros(static_cast<size_t>(n), 0);
    bZero = rw.constant(name + "_b_zp", b.type, {n}, zeros.data(), zeros.size());
  } else if (bZero < 0) {
    bZero = rw.zeroPoint(b, name + "_b_zp");
  }
  std::vector<int> inputs = {a.bytes, a.scale, rw.zeroPoint(a, name + "_a_zp"), b.bytes, b.scale, bZero, c};
  // QGemm's y_zero_point has A's type; otherwise the output stays float and the Q stays.
  const bool quantized = soleQuantizeOf(g, rw.uses, gemm.outputs[0], &y) && y.type == a.type;
  if (quantized) {
    inputs.push_back(y.scale);
    inputs.push_back(rw.zeroPoint(y, name + "_y_zp"));
  }
  rw.setInputs(k, trimmed(std::move(inputs)));
  Node& fused = rw.g.nodes[k];
  fused.type = OpType::QGemm;
  fused.removeAttr("beta");
  if (quantized)
    rw.takeOutput(k, y);
  else
    rw.g.tensors[fused.outputs[0]].dtype = DataType::Float32;
  return true;
}

}  // namespace

bool fuseMatrixOp(Rewriter& rw, int k) {
  switch (rw.g.nodes[k].type) {
    case OpType::Conv: return fuseConv(rw, k);
    case OpType::MatMul: return fuseMatMul(rw, k);
    case OpType::Gemm: return fuseGemm(rw, k);
    default: return false;
  }
}

}  // namespace qdq

namespace {

// Fake-quantized exports write weights as QuantizeLinear(float constant): computed here, so
// that the DequantizeLinear after it reads a byte constant.
void foldConstantQuantize(Graph& g) {
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    drop[k] = g.nodes[k].type == OpType::QuantizeLinear && foldNode(g, g.nodes[k], false);
  eraseNodes(g, drop);
}

// The DequantizeLinear nodes whose readers were all fused away; left in, constant folding would
// still dequantize their weights.
void removeUnreadDequantize(Graph& g) {
  const std::vector<int> readers = readerCounts(g);
  std::vector<bool> drop(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    drop[k] = n.type == OpType::DequantizeLinear && n.outputs.size() == 1 && n.outputs[0] >= 0 &&
              readers[n.outputs[0]] == 0;
  }
  eraseNodes(g, drop);
}

}  // namespace

int fuseQuantizedOps(Graph& g) {
  foldConstantQuantize(g);
  qdq::Rewriter rw(g);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const int node = static_cast<int>(k);
    if (!rw.drop[k] && (qdq::fuseMatrixOp(rw, node) || qdq::fusePointwiseOp(rw, node))) ++fused;
  }
  eraseNodes(g, rw.drop);
  removeUnreadDequantize(g);
  return fused;
}

int fuseQuantizedActivationProducts(Graph& g) {
  qdq::Rewriter rw(g);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!rw.drop[k] && g.nodes[k].type == OpType::MatMul && qdq::fuseMatrixOp(rw, static_cast<int>(k))) ++fused;
  eraseNodes(g, rw.drop);
  removeUnreadDequantize(g);
  return fused;
}

}  // namespace osprey::passes
