// Caffe bytes -> prototxt parser, caffemodel reader and layer importers -> Interpreter -> Session
// -> one run. The input holds both files: a 2-byte little-endian length, that many bytes of
// prototxt text, then the caffemodel.
#include <string>

#include "converter/converter.h"
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t textSize = std::min<size_t>(size - 2, static_cast<size_t>(data[0] | data[1] << 8));
  const std::string text(reinterpret_cast<const char*>(data + 2), textSize);
  const uint8_t* weights = data + 2 + textSize;
  auto model = std::make_shared<osprey::Model>();
  if (!osprey::convertCaffeBytes(text, "fuzz.prototxt", weights, size - 2 - textSize, "fuzz.caffemodel", model.get()))
    return 0;
  std::shared_ptr<osprey::Interpreter> interp;
  if (osprey::Interpreter::fromModel(model, &interp)) osprey::fuzz::runWithInputsFrom(*interp, data, size);
  return 0;
}
