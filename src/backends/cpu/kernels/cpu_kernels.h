// Creators of the CPU backend's optimised executions (registered in ../cpu_kernels.cpp) and the
// helpers they share. Each returns null for a case it does not handle; the reference runs it.
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "ops/window.h"

namespace osprey {

// Input i as floats, or null where the op was given no such input (an optional bias, Conv's Z).
inline const float* optionalFloats(const std::vector<RuntimeTensor*>& inputs, size_t i) {
  return inputs.size() > i && inputs[i] ? reinterpret_cast<const float*>(inputs[i]->host()) : nullptr;
}

// Kernel paths tests may switch off, so that a test of one path keeps to it on shapes another
// path would take (tests/ops/cpu_kernels_test.cpp). Process-wide; every path is on otherwise.
struct CpuKernelChoices {
  bool winograd = true, directConv = true, tapConv = true, depthwiseLanes = true;
};
CpuKernelChoices& cpuKernelChoices();

std::unique_ptr<Execution> createConvExecution(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createDepthwiseConvExecution(CPUBackend* backend, const OpRef& op,
                                                        const std::vector<RuntimeTensor*>& inputs,
                                                        const std::vector<RuntimeTensor*>& outputs);
// Winograd F(2x2, 3x3) for the 3x3 stride-1 convolutions it suits (null otherwise, or when
// cpuKernelChoices().winograd is off); called by createConvExecution after its own checks.
std::unique_ptr<Execution> createWinogradConvExecution(CPUBackend* backend, const OpRef& op,
                                                       const std::vector<RuntimeTensor*>& inputs,
                                                       const std::vector<RuntimeTensor*>& outputs);
// A direct convolution for the few-input-channel convolutions it suits (a stem; null otherwise);
// called by createConvExecution after its own checks.
std::unique_ptr<Execution> createDirectConvExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs);
// Conv as an implicit GEMM over the window's taps (AVX-512 only; null when it does not apply);
// called by createConvExecution after its own checks.
std::unique_ptr<Execution> createTapConvExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs);
// A k x 1 convolution over maps one column wide run as 1 x k over maps one row high, a 1-D
// convolution as 2-D (null when neither applies); called by createConvExecution after its checks.
std::unique_ptr<Execution> createViewedConvExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createGemmExecution(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createMatMulExecution(CPUBackend* backend, const OpRef& op,
                                                 const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createMaxPoolExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createAveragePoolExecution(CPUBackend* backend, const OpRef& op,
                                                      const std::vector<RuntimeTensor*>& inputs,
                                                      const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createGlobalAveragePoolExecution(CPUBackend* backend, const OpRef& op,
                                                            const std::vector<RuntimeTensor*>& inputs,
                                                            const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createResizeExecution(CPUBackend* backend, const OpRef& op,
                                                 const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createReduceExecution(CPUBackend* backend, const OpRef& op,
                                                 const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs);
// LSTM, GRU and RNN (recurrent.cpp).
std::unique_ptr<Execution> createRecurrentExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createSigmoidExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createErfExecution(CPUBackend* backend, const OpRef& op,
                                              const std::vector<RuntimeTensor*>& inputs,
                                              const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createSoftmaxExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createGeluExecution(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createSwishExecution(CPUBackend* backend, const OpRef& op,
                                                const std::vector<RuntimeTensor*>& inputs,
                                                const std::vector<RuntimeTensor*>& outputs);
// Relu, LeakyRelu, HardSigmoid, HardSwish, Abs, Neg, Sqrt, Reciprocal, Floor, Ceil, Round, Exp,
// Tanh, Elu, Selu, Softplus and Mish on float32 (pointwise.h).
std::unique_ptr<Execution> createPointwiseExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createLayerNormExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createAttentionExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs);

// Float32 STATIC memory of `floats` for a Conv's weights packed as `key` (source, kind; the
// bytes are filled in), bound to `packed`. *fresh: just made and zero-filled, for the caller to
// pack; else the runtime's block packed the same way earlier (PackedWeights), to be used as it
// is. The out-of-memory error names `convName`.
Status acquirePackedWeights(Backend* backend, int64_t floats, const std::string& convName, PackKey key,
                            RuntimeTensor* packed, std::unique_ptr<MemObj>* memory, bool* fresh);
// The key of weights at `source` (and `extra`) packed by `what` for the given dimensions.
PackKey packKey(const void* source, const void* extra, const char* what, std::initializer_list<int64_t> dims);
// Float32 DYNAMIC scratch of `shape` for one execution, bound to `scratch` and held by `memory`
// until released; the out-of-memory error names what it is for and the op (a Conv, MatMulNBits).
Status acquireConvScratch(Backend* backend, const Shape& shape, const char* what, const std::string& convName,
                          RuntimeTensor* scratch, std::unique_ptr<MemObj>* memory);

// ys[p] = (sum of the `size` floats of plane p) / divisor for p < planes, in float partial sums;
// planes of at least 16384 floats in all are split over `pool`.
void planeSumsDivided(ThreadPool* pool, const float* xs, int64_t planes, int64_t size, float divisor, float* ys);

// col[c * kernelSize + tap][outPos] for `channels` planes of x, zero where a tap reads padding.
// phases (stride 2 only, else null): x's rows split into their even then odd columns, each half
// (W + 1) / 2 wide, which the copies read instead of gathering from x.
void im2col(const Window& g, const float* x, const float* phases, int64_t channels, float* col, ThreadPool* pool);
// The columns of output positions [p0, p1) only: col[c * kernelSize + tap][p - p0].
void im2colStripe(const Window& g, const float* x, const float* phases, int64_t channels, int64_t p0, int64_t p1,
                  float* col);

}  // namespace osprey
