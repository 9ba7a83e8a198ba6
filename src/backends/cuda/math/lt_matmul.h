// A row-major (batched) matrix product through cuBLASLt: D = act(alpha * op(A) op(B) + beta * C
// + bias), with bias, ReLU and GELU fused as cuBLASLt epilogues. Inputs of fp16/bf16 accumulate
// in float; float inputs use plain float math (no TF32), so results stay close to the reference.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/cuda_tuning.h"
#include "osprey/status.h"
#include "osprey/types.h"

namespace osprey::cuda_math {

struct MatmulShape {
  int64_t M = 1, N = 1, K = 1;
  int64_t batch = 1;                           // products computed
  int64_t strideA = 0, strideB = 0, strideC = 0;  // elements between products; 0 broadcasts
  bool transA = false;  // A is stored (K, M) row-major
  bool transB = false;  // B is stored (N, K) row-major
};

enum class LtEpilogue { None, Bias, Relu, ReluBias, Gelu, GeluBias };

class LtMatmul {
 public:
  LtMatmul() = default;
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // hasC: a full (M, N) C per product (strideC apart) is added with beta. With a tuning, the
  // algorithm is the one it holds for this product or, where it times candidates, the fastest
  // of cuBLASLt's first few (recorded there); otherwise cuBLASLt's heuristic choice.
  Status prepare(cublasLtHandle_t handle, const MatmulShape& shape, DataType dtype, LtEpilogue epilogue, bool hasC,
                 size_t workspaceLimit, const cuda::TuningRequest& tuning = {});
  size_t workspaceBytes() const { return workspaceBytes_; }
  // bias: N values of dtype when the epilogue has one; c: required when prepared with hasC.
  Status run(cublasLtHandle_t handle, cudaStream_t stream, const void* a, const void* b, const void* c,
             const void* bias, void* d, float alpha, float beta, void* workspace);

 private:
  void destroy();
  bool useRecorded(cublasLtHandle_t handle, const std::vector<uint8_t>& saved, size_t workspaceLimit);
  // Index of the fastest of `candidates` on zeroed buffers of this product's sizes (0 where the
  // buffers cannot be had).
  int timeCandidates(cublasLtHandle_t handle, const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                     const cuda::TuningRequest& tuning);
  MatmulShape shape_;
  DataType dtype_ = DataType::Float32;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t aLayout_ = nullptr, bLayout_ = nullptr, cLayout_ = nullptr, dLayout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspaceBytes_ = 0;
  bool hasC_ = false;
  LtEpilogue epilogue_ = LtEpilogue::None;
};

}  // namespace osprey::cuda_math
