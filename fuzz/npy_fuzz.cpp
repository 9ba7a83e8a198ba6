// .npy bytes -> readNpyBytes. What it accepts must be exactly as large as its header says.
#include <cstdlib>

#include "core/npy.h"
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  osprey::NpyArray array;
  if (!osprey::readNpyBytes(data, size, &array)) return 0;
  const int64_t elements = osprey::shapeElements(array.shape);
  if (elements < 0 || array.data.size() != static_cast<size_t>(elements) * osprey::dataTypeSize(array.dtype))
    std::abort();
  return 0;
}
