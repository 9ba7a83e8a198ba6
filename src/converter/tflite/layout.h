// Moving constant data between TFLite's layouts and Osprey's at import, so that weights and
// broadcast constants cost nothing at run time, and remapping axes of values held NCHW.
#pragma once
#include <cstdint>
#include <vector>

#include "osprey/types.h"

namespace osprey::tfl {

// out[i] = shape[perm[i]].
Shape permuteShape(const Shape& shape, const std::vector<int64_t>& perm);
// Row-major `data` of `shape` transposed by `perm` (as ONNX Transpose does) into `out`.
void permuteBytes(const uint8_t* data, const Shape& shape, size_t elementBytes, const std::vector<int64_t>& perm,
                  std::vector<uint8_t>* out);
// A TFLite axis (negative counts from the end) of a rank-`rank` tensor, normalised; false when
// out of range.
bool normalizeTfliteAxis(int64_t axis, int rank, int64_t* out);
// Whether dropping `removed` (TFLite axes of a 4-D tensor held NCHW) leaves the remaining
// dimensions in TFLite's order, so that a reduction without keep_dims needs no Transpose.
bool dropKeepsTfliteOrder(const std::vector<int64_t>& removed);

}  // namespace osprey::tfl
