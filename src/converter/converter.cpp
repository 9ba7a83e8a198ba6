#include "converter/converter.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "converter/onnx/external_data.h"
#include "converter/onnx/onnx_import.h"
#include "converter/passes/passes.h"
#include "converter/tflite/tflite_import.h"
#include "converter/tflite/tflite_reader.h"
#include "core/files.h"
#include "ops/op_def.h"

namespace osprey {

Status optimizeGraph(Graph& g, const ConvertOptions& options, ConvertReport* report) {
  ConvertReport unused;
  ConvertReport& r = report ? *report : unused;
  OSPREY_RETURN_IF_ERROR(checkOpArity(g));  // the passes read the inputs an op requires
  r.removedOps += passes::removeIdentities(g);
  // Before constant folding, which would dequantize the byte weights into float ones.
  if (options.fuse && options.fuseQuantized) r.fusedOps += passes::fuseQuantizedOps(g);
  if (options.foldConstants) {
    int folded = 0;
    OSPREY_RETURN_IF_ERROR(passes::foldConstants(g, &folded));
    r.foldedOps += folded;
    r.foldedOps += passes::foldShapes(g);
    OSPREY_RETURN_IF_ERROR(passes::foldConstants(g, &folded));
    r.foldedOps += folded;
  }
  // After folding, which knows the shapes of products of two activations and turns the
  // constants of a chain (a DequantizeLinear of a scalar) into float ones a table can use.
  if (options.fuse && options.fuseQuantized) {
    r.fusedOps += passes::fuseQuantizedActivationProducts(g);
    r.fusedOps += passes::fuseQuantizedTables(g);
  }
  if (options.fuse) {
    r.fusedOps += passes::foldBatchNormIntoConv(g);
    r.fusedOps += passes::foldBatchNormIntoGemm(g);
    r.fusedOps += passes::fuseLayerNorm(g);
    r.fusedOps += passes::fuseGelu(g);
    r.fusedOps += passes::fuseAttention(g);
    if (options.fuseMatMulBias) r.fusedOps += passes::fuseMatMulBias(g);
    r.fusedOps += passes::foldAttentionBatchTransposes(g);
    r.fusedOps += passes::splitSlicedProjections(g);
    if (options.fuseConvResidual) r.fusedOps += passes::fuseConvResidual(g);
    r.fusedOps += passes::fuseSwish(g);
    r.fusedOps += passes::fuseActivationPatterns(g);
    r.fusedOps += passes::fuseActivations(g);
  }
  r.removedOps += passes::removeDeadCode(g);
  passes::compactTensors(g);
  OSPREY_RETURN_IF_ERROR(g.validate());
  OSPREY_RETURN_IF_ERROR(checkOpArity(g));
  r.ospreyOps = static_cast<int>(g.nodes.size());
  return Status::ok();
}

namespace {

// `modelDir` is where the model file lives (for external data); null when it came as bytes.
// `owned`, when given, holds data and is released once parsed, before the weights are converted.
Status convertParsed(const uint8_t* data, size_t size, std::shared_ptr<const void>* owned, const std::string* modelDir,
                     Model* out, const ConvertOptions& options, ConvertReport* report) {
  auto start = std::chrono::steady_clock::now();
  onnx::ModelProto proto;
  OSPREY_RETURN_IF_ERROR(onnx::parseModel(data, size, &proto));
  if (owned) owned->reset();
  OSPREY_RETURN_IF_ERROR(onnx::loadExternalData(&proto, modelDir ? *modelDir : std::string(), modelDir != nullptr));
  ConvertReport r;
  OSPREY_RETURN_IF_ERROR(onnx::importModel(&proto, out, &r.onnxNodes));
  OSPREY_RETURN_IF_ERROR(optimizeGraph(out->graph, options, &r));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = r;
  return Status::ok();
}

}  // namespace

Status convertTfliteBytes(const uint8_t* data, size_t size, Model* out, const ConvertOptions& options,
                          ConvertReport* report) {
  auto start = std::chrono::steady_clock::now();
  ConvertReport r;
  OSPREY_RETURN_IF_ERROR(tfl::importTfliteModel(data, size, out, &r.tfliteOps));
  OSPREY_RETURN_IF_ERROR(optimizeGraph(out->graph, options, &r));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = r;
  return Status::ok();
}

Status convertTfliteFile(const std::string& path, Model* out, const ConvertOptions& options, ConvertReport* report) {
  std::vector<uint8_t> bytes;
  OSPREY_RETURN_IF_ERROR(readFile(path, &bytes));
  return convertTfliteBytes(bytes.data(), bytes.size(), out, options, report).withContext(path);
}

bool isTfliteModel(const std::string& path, const uint8_t* head, size_t headSize) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".tflite" || tfl::hasTfliteIdentifier(head, headSize);
}

bool isTfliteFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  uint8_t head[8] = {};
  file.read(reinterpret_cast<char*>(head), sizeof(head));
  return isTfliteModel(path, head, static_cast<size_t>(std::max<std::streamsize>(file.gcount(), 0)));
}

Status convertOnnxBytes(const uint8_t* data, size_t size, Model* out, const ConvertOptions& options,
                        ConvertReport* report) {
  return convertParsed(data, size, nullptr, nullptr, out, options, report);
}

Status convertOnnxFileBytes(std::shared_ptr<const void> holder, const uint8_t* data, size_t size,
                            const std::string& modelDir, Model* out, const ConvertOptions& options,
                            ConvertReport* report) {
  return convertParsed(data, size, &holder, &modelDir, out, options, report);
}

Status convertOnnxFile(const std::string& path, Model* out, const ConvertOptions& options, ConvertReport* report) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  FileBytes file;
  OSPREY_RETURN_IF_ERROR(mapOrReadFile(path, &file));
  return convertOnnxFileBytes(std::move(file.holder), file.data, file.size, dir, out, options, report).withContext(path);
}

}  // namespace osprey
