// ONNX ModelProto -> Osprey graph: tensors, graph inputs/outputs, and every node through its
// importer. Unsupported ops are collected so one message lists them all.
#include <set>

#include "converter/onnx/import_context.h"
#include "converter/onnx/onnx_import.h"

namespace osprey::onnx {

namespace {

// A sequence, optional(tensor) or optional(sequence) value's kind onto `t` (its shape is then unknown).
Status importValueKind(const ValueInfo& vi, TensorInfo* t, const char* role) {
  if (vi.kind == ValueInfo::kTensor) return Status::ok();
  const bool sequence = (vi.kind == ValueInfo::kSequence && vi.innerKind == ValueInfo::kTensor) ||
                        (vi.kind == ValueInfo::kOptional && vi.innerKind == ValueInfo::kSequence);
  if (vi.kind == ValueInfo::kSequence && vi.innerKind == ValueInfo::kMapOfTensors) {  // ZipMap's output
    t->dtype = DataType::Sequence;
    t->elementDtype = DataType::Map;
    t->hasShape = false;
    t->shape.clear();
    t->dimNames.clear();
    return Status::ok();
  }
  const bool optionalTensor = vi.kind == ValueInfo::kOptional && vi.innerKind == ValueInfo::kTensor;
  if (!sequence && !optionalTensor)
    return Status::unsupported(std::string(role) + " '" + vi.name + "' is a map, a sparse tensor, or a nesting of sequences " +
                               "and optionals, which Osprey does not support");
  t->optional = vi.kind == ValueInfo::kOptional;
  if (sequence) {
    t->elementDtype = t->dtype;
    t->dtype = DataType::Sequence;
    t->hasShape = false;
    t->shape.clear();
    t->dimNames.clear();
  }
  return Status::ok();
}

Status importValueInfo(const ValueInfo& vi, TensorInfo* t, const char* role) {
  if (vi.elemType != 0) {
    if (!isKnownDataType(vi.elemType))
      return Status::unsupported(std::string(role) + " '" + vi.name + "' has ONNX element type " +
                                 std::to_string(vi.elemType) + ", which Osprey does not support");
    t->dtype = static_cast<DataType>(vi.elemType);
  }
  t->hasShape = vi.hasShape;
  t->shape = vi.dims;
  t->dimNames = vi.dimParams;
  bool anyName = false;
  for (auto& n : vi.dimParams) anyName |= !n.empty();
  if (!anyName) t->dimNames.clear();
  return importValueKind(vi, t, role);
}

bool isDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The ai.onnx.ml ops Osprey implements (ops/ml.cpp), and the opset each follows.
OpType mlOp(const std::string& opType, int64_t opset) {
  static const std::pair<const char*, int64_t> kOps[] = {
      {"Binarizer", 1}, {"ArrayFeatureExtractor", 1}, {"LabelEncoder", 2}, {"TreeEnsemble", 5},
      {"TreeEnsembleRegressor", 1}, {"TreeEnsembleClassifier", 1}, {"LinearRegressor", 1}, {"LinearClassifier", 1},
      {"Scaler", 1}, {"Normalizer", 1}, {"ZipMap", 1}};
  for (auto [op, since] : kOps)
    if (opType == op && opset >= since) return opTypeFromName(op);
  return OpType::Invalid;
}

// The com.microsoft ops (ONNX Runtime's contrib ops) Osprey implements, imported as they are.
OpType microsoftOp(const std::string& opType) {
  static const char* const kOps[] = {"QLinearAdd",           "QLinearMul",           "QLinearGlobalAveragePool",
                                     "QLinearAveragePool",   "QLinearSigmoid",       "QLinearLeakyRelu",
                                     "QLinearConcat",        "QLinearSoftmax",       "QGemm",
                                     "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "MatMulNBits"};
  for (const char* op : kOps)
    if (opType == op) return opTypeFromName(op);
  return OpType::Invalid;
}

struct ImportState {
  const ModelProto* model = nullptr;
  GraphProto* mainGraph = nullptr;  // its initializers' bytes move into the graph
  int64_t opset = 0;
  std::set<std::string> unsupported;
  Status firstError;
  int unnamed = 0;
};

Status importGraph(ImportState& state, const GraphProto& gp, Graph* g, std::vector<std::string>* captured);

void importNodes(ImportState& state, ImportContext& ctx, const GraphProto& gp) {
  ctx.importSubgraph = [&state](const GraphProto& sub, std::shared_ptr<Graph>* out, std::vector<std::string>* cap) {
    *out = std::make_shared<Graph>();
    return importGraph(state, sub, out->get(), cap);
  };
  for (const NodeProto& original : gp.nodes) {
    NodeProto node = original;
    if (node.name.empty()) node.name = node.opType + "_" + std::to_string(state.unnamed++);
    const bool defaultDomain = isDefaultDomain(node.domain);
    std::string key = (defaultDomain ? "" : node.domain + ".") + node.opType + " (opset " +
                      std::to_string(defaultDomain ? state.opset : state.model->opsetFor(node.domain)) + ")";
    // Preview ops (ai.onnx.preview) are imported where Osprey has an importer for them, and
    // ONNX Runtime's com.microsoft ops and ONNX-ML's where Osprey implements them.
    const OpType implemented = node.domain == "com.microsoft" ? microsoftOp(node.opType)
                             : node.domain == "ai.onnx.ml" ? mlOp(node.opType, state.model->opsetFor(node.domain))
                                                           : OpType::Invalid;
    const bool quantizedLstm = node.domain == "com.microsoft" && node.opType == "DynamicQuantizeLSTM";
    if (!defaultDomain && implemented == OpType::Invalid && !quantizedLstm &&
        !(node.domain == "ai.onnx.preview" && findImporter(node.opType))) {
      state.unsupported.insert(key);
      continue;
    }
    Status st;
    if (implemented != OpType::Invalid) {
      st = importDirect(ctx, node, implemented);
    } else if (quantizedLstm) {
      st = importDynamicQuantizeLSTM(ctx, node);
    } else if (NodeImporter importer = findImporter(node.opType)) {
      st = importer(ctx, node, state.opset);
    } else {
      OpType type = opTypeFromName(node.opType);
      if (type == OpType::Invalid || type == OpType::Raster || type == OpType::ByteLookup || microsoftOp(node.opType) != OpType::Invalid ||
          mlOp(node.opType, 5) != OpType::Invalid) {
        state.unsupported.insert(key);
        continue;
      }
      st = importDirect(ctx, node, type);
    }
    if (!st.isOk()) {
      if (st.code() == StatusCode::Unsupported) {
        state.unsupported.insert(key + ": " + st.message());
      } else if (state.firstError.isOk()) {
        state.firstError = st.withContext("node '" + node.name + "' (" + node.opType + ")");
      }
    }
  }
}

// Imports a graph. For a subgraph (`captured` non-null), names it reads but does not define
// come from the enclosing graph: they become extra graph inputs, listed in `captured`.
Status importGraph(ImportState& state, const GraphProto& gp, Graph* g, std::vector<std::string>* captured) {
  ImportContext ctx(g);
  std::set<std::string> initializerNames;
  const bool adopt = &gp == state.mainGraph;
  for (size_t i = 0; i < gp.initializers.size(); ++i) {
    const TensorProto& init = gp.initializers[i];
    // "" means "no tensor" in a node's inputs, so an unnamed initializer could never be read.
    if (init.name.empty()) return Status::invalidModel("initializer " + std::to_string(i) + " has no name");
    int idx = ctx.tensor(init.name);
    TensorInfo* t = &g->tensors[idx];
    OSPREY_RETURN_IF_ERROR_IN(adopt ? adoptTensor(&state.mainGraph->initializers[i], t) : convertTensor(init, t),
                              "initializer '" + init.name + "'");
    initializerNames.insert(init.name);
  }
  for (const ValueInfo& vi : gp.inputs) {
    if (initializerNames.count(vi.name)) continue;  // an initializer listed as input: a constant
    if (vi.name.empty()) return Status::invalidModel("graph input " + std::to_string(g->inputs.size()) + " has no name");
    int idx = ctx.tensor(vi.name);
    OSPREY_RETURN_IF_ERROR(importValueInfo(vi, &g->tensors[idx], "input"));
    if (!captured && g->tensors[idx].dtype == DataType::Undefined)
      return Status::invalidModel("input '" + vi.name + "' has no element type");
    g->inputs.push_back(idx);
  }
  importNodes(state, ctx, gp);
  if (!state.unsupported.empty() || !state.firstError.isOk()) return Status::ok();  // reported by the caller
  if (captured) {
    std::vector<bool> defined(g->tensors.size(), false);
    for (int i : g->inputs) defined[i] = true;
    for (auto& n : g->nodes)
      for (int o : n.outputs)
        if (o >= 0) defined[o] = true;
    std::vector<bool> read(g->tensors.size(), false);
    for (auto& n : g->nodes)
      for (int i : n.inputs)
        if (i >= 0) read[i] = true;
    for (const ValueInfo& vi : gp.outputs)
      if (ctx.has(vi.name)) read[ctx.tensor(vi.name)] = true;
    for (size_t i = 0; i < g->tensors.size(); ++i) {
      if (read[i] && !defined[i] && !g->tensors[i].isConstant) {
        g->inputs.push_back(static_cast<int>(i));
        captured->push_back(g->tensors[i].name);
      }
    }
  }
  markHostValues(*g);
  for (const ValueInfo& vi : gp.outputs) {
    if (!ctx.has(vi.name)) return Status::invalidModel("graph output '" + vi.name + "' is never produced");
    int idx = ctx.tensor(vi.name);
    TensorInfo& t = g->tensors[idx];
    if (!t.isConstant && t.dtype == DataType::Undefined && vi.elemType != 0 && isKnownDataType(vi.elemType))
      t.dtype = static_cast<DataType>(vi.elemType);
    if (!t.isConstant && !t.hasShape && vi.hasShape) {  // declared only: the runtime computes the real shape
      t.hasShape = true;
      t.shape = vi.dims;
      t.dimNames = vi.dimParams;
      bool anyName = false;
      for (auto& n : vi.dimParams) anyName |= !n.empty();
      if (!anyName) t.dimNames.clear();
    }
    if (!t.isConstant && t.dtype != DataType::Sequence) OSPREY_RETURN_IF_ERROR(importValueKind(vi, &t, "output"));
    g->outputs.push_back(idx);
  }
  return Status::ok();
}

}  // namespace

Status importModel(ModelProto* mutableProto, Model* out, int* nodeCount) {
  const ModelProto& proto = *mutableProto;
  ImportState state;
  state.model = &proto;
  state.mainGraph = &mutableProto->graph;
  state.opset = proto.opsetFor("");
  for (const NodeProto& n : proto.graph.nodes)
    if (state.opset < 0 && isDefaultDomain(n.domain))
      return Status::invalidModel("node '" + n.name + "' (" + n.opType + ") uses the default ONNX domain, which the model does not import");
  if (state.opset > kMaxOnnxOpset)
    return Status::unsupported("the model uses ONNX opset " + std::to_string(state.opset) + "; Osprey supports up to " +
                               std::to_string(kMaxOnnxOpset));
  out->producer = "osprey-converter from " + (proto.producerName.empty() ? std::string("unknown") : proto.producerName) +
                  (proto.producerVersion.empty() ? "" : " " + proto.producerVersion);
  *nodeCount = static_cast<int>(proto.graph.nodes.size());
  Status st = importGraph(state, proto.graph, &out->graph, nullptr);
  if (!state.unsupported.empty()) {
    std::string list;
    for (auto& u : state.unsupported) list += (list.empty() ? "" : ", ") + u;
    return Status::unsupported("unsupported ONNX ops: " + list);
  }
  OSPREY_RETURN_IF_ERROR(state.firstError);
  OSPREY_RETURN_IF_ERROR(st);
  return out->graph.validate();
}

}  // namespace osprey::onnx
