#include "converter/tflite/tflite_reader.h"

#include <cstring>

namespace osprey::tfl {

bool hasTfliteIdentifier(const uint8_t* data, size_t size) {
  return size >= 8 && std::memcmp(data + 4, tflite::ModelIdentifier(), 4) == 0;
}

Status verifyTfliteModel(const uint8_t* data, size_t size, const tflite::Model** model) {
  if (size < 8) return Status::invalidModel("a TFLite model needs at least 8 bytes; this one has " + std::to_string(size));
  if (!hasTfliteIdentifier(data, size))
    return Status::invalidModel("not a TFLite model: bytes 4..8 are not the identifier \"TFL3\"");
  // FlatBuffers offsets are 32-bit: a verifier over more bytes would read past its own checks.
  // Files over 2 GB keep their big buffers after the FlatBuffer (Buffer.offset), so verifying
  // the first 2 GB covers the FlatBuffer itself.
  const size_t verified = std::min<size_t>(size, FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  flatbuffers::Verifier::Options options;
  options.max_tables = 100000000;
  flatbuffers::Verifier verifier(data, verified, options);
  if (!tflite::VerifyModelBuffer(verifier))
    return Status::invalidModel("the TFLite FlatBuffer failed verification (truncated or corrupt)");
  *model = tflite::GetModel(data);
  return Status::ok();
}

Status bufferBytes(const tflite::Model& model, uint32_t index, const uint8_t* file, size_t fileSize, BufferBytes* out) {
  *out = BufferBytes();
  const auto* buffers = model.buffers();
  if (!buffers || index >= buffers->size()) {
    if (index == 0) return Status::ok();  // writers may omit the empty sentinel
    return Status::invalidModel("buffer index " + std::to_string(index) + " is out of range (the model has " +
                                std::to_string(buffers ? buffers->size() : 0) + " buffers)");
  }
  const tflite::Buffer* b = buffers->Get(index);
  if (!b) return Status::invalidModel("buffer " + std::to_string(index) + " is null");
  if (b->offset() > 1) {
    const uint64_t offset = b->offset(), size = b->size();
    if (offset > fileSize || size > fileSize - offset)
      return Status::invalidModel("buffer " + std::to_string(index) + " lies at bytes [" + std::to_string(offset) + ", " +
                                  std::to_string(offset + size) + ") outside the " + std::to_string(fileSize) +
                                  "-byte file");
    out->data = file + offset;
    out->size = static_cast<size_t>(size);
    return Status::ok();
  }
  if (b->data()) {
    out->data = b->data()->data();
    out->size = b->data()->size();
  }
  return Status::ok();
}

DataType dataTypeOf(tflite::TensorType type) {
  switch (type) {
    case tflite::TensorType_FLOAT32: return DataType::Float32;
    case tflite::TensorType_FLOAT16: return DataType::Float16;
    case tflite::TensorType_FLOAT64: return DataType::Float64;
    case tflite::TensorType_INT32: return DataType::Int32;
    case tflite::TensorType_INT64: return DataType::Int64;
    case tflite::TensorType_INT16: return DataType::Int16;
    case tflite::TensorType_INT8: return DataType::Int8;
    case tflite::TensorType_UINT8: return DataType::UInt8;
    case tflite::TensorType_UINT16: return DataType::UInt16;
    case tflite::TensorType_UINT32: return DataType::UInt32;
    case tflite::TensorType_UINT64: return DataType::UInt64;
    case tflite::TensorType_BOOL: return DataType::Bool;
    default: return DataType::Undefined;
  }
}

std::string tensorTypeName(tflite::TensorType type) {
  if (type >= tflite::TensorType_MIN && type <= tflite::TensorType_MAX) return tflite::EnumNameTensorType(type);
  return "type " + std::to_string(static_cast<int>(type));
}

tflite::BuiltinOperator builtinCodeOf(const tflite::OperatorCode& code) {
  return static_cast<tflite::BuiltinOperator>(
      std::max<int32_t>(static_cast<int32_t>(code.builtin_code()), code.deprecated_builtin_code()));
}

std::string builtinName(tflite::BuiltinOperator op) {
  if (op >= tflite::BuiltinOperator_MIN && op <= tflite::BuiltinOperator_MAX) {
    const char* name = tflite::EnumNameBuiltinOperator(op);
    if (name && *name) return name;
  }
  return "builtin " + std::to_string(static_cast<int>(op));
}

}  // namespace osprey::tfl
