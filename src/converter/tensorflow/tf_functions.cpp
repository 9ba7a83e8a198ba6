// Function inlining and the variables' checkpoint keys (tf_functions.h).
#include "converter/tensorflow/tf_functions.h"

#include <functional>
#include <set>
#include <unordered_map>

#include "converter/tensorflow/tf_context.h"

namespace osprey::tf {

namespace {

// Calls nest this deep at most (a function calling itself would never end); the inlined graph
// holds at most this many nodes, so that a small file cannot ask for millions of copies.
constexpr int kMaxCallDepth = 32;
constexpr size_t kMaxInlinedNodes = size_t{1} << 20;

// Output args of the ops with more than one (a function body names outputs by arg); every other
// op's outputs are one arg, possibly a list, indexed directly.
const std::vector<std::string>* multiOutputArgs(const std::string& op) {
  static const std::map<std::string, std::vector<std::string>> table = [] {
    std::map<std::string, std::vector<std::string>> t;
    const std::vector<std::string> batchNorm = {"y", "batch_mean", "batch_variance", "reserve_space_1",
                                                "reserve_space_2", "reserve_space_3"};
    t["FusedBatchNorm"] = t["FusedBatchNormV2"] = t["FusedBatchNormV3"] = batchNorm;
    t["TopKV2"] = {"values", "indices"};
    t["Unique"] = {"y", "idx"};
    t["Switch"] = {"output_false", "output_true"};
    t["Merge"] = {"output", "value_index"};
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

std::vector<std::string> split(const std::string& ref) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = ref.find(':', start)) != std::string::npos; start = colon + 1)
    parts.push_back(ref.substr(start, colon - start));
  parts.push_back(ref.substr(start));
  return parts;
}

bool parseIndex(const std::string& text, int* out) {
  if (text.empty() || text.size() > 7) return false;
  int v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
  }
  *out = v;
  return true;
}

class Inliner {
 public:
  Inliner(const GraphDef& graph, const std::vector<std::string>& reserved)
      : reserved_(reserved.begin(), reserved.end()) {
    for (const FunctionDef& fn : graph.library) library_[fn.name] = &fn;
  }

