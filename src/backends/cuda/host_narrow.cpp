#include "backends/cuda/host_narrow.h"

#include "core/dtype.h"
#include "core/half_arrays.h"

namespace osprey::cuda {

void narrowFloats(uint16_t* dst, const float* src, size_t n, DataType to) {
  if (to == DataType::Float16) return floatsToHalves(src, dst, n);
  for (size_t i = 0; i < n; ++i) dst[i] = floatToBfloat16(src[i]);
}

}  // namespace osprey::cuda
