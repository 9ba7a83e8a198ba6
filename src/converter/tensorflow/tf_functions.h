// Function calls of a TF2 graph inlined into one graph: what a SavedModel's signature runs is a
// StatefulPartitionedCall of a function (itself calling others) of the graph's library.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "converter/tensorflow/tf_proto.h"

namespace osprey::tf {

// The graph's nodes with every PartitionedCall / StatefulPartitionedCall (and every node whose
// op names a library function) replaced by the function's nodes, named "<call>/<node>", and
// references in the functions' "node:out_arg:index" form rewritten to "node:k". `outputs`
// ("node:k" of the graph) are rewritten to the values they are now; only the nodes they depend
// on are kept, with control inputs dropped. `reserved` names no node may take (nodes that would
// are renamed), so that the caller can add inputs and outputs by those names.
// A v2 While becomes the v1 frame of Enter ... Exit nodes a frozen tf.while_loop holds. An If
// or StatelessIf becomes an "If" node whose then_branch / else_branch name functions of
// `branches`: its branches inlined the same way, with their nodes in "node:k" form, arguments
// read as "<argument>:0" and returns given as such references.
Status inlineFunctions(const GraphDef& graph, const std::vector<std::string>& reserved, std::vector<std::string>* outputs,
                       std::vector<NodeDef>* nodes, std::vector<FunctionDef>* branches);

// Which checkpoint key each variable of the graph is restored from, by the variable's node name:
// what the restore op `restoreOp` (the SaverDef's restore_op_name) assigns from RestoreV2,
// within the function it calls (TF2) or in the graph itself (TF1 savers).
Status variableCheckpointKeys(const GraphDef& graph, const std::string& restoreOp,
                              std::map<std::string, std::string>* keys);

}  // namespace osprey::tf
