// TFLite model -> Osprey graph: the main subgraph's tensors, inputs and outputs (NHWC, exactly
// as TFLite declares them) and every operator through its importer.
#include "converter/tflite/tflite_import.h"

#include <map>

#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

const char* quantizedTypeName(DataType t) {
  switch (t) {
    case DataType::Int8: return "int8";
    case DataType::UInt8: return "uint8";
    case DataType::Int16: return "int16";
    case DataType::Int32: return "int32";
    default: return nullptr;
  }
}

// int8 and uint8 tensors with scales (and int32 constants with scales, the biases) are read and
// written in QDQ form (ImportContext::beginOp); int16 activations (16x8 models) and int32
// activations with scales are not imported yet. QUANTIZE and DEQUANTIZE cross between them
// and float.
const char* quantizedOperand(const ImportContext& ctx, const OpView& op) {
  if (op.code == tflite::BuiltinOperator_QUANTIZE || op.code == tflite::BuiltinOperator_DEQUANTIZE) return nullptr;
  for (const std::vector<int>* list : {&op.inputs, &op.outputs})
    for (int t : *list) {
      if (t < 0 || !ctx.tensor(t).quantized) continue;
      const DataType type = ctx.tensor(t).dtype;
      if (type == DataType::Int16 || (type == DataType::Int32 && !ctx.isConstant(t))) return quantizedTypeName(type);
    }
  return nullptr;
}

Status readOperator(const tflite::Model& model, const tflite::Operator* op, int index, int tensorCount, OpView* view,
                    std::string* customCode) {
  const std::string where = "operator " + std::to_string(index);
  if (!op) return Status::invalidModel(where + " is null");
  const auto* codes = model.operator_codes();
  if (!codes || op->opcode_index() >= codes->size())
    return Status::invalidModel(where + " has opcode_index " + std::to_string(op->opcode_index()) + "; the model has " +
                                std::to_string(codes ? codes->size() : 0) + " operator codes");
  const tflite::OperatorCode* code = codes->Get(op->opcode_index());
  if (!code) return Status::invalidModel(where + " has a null operator code");
  view->op = op;
  view->code = builtinCodeOf(*code);
  view->name = builtinName(view->code) + "_" + std::to_string(index);
  if (code->custom_code()) {
    *customCode = code->custom_code()->str();
    if (view->code == tflite::BuiltinOperator_CUSTOM) view->name = *customCode + "_" + std::to_string(index);
  }
  auto readIndices = [&](const flatbuffers::Vector<int32_t>* list, bool optionalAllowed, std::vector<int>* out,
                         const char* role) {
    if (!list) return Status::ok();
    for (int32_t t : *list) {
      if (t >= tensorCount || t < (optionalAllowed ? -1 : 0))
        return Status::invalidModel(where + " (" + builtinName(view->code) + ") has " + role + " tensor index " +
                                    std::to_string(t) + "; the subgraph has " + std::to_string(tensorCount) + " tensors");
      out->push_back(t);
    }
    return Status::ok();
  };
  OSPREY_RETURN_IF_ERROR(readIndices(op->inputs(), true, &view->inputs, "input"));
  OSPREY_RETURN_IF_ERROR(readIndices(op->outputs(), false, &view->outputs, "output"));
  if (view->outputs.empty()) return Status::invalidModel(where + " (" + builtinName(view->code) + ") has no output");
  return Status::ok();
}

Status checkedTensorIndex(int32_t t, int count, const char* role) {
  if (t < 0 || t >= count)
    return Status::invalidModel(std::string("subgraph ") + role + " tensor index " + std::to_string(t) +
                                " is out of range (the subgraph has " + std::to_string(count) + " tensors)");
  return Status::ok();
}

// Names from the main subgraph's signature, where it has one, replace the tensor names of its
// inputs and outputs.
void applySignatureNames(const tflite::Model& model, const ImportContext& ctx, const std::map<int, int>& ospreyOf,
                         Graph& g) {
  if (!model.signature_defs()) return;
  for (const tflite::SignatureDef* sig : *model.signature_defs()) {
    if (!sig || sig->subgraph_index() != 0) continue;
    for (const auto* list : {sig->inputs(), sig->outputs()}) {
      if (!list) continue;
      for (const tflite::TensorMap* m : *list) {
        if (!m || !m->name() || m->name()->size() == 0) continue;
        auto it = ospreyOf.find(static_cast<int>(m->tensor_index()));
        if (it == ospreyOf.end() || g.findTensor(m->name()->str()) >= 0) continue;
        g.tensors[it->second].name = m->name()->str();
      }
    }
    return;
  }
}

}  // namespace

