// What the QDQ fusion (fuse_qdq.cpp) reads off a graph: the constant scales and zero points of
// QuantizeLinear / DequantizeLinear nodes, the constant biases next to them, and a small
// rewriter that keeps the producer and reader lists current while nodes are rewired.
#pragma once
#include <string>
#include <vector>

#include "converter/passes/pattern_util.h"

namespace osprey::passes::qdq {

// The quantization one Q or DQ node applies, read from its constant inputs. Only uint8/int8
// data with float32 scales that are finite and positive, and no blocked quantization: what the
// integer ops take.
struct QuantParams {
  int node = -1;       // the Q or DQ node
  int bytes = -1;      // the quantized tensor: a DQ's input, a Q's output
  int scale = -1;      // float32 constant
  int zeroPoint = -1;  // constant of `type`; -1 when omitted (zero)
  DataType type = DataType::Undefined;
  std::vector<float> scales;          // one value (per tensor) or one per index of `axis`
  std::vector<int32_t> zeroPoints;    // as many as scales
  int64_t axis = 1;                   // the node's axis attribute, as written
  bool perTensor() const { return scales.size() == 1; }
};

// The DequantizeLinear producing `t` (other readers of `t` are allowed).
bool dequantizeOf(const Graph& g, const GraphUses& uses, int t, QuantParams* dq);
// The same, per tensor only.
bool perTensorDequantizeOf(const Graph& g, const GraphUses& uses, int t, QuantParams* dq);
// QuantizeLinear node `k` to uint8/int8, per tensor.
bool quantizeAt(const Graph& g, int k, QuantParams* q);
// The QuantizeLinear that is the only reader of `t` (not a graph output), per tensor.
bool soleQuantizeOf(const Graph& g, const GraphUses& uses, int t, QuantParams* q);
// A DQ's per-axis parameters lie along `axis` of a tensor of rank `rank` with `length` entries.
bool perAxisAlong(const QuantParams& dq, int64_t axis, int64_t rank, int64_t length);
// Equal per-tensor scale, zero point and type: re-quantizing one's values with the other's
// parameters gives the same bytes.
bool sameQuantization(const QuantParams& a, const QuantParams& b);
inline int32_t lowestOf(DataType t) { return t == DataType::Int8 ? -128 : 0; }

// A constant bias (Conv's B, Gemm's C): a float32 constant, or a DequantizeLinear of an int32
// constant whose integers are kept when its scale is the one the integer op needs.
struct ConstantBias {
  Shape shape;
  std::vector<float> values;      // dequantized
  std::vector<int32_t> integers;  // the int32 constant, when it came through a DQ with zero point 0
  std::vector<float> scales;      // that DQ's scale (one, or one per value)
};
bool constantBias(const Graph& g, const GraphUses& uses, int t, ConstantBias* bias);
// The bias as `n` int32 values in the scale `scales[i]` (one scale, or one per value; a bias of
// one value is repeated): the DQ's integers where its scale is that scale, else
// round(value / scale). False when a value does not fit int32.
bool biasIntegers(const ConstantBias& bias, const std::vector<float>& scales, int64_t n, std::vector<int32_t>* out);

// Edits a graph during one pass: new constants, rewired readers and dropped nodes, with `uses`
// kept current so later matches see the graph as it now is.
struct Rewriter {
  Graph& g;
  GraphUses uses;
  std::vector<bool> drop;
  explicit Rewriter(Graph& graph) : g(graph), uses(graph), drop(graph.nodes.size(), false) {}

  int constant(const std::string& name, DataType type, const Shape& shape, const void* data, size_t bytes);
  // A Q/DQ's zero point, or a new zero of its type where it omitted one (the integer ops want one).
  int zeroPoint(const QuantParams& p, const std::string& name);
  // Sets node `k`'s inputs, updating the reader lists.
  void setInputs(int k, std::vector<int> inputs);
  // Node `k` now writes the output of node `absorbed` (which read k's), of `type`, instead of
  // its own; `absorbed` is dropped.
  void absorb(int k, int absorbed, DataType type);
  // The same for the QuantizeLinear `q` after node `k`.
  void takeOutput(int k, const QuantParams& q);
};

// The rewrites of one anchor node `k`, true where it was rewritten: Conv, MatMul and Gemm
// (fuse_qdq.cpp); elementwise, pooling, Softmax, Concat, data movement and Q(DQ(t))
// (fuse_qdq_pointwise.cpp).
bool fuseMatrixOp(Rewriter& rw, int k);
bool fusePointwiseOp(Rewriter& rw, int k);

}  // namespace osprey::passes::qdq
