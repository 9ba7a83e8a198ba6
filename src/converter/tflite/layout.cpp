#include "converter/tflite/layout.h"

#include <cstring>

namespace osprey::tfl {

Shape permuteShape(const Shape& shape, const std::vector<int64_t>& perm) {
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = shape[static_cast<size_t>(perm[i])];
  return out;
}

void permuteBytes(const uint8_t* data, const Shape& shape, size_t elementBytes, const std::vector<int64_t>& perm,
                  std::vector<uint8_t>* out) {
  const size_t rank = shape.size();
  const int64_t count = shapeElements(shape);
  out->resize(static_cast<size_t>(count) * elementBytes);
  if (count == 0) return;
  std::vector<int64_t> srcStrides(rank, 1);
  for (size_t d = rank; d-- > 1;) srcStrides[d - 1] = srcStrides[d] * shape[d];
  const Shape dstShape = permuteShape(shape, perm);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src += index[d] * srcStrides[static_cast<size_t>(perm[d])];
    std::memcpy(out->data() + i * elementBytes, data + src * elementBytes, elementBytes);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dstShape[d]) break;
      index[d] = 0;
    }
  }
}

bool normalizeTfliteAxis(int64_t axis, int rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

bool dropKeepsTfliteOrder(const std::vector<int64_t>& removed) {
  bool drop[4] = {false, false, false, false};
  for (int64_t a : removed) drop[a] = true;
  // Held NCHW the kept dimensions read N, C, H, W; in TFLite's order N, H, W, C. They agree
  // unless C is kept together with H or W.
  return drop[3] || (drop[1] && drop[2]);
}

}  // namespace osprey::tfl
