// ONNX -> Osprey conversion: import every node, then run the optimisation passes.
#pragma once
#include <string>
#include <vector>

#include "core/graph.h"

namespace osprey {

struct ConvertOptions {
  bool foldConstants = true;
  bool fuse = true;  // Conv+BatchNorm folding, Conv/Gemm+activation fusion
  // MatMul + bias Add into a 3-input MatMul, and Conv + residual Add into a 4-input Conv (with
  // `fuse`): the bias and the residual are added in the kernels' epilogues.
  bool fuseMatMulBias = true;
  bool fuseConvResidual = true;
  // DequantizeLinear -> op -> QuantizeLinear patterns of QDQ models into integer ops
  // (QLinearConv, QGemm, ...; with `fuse`); off, they run in float between the Q/DQ ops.
  bool fuseQuantized = true;
};

struct ConvertReport {
  int onnxNodes = 0;
  int ospreyOps = 0;
  int foldedOps = 0;
  int removedOps = 0;  // Identity, Dropout, dead code
  int fusedOps = 0;
  double seconds = 0;
};

// The passes run on an imported graph (what the convert functions do after import), with their
// counts added to `report`; tests run them on graphs they build.
Status optimizeGraph(Graph& g, const ConvertOptions& options = {}, ConvertReport* report = nullptr);

Status convertOnnxBytes(const uint8_t* data, size_t size, Model* out, const ConvertOptions& options = {},
                        ConvertReport* report = nullptr);
// The bytes of a model file that lives in `modelDir`, where its external data files are found;
// they are freed once parsed, so that the file and the converted weights are not held together.
Status convertOnnxFileBytes(std::vector<uint8_t>&& bytes, const std::string& modelDir, Model* out,
                            const ConvertOptions& options = {}, ConvertReport* report = nullptr);
Status convertOnnxFile(const std::string& path, Model* out, const ConvertOptions& options = {},
                       ConvertReport* report = nullptr);

}  // namespace osprey
