// State shared by the ONNX importers: the graph under construction and name -> tensor lookup.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "converter/onnx/onnx_proto.h"
#include "core/graph.h"

namespace osprey::onnx {

class ImportContext {
 public:
  explicit ImportContext(Graph* graph) : graph_(graph) {}
  Graph& graph() { return *graph_; }
  // Index of the tensor named `name`, created (dtype unknown) if new; -1 for "".
  int tensor(const std::string& name);
  bool has(const std::string& name) const { return index_.count(name) > 0; }
  // A constant tensor (fresh unique name derived from `hint`).
  int addConstant(const std::string& hint, DataType dtype, const Shape& shape, const void* data, size_t bytes);
  int addInt64Constant(const std::string& hint, const std::vector<int64_t>& values, bool scalar = false);
  int addFloatConstant(const std::string& hint, const std::vector<float>& values, bool scalar = false);
  std::string uniqueName(const std::string& hint);
  // The constant behind tensor `index`, or null.
  const TensorInfo* constantOf(int index) const;
  Node& addNode(OpType type, const std::string& name, std::vector<int> inputs, std::vector<int> outputs);
  // Imports a subgraph attribute; `captured` receives the enclosing-scope names it reads,
  // which it takes as its last graph inputs.
  std::function<Status(const GraphProto&, std::shared_ptr<Graph>*, std::vector<std::string>*)> importSubgraph;

 private:
  Graph* graph_;
  std::unordered_map<std::string, int> index_;
  int counter_ = 0;
};

// Converts an ONNX attribute to Osprey's; unsupported kinds (sparse tensors, graphs) error.
Status convertAttribute(const AttributeProto& a, Attribute* out);
Status convertTensor(const TensorProto& t, TensorInfo* out);
// As convertTensor, taking t's bytes instead of copying them (an initializer is read once).
Status adoptTensor(TensorProto* t, TensorInfo* out);

// Imports one node (possibly as several Osprey ops). Unsupported ONNX ops are reported as
// Status::unsupported with an empty message: the caller collects op type and opset.
using NodeImporter = Status (*)(ImportContext& ctx, const NodeProto& node, int64_t opset);
// The importer for `opType` in the default domain, or null when Osprey cannot import it.
NodeImporter findImporter(const std::string& opType);
// Control flow (control_flow_import.cpp).
Status importIf(ImportContext& ctx, const NodeProto& node, int64_t opset);
Status importLoopOrScan(ImportContext& ctx, const NodeProto& node, int64_t opset, OpType type);
// Optional: its `type` attribute (a TypeProto) only names what an absent value would hold.
Status importOptional(ImportContext& ctx, const NodeProto& node, int64_t opset);
// Marks the tensors that hold sequences (DataType::Sequence) or optionals (TensorInfo::optional),
// from the ops that make them and the declared types of subgraph outputs, so that the runtime
// runs what makes or reads them on the host.
void markHostValues(Graph& g);
// com.microsoft.DynamicQuantizeLSTM as the LSTM of its dequantized weights.
Status importDynamicQuantizeLSTM(ImportContext& ctx, const NodeProto& node);
// Ops imported as-is: attributes copied, inputs and outputs in ONNX order.
Status importDirect(ImportContext& ctx, const NodeProto& node, OpType type);
// The same with inputs of the importer's making (trailing -1 dropped).
Status importWithInputs(ImportContext& ctx, const NodeProto& node, OpType type, std::vector<int> ins);

}  // namespace osprey::onnx
