#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

OpImporter findImporter(tflite::BuiltinOperator code) {
  static const ImporterTable table = [] {
    ImporterTable t;
    addConvImporters(t);
    addSpaceBatchImporters(t);
    addElementwiseImporters(t);
    addShapeImporters(t);
    addReduceImporters(t);
    addIndexingImporters(t);
    addRecurrentImporters(t);
    addControlFlowImporters(t);
    return t;
  }();
  auto it = table.find(static_cast<int32_t>(code));
  return it == table.end() ? nullptr : it->second;
}

OpImporter findCustomImporter(const std::string& customCode) {
  // Custom ops that real models ship with, where they are plain compositions of builtins.
  static const std::unordered_map<std::string, OpImporter> table = {
      {"Convolution2DTransposeBias", importTransposeConvBias},  // MediaPipe's segmentation models
  };
  auto it = table.find(customCode);
  return it == table.end() ? nullptr : it->second;
}

Status requireInputs(const OpView& op, size_t count) {
  if (op.inputs.size() < count)
    return Status::invalidModel(op.name + " has " + std::to_string(op.inputs.size()) + " inputs; it needs " +
                                std::to_string(count));
  for (size_t i = 0; i < count; ++i)
    if (op.inputs[i] < 0) return Status::invalidModel(op.name + ": input " + std::to_string(i) + " is required");
  if (op.outputs.empty()) return Status::invalidModel(op.name + " has no output");
  return Status::ok();
}

Status missingOptions(const OpView& op, const char* table) {
  return Status::invalidModel(op.name + " has no " + table + " (its builtin_options are missing or of another type)");
}

}  // namespace osprey::tfl
