// A product whose output is only read in column ranges (a packed q/k/v projection and its three
// Slices of the last axis) becomes one product per range, with the weights' columns split once at
// conversion: each part is then written contiguously, where the Slices of the packed rows were
// strided copies at every run (three per transformer layer).
#include <algorithm>
#include <cstring>

#include "converter/passes/pattern_util.h"

namespace osprey::passes {

namespace {

// Columns [begin, end) of the last axis of a rank-`rank` tensor of width `width` taken by a Slice
// with constant one-axis starts / ends and unit steps; false for any other Slice.
bool columnRange(const Graph& g, const Node& slice, int64_t rank, int64_t width, int64_t* begin, int64_t* end) {
  AxisSlice s;
  if (!constantAxisSlice(g, slice, &s) || s.step != 1 || (s.axis != -1 && s.axis != rank - 1)) return false;
  auto clampIndex = [&](int64_t v) { return std::clamp(v < 0 ? v + width : v, int64_t{0}, width); };
  *begin = clampIndex(s.start), *end = clampIndex(s.end);
  return *begin < *end;
}

// Columns [begin, end) of a float32 constant [rows, width] (rows 1 for a bias [width]).
int columnsOf(Graph& g, int t, int64_t begin, int64_t end, const std::string& name) {
  TensorInfo part = g.tensors[t];
  const int64_t width = part.shape.back(), rows = part.shape.size() == 2 ? part.shape[0] : 1;
  const int64_t columns = end - begin;
  std::vector<float> values(static_cast<size_t>(rows * columns));
  const float* src = reinterpret_cast<const float*>(part.data.bytes.get());
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(values.data() + r * columns, src + r * width + begin, static_cast<size_t>(columns) * sizeof(float));
  part.name = name;
  part.shape.back() = columns;
  part.dimNames.clear();
  part.data = ConstantData::copyOf(values.data(), values.size() * sizeof(float));
  return g.addTensor(part);
}

}  // namespace

int splitSlicedProjections(Graph& g) {
  GraphUses uses(g);
  std::vector<bool> drop(g.nodes.size(), false);
  int split = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& product = g.nodes[k];
    if (product.type != OpType::MatMul || product.inputs.size() < 2 || product.outputs.size() != 1) continue;
    const int w = product.inputs[1], bias = product.inputs.size() > 2 ? product.inputs[2] : -1;
    const TensorInfo& weights = g.tensors[w];
    const TensorInfo& out = g.tensors[product.outputs[0]];
    if (!weights.isConstant || weights.dtype != DataType::Float32 || weights.shape.size() != 2 || !out.hasShape ||
        out.shape.size() < 2 || uses.isOutput[product.outputs[0]] || uses.readers[product.outputs[0]].size() < 2)
      continue;
    if (bias >= 0 && (!g.tensors[bias].isConstant || g.tensors[bias].dtype != DataType::Float32 ||
                      g.tensors[bias].shape != Shape{weights.shape[1]}))
      continue;
    const int64_t width = weights.shape[1], rank = static_cast<int64_t>(out.shape.size());
    // Every reader a Slice of its own column range, the ranges disjoint (no weight is copied twice).
    std::vector<std::pair<int64_t, int64_t>> ranges;
    bool ok = true;
    for (int r : uses.readers[product.outputs[0]]) {
      int64_t begin = 0, end = 0;
      ok &= g.nodes[r].inputs[0] == product.outputs[0] && columnRange(g, g.nodes[r], rank, width, &begin, &end);
      if (!ok) break;
      ranges.emplace_back(begin, end);
    }
    std::vector<std::pair<int64_t, int64_t>> sorted = ranges;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 1; ok && i < sorted.size(); ++i) ok = sorted[i].first >= sorted[i - 1].second;
    if (!ok) continue;
    const Node original = product;
    const std::vector<int> readers = uses.readers[original.outputs[0]];
    for (size_t i = 0; i < readers.size(); ++i) {
      Node& part = g.nodes[readers[i]];
      const auto [begin, end] = ranges[i];
      const std::string name = part.name + "_projection";
      std::vector<int> inputs{original.inputs[0], columnsOf(g, w, begin, end, name + "_weights")};
      if (bias >= 0) inputs.push_back(columnsOf(g, bias, begin, end, name + "_bias"));
      part.type = OpType::MatMul;
      part.name = name;
      part.inputs = inputs;
      part.attrs = original.attrs;  // a fused activation applies column by column
    }
    drop[k] = true;
    ++split;
  }
  eraseNodes(g, drop);
  return split;
}

}  // namespace osprey::passes