  // Emits `nodes` (the graph's when `fn` is null, else the body of `fn`) under `prefix`.
  Status emit(const std::vector<NodeDef>& nodes, const FunctionDef* fn, const std::string& prefix, int depth) {
    std::unordered_map<std::string, const NodeDef*> local;
    for (const NodeDef& n : nodes) local[n.name] = &n;
    auto translate = [&](const std::string& in, std::string* out) -> Status {
      const std::vector<std::string> parts = split(in);
      int index = 0;
      if (parts.size() == 1) {
        *out = prefix + in + ":0";
        return Status::ok();
      }
      if (parts.size() == 2 && parseIndex(parts[1], &index)) {
        *out = prefix + parts[0] + ":" + parts[1];
        return Status::ok();
      }
      if (parts.size() != 3 || !parseIndex(parts[2], &index) || !fn)
        return Status::invalidModel("the input '" + in + "' is not a 'node:output:index' reference");
      auto it = local.find(parts[0]);
      if (it == local.end())
        return Status::invalidModel("the input '" + in + "' names no node of function '" + fn->name + "'");
      int first = 0;
      OSPREY_RETURN_IF_ERROR(outputArgPosition(*it->second, parts[1], &first).withContext("input '" + in + "'"));
      *out = prefix + parts[0] + ":" + std::to_string(first + index);
      return Status::ok();
    };
    for (const NodeDef& node : nodes) {
      const std::string label = "node '" + prefix + node.name + "' (" + node.op + ")";
      std::vector<std::string> inputs;
      for (const std::string& in : node.inputs) {
        if (!in.empty() && in[0] == '^') continue;
        inputs.emplace_back();
        OSPREY_RETURN_IF_ERROR(translate(in, &inputs.back()).withContext(label));
      }
      if (const FunctionDef* callee = calledFunction(node)) {
        if (depth >= kMaxCallDepth)
          return Status::invalidModel(label + ": function calls nest deeper than " + std::to_string(kMaxCallDepth) +
                                      " (does '" + callee->name + "' call itself?)");
        if (inputs.size() != callee->inputArgs.size())
          return Status::invalidModel(label + " passes " + std::to_string(inputs.size()) + " inputs to function '" +
                                      callee->name + "', which takes " + std::to_string(callee->inputArgs.size()));
        const std::string inner = prefix + node.name + "/";
        for (size_t i = 0; i < inputs.size(); ++i) alias_[inner + callee->inputArgs[i] + ":0"] = inputs[i];
        OSPREY_RETURN_IF_ERROR(emit(callee->nodes, callee, inner, depth + 1));
        for (size_t j = 0; j < callee->outputArgs.size(); ++j) {
          auto ret = callee->ret.find(callee->outputArgs[j]);
          if (ret == callee->ret.end())
            return Status::invalidModel("function '" + callee->name + "' returns nothing for its output '" +
                                        callee->outputArgs[j] + "'");
          std::string value;
          OSPREY_RETURN_IF_ERROR(innerRef(*callee, inner, ret->second, &value).withContext("function '" + callee->name + "'"));
          alias_[prefix + node.name + ":" + std::to_string(j)] = value;
        }
        continue;
      }
      if (node.op == "While" || node.op == "StatelessWhile") {
        OSPREY_RETURN_IF_ERROR(emitWhile(node, inputs, prefix, depth).withContext(label));
        continue;
      }
      if (node.op == "If" || node.op == "StatelessIf") {
        OSPREY_RETURN_IF_ERROR(emitIf(node, inputs, prefix, depth).withContext(label));
        continue;
      }
      NodeDef copy = node;
      copy.name = prefix + node.name;
      copy.inputs = std::move(inputs);
      OSPREY_RETURN_IF_ERROR(push(std::move(copy)));
    }
    return Status::ok();
  }

