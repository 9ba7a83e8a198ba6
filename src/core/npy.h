// NumPy .npy files: how tests, tools and users hand tensors to Osprey and get them back.
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 only if the header cannot fit).
// Little-endian numeric and bool dtypes, C order. Corrupt files give a Status, never a crash.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "osprey/status.h"
#include "osprey/types.h"

namespace osprey {

struct NpyArray {
  DataType dtype = DataType::Undefined;
  std::vector<int64_t> shape;  // empty for a 0-d (scalar) array
  std::vector<uint8_t> data;   // packed little-endian elements, C order
};

Status readNpy(const std::string& path, NpyArray* out);
Status readNpyBytes(const uint8_t* bytes, size_t size, NpyArray* out);
// `data` holds shapeElements(shape) packed elements of `dtype`. BFloat16 and String have no
// NumPy dtype and are refused.
Status writeNpy(const std::string& path, DataType dtype, const std::vector<int64_t>& shape, const void* data);

}  // namespace osprey
