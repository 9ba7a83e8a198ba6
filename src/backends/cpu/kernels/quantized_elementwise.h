// CPU executions of the byte-typed elementwise ops of quantized CNNs: QLinearAdd and QLinearMul
// (quantized_elementwise.cpp, vector loops in quantized_elementwise_avx2.cpp) and MaxPool on
// uint8 / int8 (quantized_maxpool.cpp). Results equal the reference kernels' bit for bit
// (src/ops/qlinear_contrib.cpp, src/ops/pool.cpp); each creator returns null for a case it does
// not handle, and the reference runs it.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/byte_lookup.h"

namespace osprey {

std::unique_ptr<Execution> createQuantizedBinaryExecution(CPUBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs);
// QLinearSigmoid and QLinearLeakyRelu through their 256-code table.
std::unique_ptr<Execution> createQuantizedLookupExecution(CPUBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs);
// QLinearGlobalAveragePool (channels_last 0) over NCHW planes or channels-last rows.
std::unique_ptr<Execution> createQuantizedGlobalPoolExecution(CPUBackend* backend, const OpRef& op,
                                                              const std::vector<RuntimeTensor*>& inputs,
                                                              const std::vector<RuntimeTensor*>& outputs);
// y[i] = table[x[i]] for n bytes through `lookup`, in pieces over the pool when n is large.
void lookupBytes(ThreadPool* pool, ByteLookupKernel lookup, const uint8_t* table, const uint8_t* x, int64_t n,
                 uint8_t* y);
// ByteLookup: y = table[byte of x], any layout.
std::unique_ptr<Execution> createByteTableExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs);
// Cast from int8 / uint8 to float32, in either layout of the bytes (a bridge from channels-last).
std::unique_ptr<Execution> createByteCastExecution(CPUBackend* backend, const OpRef& op,
                                                   const std::vector<RuntimeTensor*>& inputs,
                                                   const std::vector<RuntimeTensor*>& outputs);
// MaxPool of any dtype: the float execution (pool.cpp) for float32, the byte one for uint8/int8.
std::unique_ptr<Execution> createMaxPoolAnyExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs);

// The loops of QLinearAdd and QLinearMul over one run of n elements, for one byte type (the
// pointers are the tensors' bytes; the loop knows whether they are int8). Each stores
// saturate(cvtps(v)): v rounded half to even, NaN and values beyond int32 giving the type's minimum.
struct QuantizedBinaryLoops {
  // v = fma(a[i], ratioA, fma(b[i], ratioB, fixed)): both operands vary along the run.
  void (*add)(const uint8_t* a, const uint8_t* b, int64_t n, float ratioA, float ratioB, float fixed, uint8_t* y);
  // v = fma(x[i], ratio, constant): the other operand repeats along the run, folded into constant.
  void (*addRepeated)(const uint8_t* x, int64_t n, float ratio, float constant, uint8_t* y);
  // v = float((a[i] - zeroA) * (b[i] - zeroB)) * ratio + zeroC, rounded after each step.
  void (*mul)(const uint8_t* a, const uint8_t* b, int64_t n, int32_t zeroA, int32_t zeroB, float ratio, float zeroC,
              uint8_t* y);
  // The same with the other operand's (b - zeroB) repeated as `factor`.
  void (*mulRepeated)(const uint8_t* x, int64_t n, int32_t zeroX, int32_t factor, float ratio, float zeroC,
                      uint8_t* y);
  // LiteRT's integer Add (ops/fixed_point_add.h): y = saturate(((bias + a[i] * mA + b[i] * mB) >>
  // shift) + zeroC), b[i] * mB left out when b is null (folded into bias). The sum is computed
  // modulo 2^32: its true value lies within int32 (fixed_point_add.h bounds it below 1.5 * 2^30).
  void (*fixedPointAdd)(const uint8_t* a, const uint8_t* b, int64_t n, int32_t bias, int32_t mA, int32_t mB, int shift,
                        int32_t zeroC, uint8_t* y);
};
QuantizedBinaryLoops quantizedBinaryLoopsScalar(bool isSigned);
QuantizedBinaryLoops quantizedBinaryLoopsAvx2(bool isSigned);

}  // namespace osprey
