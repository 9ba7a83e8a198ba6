// ONNX TensorProto bytes (`osprey run --input x.pb`) -> parseTensor. What it accepts must hold
// exactly the elements its dims say, so that the CLI's copy into a Tensor stays in bounds.
#include <cstdlib>

#include "converter/onnx/onnx_proto.h"
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  osprey::onnx::TensorProto tensor;
  if (!osprey::onnx::parseTensor(data, size, &tensor)) return 0;
  if (tensor.external || tensor.dtype == osprey::DataType::Undefined) return 0;
  const int64_t elements = tensor.elementCount();
  if (elements < 0) std::abort();
  const size_t want = tensor.dtype == osprey::DataType::String ? 0 : static_cast<size_t>(elements) * osprey::dataTypeSize(tensor.dtype);
  const size_t strings = tensor.dtype == osprey::DataType::String ? static_cast<size_t>(elements) : 0;
  if (tensor.data.size() != want || tensor.strings.size() != strings) std::abort();
  return 0;
}