  // A v2 While (cond and body functions) as the v1 frame a frozen tf.while_loop holds, which
  // the importer lowers to a Loop: per loop variable an Enter, Merge, Switch, NextIteration and
  // Exit, the cond inlined on the Merges and the body on the Switches' true outputs. A variable
  // the body returns unchanged (a captured value, a resource) is an is_constant Enter instead.
  Status emitWhile(const NodeDef& node, const std::vector<std::string>& inputs, const std::string& prefix, int depth) {
    const FunctionDef* cond = attrFunction(node, "cond");
    const FunctionDef* body = attrFunction(node, "body");
    if (!cond || !body) return Status::invalidModel("its cond or body function is not in the graph's library");
    const size_t n = inputs.size();
    if (cond->inputArgs.size() != n || body->inputArgs.size() != n || body->outputArgs.size() != n ||
        cond->outputArgs.size() != 1)
      return Status::invalidModel("its functions '" + cond->name + "' and '" + body->name + "' do not take and give its " +
                                  std::to_string(n) + " loop variables");
    if (depth >= kMaxCallDepth) return Status::invalidModel("functions nest deeper than " + std::to_string(kMaxCallDepth));
    const std::string w = prefix + node.name;
    std::vector<bool> invariant(n);
    for (size_t k = 0; k < n; ++k) {
      auto ret = body->ret.find(body->outputArgs[k]);
      invariant[k] = ret != body->ret.end() && ret->second == body->inputArgs[k];
    }
    auto name = [&](const char* what, size_t k) { return w + "/" + what + "_" + std::to_string(k); };
    const std::string condPrefix = w + "/cond/", bodyPrefix = w + "/body/";
    for (size_t k = 0; k < n; ++k) {
      NodeDef enter = makeNode(name("enter", k), "Enter", {inputs[k]});
      enter.attrs["frame_name"].kind = AttrValue::Kind::S;
      enter.attrs["frame_name"].s = w;
      enter.attrs["is_constant"].kind = AttrValue::Kind::B;
      enter.attrs["is_constant"].b = invariant[k];
      frameNodes_[w].push_back(enter.name);
      OSPREY_RETURN_IF_ERROR(push(std::move(enter)));
      const std::string entered = name("enter", k) + ":0";
      alias_[condPrefix + cond->inputArgs[k] + ":0"] = invariant[k] ? entered : name("merge", k) + ":0";
      alias_[bodyPrefix + body->inputArgs[k] + ":0"] = invariant[k] ? entered : name("switch", k) + ":1";
      alias_[w + ":" + std::to_string(k)] = invariant[k] ? inputs[k] : name("exit", k) + ":0";
    }
    OSPREY_RETURN_IF_ERROR(emit(cond->nodes, cond, condPrefix, depth + 1));
    OSPREY_RETURN_IF_ERROR(emit(body->nodes, body, bodyPrefix, depth + 1));
    std::string condValue;
    auto condRet = cond->ret.find(cond->outputArgs[0]);
    if (condRet == cond->ret.end()) return Status::invalidModel("function '" + cond->name + "' returns nothing");
    OSPREY_RETURN_IF_ERROR(innerRef(*cond, condPrefix, condRet->second, &condValue));
    NodeDef loopCond = makeNode(w + "/loop_cond", "LoopCond", {condValue});
    frameNodes_[w].push_back(loopCond.name);
    OSPREY_RETURN_IF_ERROR(push(std::move(loopCond)));
    for (size_t k = 0; k < n; ++k) {
      if (invariant[k]) continue;
      auto ret = body->ret.find(body->outputArgs[k]);
      if (ret == body->ret.end())
        return Status::invalidModel("function '" + body->name + "' returns nothing for '" + body->outputArgs[k] + "'");
      std::string next;
      OSPREY_RETURN_IF_ERROR(innerRef(*body, bodyPrefix, ret->second, &next));
      for (NodeDef def : {makeNode(name("merge", k), "Merge", {name("enter", k) + ":0", name("next", k) + ":0"}),
                          makeNode(name("switch", k), "Switch", {name("merge", k) + ":0", w + "/loop_cond:0"}),
                          makeNode(name("next", k), "NextIteration", {next})}) {
        frameNodes_[w].push_back(def.name);
        OSPREY_RETURN_IF_ERROR(push(std::move(def)));
      }
      OSPREY_RETURN_IF_ERROR(push(makeNode(name("exit", k), "Exit", {name("switch", k) + ":0"})));
    }
    return Status::ok();
  }

  Status emitIf(const NodeDef& node, const std::vector<std::string>& inputs, const std::string& prefix, int depth);

  // The nodes of each v1 frame made from a While but its Exits: kept together or not at all.
  const std::map<std::string, std::vector<std::string>>& frameNodes() const { return frameNodes_; }

  // The value `ref` stands for once calls and arguments are looked through.
  Status resolve(const std::string& ref, std::string* out) {
    std::string r = ref;
    std::vector<std::string> path;  // pointed straight at the end, so that chains are walked once
    for (;;) {
      auto it = alias_.find(r);
      if (it == alias_.end()) break;
      if (path.size() > alias_.size())
        return Status::invalidModel("function arguments refer to each other in a cycle at '" + ref + "'");
      path.push_back(r);
      r = it->second;
    }
    for (const std::string& p : path) alias_[p] = r;
    const std::string node = refNode(r);
    if (auto it = renamed_.find(node); it != renamed_.end()) r = it->second + r.substr(node.size());
    *out = std::move(r);
    return Status::ok();
  }

  std::vector<NodeDef>& nodes() { return nodes_; }
  std::vector<FunctionDef>& branches() { return branches_; }

 private:
  Inliner(const std::map<std::string, const FunctionDef*>& library, size_t* inlined)
      : library_(library), inlined_(inlined) {}

