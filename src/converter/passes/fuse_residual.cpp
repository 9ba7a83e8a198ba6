// Adds folded into the op before them: MatMul(A, B) + bias as MatMul's third input (the bias
// input of MatMulIntegerToFloat and DynamicQuantizeMatMul likewise), and
// Conv(x) + Z (a residual connection) as Conv's fourth input, so that the sum is written once
// and an activation after it can still fuse into the Conv (Y = act(conv + B + Z)).
#include <algorithm>

#include "converter/passes/pattern_util.h"

namespace osprey::passes {

namespace {

int constantRank(const Graph& g, int t) { return static_cast<int>(g.tensors[t].shape.size()); }

// Where each product takes a float bias [N] (an input index), and whether it has one already.
// MatMul's fp32 weights, or the integer products with a float result (their int8 or uint8
// weights [K, N]: MatMulIntegerToFloat as the quantizer and the QDQ fusion make it,
// DynamicQuantizeMatMul as ONNX Runtime's dynamic quantization does).
int biasInput(const Node& n) {
  switch (n.type) {
    case OpType::MatMul: return n.inputs.size() == 2 ? 2 : -1;
    case OpType::MatMulIntegerToFloat: return n.inputs.size() <= 6 || n.inputs[6] < 0 ? 6 : -1;
    case OpType::DynamicQuantizeMatMul: return n.inputs.size() <= 4 || n.inputs[4] < 0 ? 4 : -1;
    default: return -1;
  }
}

// The bias of a product with constant weights [K, N]: a float32 constant of shape [N] or
// [1, ..., 1, N] that does not raise the rank of the product.
bool matMulBias(const Graph& g, const Node& matmul, int bias) {
  const TensorInfo& w = g.tensors[matmul.inputs[1]];
  const bool integer = matmul.type != OpType::MatMul;
  if (!w.isConstant || !w.hasShape || w.shape.size() != 2) return false;
  if (integer ? w.dtype != DataType::Int8 && w.dtype != DataType::UInt8 : w.dtype != DataType::Float32) return false;
  int64_t count = 0;
  if (!floatConstantData(g, bias, &count) || count != w.shape[1] || count <= 0) return false;
  const Shape& s = g.tensors[bias].shape;
  if (s.empty() || s.back() != count) return false;
  if (s.size() == 1) return true;
  // A [1, ..., 1, N] bias must not add leading dims: the product's rank is A's (at least 2).
  const TensorInfo& a = g.tensors[matmul.inputs[0]];
  return a.hasShape && static_cast<int>(s.size()) <= std::max<int>(2, static_cast<int>(a.shape.size()));
}

}  // namespace

int fuseMatMulBias(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& add = g.nodes[k];
    if (add.type != OpType::Add || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    for (int side : {0, 1}) {
      const int product = add.inputs[side], bias = add.inputs[1 - side];
      if (product < 0 || bias < 0 || uses.producer[product] < 0) continue;
      const Node* mm = uses.soleUseProducer(g, product, g.nodes[uses.producer[product]].type);
      const int at = mm ? biasInput(*mm) : -1;
      if (at < 0 || mm->inputs[1] < 0 || !matMulBias(g, *mm, bias)) continue;
      Node& matmul = g.nodes[uses.producer[product]];
      int b = bias;
      if (constantRank(g, bias) != 1) {  // [1, ..., 1, N] as the 1-D [N] the op takes
        TensorInfo flat = g.tensors[bias];
        flat.name += "_bias";
        flat.shape = {flat.shape.back()};
        flat.dimNames.clear();
        b = g.addTensor(flat);
      }
      matmul.inputs.resize(std::max(matmul.inputs.size(), static_cast<size_t>(at + 1)), -1);
      matmul.inputs[at] = b;
      matmul.outputs = add.outputs;
      drop[k] = true;
      ++fused;
      break;
    }
  }
  eraseNodes(g, drop);
  return fused;
}

int fuseConvResidual(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int fused = 0;
  auto staticShape = [&](int t) {
    const TensorInfo& info = g.tensors[t];
    if (!info.hasShape || info.dtype != DataType::Float32) return false;
    for (int64_t d : info.shape)
      if (d < 0) return false;
    return true;
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& add = g.nodes[k];
    if (add.type != OpType::Add || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    // When both operands are Convs, the one computed later takes the other as its residual.
    int sides[2] = {0, 1};
    if (add.inputs[0] >= 0 && add.inputs[1] >= 0 && uses.producer[add.inputs[0]] > uses.producer[add.inputs[1]])
      std::swap(sides[0], sides[1]);
    for (int side : {sides[1], sides[0]}) {
      const int x = add.inputs[side], z = add.inputs[1 - side];
      const Node* conv = uses.soleUseProducer(g, x, OpType::Conv);
      if (!conv || conv->hasAttr("activation") || conv->inputs.size() < 2 || conv->inputs.size() > 3 || z < 0 || z == x)
        continue;
      const TensorInfo& w = g.tensors[conv->inputs[1]];
      const TensorInfo& zi = g.tensors[z];
      // Z must already exist when the Conv runs, and match its output exactly (no broadcast).
      if (w.dtype != DataType::Float32 || zi.isConstant || uses.producer[z] >= uses.producer[x]) continue;
      if (!staticShape(x) || !staticShape(z) || zi.shape != g.tensors[x].shape) continue;
      Node& c = g.nodes[uses.producer[x]];
      c.inputs.resize(4, -1);
      c.inputs[3] = z;
      c.outputs = add.outputs;
      drop[k] = true;
      ++fused;
      break;
    }
  }
  eraseNodes(g, drop);
  return fused;
}

}  // namespace osprey::passes
