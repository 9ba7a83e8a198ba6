#include "converter/tensorflow/tf_control_flow.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

namespace osprey::tf {

bool isControlFlowOp(const std::string& op) {
  return op == "Enter" || op == "Exit" || op == "Merge" || op == "Switch" || op == "NextIteration" ||
         op == "LoopCond";
}

Status orderNodes(const std::vector<NodeView>& views, const NodeIndex& byName, const std::vector<size_t>& roots,
                  const DepsFn& deps, const std::function<bool(size_t)>& isLeaf, std::vector<size_t>* order) {
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> state(views.size(), kNew);
  struct Frame {
    size_t node;
    std::vector<std::string> inputs;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  for (size_t root : roots) {
    if (state[root] != kNew || isLeaf(root)) continue;
    stack.push_back({root, deps(root)});
    state[root] = kOpen;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.inputs.size()) {
        state[top.node] = kDone;
        order->push_back(top.node);
        stack.pop_back();
        continue;
      }
      const std::string producer = refNode(top.inputs[top.next++]);
      auto it = byName.find(producer);
      if (it == byName.end())
        return Status::invalidModel(views[top.node].label + " reads '" + producer + "', which no node makes");
      const size_t p = it->second;
      if (isLeaf(p) || state[p] == kDone) continue;
      if (state[p] == kOpen)
        return Status::invalidModel(views[top.node].label + " is on a cycle through '" + producer + "'");
      state[p] = kOpen;
      stack.push_back({p, deps(p)});
    }
  }
  return Status::ok();
}

Status findWhileFrames(const std::vector<NodeView>& views, const NodeIndex& byName, std::vector<WhileFrame>* frames,
                       std::unordered_map<size_t, size_t>* frameOfExit) {
  std::unordered_map<std::string, std::vector<size_t>> readers;  // node -> nodes reading it
  for (size_t i = 0; i < views.size(); ++i)
    for (const std::string& in : views[i].inputs) readers[refNode(in)].push_back(i);
  auto reader = [&](size_t node, const char* op, const std::string& ref) -> long {
    for (size_t r : readers[views[node].name()])
      if (views[r].def->op == op)
        for (const std::string& in : views[r].inputs)
          if (in == ref) return static_cast<long>(r);
    return -1;
  };
  auto producer = [&](const std::string& ref) -> long {
    auto it = byName.find(refNode(ref));
    return it == byName.end() ? -1 : static_cast<long>(it->second);
  };
  std::map<std::string, size_t> frameIndex;
  for (size_t i = 0; i < views.size(); ++i) {
    const NodeView& e = views[i];
    if (e.def->op != "Enter") continue;
    OSPREY_RETURN_IF_ERROR(e.requireInputs(1));
    const std::string name = e.attrString("frame_name", "");
    if (!frameIndex.count(name)) {
      frameIndex[name] = frames->size();
      frames->push_back(WhileFrame());
      frames->back().name = name;
    }
    WhileFrame& f = (*frames)[frameIndex[name]];
    if (e.attrBool("is_constant", false)) {
      f.invariants.push_back(i);
      continue;
    }
    const std::string where = "while loop '" + name + "': " + e.label;
    const long merge = reader(i, "Merge", e.name() + ":0");
    if (merge < 0) return Status::invalidModel(where + " feeds no Merge");
    const NodeView& m = views[merge];
    if (m.inputs.size() != 2) return Status::invalidModel(where + ": " + m.label + " does not have 2 inputs");
    const long next = producer(m.inputs[0] == e.name() + ":0" ? m.inputs[1] : m.inputs[0]);
    if (next < 0 || views[next].def->op != "NextIteration" || views[next].inputs.empty())
      return Status::invalidModel(where + ": " + m.label + " has no NextIteration input");
    const long sw = reader(merge, "Switch", m.name() + ":0");
    if (sw < 0 || views[sw].inputs.size() != 2) return Status::invalidModel(where + ": " + m.label + " feeds no Switch");
    const long cond = producer(views[sw].inputs[1]);
    if (cond < 0 || views[cond].def->op != "LoopCond" || views[cond].inputs.empty())
      return Status::invalidModel(where + ": " + views[sw].label + " is not controlled by a LoopCond");
    if (!f.enters.empty() && f.loopCond != static_cast<size_t>(cond))
      return Status::invalidModel(where + ": the frame has more than one LoopCond");
    f.loopCond = static_cast<size_t>(cond);
    f.enters.push_back(i);
    f.merges.push_back(static_cast<size_t>(merge));
    f.switches.push_back(static_cast<size_t>(sw));
    f.nexts.push_back(static_cast<size_t>(next));
    const long exit = reader(static_cast<size_t>(sw), "Exit", views[sw].name() + ":0");
    f.exits.push_back(exit);
    if (exit >= 0) (*frameOfExit)[static_cast<size_t>(exit)] = frameIndex[name];
  }
  for (const WhileFrame& f : *frames)
    if (f.enters.empty()) return Status::invalidModel("while loop '" + f.name + "' has no loop variable");
  return Status::ok();
}

