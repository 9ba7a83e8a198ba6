#pragma once
#include "converter/onnx/onnx_proto.h"
#include "core/graph.h"

namespace osprey::onnx {

constexpr int64_t kMaxOnnxOpset = 28;

// Builds the Osprey graph of an ONNX model; no optimisation happens here. The bytes of the main
// graph's initializers move into the graph (proto keeps their names and shapes).
Status importModel(ModelProto* proto, Model* out, int* nodeCount);

}  // namespace osprey::onnx
