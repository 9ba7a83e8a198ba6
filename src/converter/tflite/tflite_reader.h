// Reading a .tflite FlatBuffer: verification, buffers (inline or past the FlatBuffer in files
// over 2 GB) and element types. Everything read from the file is checked here or by the caller.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "tflite_generated.h"

namespace osprey::tfl {

// True when `data` carries the TFLite file identifier "TFL3" at bytes 4..8.
bool hasTfliteIdentifier(const uint8_t* data, size_t size);

// Verifies the whole FlatBuffer (every offset, vector and string) and returns its root. A
// buffer that is not a valid TFLite model is an error, never a crash.
Status verifyTfliteModel(const uint8_t* data, size_t size, const tflite::Model** model);

// The bytes of buffer `index` (empty for the sentinel and for tensors without data). External
// buffers (Buffer.offset > 1) are read from `file`, the whole file the model came from.
struct BufferBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
};
Status bufferBytes(const tflite::Model& model, uint32_t index, const uint8_t* file, size_t fileSize, BufferBytes* out);

// Osprey's element type for a TFLite one; Undefined for types Osprey does not import.
DataType dataTypeOf(tflite::TensorType type);
// "FLOAT32", "INT8", ... ("type N" for values the schema does not name).
std::string tensorTypeName(tflite::TensorType type);
// The op code's builtin, from builtin_code or, in files of older writers, deprecated_builtin_code.
tflite::BuiltinOperator builtinCodeOf(const tflite::OperatorCode& code);
// "CONV_2D", or "builtin N" for codes this schema does not name.
std::string builtinName(tflite::BuiltinOperator op);

}  // namespace osprey::tfl
