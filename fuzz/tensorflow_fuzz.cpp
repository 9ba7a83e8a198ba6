// TensorFlow GraphDef bytes -> wire decoder and TensorFlow importer -> passes -> Interpreter ->
// Session -> one run.
#include "converter/converter.h"
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  auto model = std::make_shared<osprey::Model>();
  if (!osprey::convertTensorflowBytes(data, size, "fuzz.pb", model.get())) return 0;
  std::shared_ptr<osprey::Interpreter> interp;
  if (osprey::Interpreter::fromModel(model, &interp)) osprey::fuzz::runWithInputsFrom(*interp, data, size);
  return 0;
}
