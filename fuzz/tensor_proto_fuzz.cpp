// ONNX TensorProto bytes (`osprey run --input x.pb`) -> parseTensor, and the same bytes as a
// SequenceProto and an OptionalProto (the test data of sequence and optional values) -> parseValue.
// What they accept must hold exactly the elements its dims say, so that a copy into a Tensor
// stays in bounds.
#include <cstdlib>

#include "converter/onnx/onnx_proto.h"
#include "fuzz_run.h"

namespace {

void checkTensor(const osprey::onnx::TensorProto& tensor) {
  if (tensor.external || tensor.dtype == osprey::DataType::Undefined) return;
  const int64_t elements = tensor.elementCount();
  if (elements < 0) std::abort();
  const size_t want = tensor.dtype == osprey::DataType::String ? 0 : static_cast<size_t>(elements) * osprey::dataTypeSize(tensor.dtype);
  const size_t strings = tensor.dtype == osprey::DataType::String ? static_cast<size_t>(elements) : 0;
  if (tensor.data.size() != want || tensor.strings.size() != strings) std::abort();
}

}  // namespace

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  osprey::onnx::TensorProto tensor;
  if (osprey::onnx::parseTensor(data, size, &tensor)) checkTensor(tensor);
  for (int kind : {osprey::onnx::ValueProto::kSequence, osprey::onnx::ValueProto::kOptional}) {
    osprey::onnx::ValueProto value;
    if (!osprey::onnx::parseValue(data, size, kind, &value)) continue;
    // An optional holds one tensor, a sequence, or nothing.
    if (kind == osprey::onnx::ValueProto::kOptional && !value.isSequence && value.tensors.size() != (value.hasValue ? 1u : 0u))
      std::abort();
    for (const auto& t : value.tensors) checkTensor(t);
  }
  return 0;
}