  static NodeDef makeNode(const std::string& name, const std::string& op, std::vector<std::string> inputs) {
    NodeDef n;
    n.name = name;
    n.op = op;
    n.inputs = std::move(inputs);
    return n;
  }

  Status push(NodeDef node) {
    if ((*inlined_)++ >= kMaxInlinedNodes)
      return Status::invalidModel("inlining the graph's functions makes more than " + std::to_string(kMaxInlinedNodes) +
                                  " nodes");
    if (reserved_.count(node.name)) {
      std::string name = node.name;
      while (reserved_.count(name)) name += "_";
      renamed_[node.name] = name;
      node.name = name;
    }
    nodes_.push_back(std::move(node));
    return Status::ok();
  }

  const FunctionDef* attrFunction(const NodeDef& node, const char* key) const {
    const AttrValue* f = node.attr(key);
    if (!f || f->kind != AttrValue::Kind::Func) return nullptr;
    auto it = library_.find(f->func);
    return it == library_.end() ? nullptr : it->second;
  }

  const FunctionDef* calledFunction(const NodeDef& node) const {
    if (node.op == "PartitionedCall" || node.op == "StatefulPartitionedCall") {
      const AttrValue* f = node.attr("f");
      if (!f || f->kind != AttrValue::Kind::Func) return nullptr;
      auto it = library_.find(f->func);
      return it == library_.end() ? nullptr : it->second;
    }
    auto it = library_.find(node.op);
    return it == library_.end() ? nullptr : it->second;
  }

  // Where output arg `arg` of `node` starts among its outputs.
  Status outputArgPosition(const NodeDef& node, const std::string& arg, int* first) const {
    *first = 0;
    const FunctionDef* callee = node.op == "PartitionedCall" || node.op == "StatefulPartitionedCall" ? nullptr
                                                                                                      : calledFunction(node);
    const std::vector<std::string>* argNames = callee ? &callee->outputArgs : multiOutputArgs(node.op);
    if (!argNames) return Status::ok();
    for (size_t i = 0; i < argNames->size(); ++i)
      if ((*argNames)[i] == arg) {
        *first = static_cast<int>(i);
        return Status::ok();
      }
    return Status::invalidModel(node.op + " has no output '" + arg + "'");
  }

  // A function's return value ("node:out:index" or an argument's name) under `prefix`.
  Status innerRef(const FunctionDef& fn, const std::string& prefix, const std::string& value, std::string* out) const {
    const std::vector<std::string> parts = split(value);
    int index = 0;
    if (parts.size() == 1) {
      *out = prefix + value + ":0";
      return Status::ok();
    }
    if (parts.size() != 3 || !parseIndex(parts[2], &index))
      return Status::invalidModel("the return value '" + value + "' is not a 'node:output:index' reference");
    for (const NodeDef& n : fn.nodes)
      if (n.name == parts[0]) {
        int first = 0;
        OSPREY_RETURN_IF_ERROR(outputArgPosition(n, parts[1], &first));
        *out = prefix + parts[0] + ":" + std::to_string(first + index);
        return Status::ok();
      }
    return Status::invalidModel("the return value '" + value + "' names no node");
  }

  std::set<std::string> reserved_;
  std::map<std::string, const FunctionDef*> library_;
  std::unordered_map<std::string, std::string> alias_;
  std::unordered_map<std::string, std::string> renamed_;
  std::map<std::string, std::vector<std::string>> frameNodes_;
  std::vector<NodeDef> nodes_;
  std::vector<FunctionDef> branches_;  // the branches of If nodes, inlined
  size_t ownCount_ = 0;
  size_t* inlined_ = &ownCount_;  // nodes made, shared with the inliners of If branches
};

// The output index a reference names ("node", "node:k" or "node:arg:k": the last number).
int refIndex(const std::string& ref) {
  const std::vector<std::string> parts = split(ref);
  int index = 0;
  return parts.size() > 1 && parseIndex(parts.back(), &index) ? index : 0;
}

