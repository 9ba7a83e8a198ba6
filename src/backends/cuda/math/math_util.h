// Translation from Osprey's types to the plain kernel types, and small helpers the math
// executions share.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/cuda/math/kernel_types.h"
#include "ops/activation.h"
#include "osprey/types.h"

namespace osprey::cuda_math {

// Float32 / Float16 / BFloat16; false for any other dtype.
bool toElementType(DataType dtype, ElementType* out);
DeviceActivation toDeviceActivation(const FusedActivation& act);

// Host-side conversion of float weights into the storage dtype (Float32, Float16, BFloat16),
// optionally from KCRS into KRSC order (channels last) for NHWC convolution.
std::vector<uint8_t> packFloats(const float* src, int64_t count, DataType dtype);
// KCRS -> KRSC, each filter's channels zero-padded to paddedC (no padding when it is <= c).
std::vector<float> filterToChannelsLast(const float* kcrs, int64_t k, int64_t c, int64_t spatial, int64_t paddedC = 0);

}  // namespace osprey::cuda_math
