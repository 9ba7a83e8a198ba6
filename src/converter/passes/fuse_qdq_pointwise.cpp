// The QDQ fusion's rewrites of everything but the matrix products (fuse_qdq.cpp has those and
// the pass itself): Add / Mul, pooling, Sigmoid, LeakyRelu, Softmax and Concat between
// DequantizeLinear and QuantizeLinear become ONNX Runtime's com.microsoft QLinear ops; ops that
// only move or select values run on the bytes where the Q writes in the DQ's own scale and
// zero point; and Q(DQ(t)) in one scale and zero point is t.
#include "converter/passes/qdq_match.h"

namespace osprey::passes::qdq {

namespace {

// DQ(a), DQ(b) -> Add / Mul -> Q  =>  QLinearAdd / QLinearMul(a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp).
bool fuseBinary(Rewriter& rw, int k, OpType fusedType) {
  const Graph& g = rw.g;
  const Node& n = g.nodes[k];
  QuantParams a, b, y;
  if (n.inputs.size() != 2 || n.outputs.size() != 1 || !perTensorDequantizeOf(g, rw.uses, n.inputs[0], &a) ||
      !perTensorDequantizeOf(g, rw.uses, n.inputs[1], &b) || !soleQuantizeOf(g, rw.uses, n.outputs[0], &y))
    return false;
  if (a.type != b.type || a.type != y.type) return false;  // the ops take one byte type throughout
  const std::string& name = n.name;
  rw.setInputs(k, {a.bytes, a.scale, rw.zeroPoint(a, name + "_a_zp"), b.bytes, b.scale, rw.zeroPoint(b, name + "_b_zp"),
                   y.scale, rw.zeroPoint(y, name + "_y_zp")});
  Node& fused = rw.g.nodes[k];
  fused.type = fusedType;
  // The requantization a frontend asked for (ops/fixed_point_add.h) is all that carries over.
  const std::string requantize = fused.getString("requantize", "");
  fused.attrs.clear();
  if (!requantize.empty()) fused.setString("requantize", requantize);
  rw.takeOutput(k, y);
  return true;
}

OpType qlinearFormOf(OpType t) {
  switch (t) {
    case OpType::GlobalAveragePool: return OpType::QLinearGlobalAveragePool;
    case OpType::AveragePool: return OpType::QLinearAveragePool;
    case OpType::Sigmoid: return OpType::QLinearSigmoid;
    case OpType::LeakyRelu: return OpType::QLinearLeakyRelu;
    case OpType::Softmax: return OpType::QLinearSoftmax;
    default: return OpType::Invalid;
  }
}

// DQ(x) -> op -> Q  =>  QLinear<op>(x, x_s, x_zp, y_s, y_zp) for the ops of qlinearFormOf; the
// op's attributes carry over.
bool fuseUnary(Rewriter& rw, int k) {
  const Graph& g = rw.g;
  const Node& n = g.nodes[k];
  QuantParams x, y;
  if (n.inputs.size() != 1 || n.outputs.size() != 1 || !perTensorDequantizeOf(g, rw.uses, n.inputs[0], &x) ||
      !soleQuantizeOf(g, rw.uses, n.outputs[0], &y) || x.type != y.type)
    return false;
  if (n.type == OpType::AveragePool) {
    if (!n.hasAttr("kernel_shape")) return false;
    for (int64_t d : n.getInts("dilations"))
      if (d != 1) return false;  // QLinearAveragePool has no dilations
  }
  const std::string& name = n.name;
  const OpType fusedType = qlinearFormOf(n.type);
  rw.setInputs(k, {x.bytes, x.scale, rw.zeroPoint(x, name + "_x_zp"), y.scale, rw.zeroPoint(y, name + "_y_zp")});
  Node& fused = rw.g.nodes[k];
  if (fused.type == OpType::Softmax) {
    // Osprey's Softmax is opset 13's (the importer rewrites older ones): one axis, default -1.
    fused.setInt("axis", fused.getInt("axis", -1));
    fused.setInt("opset", 13);
  }
  fused.type = fusedType;
  rw.takeOutput(k, y);
  return true;
}

// Concat(DQ(x0), DQ(x1), ...) -> Q  =>  QLinearConcat(y_s, y_zp, x0, x0_s, x0_zp, x1, ...).
bool fuseConcat(Rewriter& rw, int k) {
  const Graph& g = rw.g;
  const Node& n = g.nodes[k];
  QuantParams y;
  if (n.inputs.empty() || n.outputs.size() != 1 || !soleQuantizeOf(g, rw.uses, n.outputs[0], &y)) return false;
  std::vector<QuantParams> parts(n.inputs.size());
  for (size_t i = 0; i < parts.size(); ++i)
    if (!perTensorDequantizeOf(g, rw.uses, n.inputs[i], &parts[i]) || parts[i].type != y.type) return false;
  const std::string& name = n.name;
  std::vector<int> inputs = {y.scale, rw.zeroPoint(y, name + "_y_zp")};
  for (size_t i = 0; i < parts.size(); ++i) {
    inputs.push_back(parts[i].bytes);
    inputs.push_back(parts[i].scale);
    inputs.push_back(rw.zeroPoint(parts[i], name + "_x" + std::to_string(i) + "_zp"));
  }
  rw.setInputs(k, std::move(inputs));
  rw.g.nodes[k].type = OpType::QLinearConcat;
  rw.takeOutput(k, y);
  return true;
}

// Ops whose outputs are input values moved or selected (never combined), and whose reference
// kernels take uint8/int8: on the bytes they give what Q(op(DQ(x))) gives when Q and DQ share
// scale and zero point. MaxPool belongs here because, with a positive scale, the largest byte
// is the largest value.
bool movesValues(const Node& n) {
  switch (n.type) {
    case OpType::MaxPool:
    case OpType::Reshape:
    case OpType::Transpose:
    case OpType::Flatten:
    case OpType::Squeeze:
    case OpType::Unsqueeze:
    case OpType::Slice:
    case OpType::Gather:
    case OpType::DepthToSpace:
    case OpType::SpaceToDepth:
      return true;
    case OpType::Resize:
      // Nearest only; tf_crop_and_resize writes extrapolation_value, a float, outside the input.
      return n.getString("mode", "nearest") == "nearest" &&
             n.getString("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize";
    default:
      return false;
  }
}

// DQ(x) -> op -> Q with equal scale and zero point  =>  op(x).
bool fuseDataMovement(Rewriter& rw, int k) {
  const Graph& g = rw.g;
  const Node& n = g.nodes[k];
  if (n.inputs.empty() || n.outputs.size() != 1 || !movesValues(n)) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] == n.inputs[0]) return false;  // the data is read as an index or shape too
  QuantParams x, y;
  if (!perTensorDequantizeOf(g, rw.uses, n.inputs[0], &x) || !soleQuantizeOf(g, rw.uses, n.outputs[0], &y) ||
      !sameQuantization(x, y))
    return false;
  std::vector<int> inputs = n.inputs;
  inputs[0] = x.bytes;
  rw.setInputs(k, std::move(inputs));
  rw.takeOutput(k, y);
  return true;
}

// Q(DQ(t)) in the same scale, zero point and type  =>  t: its readers read t.
bool removeRequantize(Rewriter& rw, int k) {
  const Graph& g = rw.g;
  QuantParams x, y;
  if (!quantizeAt(g, k, &y) || rw.uses.isOutput[y.bytes] ||
      !perTensorDequantizeOf(g, rw.uses, g.nodes[k].inputs[0], &x) || !sameQuantization(x, y))
    return false;
  const std::vector<int> readers = rw.uses.readers[y.bytes];
  for (int r : readers) {
    std::vector<int> inputs = rw.g.nodes[r].inputs;
    for (int& i : inputs)
      if (i == y.bytes) i = x.bytes;
    rw.setInputs(r, std::move(inputs));
  }
  rw.setInputs(k, {});
  rw.drop[k] = true;
  return true;
}

}  // namespace

bool fusePointwiseOp(Rewriter& rw, int k) {
  const OpType t = rw.g.nodes[k].type;
  if (t == OpType::Add) return fuseBinary(rw, k, OpType::QLinearAdd);
  if (t == OpType::Mul) return fuseBinary(rw, k, OpType::QLinearMul);
  if (t == OpType::Concat) return fuseConcat(rw, k);
  if (t == OpType::QuantizeLinear) return removeRequantize(rw, k);
  if (qlinearFormOf(t) != OpType::Invalid) return fuseUnary(rw, k);
  return fuseDataMovement(rw, k);
}

}  // namespace osprey::passes::qdq
