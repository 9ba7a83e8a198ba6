#include "backends/cuda/math/lt_matmul.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

namespace osprey::cuda_math {

namespace {

Status ltError(cublasStatus_t s, const char* what) {
  return Status::internal(std::string("cuBLASLt ") + what + " failed (status " + std::to_string(static_cast<int>(s)) +
                          ")");
}

#define LT_RETURN_IF_ERROR(call)                                \
  do {                                                          \
    cublasStatus_t _s = (call);                                 \
    if (_s != CUBLAS_STATUS_SUCCESS) return ltError(_s, #call); \
  } while (0)

cudaDataType_t cudaType(DataType t) {
  switch (t) {
    case DataType::Float16: return CUDA_R_16F;
    case DataType::BFloat16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

cublasLtEpilogue_t ltEpilogue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case LtEpilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
    case LtEpilogue::ReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::Gelu: return CUBLASLT_EPILOGUE_GELU;
    case LtEpilogue::GeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool hasBias(LtEpilogue e) { return e == LtEpilogue::Bias || e == LtEpilogue::ReluBias || e == LtEpilogue::GeluBias; }

Status makeLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                  cublasLtMatrixLayout_t* out) {
  LT_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(out, type, rows, cols, ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    LT_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    LT_RETURN_IF_ERROR(
        cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return Status::ok();
}

constexpr int kTunedCandidates = 8;

std::string tuningKey(const MatmulShape& s, DataType dtype, LtEpilogue epilogue, bool hasC, size_t workspaceLimit) {
  std::string key = "lt";
  for (int64_t v : {s.M, s.N, s.K, s.batch, s.strideA, s.strideB, s.strideC, int64_t(s.transA), int64_t(s.transB),
                    int64_t(dtype), int64_t(epilogue), int64_t(hasC), int64_t(workspaceLimit)})
    key += "," + std::to_string(v);
  return key;
}

}  // namespace

LtMatmul::~LtMatmul() { destroy(); }

void LtMatmul::destroy() {
  if (op_) cublasLtMatmulDescDestroy(op_);
  for (cublasLtMatrixLayout_t l : {aLayout_, bLayout_, cLayout_, dLayout_})
    if (l) cublasLtMatrixLayoutDestroy(l);
  op_ = nullptr;
  aLayout_ = bLayout_ = cLayout_ = dLayout_ = nullptr;
}

Status LtMatmul::prepare(cublasLtHandle_t handle, const MatmulShape& s, DataType dtype, LtEpilogue epilogue,
                         bool hasC, size_t workspaceLimit, const cuda::TuningRequest& tuning) {
  destroy();
  if (!handle) return Status::unsupported("cuBLASLt is not available");
  hasC_ = hasC;
  epilogue_ = epilogue;
  const cudaDataType_t type = cudaType(dtype);
  // cuBLASLt is column-major: the row-major D (M, N) is the column-major D^T (N, M) = B^T A^T,
  // so B is cuBLASLt's first operand and A its second, each with its stored leading dimension.
  LT_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t opFirst = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opSecond = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof(opFirst)));
  LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof(opSecond)));
  const cublasLtEpilogue_t epi = ltEpilogue(epilogue);
  LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (hasBias(epilogue)) {
    const cudaDataType_t biasType = type;
    LT_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType)));
    const int64_t sharedBias = 0;  // one bias vector for every product of a batch
    LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &sharedBias,
                                                      sizeof(sharedBias)));
  }
  OSPREY_RETURN_IF_ERROR(makeLayout(type, s.transB ? s.K : s.N, s.transB ? s.N : s.K, s.transB ? s.K : s.N, s.batch,
                                    s.strideB, &aLayout_));
  OSPREY_RETURN_IF_ERROR(makeLayout(type, s.transA ? s.M : s.K, s.transA ? s.K : s.M, s.transA ? s.M : s.K, s.batch,
                                    s.strideA, &bLayout_));
  OSPREY_RETURN_IF_ERROR(makeLayout(type, s.N, s.M, s.N, s.batch, s.strideC, &cLayout_));
  OSPREY_RETURN_IF_ERROR(makeLayout(type, s.N, s.M, s.N, s.batch, s.M * s.N, &dLayout_));

  shape_ = s;
  dtype_ = dtype;
  std::string key;
  if (tuning.tuning) {
    key = tuning.keyOf(tuningKey(s, dtype, epilogue, hasC, workspaceLimit));
    std::vector<uint8_t> saved;
    if (tuning.tuning->find(key, &saved) && useRecorded(handle, saved, workspaceLimit)) return Status::ok();
  }
  const bool timed = tuning.tuning && tuning.tuning->timesCandidates();
  cublasLtMatmulPreference_t pref = nullptr;
  LT_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &workspaceLimit, sizeof(workspaceLimit));
  std::vector<cublasLtMatmulHeuristicResult_t> results(timed ? kTunedCandidates : 1);
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(handle, op_, aLayout_, bLayout_, hasC ? cLayout_ : dLayout_, dLayout_, pref,
                                        static_cast<int>(results.size()), results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    return Status::unsupported("cuBLASLt has no algorithm for a " + std::to_string(s.M) + "x" + std::to_string(s.N) +
                               "x" + std::to_string(s.K) + " product (batch " + std::to_string(s.batch) + ")");
  results.resize(static_cast<size_t>(found));
  const int pick = timed && found > 1 ? timeCandidates(handle, results, tuning) : 0;
  algo_ = results[static_cast<size_t>(pick)].algo;
  workspaceBytes_ = results[static_cast<size_t>(pick)].workspaceSize;
  if (timed) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(&algo_);
    tuning.tuning->record(key, std::vector<uint8_t>(bytes, bytes + sizeof(algo_)));
  }
  return Status::ok();
}