// Restored-variable assignments within one scope (a function body, or the graph).
void collectKeys(const std::vector<NodeDef>& nodes, const std::map<std::string, std::string>& argToVariable,
                 std::map<std::string, std::string>* keys) {
  std::unordered_map<std::string, const NodeDef*> byName;
  for (const NodeDef& n : nodes) byName[n.name] = &n;
  auto nodeOf = [&](const std::string& ref) -> const NodeDef* {
    auto it = byName.find(split(ref)[0]);
    return it == byName.end() ? nullptr : it->second;
  };
  for (const NodeDef& n : nodes) {
    if ((n.op != "AssignVariableOp" && n.op != "Assign") || n.inputs.size() < 2) continue;
    std::string variable = split(n.inputs[0])[0];
    if (auto it = argToVariable.find(variable); it != argToVariable.end()) variable = it->second;
    else if (!argToVariable.empty()) continue;
    std::string value = n.inputs[1];
    const NodeDef* source = nodeOf(value);
    for (int hops = 0; source && source->op == "Identity" && !source->inputs.empty() && hops < 64; ++hops) {
      value = source->inputs[0];
      source = nodeOf(value);
    }
    if (!source || source->op != "RestoreV2" || source->inputs.size() < 2) continue;
    const NodeDef* names = nodeOf(source->inputs[1]);
    const AttrValue* tensor = names ? names->attr("value") : nullptr;
    if (!tensor || tensor->kind != AttrValue::Kind::Tensor) continue;
    const size_t index = static_cast<size_t>(refIndex(value));
    if (index < tensor->tensor->strings.size()) (*keys)[variable] = tensor->tensor->strings[index];
  }
}

// The emitted nodes `outputs` depend on, their inputs (and the outputs) resolved.
Status prune(Inliner& inliner, std::vector<std::string>* outputs, std::vector<NodeDef>* nodes) {
  std::vector<NodeDef>& all = inliner.nodes();
  std::unordered_map<std::string, size_t> byName;
  for (size_t i = 0; i < all.size(); ++i) {
    byName.emplace(all[i].name, i);
    for (std::string& in : all[i].inputs) OSPREY_RETURN_IF_ERROR(inliner.resolve(in, &in));
  }
  // A frame is kept whole (but for the Exits nothing reads) once any of its nodes is.
  std::unordered_map<std::string, const std::vector<std::string>*> frameOf;
  for (const auto& [frame, members] : inliner.frameNodes())
    for (const std::string& m : members) frameOf[m] = &members;
  std::vector<uint8_t> keep(all.size(), 0);
  std::vector<size_t> todo;
  std::function<void(const std::string&)> reachNode = [&](const std::string& node) {
    auto it = byName.find(node);
    if (it == byName.end() || keep[it->second]) return;
    keep[it->second] = 1;
    todo.push_back(it->second);
    if (auto f = frameOf.find(node); f != frameOf.end())
      for (const std::string& m : *f->second) reachNode(m);
  };
  auto reach = [&](const std::string& ref) { reachNode(refNode(ref)); };
  for (std::string& out : *outputs) {
    OSPREY_RETURN_IF_ERROR(inliner.resolve(canonicalRef(out), &out));
    reach(out);
  }
  while (!todo.empty()) {
    const size_t n = todo.back();
    todo.pop_back();
    for (const std::string& in : all[n].inputs) reach(in);
  }
  nodes->clear();
  for (size_t i = 0; i < all.size(); ++i)
    if (keep[i]) nodes->push_back(std::move(all[i]));
  return Status::ok();
}