std::vector<std::string> frameInputs(const WhileFrame& f, const std::vector<NodeView>& views) {
  std::vector<std::string> refs;
  for (size_t e : f.enters) refs.push_back(views[e].input(0));
  for (size_t e : f.invariants) refs.push_back(views[e].input(0));
  return refs;
}

namespace {

// A graph output that is not an input or an earlier output (a loop variable passed through).
int distinctOutput(ImportContext& ctx, int index, const std::string& name) {
  Graph& g = ctx.graph();
  const bool taken = std::find(g.inputs.begin(), g.inputs.end(), index) != g.inputs.end() ||
                     std::find(g.outputs.begin(), g.outputs.end(), index) != g.outputs.end();
  if (!taken) return index;
  const int copy = ctx.temp(name);
  ctx.addNode(OpType::Identity, name, {index}, {copy});
  return copy;
}

}  // namespace

Status lowerWhileFrame(ImportContext& ctx, const WhileFrame& f, const std::vector<NodeView>& views,
                       const NodeIndex& byName, const ImportFn& importNode) {
  std::set<size_t> frameNodes(f.enters.begin(), f.enters.end());
  frameNodes.insert(f.merges.begin(), f.merges.end());
  frameNodes.insert(f.switches.begin(), f.switches.end());
  frameNodes.insert(f.invariants.begin(), f.invariants.end());
  auto isLeaf = [&](size_t n) { return frameNodes.count(n) || views[n].def->op == "Placeholder"; };
  auto deps = [&](size_t n) { return views[n].inputs; };
  auto run = [&](ImportContext& c, const std::vector<size_t>& order) -> Status {
    for (size_t n : order) {
      if (isControlFlowOp(views[n].def->op)) return Status::unsupported("nested while loops");
      Status st = importNode(c, views[n]);
      if (st.code() == StatusCode::Unsupported)  // named as the driver names ops outside loops
        return Status::unsupported(views[n].def->op + (st.message().empty() ? "" : " (" + st.message() + ")"));
      OSPREY_RETURN_IF_ERROR(st.withContext(views[n].label));
    }
    return Status::ok();
  };
  const NodeView& loopCond = views[f.loopCond];
  auto producerOf = [&](const NodeView& reader, const std::string& ref, size_t* out) -> Status {
    auto it = byName.find(refNode(ref));
    if (it == byName.end()) return Status::invalidModel(reader.label + " reads '" + ref + "', which no node makes");
    *out = it->second;
    return Status::ok();
  };
  size_t condRoot;
  OSPREY_RETURN_IF_ERROR(producerOf(loopCond, loopCond.input(0), &condRoot));
  std::vector<size_t> condOrder;
  OSPREY_RETURN_IF_ERROR(orderNodes(views, byName, {condRoot}, deps, isLeaf, &condOrder));

  // The first test, before the Loop: the condition of the initial values.
  for (size_t e : f.invariants) OSPREY_RETURN_IF_ERROR(ctx.alias(views[e], 0, views[e].input(0)));
  std::vector<int> init;
  for (size_t k = 0; k < f.enters.size(); ++k) {
    const NodeView& enter = views[f.enters[k]];
    OSPREY_RETURN_IF_ERROR(ctx.alias(enter, 0, enter.input(0)));
    OSPREY_RETURN_IF_ERROR(ctx.alias(views[f.merges[k]], 0, enter.input(0)));
    int v;
    OSPREY_RETURN_IF_ERROR(ctx.asTf(enter.input(0), &v));
    init.push_back(v);
  }
  OSPREY_RETURN_IF_ERROR(run(ctx, condOrder));
  int condInit;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(loopCond.input(0), &condInit));

  // The body: (iteration, condition, variables..., captured...) -> (condition, variables...).
  auto body = std::make_shared<Graph>();
  ImportContext b(body.get());
  b.captureFrom(&ctx);
  auto input = [&](const std::string& name, DataType dtype, Shape shape) {
    TensorInfo t;
    t.name = b.uniqueName(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.hasShape = dtype != DataType::Undefined && !t.shape.empty();
    const int index = body->addTensor(std::move(t));
    body->inputs.push_back(index);
    return index;
  };
  input(f.name + "/iteration", DataType::Int64, {});
  input(f.name + "/condition", DataType::Bool, {});
  for (size_t k = 0; k < f.enters.size(); ++k) {
    const TensorInfo& outer = ctx.graph().tensors[init[k]];
    const int index = input(views[f.switches[k]].name(), outer.dtype, {});
    body->tensors[index].hasShape = false;
    b.bind(views[f.switches[k]], 1, index, Held::AsTf, ctx.rank(views[f.enters[k]].input(0)));
  }
  std::vector<size_t> roots, bodyOrder;
  for (size_t n : f.nexts) {
    size_t root;
    OSPREY_RETURN_IF_ERROR(producerOf(views[n], views[n].input(0), &root));
    roots.push_back(root);
  }
  OSPREY_RETURN_IF_ERROR(orderNodes(views, byName, roots, deps, isLeaf, &bodyOrder));
  OSPREY_RETURN_IF_ERROR(run(b, bodyOrder));
  std::vector<int> next;
  for (size_t n : f.nexts) {
    int v;
    OSPREY_RETURN_IF_ERROR(b.asTf(views[n].input(0), &v));
    next.push_back(v);
  }
  // The next test, inside the body, on the values this iteration made.
  for (size_t k = 0; k < f.enters.size(); ++k)
    OSPREY_RETURN_IF_ERROR(b.alias(views[f.merges[k]], 0, views[f.nexts[k]].input(0)));
  OSPREY_RETURN_IF_ERROR(run(b, condOrder));
  int condNext;
  OSPREY_RETURN_IF_ERROR(b.asTf(loopCond.input(0), &condNext));
  body->outputs.push_back(distinctOutput(b, condNext, f.name + "/cond_out"));
  for (size_t k = 0; k < next.size(); ++k) body->outputs.push_back(distinctOutput(b, next[k], views[f.nexts[k]].name()));

  // No trip count: the condition alone ends a while loop.
  const int tripCount = ctx.addInt64Constant(f.name + "/trip_count", {INT64_MAX}, true);
  std::vector<int> ins = {tripCount, condInit};
  ins.insert(ins.end(), init.begin(), init.end());
  ins.insert(ins.end(), b.captured().begin(), b.captured().end());
  std::vector<int> outs;
  for (size_t k = 0; k < f.enters.size(); ++k) outs.push_back(ctx.temp(views[f.switches[k]].name() + "_final"));
  Node& loop = ctx.addNode(OpType::Loop, f.name.empty() ? "while" : f.name, ins, outs);
  loop.setInt("num_captured", static_cast<int64_t>(b.captured().size()));
  loop.setGraph("body", body);
  for (size_t k = 0; k < f.exits.size(); ++k)
    if (f.exits[k] >= 0) ctx.bind(views[f.exits[k]], 0, outs[k], Held::AsTf, ctx.rank(views[f.enters[k]].input(0)));
  return Status::ok();
}

