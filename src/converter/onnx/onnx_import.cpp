// ONNX ModelProto -> Osprey graph: tensors, graph inputs/outputs, and every node through its
// importer. Unsupported ops are collected so one message lists them all.
#include <set>

#include "converter/onnx/import_context.h"
#include "converter/onnx/onnx_import.h"

namespace osprey::onnx {

namespace {

Status importValueInfo(const ValueInfo& vi, TensorInfo* t, const char* role) {
  if (vi.kind != ValueInfo::kTensor)
    return Status::unsupported(std::string(role) + " '" + vi.name + "' is a sequence, map or optional, which Osprey does not support yet");
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
  return Status::ok();
}

bool isDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

}  // namespace

Status importModel(const ModelProto& proto, Model* out, int* nodeCount) {
  const int64_t opset = proto.opsetFor("");
  for (const NodeProto& n : proto.graph.nodes)
    if (opset < 0 && isDefaultDomain(n.domain))
      return Status::invalidModel("node '" + n.name + "' (" + n.opType + ") uses the default ONNX domain, which the model does not import");
  if (opset > kMaxOnnxOpset)
    return Status::unsupported("the model uses ONNX opset " + std::to_string(opset) + "; Osprey supports up to " +
                               std::to_string(kMaxOnnxOpset));
  out->producer = "osprey-converter from " + (proto.producerName.empty() ? std::string("unknown") : proto.producerName) +
                  (proto.producerVersion.empty() ? "" : " " + proto.producerVersion);
  Graph& g = out->graph;
  ImportContext ctx(&g);
  const GraphProto& gp = proto.graph;
  *nodeCount = static_cast<int>(gp.nodes.size());

  std::set<std::string> initializerNames;
  for (const TensorProto& init : gp.initializers) {
    int idx = ctx.tensor(init.name);
    OSPREY_RETURN_IF_ERROR(convertTensor(init, &g.tensors[idx]).withContext("initializer '" + init.name + "'"));
    initializerNames.insert(init.name);
  }
  for (const ValueInfo& vi : gp.inputs) {
    if (initializerNames.count(vi.name)) continue;  // an initializer listed as input: a constant
    int idx = ctx.tensor(vi.name);
    OSPREY_RETURN_IF_ERROR(importValueInfo(vi, &g.tensors[idx], "input"));
    if (g.tensors[idx].dtype == DataType::Undefined)
      return Status::invalidModel("input '" + vi.name + "' has no element type");
    g.inputs.push_back(idx);
  }

  std::set<std::string> unsupported;
  Status firstError;
  int unnamed = 0;
  for (const NodeProto& original : gp.nodes) {
    NodeProto node = original;
    if (node.name.empty()) node.name = node.opType + "_" + std::to_string(unnamed++);
    std::string key = (isDefaultDomain(node.domain) ? "" : node.domain + ".") + node.opType + " (opset " +
                      std::to_string(isDefaultDomain(node.domain) ? opset : proto.opsetFor(node.domain)) + ")";
    if (!isDefaultDomain(node.domain)) {
      unsupported.insert(key);
      continue;
    }
    Status st;
    if (NodeImporter importer = findImporter(node.opType)) {
      st = importer(ctx, node, opset);
    } else {
      OpType type = opTypeFromName(node.opType);
      if (type == OpType::Invalid || type == OpType::Raster) {
        unsupported.insert(key);
        continue;
      }
      st = importDirect(ctx, node, type);
    }
    if (!st.isOk()) {
      if (st.code() == StatusCode::Unsupported) {
        unsupported.insert(key + ": " + st.message());
      } else if (firstError.isOk()) {
        firstError = st.withContext("node '" + node.name + "' (" + node.opType + ")");
      }
    }
  }
  if (!unsupported.empty()) {
    std::string list;
    for (auto& u : unsupported) list += (list.empty() ? "" : ", ") + u;
    return Status::unsupported("unsupported ONNX ops: " + list);
  }
  OSPREY_RETURN_IF_ERROR(firstError);

  for (const ValueInfo& vi : gp.outputs) {
    if (!ctx.has(vi.name)) return Status::invalidModel("graph output '" + vi.name + "' is never produced");
    int idx = ctx.tensor(vi.name);
    TensorInfo& t = g.tensors[idx];
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
    if (vi.kind != ValueInfo::kTensor)
      return Status::unsupported("output '" + vi.name + "' is a sequence, map or optional, which Osprey does not support yet");
    g.outputs.push_back(idx);
  }
  return g.validate();
}

}  // namespace osprey::onnx