bool LtMatmul::useRecorded(cublasLtHandle_t handle, const std::vector<uint8_t>& saved, size_t workspaceLimit) {
  if (saved.size() != sizeof(cublasLtMatmulAlgo_t)) return false;
  cublasLtMatmulAlgo_t algo;
  std::memcpy(&algo, saved.data(), sizeof(algo));
  // The cache is trusted no further than cuBLASLt's own check of the algorithm for this product.
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(handle, op_, aLayout_, bLayout_, hasC_ ? cLayout_ : dLayout_, dLayout_, &algo, &check) !=
          CUBLAS_STATUS_SUCCESS ||
      check.workspaceSize > workspaceLimit)
    return false;
  algo_ = algo;
  workspaceBytes_ = check.workspaceSize;
  return true;
}

int LtMatmul::timeCandidates(cublasLtHandle_t handle, const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                             const cuda::TuningRequest& tuning) {
  std::lock_guard<std::mutex> lock(tuning.tuning->trialMutex());
  const MatmulShape& s = shape_;
  const size_t element = dtype_ == DataType::Float32 ? 4 : 2;
  auto span = [&](int64_t one, int64_t stride) { return (stride > 0 ? stride * (s.batch - 1) + one : one) * element; };
  size_t workspaceBytes = 0;
  for (const auto& c : candidates) workspaceBytes = std::max(workspaceBytes, c.workspaceSize);
  cuda::Trial trial;
  void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr, *bias = nullptr, *workspace = nullptr;
  cudaStream_t stream = nullptr;
  if (!trial.buffer(span(s.M * s.K, s.strideA), &a).isOk() || !trial.buffer(span(s.K * s.N, s.strideB), &b).isOk() ||
      !trial.buffer(hasC_ ? span(s.M * s.N, s.strideC) : 0, &c).isOk() ||
      !trial.buffer(s.batch * s.M * s.N * element, &d).isOk() ||
      !trial.buffer(hasBias(epilogue_) ? s.N * element : 0, &bias).isOk() ||
      !trial.buffer(workspaceBytes, &workspace).isOk() || !trial.stream(&stream).isOk())
    return 0;
  if (hasBias(epilogue_) &&
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)) != CUBLAS_STATUS_SUCCESS)
    return 0;
  const float one = 1.f, beta = hasC_ ? 1.f : 0.f;
  std::vector<float> ms;
  for (const auto& candidate : candidates)
    ms.push_back(cuda::timeLaunches(stream, [&] {
      return cublasLtMatmul(handle, op_, &one, b, aLayout_, a, bLayout_, &beta, hasC_ ? c : d,
                            hasC_ ? cLayout_ : dLayout_, d, dLayout_, &candidate.algo, workspace,
                            candidate.workspaceSize, stream) == CUBLAS_STATUS_SUCCESS;
    }, tuning.capturedRuns));
  return std::max(0, cuda::fastestCandidate(ms));
}

Status LtMatmul::run(cublasLtHandle_t handle, cudaStream_t stream, const void* a, const void* b, const void* c,
                     const void* bias, void* d, float alpha, float beta, void* workspace) {
  if (hasBias(epilogue_))
    LT_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float betaUsed = hasC_ ? beta : 0.f;
  LT_RETURN_IF_ERROR(cublasLtMatmul(handle, op_, &alpha, b, aLayout_, a, bLayout_, &betaUsed, hasC_ ? c : d,
                                    hasC_ ? cLayout_ : dLayout_, d, dLayout_, &algo_, workspace, workspaceBytes_,
                                    stream));
  return Status::ok();
}

}  // namespace osprey::cuda_math
