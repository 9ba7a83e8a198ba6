#include "converter/passes/pattern_util.h"

#include <algorithm>
#include <cstring>

namespace osprey::passes {

GraphUses::GraphUses(const Graph& g)
    : producer(g.tensors.size(), -1), readers(g.tensors.size()), isOutput(g.tensors.size(), false) {
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (int o : g.nodes[k].outputs)
      if (o >= 0) producer[o] = static_cast<int>(k);
    for (int i : g.nodes[k].inputs)
      if (i >= 0 && (readers[i].empty() || readers[i].back() != static_cast<int>(k)))
        readers[i].push_back(static_cast<int>(k));
  }
  for (int o : g.outputs) isOutput[o] = true;
}

const Node* GraphUses::soleUseProducer(const Graph& g, int t, OpType type) const {
  if (t < 0 || producer[t] < 0 || isOutput[t] || readers[t].size() != 1) return nullptr;
  const Node& n = g.nodes[producer[t]];
  // A node reading the tensor twice (Mul(x, x)) counts as one reader but two uses.
  int uses = 0;
  for (int i : g.nodes[readers[t][0]].inputs) uses += i == t;
  return n.type == type && n.outputs.size() == 1 && uses == 1 ? &n : nullptr;
}

int GraphUses::soleReader(const Graph& g, int t, OpType type) const {
  if (t < 0 || isOutput[t] || readers[t].size() != 1) return -1;
  const Node& n = g.nodes[readers[t][0]];
  return n.type == type && n.outputs.size() == 1 ? readers[t][0] : -1;
}

bool int64Constant(const Graph& g, int t, std::vector<int64_t>* values) {
  if (t < 0) return false;
  const TensorInfo& info = g.tensors[t];
  if (!info.isConstant || info.dtype != DataType::Int64 || info.data.size % 8 != 0) return false;
  values->resize(info.data.size / 8);
  if (!values->empty()) std::memcpy(values->data(), info.data.bytes.get(), info.data.size);
  return true;
}

int newInt64Constant(Graph& g, const std::string& name, const std::vector<int64_t>& v) {
  TensorInfo t;
  t.name = name;
  t.dtype = DataType::Int64;
  t.shape = {static_cast<int64_t>(v.size())};
  t.isConstant = true;
  t.data = ConstantData::copyOf(v.data(), v.size() * 8);
  return g.addTensor(t);
}

bool constantAxisSlice(const Graph& g, const Node& slice, AxisSlice* out) {
  if (slice.type != OpType::Slice || slice.inputs.size() < 4 || slice.outputs.size() != 1) return false;
  std::vector<int64_t> starts, ends, axes, steps{1};
  if (!int64Constant(g, slice.inputs[1], &starts) || !int64Constant(g, slice.inputs[2], &ends) ||
      !int64Constant(g, slice.inputs[3], &axes))
    return false;
  if (slice.inputs.size() > 4 && slice.inputs[4] >= 0 && !int64Constant(g, slice.inputs[4], &steps)) return false;
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1) return false;
  out->axis = axes[0], out->start = starts[0], out->end = ends[0], out->step = steps[0];
  return true;
}

const float* floatConstantData(const Graph& g, int t, int64_t* count) {
  if (t < 0) return nullptr;
  const TensorInfo& info = g.tensors[t];
  if (!info.isConstant || info.dtype != DataType::Float32 || !info.hasShape) return nullptr;
  *count = shapeElements(info.shape);
  if (*count < 0 || info.data.size != static_cast<size_t>(*count) * 4) return nullptr;
  return reinterpret_cast<const float*>(info.data.bytes.get());
}

bool scalarConstant(const Graph& g, int t, float* value) {
  int64_t n = 0;
  const float* p = floatConstantData(g, t, &n);
  if (!p || n != 1) return false;
  *value = p[0];
  return true;
}

void eraseNodes(Graph& g, const std::vector<bool>& drop) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
}

}  // namespace osprey::passes
