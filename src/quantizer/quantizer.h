// Post-training quantization (`osprey quantize`, Python osprey.quantize): a float model and a
// few calibration inputs in, a model whose convolutions and matrix products run as integer ops
// out (QLinearConv, QLinearMatMul, QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul, and the
// byte-level ops between them), with a per-layer report of what quantization cost.
//
// Static quantization observes the ranges of the float activations on the calibration inputs
// (calibrate.cpp), then rewrites the graph (quantize_graph.cpp): uint8 activations with a zero
// point, int8 weights symmetric per output channel (or per tensor), int32 biases; ops that have
// no integer kernel stay float behind QuantizeLinear / DequantizeLinear. Dynamic quantization
// needs no calibration: MatMuls with constant weights become DynamicQuantizeMatMul, which
// quantizes each activation at run time (for transformers). Weight-only quantization stores
// MatMul weights as 4- or 8-bit blocks (MatMulNBits) and leaves the activations float.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "osprey/tensor.h"

namespace osprey {

enum class CalibrationMethod { MinMax, Entropy, Percentile };

struct QuantizeOptions {
  CalibrationMethod method = CalibrationMethod::MinMax;
  double percentile = 99.999;  // Percentile: the share of values kept inside the range
  bool perChannel = true;      // weights: one scale per output channel (else per tensor)
  bool dynamic = false;
  // Weight-only (4 or 8; 0: off): MatMul / Gemm weights to MatMulNBits blocks of `blockSize`
  // along K, activations left in float; no calibration.
  int weightBits = 0;
  int blockSize = 32;
  // MatMulNBits' accuracy_level (ONNX Runtime's): 4 lets 4-bit weights multiply int8-quantized
  // activations (ops/matmul_nbits.h), 0 keeps the activations float32.
  int accuracyLevel = 4;
  // Op types ("Conv", "MatMul", "Gemm", "Add" ...) or node names left in float.
  std::vector<std::string> exclude;
  int threads = 0;  // calibration runs (0: the machine's cores)
  // Called after each calibration input (done, total) of each pass.
  std::function<void(const char* pass, int done, int total)> progress;
};

// How one quantized tensor compares with the float model's (cosine similarity and largest
// absolute difference of its dequantized values), on the first calibration input.
struct QuantizedTensorReport {
  std::string name, op;
  double cosine = 1.0, maxError = 0.0;
};

// A byte tensor of the quantized model and the float tensor it stands for.
struct QuantizedTensorMapping {
  std::string byteName, floatName;
  float scale = 1.f;
  uint8_t zeroPoint = 0;
};

struct QuantizeReport {
  int quantizedOps = 0, floatOps = 0;
  std::vector<QuantizedTensorMapping> mapping;
  std::map<std::string, int> quantizedByType;  // op type of the float model -> count
  std::vector<QuantizedTensorReport> tensors;   // in graph order
  std::vector<QuantizedTensorReport> outputs;   // the model's outputs
};

using FeedDict = std::map<std::string, Tensor>;

// Quantizes `model` (a float model as the converter makes it) into *out. Static quantization
// needs at least one calibration input; dynamic ignores them. The report's comparison runs
// both models on calibration[0] (when given).
Status quantizeModel(const Model& model, const std::vector<FeedDict>& calibration, const QuantizeOptions& options,
                     Model* out, QuantizeReport* report);

// --- the steps, for tests ---

// The range of each float tensor the calibration runs produced, by tensor name.
struct TensorRange {
  float lo = 0.f, hi = 0.f;
};
Status calibrateRanges(const Model& model, const std::vector<FeedDict>& calibration, const QuantizeOptions& options,
                       std::map<std::string, TensorRange>* ranges);

// The graph rewrite given the ranges; counts what it quantized into report (may be null).
Status quantizeGraph(const Graph& in, const std::map<std::string, TensorRange>& ranges, const QuantizeOptions& options,
                     Graph* out, QuantizeReport* report);

// The weight-only rewrite (options.weightBits); reports each weight's cosine and largest error.
Status quantizeWeightsOnly(const Graph& in, const QuantizeOptions& options, Graph* out, QuantizeReport* report);

// uint8 scale and zero point of [lo, hi] widened to hold 0 (ONNX Runtime's asymmetric scheme).
void activationParameters(TensorRange range, float* scale, uint8_t* zeroPoint);

}  // namespace osprey
