// Graph lookups and additions the quantizer's rewrites (quantize_graph.cpp, quantize_weights.cpp)
// share.
#pragma once
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/op_def.h"

namespace osprey::quantizer {

// `--exclude` names op types ("Conv") or node names.
inline bool excluded(const std::vector<std::string>& exclude, const Node& n) {
  for (const std::string& e : exclude)
    if (e == opTypeName(n.type) || e == n.name) return true;
  return false;
}

// Tensor t of `g` when it is a float32 constant, else null.
inline const TensorInfo* floatConstant(const Graph& g, int t) {
  if (t < 0 || !g.tensors[t].isConstant || g.tensors[t].dtype != DataType::Float32) return nullptr;
  return &g.tensors[t];
}

// A new constant of `g` (its name made unique by the tensor's index).
inline int addConstant(Graph& g, const std::string& name, DataType dtype, const Shape& shape, const void* data,
                       size_t bytes) {
  TensorInfo t;
  t.name = name + "__" + std::to_string(g.tensors.size());
  t.dtype = dtype;
  t.shape = shape;
  t.isConstant = true;
  t.data = ConstantData::copyOf(data, bytes);
  return g.addTensor(t);
}

}  // namespace osprey::quantizer
