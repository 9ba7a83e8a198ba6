// Reads initializers stored outside the .onnx file (ONNX external data) into the parsed model.
#pragma once
#include <string>

#include "converter/onnx/onnx_proto.h"

namespace osprey::onnx {

// Side files are looked up relative to `baseDir` (the model file's folder; "" means the current
// folder when `fromFile`). A model given as bytes (`fromFile` false) cannot name side files.
Status loadExternalData(ModelProto* model, const std::string& baseDir, bool fromFile);

}  // namespace osprey::onnx
