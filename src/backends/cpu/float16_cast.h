// Cast between float16 and float32 on the CPU: the edges of a float16 model that a session runs
// widened to float32 (runtime/float16_widening.h), through core/half_arrays.h. F16C converts 8
// elements per instruction; the reference Cast calls a scalar conversion per element, which took
// as long as a 64-channel 3x3 convolution on the same activation.
#pragma once
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace osprey {

// Null unless the op is a Cast from float16 to float32 or from float32 to float16.
std::unique_ptr<Execution> createFloat16CastExecution(CPUBackend* backend, const OpRef& op,
                                                      const std::vector<RuntimeTensor*>& inputs,
                                                      const std::vector<RuntimeTensor*>& outputs);

}  // namespace osprey
