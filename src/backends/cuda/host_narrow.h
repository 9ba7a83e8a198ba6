// Float32 -> Float16 / BFloat16 on the host, rounding to nearest even: uploads narrow while
// they fill pinned staging, so half the bytes cross the bus.
#pragma once
#include <cstddef>
#include <cstdint>

#include "osprey/types.h"

namespace osprey::cuda {

// `to` is Float16 or BFloat16.
void narrowFloats(uint16_t* dst, const float* src, size_t n, DataType to);

}  // namespace osprey::cuda
