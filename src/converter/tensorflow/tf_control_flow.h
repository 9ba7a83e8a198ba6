// tf.while_loop as a frozen graph holds it: v1 control flow (Enter, Merge, Switch, LoopCond,
// NextIteration, Exit) of one frame per loop, lowered to one Osprey Loop whose body graph is
// the frame's body followed by its condition (ONNX's Loop tests the condition before each
// iteration from the value its body made; the first test is made before the Loop).
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "converter/tensorflow/tf_context.h"

namespace osprey::tf {

struct WhileFrame {
  std::string name;
  // Per loop variable, in Enter order: its Enter, Merge, Switch, NextIteration and Exit (-1:
  // nothing reads the final value).
  std::vector<size_t> enters, merges, switches, nexts;
  std::vector<long> exits;
  std::vector<size_t> invariants;  // Enter nodes with is_constant: values read by every iteration
  size_t loopCond = 0;
};

using NodeIndex = std::unordered_map<std::string, size_t>;
bool isControlFlowOp(const std::string& op);

// The frames of the graph, and for each Exit node the frame it leaves.
Status findWhileFrames(const std::vector<NodeView>& views, const NodeIndex& byName, std::vector<WhileFrame>* frames,
                       std::unordered_map<size_t, size_t>* frameOfExit);
// The outer values a frame reads (its Enters' inputs).
std::vector<std::string> frameInputs(const WhileFrame& f, const std::vector<NodeView>& views);

// Nodes in an order where each follows the nodes it reads, from `roots` back to (not through)
// the nodes `isLeaf` names; `deps` gives a node's inputs.
using DepsFn = std::function<std::vector<std::string>(size_t node)>;
Status orderNodes(const std::vector<NodeView>& views, const NodeIndex& byName, const std::vector<size_t>& roots,
                  const DepsFn& deps, const std::function<bool(size_t)>& isLeaf, std::vector<size_t>* order);

// Imports one node into a context (what the importer does for every node).
using ImportFn = std::function<Status(ImportContext& ctx, const NodeView& node)>;
// Builds the Loop for `f` in `ctx` and binds its Exit nodes' values.
Status lowerWhileFrame(ImportContext& ctx, const WhileFrame& f, const std::vector<NodeView>& views,
                       const NodeIndex& byName, const ImportFn& importNode);

// An If whose then_branch / else_branch name inlined functions of `branches` (tf_functions.h)
// as one Osprey If: its subgraphs take the inputs after the condition, as captured values.
Status importFunctionalIf(ImportContext& ctx, const NodeView& node, const std::vector<FunctionDef>& branches,
                          const ImportFn& importNode);

}  // namespace osprey::tf
