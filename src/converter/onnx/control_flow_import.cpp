// If, Loop and Scan: their subgraphs are imported as Graph attributes. Names a subgraph reads
// from the enclosing graph become explicit trailing inputs of the node (and of the subgraph),
// counted by the attribute `num_captured`, so every Osprey graph is closed.
#include <algorithm>

#include "converter/onnx/import_context.h"

namespace osprey::onnx {

namespace {

Status importBody(ImportContext& ctx, const NodeProto& node, const char* attr, std::shared_ptr<Graph>* graph,
                  std::vector<std::string>* captured) {
  const AttributeProto* a = node.attr(attr);
  if (!a || !a->g) return Status::invalidModel("'" + node.name + "' has no graph attribute '" + attr + "'");
  return ctx.importSubgraph(*a->g, graph, captured).withContext(std::string("subgraph '") + attr + "'");
}

// Makes the subgraph's trailing inputs exactly `names` (a branch that does not read one of
// them gets an unused input of that name).
void bindCaptures(Graph& g, size_t declared, const std::vector<std::string>& names) {
  g.inputs.resize(declared);
  for (const std::string& name : names) {
    int idx = g.findTensor(name);
    if (idx < 0) {
      TensorInfo t;
      t.name = name;
      t.hasShape = false;
      idx = g.addTensor(t);
    }
    g.inputs.push_back(idx);
  }
}

Node& addControlNode(ImportContext& ctx, const NodeProto& node, OpType type, const std::vector<std::string>& captured) {
  std::vector<int> ins, outs;
  for (auto& name : node.inputs) ins.push_back(ctx.tensor(name));
  for (auto& name : captured) ins.push_back(ctx.tensor(name));
  for (auto& name : node.outputs) outs.push_back(ctx.tensor(name));
  Node& n = ctx.addNode(type, node.name, ins, outs);
  n.setInt("num_captured", static_cast<int64_t>(captured.size()));
  return n;
}


}  // namespace

Status importIf(ImportContext& ctx, const NodeProto& node, int64_t) {
  std::shared_ptr<Graph> thenGraph, elseGraph;
  std::vector<std::string> thenCaptured, elseCaptured;
  OSPREY_RETURN_IF_ERROR(importBody(ctx, node, "then_branch", &thenGraph, &thenCaptured));
  OSPREY_RETURN_IF_ERROR(importBody(ctx, node, "else_branch", &elseGraph, &elseCaptured));
  std::vector<std::string> all = thenCaptured;
  for (auto& n : elseCaptured)
    if (std::find(all.begin(), all.end(), n) == all.end()) all.push_back(n);
  bindCaptures(*thenGraph, thenGraph->inputs.size() - thenCaptured.size(), all);
  bindCaptures(*elseGraph, elseGraph->inputs.size() - elseCaptured.size(), all);
  Node& n = addControlNode(ctx, node, OpType::If, all);
  n.setGraph("then_branch", thenGraph);
  n.setGraph("else_branch", elseGraph);
  return Status::ok();
}

Status importLoopOrScan(ImportContext& ctx, const NodeProto& node, int64_t opset, OpType type) {
  if (type == OpType::Scan && opset < 9)
    return Status::unsupported("Scan before opset 9 (batched, with sequence_lens) is not supported");
  std::shared_ptr<Graph> body;
  std::vector<std::string> captured;
  OSPREY_RETURN_IF_ERROR(importBody(ctx, node, "body", &body, &captured));
  if (type == OpType::Loop) {
    // A loop-carried value may change its shape from one iteration to the next (a list of masks
    // grown by Concat starts empty: exporters declare the first iteration's [0, H, W]). Its
    // declared dimensions are kept as a rank only, so nothing is planned or folded for them.
    const size_t declared = body->inputs.size() - captured.size();
    for (size_t i = 2; i < declared; ++i)
      for (int64_t& d : body->tensors[body->inputs[i]].shape) d = -1;

  }
  Node& n = addControlNode(ctx, node, type, captured);
  for (auto& a : node.attributes) {
    if (a.name == "body") continue;
    Attribute attr;
    OSPREY_RETURN_IF_ERROR(convertAttribute(a, &attr));
    n.setAttr(std::move(attr));
  }
  n.setGraph("body", body);
  return Status::ok();
}

}  // namespace osprey::onnx
