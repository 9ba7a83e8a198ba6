// The TensorFlow entry points of converter.h.
#include <chrono>
#include <filesystem>
#include <fstream>

#include "converter/converter.h"
#include "converter/tensorflow/saved_model.h"
#include "converter/tensorflow/tf_import.h"
#include "core/files.h"

namespace osprey {

namespace {

Status convertGraphDef(tf::GraphDef&& graphDef, const std::string& source, Model* out, const ConvertOptions& options,
                       ConvertReport* report, std::chrono::steady_clock::time_point start) {
  if (graphDef.nodes.empty()) return Status::invalidModel(source + ": the TensorFlow GraphDef has no nodes");
  ConvertReport r;
  r.tensorflowNodes = static_cast<int>(graphDef.nodes.size());
  tf::ImportOptions importOptions;
  importOptions.inputShapes = options.inputShapes;
  OSPREY_RETURN_IF_ERROR_IN(tf::importGraphDef(graphDef, importOptions, out), source);
  graphDef = tf::GraphDef();  // the constants were copied into the model
  OSPREY_RETURN_IF_ERROR_IN(optimizeGraph(out->graph, options, &r), source);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = r;
  return Status::ok();
}

}  // namespace

Status convertTensorflowBytes(const uint8_t* data, size_t size, const std::string& source, Model* out,
                              const ConvertOptions& options, ConvertReport* report) {
  auto start = std::chrono::steady_clock::now();
  tf::GraphDef graphDef;
  OSPREY_RETURN_IF_ERROR_IN(tf::parseGraphDef(data, size, &graphDef), source);
  OSPREY_RETURN_IF_ERROR_IN(tf::inlineGraphFunctions(&graphDef), source);
  return convertGraphDef(std::move(graphDef), source, out, options, report, start);
}

Status convertTensorflowFile(const std::string& path, Model* out, const ConvertOptions& options, ConvertReport* report) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    auto start = std::chrono::steady_clock::now();
    tf::GraphDef graphDef;
    OSPREY_RETURN_IF_ERROR(tf::loadSavedModel(path, options.signature, &graphDef));
    return convertGraphDef(std::move(graphDef), path, out, options, report, start);
  }
  if (!options.signature.empty())
    return Status::invalidArgument("--signature applies to TensorFlow SavedModel directories, not " + path);
  std::vector<uint8_t> bytes;
  OSPREY_RETURN_IF_ERROR(readFile(path, &bytes));
  return convertTensorflowBytes(bytes.data(), bytes.size(), path, out, options, report);
}

bool isTensorflowModel(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (std::filesystem::is_directory(p, ec)) return std::filesystem::exists(p / "saved_model.pb", ec);
  if (p.extension() != ".pb") return false;
  // An ONNX model saved as .pb starts with its ir_version (field 1, varint: byte 0x08); a
  // GraphDef with a node (field 1, length-delimited: 0x0a) or its versions or library.
  std::ifstream file(path, std::ios::binary);
  char first = 0;
  return !file.read(&first, 1) || first != 0x08;
}

}  // namespace osprey
