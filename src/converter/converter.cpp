#include "converter/converter.h"

#include <chrono>

#include "converter/onnx/onnx_import.h"
#include "converter/passes/passes.h"
#include "core/model_io.h"

namespace osprey {

Status convertOnnxBytes(const uint8_t* data, size_t size, Model* out, const ConvertOptions& options,
                        ConvertReport* report) {
  auto start = std::chrono::steady_clock::now();
  onnx::ModelProto proto;
  OSPREY_RETURN_IF_ERROR(onnx::parseModel(data, size, &proto));
  ConvertReport r;
  OSPREY_RETURN_IF_ERROR(onnx::importModel(proto, out, &r.onnxNodes));
  Graph& g = out->graph;
  r.removedOps += passes::removeIdentities(g);
  if (options.foldConstants) OSPREY_RETURN_IF_ERROR(passes::foldConstants(g, &r.foldedOps));
  if (options.fuse) {
    r.fusedOps += passes::foldBatchNormIntoConv(g);
    r.fusedOps += passes::fuseActivations(g);
  }
  r.removedOps += passes::removeDeadCode(g);
  passes::compactTensors(g);
  OSPREY_RETURN_IF_ERROR(g.validate());
  OSPREY_RETURN_IF_ERROR(checkOpArity(g));
  r.ospreyOps = static_cast<int>(g.nodes.size());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = r;
  return Status::ok();
}

Status convertOnnxFile(const std::string& path, Model* out, const ConvertOptions& options, ConvertReport* report) {
  std::vector<uint8_t> bytes;
  OSPREY_RETURN_IF_ERROR(readFile(path, &bytes));
  return convertOnnxBytes(bytes.data(), bytes.size(), out, options, report).withContext(path);
}

}  // namespace osprey