Status importTfliteModel(const uint8_t* data, size_t size, Model* out, int* operatorCount) {
  const tflite::Model* model = nullptr;
  OSPREY_RETURN_IF_ERROR(verifyTfliteModel(data, size, &model));
  if (!model->subgraphs() || model->subgraphs()->size() == 0 || !model->subgraphs()->Get(0))
    return Status::invalidModel("the TFLite model has no subgraph");
  const tflite::SubGraph* sg = model->subgraphs()->Get(0);
  out->producer = "osprey-converter from TFLite (schema version " + std::to_string(model->version()) + ")";
  Graph& g = out->graph;
  ImportContext ctx(&g, model, sg, data, size);
  OSPREY_RETURN_IF_ERROR(ctx.readTensors());
  const int tensorCount = ctx.tensorCount();

  std::map<int, int> ospreyOf;  // user-facing TFLite tensor -> Osprey tensor
  if (sg->inputs())
    for (int32_t t : *sg->inputs()) {
      OSPREY_RETURN_IF_ERROR(checkedTensorIndex(t, tensorCount, "input"));
      const TfliteTensor& info = ctx.tensor(t);
      if (ctx.isConstant(t) || ctx.isDefined(t)) continue;
      if (info.dtype == DataType::Undefined)
        return Status::unsupported("input '" + info.name + "' has TFLite type " + tensorTypeName(info.tfliteType) +
                                   ", which Osprey does not import");
      const int index = ctx.define(t, Held::AsTflite);
      g.tensors[index].dtype = info.dtype;
      g.tensors[index].shape = info.shape;
      g.tensors[index].hasShape = true;
      g.inputs.push_back(index);
      ospreyOf[t] = index;
    }

  const auto* ops = sg->operators();
  *operatorCount = ops ? static_cast<int>(ops->size()) : 0;
  std::map<std::string, int> unsupported;
  Status firstError;
  for (int i = 0; i < *operatorCount; ++i) {
    OpView op;
    std::string customCode;
    OSPREY_RETURN_IF_ERROR(readOperator(*model, ops->Get(i), i, tensorCount, &op, &customCode));
    const bool custom = op.code == tflite::BuiltinOperator_CUSTOM;
    const OpImporter importer = custom ? findCustomImporter(customCode) : findImporter(op.code);
    if (!importer) {
      ++unsupported[custom ? "custom '" + customCode + "'" : builtinName(op.code)];
      continue;
    }
    if (const char* type = quantizedOperand(ctx, op)) {
      ++unsupported[builtinName(op.code) + " (quantized " + type + ")"];
      continue;
    }
    Status st;
    for (int t : op.outputs)
      if (ctx.isDefined(t)) st = Status::invalidModel("tensor '" + ctx.tensor(t).name + "' is written twice (or is a constant)");
    if (st.isOk()) {
      ctx.beginOp(op);
      st = importer(ctx, op);
      ctx.endOp();
    }
    if (st.code() == StatusCode::Unsupported) {
      ++unsupported[builtinName(op.code) + (st.message().empty() ? "" : " (" + st.message() + ")")];
    } else if (!st.isOk() && firstError.isOk()) {
      firstError = st.withContext(op.name);
    }
  }
  if (!unsupported.empty()) {
    std::string list;
    for (auto& [name, count] : unsupported) list += (list.empty() ? "" : ", ") + name + " x" + std::to_string(count);
    return Status::unsupported("unsupported TFLite ops: " + list);
  }
  OSPREY_RETURN_IF_ERROR(firstError);

  if (sg->outputs())
    for (int32_t t : *sg->outputs()) {
      OSPREY_RETURN_IF_ERROR(checkedTensorIndex(t, tensorCount, "output"));
      int index;
      OSPREY_RETURN_IF_ERROR(ctx.asTflite(t, &index).withContext("output"));
      TensorInfo& info = g.tensors[index];
      if (!info.isConstant) {
        info.dtype = ctx.tensor(t).dtype;
        info.shape = ctx.tensor(t).shape;
        info.hasShape = true;
      }
      g.outputs.push_back(index);
      ospreyOf[t] = index;
    }
  applySignatureNames(*model, ctx, ospreyOf, g);
  return g.validate();
}

}  // namespace osprey::tfl
