// QLinearConv on channels-last bytes (quantized_conv_nhwc.cpp).
#pragma once
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace osprey {

// The execution of a 2-D QLinearConv whose input and output are stored NHWC; null where it has
// none (other ops, other ranks, depthwise windows too large for exact float sums).
std::unique_ptr<Execution> createQuantizedConvNhwcExecution(CPUBackend* backend, const OpRef& op,
                                                            const std::vector<RuntimeTensor*>& inputs,
                                                            const std::vector<RuntimeTensor*>& outputs);

}  // namespace osprey
