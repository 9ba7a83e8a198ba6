// Gemm and MatMul on CUDA through cuBLASLt. Bias (Gemm's C of shape [N] or [1, N] with beta 1, and
// MatMul's optional input 2 of shape [N] that the converter fuses from a following Add),
// ReLU and GELU run as cuBLASLt epilogues; any other fused activation, and exact (erf) GELU in
// float precision (cuBLASLt's GELU is the tanh form), runs in the small epilogue kernel after.
#include <memory>

#include "backends/cuda/math/epilogue.h"
#include "backends/cuda/math/lt_matmul.h"
#include "backends/cuda/math/math_executions.h"
#include "backends/cuda/math/math_util.h"

namespace osprey::cuda {

namespace {

using cuda_math::LtEpilogue;
using cuda_math::LtMatmul;
using cuda_math::MatmulShape;

constexpr size_t kWorkspaceLimit = size_t(32) << 20;

bool isFloat(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::BFloat16; }

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Splits a fused activation into what cuBLASLt applies and what the epilogue kernel applies.
LtEpilogue chooseEpilogue(const FusedActivation& act, bool bias, bool lowPrecision, FusedActivation* rest) {
  using K = FusedActivation::Kind;
  *rest = FusedActivation();
  if (act.kind == K::Relu) return bias ? LtEpilogue::ReluBias : LtEpilogue::Relu;
  if (act.kind == K::Gelu && (act.a != 0.f || lowPrecision)) return bias ? LtEpilogue::GeluBias : LtEpilogue::Gelu;
  *rest = act;
  return bias ? LtEpilogue::Bias : LtEpilogue::None;
}

class LtExecution : public Execution {
 public:
  LtExecution(CUDABackend* backend, FusedActivation act) : Execution(backend), cuda_(backend), act_(act) {}

 protected:
  // Prepares the product; biasInput / cInput index the inputs used as bias or full C (-1: none).
  Status prepareProduct(const MatmulShape& shape, DataType storage, int biasInput, int cInput, float alpha,
                        float beta) {
    shape_ = shape;
    storage_ = storage;
    biasInput_ = biasInput;
    cInput_ = cInput;
    alpha_ = alpha;
    beta_ = beta;
    epilogue_ = chooseEpilogue(act_, biasInput >= 0, storage != DataType::Float32, &rest_);
    OSPREY_RETURN_IF_ERROR(lt_.prepare(cuda_->cublasLt(), shape, storage, epilogue_, cInput >= 0, kWorkspaceLimit,
                                       cuda_->tuningRequest()));
    workspace_.reset();
    if (lt_.workspaceBytes() > 0) {
      workspace_ = cuda_->acquireScratch(lt_.workspaceBytes());
      cuda_->releaseScratch(workspace_);
    }
    return Status::ok();
  }

 public:
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const void* bias = biasInput_ >= 0 ? cuda_->devicePtr(inputs[biasInput_]) : nullptr;
    const void* c = cInput_ >= 0 ? cuda_->devicePtr(inputs[cInput_]) : nullptr;
    void* d = cuda_->devicePtr(outputs[0]);
    void* workspace = workspace_ ? cuda_->scratchPtr(*workspace_) : nullptr;
    OSPREY_RETURN_IF_ERROR(lt_.run(cuda_->cublasLt(), cuda_->stream(), cuda_->devicePtr(inputs[0]),
                                   cuda_->devicePtr(inputs[1]), c, bias, d, alpha_, beta_, workspace));
    if (rest_.kind == FusedActivation::Kind::None) return Status::ok();
    cuda_math::ElementType type;
    if (!cuda_math::toElementType(storage_, &type)) return Status::internal("matmul epilogue on a non-float tensor");
    cuda_math::ChannelGeometry g;
    g.batch = 1;
    g.channels = 1;
    g.spatial = shape_.batch * shape_.M * shape_.N;
    OSPREY_CUDA_RETURN_IF_ERROR(cuda_math::launchBiasActivation(cuda_->stream(), type, d, nullptr, nullptr, g,
                                                                cuda_math::toDeviceActivation(rest_)),
                                "matmul activation");
    return Status::ok();
  }

 protected:
  CUDABackend* cuda_;
  FusedActivation act_, rest_;
  LtMatmul lt_;
  MatmulShape shape_;
  DataType storage_ = DataType::Float32;
  LtEpilogue epilogue_ = LtEpilogue::None;
  int biasInput_ = -1, cInput_ = -1;
  float alpha_ = 1.f, beta_ = 0.f;
  std::shared_ptr<MemChunk> workspace_;
};

class GemmExecution : public LtExecution {
 public:
  GemmExecution(CUDABackend* backend, const Node* node, FusedActivation act)
      : LtExecution(backend, act), node_(node) {}
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    MatmulShape s;
    s.transA = node_->getInt("transA", 0) != 0;
    s.transB = node_->getInt("transB", 0) != 0;
    const Shape &a = inputs[0]->shape, &b = inputs[1]->shape;
    s.M = s.transA ? a[1] : a[0];
    s.K = s.transA ? a[0] : a[1];
    s.N = s.transB ? b[0] : b[1];
    const float alpha = node_->getFloat("alpha", 1.f), beta = node_->getFloat("beta", 1.f);
    int biasInput = -1, cInput = -1;
    if (inputs.size() > 2 && inputs[2]) {
      const Shape& c = inputs[2]->shape;
      if (c == Shape{s.M, s.N})
        cInput = 2;
      else
        biasInput = 2;  // [N] or [1, N] with beta 1, as the creator checked
    }
    return prepareProduct(s, cuda_->storageType(outputs[0]), biasInput, cInput, alpha, beta);
  }

