// ONNX, TFLite and Caffe -> Osprey conversion: import every node, then run the optimisation passes.
#pragma once
#include <map>
#include <memory>
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
  // Shapes of inputs the model leaves unknown, by input name (TensorFlow Placeholders); -1
  // keeps a dimension dynamic.
  std::map<std::string, Shape> inputShapes;
  // The signature of a TensorFlow SavedModel to convert; empty: serving_default.
  std::string signature;
};

struct ConvertReport {
  int onnxNodes = 0;
  int tfliteOps = 0;  // operators of a TFLite model's main subgraph
  int caffeLayers = 0;
  int tensorflowNodes = 0;  // nodes of a TensorFlow GraphDef
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
// The bytes of a model file that lives in `modelDir`, where its external data files are found.
// `holder` owns them (a MappedFile, a vector) and is released once they are parsed, so that the
// file and the converted weights are not held together.
Status convertOnnxFileBytes(std::shared_ptr<const void> holder, const uint8_t* data, size_t size,
                            const std::string& modelDir, Model* out, const ConvertOptions& options = {},
                            ConvertReport* report = nullptr);
Status convertOnnxFile(const std::string& path, Model* out, const ConvertOptions& options = {},
                       ConvertReport* report = nullptr);

// TFLite models (src/converter/tflite/). The bytes are the whole file: buffers of models over
// 2 GB lie after the FlatBuffer.
Status convertTfliteBytes(const uint8_t* data, size_t size, Model* out, const ConvertOptions& options = {},
                          ConvertReport* report = nullptr);
Status convertTfliteFile(const std::string& path, Model* out, const ConvertOptions& options = {},
                         ConvertReport* report = nullptr);
// Whether a model file is TFLite: the identifier "TFL3" at bytes 4..8 of `head` (the file's
// first bytes), or the .tflite extension.
bool isTfliteModel(const std::string& path, const uint8_t* head, size_t headSize);
// The same for a file on disk (false when it cannot be read: the converter then says why).
bool isTfliteFile(const std::string& path);

// Caffe models (src/converter/caffe/): a deploy prototxt and its caffemodel weights (empty: a
// net without weights). Layers imported count as report->caffeLayers.
Status convertCaffeFiles(const std::string& prototxt, const std::string& caffemodel, Model* out,
                         const ConvertOptions& options = {}, ConvertReport* report = nullptr);
// The same from the two files' contents (weights null: none), named in errors by their files.
Status convertCaffeBytes(const std::string& prototxtText, const std::string& prototxtName, const uint8_t* weights,
                         size_t weightsSize, const std::string& weightsName, Model* out,
                         const ConvertOptions& options = {}, ConvertReport* report = nullptr);
// Whether `path` names a Caffe network description (.prototxt).
bool isCaffePrototxt(const std::string& path);

// TensorFlow models (src/converter/tensorflow/): a frozen GraphDef (.pb, weights as Const
// nodes). `path` may also name a SavedModel directory, which is refused with a message saying
// how to freeze it (SavedModels are not imported yet).
Status convertTensorflowFile(const std::string& path, Model* out, const ConvertOptions& options = {},
                             ConvertReport* report = nullptr);
// The bytes of a serialized GraphDef, named `source` in errors.
Status convertTensorflowBytes(const uint8_t* data, size_t size, const std::string& source, Model* out,
                              const ConvertOptions& options = {}, ConvertReport* report = nullptr);
// Whether `path` names a TensorFlow model: a .pb file (not an ONNX model saved as .pb), or a
// directory holding saved_model.pb.
bool isTensorflowModel(const std::string& path);

}  // namespace osprey