namespace {

// Imports one inlined branch as a subgraph whose inputs stand for its arguments.
Status importBranch(ImportContext& ctx, const NodeView& node, const FunctionDef& fn, const std::vector<int>& args,
                    const ImportFn& importNode, std::shared_ptr<Graph>* out) {
  if (fn.inputArgs.size() != args.size())
    return node.error("branch '" + fn.name + "' takes " + std::to_string(fn.inputArgs.size()) + " arguments, not " +
                      std::to_string(args.size()));
  std::vector<NodeDef> argDefs(args.size());
  std::vector<NodeView> views(args.size() + fn.nodes.size());
  for (size_t i = 0; i < views.size(); ++i) {
    const NodeDef* def = i < args.size() ? &argDefs[i] : &fn.nodes[i - args.size()];
    if (i < args.size()) argDefs[i].name = fn.inputArgs[i], argDefs[i].op = "_Arg";
    views[i].def = def;
    views[i].label = "node '" + def->name + "' (" + def->op + ")";
    for (const std::string& in : def->inputs)
      if (!in.empty() && in[0] != '^') views[i].inputs.push_back(canonicalRef(in));
  }
  NodeIndex byName;
  for (size_t i = 0; i < views.size(); ++i)
    if (!byName.emplace(views[i].name(), i).second)
      return node.error("branch '" + fn.name + "' has two nodes named '" + views[i].name() + "'");
  auto graph = std::make_shared<Graph>();
  ImportContext b(graph.get());
  for (size_t i = 0; i < args.size(); ++i) {
    TensorInfo t;
    t.name = b.uniqueName(fn.inputArgs[i]);
    t.dtype = ctx.graph().tensors[args[i]].dtype;
    t.hasShape = false;
    const int index = graph->addTensor(std::move(t));
    graph->inputs.push_back(index);
    b.bind(views[i], 0, index, Held::AsTf, ctx.rank(node.input(i + 1)));
  }
  std::vector<std::string> rets;
  std::vector<size_t> roots, order;
  for (const std::string& arg : fn.outputArgs) {
    auto ret = fn.ret.find(arg);
    if (ret == fn.ret.end()) return node.error("branch '" + fn.name + "' returns nothing for '" + arg + "'");
    auto producer = byName.find(refNode(ret->second));
    if (producer == byName.end()) return node.error("branch '" + fn.name + "' returns '" + ret->second + "', which no node makes");
    rets.push_back(ret->second);
    roots.push_back(producer->second);
  }
  const auto deps = [&](size_t n) { return views[n].inputs; };
  OSPREY_RETURN_IF_ERROR(orderNodes(views, byName, roots, deps, [&](size_t n) { return n < args.size(); }, &order));
  for (size_t n : order) {
    if (isControlFlowOp(views[n].def->op)) return Status::unsupported("while loops inside an If branch");
    Status st = importNode(b, views[n]);
    if (st.code() == StatusCode::Unsupported)
      return Status::unsupported(views[n].def->op + (st.message().empty() ? "" : " (" + st.message() + ")"));
    OSPREY_RETURN_IF_ERROR(st.withContext(views[n].label));
  }
  for (size_t j = 0; j < rets.size(); ++j) {
    int v;
    OSPREY_RETURN_IF_ERROR(b.asTf(rets[j], &v));
    graph->outputs.push_back(distinctOutput(b, v, fn.outputArgs[j]));
  }
  *out = std::move(graph);
  return Status::ok();
}

}  // namespace

