// The NC8HW8 activation layout of the CPU backend ([N][C/8][H][W][8], channels rounded up to 8,
// padding channels zero): the executions that run in it and the wrapper that lets the pipeline
// choose it (docs/cpu.md, docs/design.md "Layouts per tensor group"). Every execution here
// writes zeros into the padding channels of its outputs, and the convolutions pack zero weights
// for the padding channels of their inputs, so padding never reaches a real channel.
#pragma once
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"

namespace osprey {

// Whether the CPU backend keeps 4-D float32 activations in NC8HW8 (CpuOptions::layout).
bool cpuPackedLayoutWanted(const BackendConfig& config);

// Wraps the NCHW execution `nchw` of an op so that it also runs when the pipeline stores its
// 4-D float activations in NC8HW8: natively where an execution below handles the case, else by
// converting to NCHW around `nchw` where its tensors are pooled vectors ([N, C, 1, 1]); any
// other op keeps `nchw`, which refuses NC8HW8, so its group of tensors stays NCHW.
std::unique_ptr<Execution> wrapForPackedLayout(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs,
                                               std::unique_ptr<Execution> nchw);

// Native NC8HW8 executions: null for a case they do not handle. They support NC8HW8 only; the
// wrapper runs the NCHW execution otherwise.
std::unique_ptr<Execution> createNc8hw8ConvExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createNc8hw8PoolExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs);
// Elementwise unary and binary ops on packed data, around their NCHW execution `nchw`, which
// runs on 5-D views [N, C/8, H, W, 8] of the packed tensors. Null (and `nchw` untouched) for
// operands whose broadcast the packing would break.
std::unique_ptr<Execution> createNc8hw8ElementwiseExecution(CPUBackend* backend, const OpRef& op,
                                                            const std::vector<RuntimeTensor*>& inputs,
                                                            const std::vector<RuntimeTensor*>& outputs,
                                                            std::unique_ptr<Execution>* nchw);

// NCHW <-> NC8HW8 for float32 [N, C, spatial] (packing zero-fills the padding channels).
void packNc8hw8(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst);
void unpackNc8hw8(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst);
// Depthwise weights ([channels][taps], one input channel each) as [block of `lanes`][tap][lanes],
// then the bias (may be null: zeros) as [block][lanes]; every float of the
// (channels + lanes - 1) / lanes * (taps + 1) * lanes is written, zero past the last channel. The
// layout of the depthwise kernels on channels in lanes (8: NC8HW8's row kernel, 16: AVX-512's).
void packLaneDepthwiseWeights(const float* w, const float* bias, int64_t channels, int64_t taps, int64_t lanes,
                              float* dst);
// Zeros the padding channels (c % 8 .. 7 of the last block) of a packed float32 tensor.
void zeroNc8hw8Padding(float* data, int64_t n, int64_t c, int64_t spatial);

}  // namespace osprey
