// Files around quantization (quantizer_io.cpp).
#pragma once
#include <string>
#include <vector>

#include "quantizer/quantizer.h"

namespace osprey {

// An ONNX model converted for quantization with `options` (without the fusions the integer ops
// cannot take), or a .osp model as it is.
Status loadFloatModel(const std::string& path, const QuantizeOptions& options, Model* out);
Status saveModelFile(const Model& model, const std::string& path);
// The samples of a calibration folder in name order: DIR/*.npy for a model with one input, or
// DIR/<sample>/<input name>.npy for any model.
Status readCalibrationFolder(const std::string& dir, const std::vector<std::string>& inputNames,
                             std::vector<FeedDict>* out);

}  // namespace osprey