Status importFunctionalIf(ImportContext& ctx, const NodeView& node, const std::vector<FunctionDef>& branches,
                          const ImportFn& importNode) {
  OSPREY_RETURN_IF_ERROR(node.requireInputs(1));
  std::vector<int> ins(node.inputs.size());
  for (size_t i = 0; i < ins.size(); ++i) OSPREY_RETURN_IF_ERROR(ctx.asTf(node.input(i), &ins[i]));
  const std::vector<int> args(ins.begin() + 1, ins.end());
  std::shared_ptr<Graph> graphs[2];
  const char* keys[2] = {"then_branch", "else_branch"};
  for (int k = 0; k < 2; ++k) {
    const AttrValue* a = node.attr(keys[k]);
    const FunctionDef* fn = nullptr;
    for (const FunctionDef& branch : branches)
      if (a && a->kind == AttrValue::Kind::Func && branch.name == a->func) fn = &branch;
    if (!fn) return node.error(std::string("its ") + keys[k] + " is not a function of the graph");
    OSPREY_RETURN_IF_ERROR(importBranch(ctx, node, *fn, args, importNode, &graphs[k]));
  }
  if (graphs[0]->outputs.size() != graphs[1]->outputs.size())
    return node.error("its branches return different numbers of values");
  std::vector<int> outs;
  for (size_t j = 0; j < graphs[0]->outputs.size(); ++j) outs.push_back(ctx.temp(node.name() + ":" + std::to_string(j)));
  Node& n = ctx.addNode(OpType::If, node.name(), ins, outs);
  n.setInt("num_captured", static_cast<int64_t>(args.size()));
  for (int k = 0; k < 2; ++k) {
    n.setGraph(keys[k], graphs[k]);
  }
  for (size_t j = 0; j < outs.size(); ++j) ctx.bind(node, static_cast<int>(j), outs[j], Held::AsTf, -1);
  return Status::ok();
}

}  // namespace osprey::tf
