// The CPU's channels-last (NHWC) layout for 4-D int8 / uint8 activations
// (CpuOptions::QuantizedLayout): executions that run on NHWC bytes themselves say so through
// supportsLayout (quantized convolutions, elementwise and lookup ops, QuantizeLinear and
// DequantizeLinear at the edges); every execution that touches such bytes is wrapped so that,
// where it has no such kernel, it converts them to NCHW and back around its own kernel and joins
// no layout group, which keeps one rare op (a reference kernel, a data movement) from holding a
// whole quantized network in NCHW. Only the convolutions favor the layout
// (Execution::favorsLayout): a group of bytes without one stays NCHW.
#pragma once
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace osprey {

std::unique_ptr<Execution> wrapForChannelsLastBytes(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs,
                                                    std::unique_ptr<Execution> execution);

}  // namespace osprey