// An If's branches become functions of their own, inlined (the importer makes them the If's
// subgraphs); their arguments keep their names under "<if>/<branch>/".
Status Inliner::emitIf(const NodeDef& node, const std::vector<std::string>& inputs, const std::string& prefix,
                       int depth) {
  if (inputs.empty()) return Status::invalidModel("it has no condition input");
  if (depth >= kMaxCallDepth) return Status::invalidModel("functions nest deeper than " + std::to_string(kMaxCallDepth));
  const std::string w = prefix + node.name;
  NodeDef ifNode = makeNode(w, "If", inputs);
  size_t outputs = 0;
  for (const char* key : {"then_branch", "else_branch"}) {
    const FunctionDef* fn = attrFunction(node, key);
    if (!fn) return Status::invalidModel(std::string("its ") + key + " function is not in the graph's library");
    if (fn->inputArgs.size() != inputs.size() - 1)
      return Status::invalidModel("function '" + fn->name + "' takes " + std::to_string(fn->inputArgs.size()) +
                                  " arguments, not its " + std::to_string(inputs.size() - 1) + " inputs");
    if (key[0] == 'e' && fn->outputArgs.size() != outputs)
      return Status::invalidModel("its branches return different numbers of values");
    outputs = fn->outputArgs.size();
    const std::string scope = w + "/" + key + "/";
    Inliner sub(library_, inlined_);
    OSPREY_RETURN_IF_ERROR(sub.emit(fn->nodes, fn, scope, depth + 1));
    std::vector<std::string> rets;
    for (const std::string& arg : fn->outputArgs) {
      auto ret = fn->ret.find(arg);
      if (ret == fn->ret.end()) return Status::invalidModel("function '" + fn->name + "' returns nothing for '" + arg + "'");
      rets.emplace_back();
      OSPREY_RETURN_IF_ERROR(sub.innerRef(*fn, scope, ret->second, &rets.back()));
    }
    FunctionDef flat;
    flat.name = w + "/" + key;
    for (const std::string& arg : fn->inputArgs) flat.inputArgs.push_back(scope + arg);
    flat.outputArgs = fn->outputArgs;
    OSPREY_RETURN_IF_ERROR(prune(sub, &rets, &flat.nodes));
    for (size_t j = 0; j < rets.size(); ++j) flat.ret[flat.outputArgs[j]] = rets[j];
    for (FunctionDef& nested : sub.branches_) branches_.push_back(std::move(nested));
    branches_.push_back(std::move(flat));
    ifNode.attrs[key].kind = AttrValue::Kind::Func;
    ifNode.attrs[key].func = w + "/" + key;
  }
  return push(std::move(ifNode));
}

}  // namespace

Status inlineFunctions(const GraphDef& graph, const std::vector<std::string>& reserved, std::vector<std::string>* outputs,
                       std::vector<NodeDef>* nodes, std::vector<FunctionDef>* branches) {
  Inliner inliner(graph, reserved);
  OSPREY_RETURN_IF_ERROR(inliner.emit(graph.nodes, nullptr, "", 0));
  OSPREY_RETURN_IF_ERROR(prune(inliner, outputs, nodes));
  *branches = std::move(inliner.branches());
  return Status::ok();
}

Status variableCheckpointKeys(const GraphDef& graph, const std::string& restoreOp,
                              std::map<std::string, std::string>* keys) {
  keys->clear();
  const NodeDef* restore = nullptr;
  for (const NodeDef& n : graph.nodes)
    if (n.name == refNode(canonicalRef(restoreOp))) restore = &n;
  const AttrValue* f = restore ? restore->attr("f") : nullptr;
  if (f && f->kind == AttrValue::Kind::Func) {
    for (const FunctionDef& fn : graph.library) {
      if (fn.name != f->func) continue;
      std::map<std::string, std::string> argToVariable;
      std::vector<std::string> inputs;
      for (const std::string& in : restore->inputs)
        if (!in.empty() && in[0] != '^') inputs.push_back(in);
      for (size_t i = 0; i < fn.inputArgs.size() && i < inputs.size(); ++i)
        argToVariable[fn.inputArgs[i]] = refNode(canonicalRef(inputs[i]));
      collectKeys(fn.nodes, argToVariable, keys);
    }
    return Status::ok();
  }
  collectKeys(graph.nodes, {}, keys);  // a TF1 saver: Assign nodes of the graph itself
  return Status::ok();
}

}  // namespace osprey::tf
