// WHILE and IF: their subgraphs become the Graph attributes of Osprey's Loop and If. TFLite's
// subgraphs are closed (they read only their inputs), so the values a WHILE carries or an IF
// passes are the node's inputs, and the If branches take them as their captured inputs.
#include <climits>

#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

// A subgraph graph under construction: its inputs, and outputs that are tensors of their own
// (Loop and If copy each output; an input passed straight through gets an Identity).
class BodyBuilder {
 public:
  BodyBuilder(const ImportContext& ctx) : graph_(std::make_shared<Graph>()), writer_(graph_.get(), GraphWriter::NodeNames::Unique) {
    writer_.shareNamesWith(ctx);
  }
  Graph* graph() { return graph_.get(); }
  std::shared_ptr<Graph> take() { return graph_; }

  int addInput(const std::string& name, DataType dtype) {
    const int index = writer_.temp(name);
    graph_->tensors[index].dtype = dtype;
    graph_->inputs.push_back(index);
    return index;
  }

  void addOutput(int index, const std::string& name) {
    bool reused = false;
    for (int i : graph_->inputs) reused = reused || i == index;
    for (int o : graph_->outputs) reused = reused || o == index;
    if (reused) {
      const int copy = writer_.temp(name);
      writer_.addNode(OpType::Identity, name, {index}, {copy});
      index = copy;
    }
    graph_->outputs.push_back(index);
  }

 private:
  std::shared_ptr<Graph> graph_;
  GraphWriter writer_;
};


Status carriedValues(ImportContext& ctx, const OpView& op, size_t first, std::vector<int>* values) {
  for (size_t k = first; k < op.inputs.size(); ++k) {
    const int t = op.inputs[k];
    if (t < 0) return Status::invalidModel(op.name + ": input " + std::to_string(k) + " is missing");
    if (ctx.tensor(t).quantized) return Status::unsupported("quantized values passed to a subgraph");
    int v;
    OSPREY_RETURN_IF_ERROR(ctx.asTflite(t, &v));
    values->push_back(v);
  }
  return Status::ok();
}

// WHILE(v...) as Loop(no trip count, cond(v), v...): the condition subgraph runs once before
// the loop and again at the end of every body.
Status importWhile(ImportContext& ctx, const OpView& op) {
  const auto* o = op.op->builtin_options_as_WhileOptions();
  if (!o) return missingOptions(op, "WhileOptions");
  if (op.outputs.size() != op.inputs.size())
    return Status::invalidModel(op.name + " has " + std::to_string(op.inputs.size()) + " inputs and " +
                                std::to_string(op.outputs.size()) + " outputs; a loop carries each input to an output");
  std::vector<int> initial;
  OSPREY_RETURN_IF_ERROR(carriedValues(ctx, op, 0, &initial));
  std::vector<int> firstTest;
  OSPREY_RETURN_IF_ERROR(importSubgraphInto(ctx, o->cond_subgraph_index(), &ctx.graph(), initial, op.name + "/cond0/", &firstTest));
  if (firstTest.size() != 1) return Status::invalidModel(op.name + ": the condition subgraph must have one output");

  BodyBuilder body(ctx);
  body.addInput(op.name + "/iteration", DataType::Int64);
  body.addInput(op.name + "/condition", DataType::Bool);
  std::vector<int> carried;
  for (size_t k = 0; k < initial.size(); ++k)
    carried.push_back(body.addInput(op.name + "/carried_" + std::to_string(k), ctx.tensor(op.inputs[k]).dtype));
  std::vector<int> next, test;
  OSPREY_RETURN_IF_ERROR(importSubgraphInto(ctx, o->body_subgraph_index(), body.graph(), carried, op.name + "/body/", &next));
  if (next.size() != carried.size())
    return Status::invalidModel(op.name + ": the body subgraph has " + std::to_string(next.size()) + " outputs for " +
                                std::to_string(carried.size()) + " loop values");
  OSPREY_RETURN_IF_ERROR(importSubgraphInto(ctx, o->cond_subgraph_index(), body.graph(), next, op.name + "/cond/", &test));
  body.addOutput(test[0], op.name + "/cond_out");
  for (size_t k = 0; k < next.size(); ++k) body.addOutput(next[k], op.name + "/next_" + std::to_string(k));

  std::vector<int> ins = {ctx.addInt64Constant(op.name + "/trip_count", {INT64_MAX}, true), firstTest[0]};
  ins.insert(ins.end(), initial.begin(), initial.end());
  std::vector<int> outs;
  for (int t : op.outputs) outs.push_back(ctx.define(t, Held::AsTflite));
  Node& loop = ctx.addNode(OpType::Loop, op.name, ins, outs);
  loop.setInt("num_captured", 0);
  loop.setGraph("body", body.take());
  return Status::ok();
}

// IF(cond, v...): both branches take v as their captured inputs.
Status importIf(ImportContext& ctx, const OpView& op) {
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 1));
  const auto* o = op.op->builtin_options_as_IfOptions();
  if (!o) return missingOptions(op, "IfOptions");
  int cond;
  OSPREY_RETURN_IF_ERROR(ctx.asTflite(op.input(0), &cond));
  std::vector<int> args;
  OSPREY_RETURN_IF_ERROR(carriedValues(ctx, op, 1, &args));
  std::shared_ptr<Graph> branches[2];
  const int subgraphs[2] = {o->then_subgraph_index(), o->else_subgraph_index()};
  const char* names[2] = {"/then/", "/else/"};
  for (int b = 0; b < 2; ++b) {
    BodyBuilder branch(ctx);
    std::vector<int> inputs, outputs;
    for (size_t k = 0; k < args.size(); ++k)
      inputs.push_back(branch.addInput(op.name + names[b] + "arg_" + std::to_string(k), ctx.tensor(op.inputs[k + 1]).dtype));
    OSPREY_RETURN_IF_ERROR(importSubgraphInto(ctx, subgraphs[b], branch.graph(), inputs, op.name + names[b], &outputs));
    if (outputs.size() != op.outputs.size())
      return Status::invalidModel(op.name + ": subgraph " + std::to_string(subgraphs[b]) + " has " +
                                  std::to_string(outputs.size()) + " outputs; the IF has " +
                                  std::to_string(op.outputs.size()));
    for (size_t k = 0; k < outputs.size(); ++k) branch.addOutput(outputs[k], op.name + names[b] + "out_" + std::to_string(k));
    branches[b] = branch.take();
  }
  std::vector<int> ins = {cond};
  ins.insert(ins.end(), args.begin(), args.end());
  std::vector<int> outs;
  for (int t : op.outputs) outs.push_back(ctx.define(t, Held::AsTflite));
  Node& n = ctx.addNode(OpType::If, op.name, ins, outs);
  n.setInt("num_captured", static_cast<int64_t>(args.size()));
  n.setGraph("then_branch", branches[0]);
  n.setGraph("else_branch", branches[1]);
  return Status::ok();
}

}  // namespace

void addControlFlowImporters(ImporterTable& t) {
  t[tflite::BuiltinOperator_WHILE] = importWhile;
  t[tflite::BuiltinOperator_IF] = importIf;
}

}  // namespace osprey::tfl