 private:
  const Node* node_;
};

// MatMul with batch dimensions that either match or are absent on one side; a 2-D B shared by
// every batch of a contiguous A folds the batch into M (one large product).
bool matmulShape(const Shape& a, const Shape& b, MatmulShape* s) {
  if (a.size() < 2 || b.size() < 2) return false;
  s->M = a[a.size() - 2];
  s->K = a.back();
  s->N = b.back();
  if (b[b.size() - 2] != s->K) return false;
  const int64_t batchA = product(a, 0, a.size() - 2), batchB = product(b, 0, b.size() - 2);
  if (batchB == 1) {
    s->M *= batchA;
    s->batch = 1;
    return true;
  }
  const Shape outerA(a.begin(), a.end() - 2), outerB(b.begin(), b.end() - 2);
  if (batchA == 1) {
    s->batch = batchB;
    s->strideA = 0;
    s->strideB = s->K * s->N;
    return true;
  }
  // Equal batch dimensions (leading ones ignored).
  size_t ia = 0, ib = 0;
  while (ia < outerA.size() && outerA[ia] == 1 && outerA.size() - ia > outerB.size() - ib) ++ia;
  while (ib < outerB.size() && outerB[ib] == 1 && outerB.size() - ib > outerA.size() - ia) ++ib;
  if (Shape(outerA.begin() + ia, outerA.end()) != Shape(outerB.begin() + ib, outerB.end())) return false;
  s->batch = batchA;
  s->strideA = s->M * s->K;
  s->strideB = s->K * s->N;
  return true;
}

class MatMulExecution : public LtExecution {
 public:
  using LtExecution::LtExecution;
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    MatmulShape s;
    if (!matmulShape(inputs[0]->shape, inputs[1]->shape, &s))
      return Status::unsupported("CUDA MatMul: batch dimensions of A " + shapeToString(inputs[0]->shape) + " and B " +
                                 shapeToString(inputs[1]->shape) + " need broadcasting the kernel does not do");
    // The converter's optional bias (input 2, [N]) is cuBLASLt's bias epilogue.
    const int biasInput = inputs.size() > 2 && inputs[2] ? 2 : -1;
    return prepareProduct(s, cuda_->storageType(outputs[0]), biasInput, -1, 1.f, 0.f);
  }
};

bool floatOperands(const std::vector<RuntimeTensor*>& inputs, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (i >= inputs.size() || !inputs[i]) return i >= 2;  // only C is optional
    if (!isFloat(inputs[i]->dtype) || inputs[i]->dtype != inputs[0]->dtype) return false;
    if (inputs[i]->layout != Layout::NCHW && inputs[i]->shape.size() >= 2) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<Execution> createGemmExecution(CUDABackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || !floatOperands(inputs, 3) || !backend->cublasLt()) return nullptr;
  FusedActivation act;
  if (!FusedActivation::fromNode(*op.node, &act).isOk()) return nullptr;
  if (inputs[0]->shape.size() != 2 || inputs[1]->shape.size() != 2) return nullptr;
  if (inputs.size() > 2 && inputs[2]) {
    const bool transA = op.node->getInt("transA", 0) != 0, transB = op.node->getInt("transB", 0) != 0;
    const int64_t M = transA ? inputs[0]->shape[1] : inputs[0]->shape[0];
    const int64_t N = transB ? inputs[1]->shape[0] : inputs[1]->shape[1];
    const Shape& c = inputs[2]->shape;
    const bool full = c == Shape{M, N};
    const bool row = (c == Shape{N} || c == Shape{1, N}) && op.node->getFloat("beta", 1.f) == 1.f;
    if (!full && !row) return nullptr;  // other broadcasts of C stay on the CPU
  }
  return std::make_unique<GemmExecution>(backend, op.node, act);
}

std::unique_ptr<Execution> createMatMulExecution(CUDABackend* backend, const OpRef& op,
                                                 const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || inputs.size() > 3 || !floatOperands(inputs, inputs.size()) ||
      !backend->cublasLt())
    return nullptr;
  FusedActivation act;
  if (!FusedActivation::fromNode(*op.node, &act).isOk()) return nullptr;
  MatmulShape s;
  if (!matmulShape(inputs[0]->shape, inputs[1]->shape, &s)) return nullptr;
  if (inputs.size() == 3 && inputs[2] && inputs[2]->shape != Shape{s.N}) return nullptr;
  return std::make_unique<MatMulExecution>(backend, act);
}

}  // namespace osprey::cuda
