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

Status readOperator(const tflite::Model& model, const tflite::Operator* op, int index, int tensorCount,
                    const std::string& prefix, OpView* view, std::string* customCode) {
  const std::string where = prefix + "operator " + std::to_string(index);
  if (!op) return Status::invalidModel(where + " is null");
  const auto* codes = model.operator_codes();
  if (!codes || op->opcode_index() >= codes->size())
    return Status::invalidModel(where + " has opcode_index " + std::to_string(op->opcode_index()) + "; the model has " +
                                std::to_string(codes ? codes->size() : 0) + " operator codes");
  const tflite::OperatorCode* code = codes->Get(op->opcode_index());
  if (!code) return Status::invalidModel(where + " has a null operator code");
  view->op = op;
  view->code = builtinCodeOf(*code);
  view->name = prefix + builtinName(view->code) + "_" + std::to_string(index);
  if (code->custom_code()) {
    *customCode = code->custom_code()->str();
    if (view->code == tflite::BuiltinOperator_CUSTOM) view->name = prefix + *customCode + "_" + std::to_string(index);
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

// Every operator of the subgraph through its importer; unsupported ones are collected, so that
// one message lists them all with their counts.
Status importOperators(ImportContext& ctx, const tflite::SubGraph& sg) {
  const auto* ops = sg.operators();
  const int count = ops ? static_cast<int>(ops->size()) : 0;
  const int tensorCount = ctx.tensorCount();
  std::map<std::string, int> unsupported;
  Status firstError;
  for (int i = 0; i < count; ++i) {
    OpView op;
    std::string customCode;
    OSPREY_RETURN_IF_ERROR(readOperator(ctx.model(), ops->Get(i), i, tensorCount, ctx.namePrefix(), &op, &customCode));
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
    for (auto& [name, n] : unsupported) list += (list.empty() ? "" : ", ") + name + " x" + std::to_string(n);
    return Status::unsupported("unsupported TFLite ops: " + list);
  }
  return firstError;
}

}  // namespace

Status importSubgraphInto(const ImportContext& caller, int index, Graph* target, const std::vector<int>& inputs,
                          const std::string& prefix, std::vector<int>* outputs) {
  const tflite::Model& model = caller.model();
  const int count = model.subgraphs() ? static_cast<int>(model.subgraphs()->size()) : 0;
  const std::string where = "subgraph " + std::to_string(index);
  if (index < 0 || index >= count)
    return Status::invalidModel(where + " does not exist; the model has " + std::to_string(count) + " subgraphs");
  for (int c : caller.callers())
    if (c == index) return Status::invalidModel(where + " calls itself (through WHILE or IF)");
  constexpr size_t kMaxNesting = 16;
  if (caller.callers().size() >= kMaxNesting)
    return Status::unsupported("control flow nested over " + std::to_string(kMaxNesting) + " deep");
  const tflite::SubGraph* sg = model.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(index));
  if (!sg) return Status::invalidModel(where + " is null");
  ImportContext ctx(target, &model, sg, caller.file(), caller.fileSize());
  ctx.nestIn(caller, index, prefix);
  OSPREY_RETURN_IF_ERROR(ctx.readTensors().withContext(where));
  const size_t inputCount = sg->inputs() ? sg->inputs()->size() : 0;
  if (inputCount != inputs.size())
    return Status::invalidModel(where + " takes " + std::to_string(inputCount) + " inputs; it is given " +
                                std::to_string(inputs.size()));
  for (size_t k = 0; k < inputCount; ++k) {
    const int32_t t = sg->inputs()->Get(static_cast<flatbuffers::uoffset_t>(k));
    OSPREY_RETURN_IF_ERROR(checkedTensorIndex(t, ctx.tensorCount(), "input").withContext(where));
    if (ctx.isConstant(t) || ctx.isDefined(t))
      return Status::invalidModel(where + ": input tensor '" + ctx.tensor(t).name + "' is a constant or listed twice");
    ctx.bindValue(t, inputs[k]);
  }
  OSPREY_RETURN_IF_ERROR(importOperators(ctx, *sg).withContext(where));
  outputs->clear();
  if (sg->outputs())
    for (int32_t t : *sg->outputs()) {
      OSPREY_RETURN_IF_ERROR(checkedTensorIndex(t, ctx.tensorCount(), "output").withContext(where));
      int v;
      OSPREY_RETURN_IF_ERROR(ctx.asTflite(t, &v).withContext(where + " output"));
      outputs->push_back(v);
    }
  return Status::ok();
}

namespace {

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
  OSPREY_RETURN_IF_ERROR(importOperators(ctx, *sg));

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
