// What the CPU's quantized executions (quantized_matmul.cpp, quantized_conv.cpp) share: the
// weights packed once for the integer GEMM (qgemm.h) with the column data its output stage
// needs, byte scratch, and the moves of int8 and uint8 operands into the GEMM's types.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/qgemm.h"

namespace osprey {

inline bool isByteType(const RuntimeTensor* t) {
  return t && (t->dtype == DataType::UInt8 || t->dtype == DataType::Int8);
}
// A uint8 operand's zero point as the GEMM sees an int8 one (b ^ 0x80 == b - 128), and an int8
// activation's as a uint8 one (a ^ 0x80 == a + 128).
inline int32_t weightZeroPoint(DataType dtype, int32_t zp) { return dtype == DataType::UInt8 ? zp - 128 : zp; }
inline int32_t activationZeroPoint(DataType dtype, int32_t zp) { return dtype == DataType::Int8 ? zp + 128 : zp; }
// Element i of a byte tensor (uint8 or int8) as int32, 0 for a missing tensor.
int32_t byteAt(const RuntimeTensor* t, int64_t i);
// Input i of an op, or null where the op has no such input (i < 0) or it was omitted.
inline const RuntimeTensor* inputAt(const std::vector<RuntimeTensor*>& inputs, int i) {
  return i >= 0 && static_cast<size_t>(i) < inputs.size() ? inputs[i] : nullptr;
}
inline bool isFloatScalar(const RuntimeTensor* t) {
  return t && t->dtype == DataType::Float32 && t->elements() == 1;
}
// A float32 or byte input with one value or `count` (1-D or [1, count]).
inline bool hasOneOr(const RuntimeTensor* t, int64_t count) {
  return t && (t->elements() == 1 || t->elements() == count) && t->shape.size() <= 2;
}

// Constant weights packed once into STATIC memory (shared by the runtime's sessions like the
// float weights) for the integer GEMM, as its B (a MatMul's [K x N]: one output column per n) or
// as its A (a convolution's [outChannels x K]: one output row per channel), with their zero
// points and sums in the GEMM's int8 type.
class QuantizedWeights {
 public:
  // Element (k, n) at w[k * kStride + n * nStride], n counting output columns (B) or rows (A);
  // dtype int8 or uint8; zeroPoints of that dtype with one value or N (null: 0). `source` (the
  // constant w was made from) and `layout` name the packing in the runtime's cache.
  Status pack(Backend* backend, const std::string& opName, bool asRows, const uint8_t* w, DataType dtype,
              const void* source, const char* layout, int64_t kStride, int64_t nStride, int64_t K, int64_t N,
              const RuntimeTensor* zeroPoints);
  // The same for weights that are not constants: packed into `dst` (packedBytes) at each run.
  void packInto(bool asRows, const uint8_t* w, DataType dtype, int64_t kStride, int64_t nStride, int64_t K, int64_t N,
                const RuntimeTensor* zeroPoints, void* dst);
  static size_t packedBytes(bool asRows, int64_t K, int64_t N);
  const void* data() const { return data_; }
  const int32_t* sums() const { return sums_.data(); }
  const int32_t* zeroPoints() const { return zeroPoints_.data(); }
  // Quads with a non-zero weight zero point: the output stage needs the activations' sums.
  bool needsActivationSums() const { return needsActivationSums_; }

 private:
  // Zero points and sums; the operand bytes as qgemmPack* take them.
  QGemmOperandBytes prepare(const uint8_t* w, DataType dtype, int64_t kStride, int64_t nStride, int64_t K, int64_t N,
                            const RuntimeTensor* zeroPoints);
  void fill(bool asRows, const uint8_t* w, const QGemmOperandBytes& bytes, int64_t kStride, int64_t nStride, int64_t K,
            int64_t N, void* dst) const;

  RuntimeTensor tensor_;
  std::unique_ptr<MemObj> mem_;
  const void* data_ = nullptr;
  std::vector<int32_t> sums_, zeroPoints_;
  bool needsActivationSums_ = false;
};

// min(0, x) and max(0, x) over n floats, NaN skipped, over the thread pool (DynamicQuantizeLinear's
// and DynamicQuantizeMatMul's range).
void rangeWithZero(ThreadPool* pool, const float* x, int64_t n, float* lo, float* hi);

// `bytes` of DYNAMIC scratch for one execution, bound to `scratch`; the error names the op.
Status acquireByteScratch(Backend* backend, int64_t bytes, const char* what, const std::string& opName,
                          RuntimeTensor* scratch, std::unique_ptr<MemObj>* memory);

std::unique_ptr<Execution> createQuantizedMatMulExecution(CPUBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs);
// QuantizeLinear and DequantizeLinear between float32 and bytes (quantize_linear.cpp).
std::unique_ptr<Execution> createQuantizeLinearExecution(CPUBackend* backend, const OpRef& op,
                                                         const std::vector<RuntimeTensor*>& inputs,
                                                         const std::vector<RuntimeTensor*>& outputs);
std::unique_ptr<Execution> createQuantizedConvExecution(CPUBackend* backend, const OpRef& op,
                                                        const std::vector<RuntimeTensor*>& inputs,
                                                        const std::vector<RuntimeTensor*>& outputs);

}  // namespace osprey
