// Small helpers shared by the pattern-matching fusion passes: who produces and who reads each
// tensor, constant lookups, and removing the nodes a fusion replaced.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "converter/passes/passes.h"

namespace osprey::passes {

// Producer and reader lists of a graph, kept current by the pass that edits it.
struct GraphUses {
  std::vector<int> producer;              // node index per tensor, -1 for inputs/constants
  std::vector<std::vector<int>> readers;  // node indices per tensor
  std::vector<bool> isOutput;             // graph outputs

  explicit GraphUses(const Graph& g);
  // The node producing `t` when it has `type` and `t` is read only by one node and is not a
  // graph output (so the producer may disappear into a fusion); else null.
  const Node* soleUseProducer(const Graph& g, int t, OpType type) const;
  // The only node reading `t`, when it has `type` and `t` is not a graph output; else -1.
  int soleReader(const Graph& g, int t, OpType type) const;
};

// The float value of a one-element float32 constant.
bool scalarConstant(const Graph& g, int t, float* value);
// A float32 constant's values (null when `t` is not one).
const float* floatConstantData(const Graph& g, int t, int64_t* count);
// The values of a constant int64 tensor (false when `t` is not one).
bool int64Constant(const Graph& g, int t, std::vector<int64_t>* values);
// A new constant int64 tensor [v.size()] holding v.
int newInt64Constant(Graph& g, const std::string& name, const std::vector<int64_t>& v);
// A Slice of one axis whose starts, ends, axes and steps (1 when absent) are constants, as written.
struct AxisSlice {
  int64_t axis = 0, start = 0, end = 0, step = 1;
};
bool constantAxisSlice(const Graph& g, const Node& slice, AxisSlice* out);
// True when |a - b| <= tol * |b|.
inline bool closeTo(float a, double b, double tol) { return std::fabs(a - b) <= tol * std::fabs(b); }

// Drops nodes marked in `drop`, keeping the order of the rest.
void eraseNodes(Graph& g, const std::vector<bool>& drop);

}  // namespace osprey::passes
