#include "converter/tensorflow/tf_import.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "converter/tensorflow/tf_control_flow.h"
#include "converter/tensorflow/tf_layers.h"
#include "converter/passes/passes.h"

namespace osprey::tf {

OpImporter findImporter(const std::string& op) {
  static const ImporterTable table = [] {
    ImporterTable t;
    addNnImporters(t);
    addMathImporters(t);
    addShapeImporters(t);
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

namespace {

// Ops that make no value a user reads: never graph outputs.
bool isSinkless(const std::string& op) { return op == "NoOp" || op == "Const" || op == "Placeholder" || op == "Assert"; }

std::vector<NodeView> viewsOf(const GraphDef& g) {
  std::vector<NodeView> views(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodeView& v = views[i];
    v.def = &g.nodes[i];
    v.label = "node '" + v.def->name + "' (" + v.def->op + ")";
    for (const std::string& in : v.def->inputs)
      if (!in.empty() && in[0] != '^') v.inputs.push_back(canonicalRef(in));
  }
  return views;
}

Status importPlaceholder(ImportContext& ctx, const NodeView& node, const ImportOptions& options) {
  const int32_t type = node.attrType("dtype", DT_INVALID);
  const DataType dt = dataTypeOf(type);
  if (dt == DataType::Undefined) return Status::unsupported("input of type " + tfTypeName(type));
  TensorInfo info;
  info.dtype = dt;
  if (const AttrValue* s = node.attr("shape"); s && s->kind == AttrValue::Kind::Shape) {
    info.hasShape = !s->shape.unknownRank;
    info.shape = s->shape.dims;
  } else {
    info.hasShape = false;
  }
  if (auto it = options.inputShapes.find(node.name()); it != options.inputShapes.end()) {
    if (info.hasShape && info.shape.size() != it->second.size())
      return node.error("the input shape given, " + shapeToString(it->second) + ", does not have the rank of " +
                        shapeToString(info.shape));
    info.shape = it->second;
    info.hasShape = true;
  }
  if (info.hasShape && !shapeBytesFit(info.shape, std::max<size_t>(1, dataTypeSize(dt))))
    return node.error("the input shape " + shapeToString(info.shape) + " is too large");
  const int index = ctx.define(node, 0, Held::AsTf, info.hasShape ? static_cast<int>(info.shape.size()) : -1);
  TensorInfo& t = ctx.graph().tensors[index];
  t.dtype = info.dtype;
  t.shape = info.shape;
  t.hasShape = info.hasShape;
  ctx.graph().inputs.push_back(index);
  return Status::ok();
}

Status importConst(ImportContext& ctx, const NodeView& node) {
  const AttrValue* v = node.attr("value");
  if (!v || v->kind != AttrValue::Kind::Tensor) return node.error("has no tensor value");
  const TfTensor& t = *v->tensor;
  const DataType dt = dataTypeOf(t.tfType);
  if (dt == DataType::Undefined) return Status::unsupported("constant of type " + tfTypeName(t.tfType));
  const int index = ctx.addConstant(node.name(), dt, t.shape, t.bytes.data(), t.bytes.size());
  if (dt == DataType::String) ctx.graph().tensors[index].data.strings = t.strings;
  ctx.bind(node, 0, index, Held::AsTf, static_cast<int>(t.shape.size()));
  return Status::ok();
}

// Nodes from `first` on whose inputs are all constants are computed now, so that importers
// see constants where the graph computes them (a batch norm's scale from its variance).
void foldImported(Graph& g, size_t first) {
  for (size_t i = first; i < g.nodes.size();) {
    const Node& n = g.nodes[i];
    bool constant = n.type != OpType::Loop && n.type != OpType::If && !n.inputs.empty();
    for (int in : n.inputs) constant = constant && (in < 0 || g.tensors[in].isConstant);
    if (constant && passes::foldNode(g, n, false)) g.nodes.erase(g.nodes.begin() + static_cast<long>(i));
    else ++i;
  }
}

// The graph's output `ref`, in TensorFlow's order, under the name TensorFlow gives it.
Status addOutput(ImportContext& ctx, const std::string& ref, std::set<int>* used) {
  int index;
  OSPREY_RETURN_IF_ERROR(ctx.asTf(ref, &index));
  Graph& g = ctx.graph();
  const std::string name = ref.size() > 2 && ref.compare(ref.size() - 2, 2, ":0") == 0 ? refNode(ref) : ref;
  const bool isInput = std::find(g.inputs.begin(), g.inputs.end(), index) != g.inputs.end();
  if (g.tensors[index].name != name) {
    if (!isInput && !g.tensors[index].isConstant && !used->count(index) && g.findTensor(name) < 0) {
      g.tensors[index].name = name;
    } else {
      const int copy = ctx.temp(name);
      ctx.addNode(OpType::Identity, name, {index}, {copy});
      index = copy;
    }
  }
  used->insert(index);
  g.outputs.push_back(index);
  return Status::ok();
}

}  // namespace

Status importGraphDef(const GraphDef& graphDef, const ImportOptions& options, Model* out) {
  out->producer = "osprey-converter from TensorFlow GraphDef";
  Graph& g = out->graph;
  const std::vector<NodeView> views = viewsOf(graphDef);
  std::unordered_map<std::string, size_t> byName;
  std::set<std::string> read;
  for (size_t i = 0; i < views.size(); ++i) {
    if (views[i].def->name.empty()) return Status::invalidModel("node " + std::to_string(i) + " has no name");
    if (!byName.emplace(views[i].def->name, i).second)
      return Status::invalidModel("two nodes are named '" + views[i].def->name + "'");
    for (const std::string& in : views[i].inputs) read.insert(refNode(in));
  }
  for (const auto& [name, shape] : options.inputShapes)
    if (!byName.count(name) || byName.at(name) >= views.size() || views[byName.at(name)].def->op != "Placeholder")
      return Status::invalidArgument("--input-shape names '" + name + "', which is not a Placeholder of the graph");
  // Nodes inside a while loop's frame (what its Enters lead to, up to its Exits) are never
  // outputs, even where only control edges leave them.
  std::vector<bool> inFrame(views.size(), false);
  {
    std::unordered_map<std::string, std::vector<size_t>> readers;
    for (size_t i = 0; i < views.size(); ++i)
      for (const std::string& in : views[i].inputs) readers[refNode(in)].push_back(i);
    std::vector<size_t> todo;
    for (size_t i = 0; i < views.size(); ++i)
      if (views[i].def->op == "Enter") todo.push_back(i), inFrame[i] = true;
    while (!todo.empty()) {
      const size_t n = todo.back();
      todo.pop_back();
      if (views[n].def->op == "Exit") continue;
      for (size_t r : readers[views[n].def->name])
        if (!inFrame[r]) inFrame[r] = true, todo.push_back(r);
    }
  }
  std::vector<size_t> outputs;
  for (size_t i = 0; i < views.size(); ++i)
    if (!read.count(views[i].def->name) && !isSinkless(views[i].def->op) && !(inFrame[i] && views[i].def->op != "Exit"))
      outputs.push_back(i);
  if (outputs.empty()) return Status::invalidModel("the graph has no outputs (every node's value is read by another)");

  // Every unsupported op is listed at once, before ordering: a loop's cycle is reported as its ops.
  std::vector<size_t> reachable;
  {
    std::vector<uint8_t> seen(views.size(), 0);
    std::vector<size_t> todo(outputs.begin(), outputs.end());
    for (size_t i : todo) seen[i] = 1;
    while (!todo.empty()) {
      const size_t n = todo.back();
      todo.pop_back();
      reachable.push_back(n);
      for (const std::string& in : views[n].inputs) {
        auto it = byName.find(refNode(in));
        if (it != byName.end() && !seen[it->second]) {
          seen[it->second] = 1;
          todo.push_back(it->second);
        }
      }
    }
  }
  std::map<std::string, int> unsupported;
  const bool functionalIf = graphDef.branchesInlined;  // If nodes whose branches are inlined functions
  auto countUnsupported = [&](const std::string& op) {
    if (op != "Placeholder" && op != "Const" && !isControlFlowOp(op) && !findImporter(op) && !(functionalIf && op == "If"))
      ++unsupported[op];
  };
  for (size_t n : reachable) countUnsupported(views[n].def->op);
  if (functionalIf)
    for (const FunctionDef& branch : graphDef.library)
      for (const NodeDef& n : branch.nodes) countUnsupported(n.op);
  auto listed = [&] {
    std::string list;
    for (auto& [name, count] : unsupported) list += (list.empty() ? "" : ", ") + name + " x" + std::to_string(count);
    return Status::unsupported("unsupported TensorFlow ops: " + list);
  };
  if (!unsupported.empty()) return listed();

  std::vector<WhileFrame> frames;
  std::unordered_map<size_t, size_t> frameOfExit;
  OSPREY_RETURN_IF_ERROR(findWhileFrames(views, byName, &frames, &frameOfExit));
  // A loop is one step of the outer graph: its Exits read what its Enters read.
  auto deps = [&](size_t n) {
    auto it = frameOfExit.find(n);
    return it == frameOfExit.end() ? views[n].inputs : frameInputs(frames[it->second], views);
  };
  std::vector<size_t> order;
  OSPREY_RETURN_IF_ERROR(orderNodes(views, byName, outputs, deps, [](size_t) { return false; }, &order));
  ImportContext ctx(&g);
  std::unordered_map<std::string, int> readers;
  for (const NodeView& v : views)
    for (const std::string& in : v.inputs) ++readers[in];
  ctx.setReaders(std::move(readers));
  ImportFn importNode;
  importNode = [&](ImportContext& c, const NodeView& v) -> Status {
    if (v.def->op == "Placeholder") return importPlaceholder(c, v, options);
    if (v.def->op == "Const") return importConst(c, v);
    if (functionalIf && v.def->op == "If") return importFunctionalIf(c, v, graphDef.library, importNode);
    const OpImporter importer = findImporter(v.def->op);
    if (!importer) return Status::unsupported("");
    const size_t before = c.graph().nodes.size();
    OSPREY_RETURN_IF_ERROR(importer(c, v));
    foldImported(c.graph(), before);
    return Status::ok();
  };
  std::vector<bool> lowered(frames.size(), false);
  Status firstError;
  for (size_t n : order) {
    const NodeView& v = views[n];
    Status st;
    bool loop = false;
    if (auto it = frameOfExit.find(n); it != frameOfExit.end()) {
      if (!lowered[it->second]) st = lowerWhileFrame(ctx, frames[it->second], views, byName, importNode);
      lowered[it->second] = loop = true;
    } else if (isControlFlowOp(v.def->op)) {
      st = Status::unsupported("outside a while loop's Enter ... Exit");
    } else {
      st = importNode(ctx, v);
    }
    if (st.code() == StatusCode::Unsupported && loop) {
      ++unsupported[st.message() + " in while loop '" + frames[frameOfExit[n]].name + "'"];
    } else if (st.code() == StatusCode::Unsupported) {
      ++unsupported[v.def->op + (st.message().empty() ? "" : " (" + st.message() + ")")];
    } else if (!st.isOk() && firstError.isOk()) {
      firstError = st.withContext(v.label);  // nodes reading what this one did not make fail too: keep the first
    }
  }
  if (!unsupported.empty()) return listed();
  OSPREY_RETURN_IF_ERROR(firstError);
  std::set<int> used;
  for (size_t n : outputs) OSPREY_RETURN_IF_ERROR(addOutput(ctx, views[n].def->name + ":0", &used).withContext(views[n].label));
  return g.validate();
}

}  // namespace osprey::tf
