// DequantizeLinear -> elementwise float ops -> QuantizeLinear, each quantization per tensor:
// every output code then depends on one input code, so the chain becomes ByteLookup with a
// table of the 256 results, computed here by the same host evaluation the runtime uses for the
// ops themselves (their reference kernels). ONNX Runtime's QDQ quantizer leaves such chains
// around the ops it has no integer kernel for (GELU's Div and Erf in a transformer, Tanh, Exp).
#include <set>

#include "converter/passes/passes.h"
#include "converter/passes/qdq_match.h"
#include "ops/quant_util.h"

namespace osprey::passes {

namespace {

constexpr size_t kMaxChain = 8;

// A constant with one element.
bool scalarTensor(const Graph& g, int t) {
  if (t < 0) return true;  // an absent optional input
  const TensorInfo& info = g.tensors[t];
  return info.isConstant && info.hasShape && shapeElements(info.shape) == 1;
}

// Float ops of one float input whose result at each element depends on that element alone.
bool unaryFloatOp(OpType type) {
  static const std::set<OpType> kOps = {
      OpType::Relu,      OpType::LeakyRelu, OpType::Sigmoid,  OpType::Tanh,     OpType::HardSigmoid, OpType::HardSwish,
      OpType::Erf,       OpType::Gelu,      OpType::Elu,      OpType::Exp,      OpType::Log,         OpType::Sqrt,
      OpType::Reciprocal, OpType::Neg,      OpType::Abs,      OpType::Sin,      OpType::Cos,         OpType::Round,
      OpType::Floor,     OpType::Ceil,      OpType::Sign,     OpType::Selu,     OpType::Celu,        OpType::Softplus,
      OpType::Softsign,  OpType::ThresholdedRelu, OpType::Shrink, OpType::Mish, OpType::Swish,       OpType::Atan,
      OpType::Sinh,      OpType::Cosh,      OpType::Asinh,    OpType::Tan};
  return kOps.count(type) != 0;
}

bool binaryFloatOp(OpType type) {
  return type == OpType::Add || type == OpType::Sub || type == OpType::Mul || type == OpType::Div ||
         type == OpType::Pow || type == OpType::Max || type == OpType::Min;
}

// The input of n that carries the data when n maps each element alone (its other inputs one-
// element constants of rank 0 or 1, so the result keeps the data's shape); -1 otherwise.
int elementwiseData(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1) return -1;
  auto fits = [&](int t) { return scalarTensor(g, t) && (t < 0 || g.tensors[t].shape.size() <= 1); };
  if (unaryFloatOp(n.type)) return n.inputs.size() == 1 ? n.inputs[0] : -1;
  if (n.type == OpType::Clip) {
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (!fits(n.inputs[i])) return -1;
    return n.inputs.empty() ? -1 : n.inputs[0];
  }
  if (!binaryFloatOp(n.type) || n.inputs.size() != 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return -1;
  if (fits(n.inputs[1]) && !g.tensors[n.inputs[0]].isConstant) return n.inputs[0];
  if (fits(n.inputs[0]) && !g.tensors[n.inputs[1]].isConstant) return n.inputs[1];
  return -1;
}

// The 256 codes of `dtype` in byte order: entry b is the code whose byte is b.
int codesTensor(Graph& t, DataType dtype) {
  TensorInfo codes;
  codes.name = "codes";
  codes.dtype = dtype;
  codes.shape = {256};
  codes.hasShape = true;
  codes.isConstant = true;
  uint8_t bytes[256];
  for (int b = 0; b < 256; ++b) bytes[b] = static_cast<uint8_t>(b);
  codes.data = ConstantData::copyOf(bytes, sizeof(bytes));
  return t.addTensor(codes);
}

// The chain [dq, ops..., q] evaluated on every code: the table's tensor, or false where an op
// cannot be evaluated on the host or the result is not 256 bytes.
bool evaluateTable(const Graph& g, const std::vector<int>& nodes, int x, TensorInfo* table) {
  Graph t;
  std::vector<int> mapped(g.tensors.size(), -1);
  mapped[x] = codesTensor(t, g.tensors[x].dtype);
  auto map = [&](int i) {
    if (i < 0) return -1;
    if (mapped[i] < 0) {
      TensorInfo copy = g.tensors[i];
      if (!copy.isConstant) {  // an intermediate result: its type and shape are the evaluation's
        copy.hasShape = false;
        copy.shape.clear();
      }
      mapped[i] = t.addTensor(copy);
    }
    return mapped[i];
  };
  for (int k : nodes) {
    Node n = g.nodes[k];
    for (int& i : n.inputs) i = map(i);
    for (int& o : n.outputs) o = map(o);
    t.nodes.push_back(n);
    if (!foldNode(t, t.nodes.back(), false)) return false;
  }
  const TensorInfo& result = t.tensors[t.nodes.back().outputs[0]];
  if (!result.isConstant || !quant::isByte(result.dtype) || result.shape != Shape{256}) return false;
  *table = result;
  return true;
}

}  // namespace

int fuseQuantizedTables(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  for (size_t qi = 0; qi < g.nodes.size(); ++qi) {
    qdq::QuantParams out, in;
    if (g.nodes[qi].type != OpType::QuantizeLinear || !qdq::quantizeAt(g, static_cast<int>(qi), &out)) continue;
    // Back from the QuantizeLinear through ops whose result only the next one reads, to a
    // per-tensor DequantizeLinear (which other ops may read too).
    std::vector<int> chain;
    int t = g.nodes[qi].inputs[0];
    bool reached = false;
    while (t >= 0 && uses.producer[t] >= 0 && chain.size() <= kMaxChain) {
      if ((reached = qdq::perTensorDequantizeOf(g, uses, t, &in))) break;
      const int p = uses.producer[t];
      const int data = uses.isOutput[t] || uses.readers[t].size() != 1 || drop[p] ? -1 : elementwiseData(g, g.nodes[p]);
      if (data < 0) break;
      chain.push_back(p);
      t = data;
    }
    if (!reached || chain.empty() || chain.size() > kMaxChain || drop[in.node]) continue;
    std::vector<int> nodes = {in.node};
    nodes.insert(nodes.end(), chain.rbegin(), chain.rend());
    nodes.push_back(static_cast<int>(qi));
    TensorInfo table;
    if (!evaluateTable(g, nodes, in.bytes, &table)) continue;
    table.name = g.nodes[qi].name + "_table";
    const int tableTensor = g.addTensor(table);
    Node& lookup = g.nodes[qi];
    lookup.type = OpType::ByteLookup;
    lookup.inputs = {in.bytes, tableTensor};
    lookup.attrs.clear();
    for (int k : chain) drop[k] = true;
    const int dqOut = g.nodes[in.node].outputs[0];
    if (!uses.isOutput[dqOut] && uses.readers[dqOut].size() == 1) drop[in.node] = true;
    ++fused;
  }
  eraseNodes(g, drop);
  return fused;
}

}  // namespace osprey::passes
