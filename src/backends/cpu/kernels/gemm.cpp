// CPU Gemm and MatMul (float32). A constant 2-D B is packed once at resize into GEMM panels in
// STATIC memory; A is read in place (transA is only a stride); MatMul with an activation B reads
// both in place. Gemm's alpha, beta * C, MatMul's bias [N] and the fused activation run in the
// GEMM's epilogue.
#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// Packs a constant K x N matrix (element (k, n) at src[k * rowStride + n * colStride]) once.
class PackedB {
 public:
  Status pack(Backend* backend, const float* src, int64_t rowStride, int64_t colStride, int64_t K, int64_t N) {
    if (mem_) return Status::ok();
    const int64_t floats = static_cast<int64_t>(packedBSize(cpuFunctions(), K, N));
    bool fresh = false;
    OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend, floats, "Gemm / MatMul",
                                                packKey(src, nullptr, "gemm-b", {rowStride, colStride, K, N}), &tensor_,
                                                &mem_, &fresh));
    if (fresh) packGemmB(cpuFunctions(), src, rowStride, colStride, K, N, reinterpret_cast<float*>(tensor_.host()));
    return Status::ok();
  }
  GemmB operand() const {
    GemmB b;
    b.data = reinterpret_cast<const float*>(tensor_.host());
    b.packed = true;
    return b;
  }

 private:
  RuntimeTensor tensor_;
  std::unique_ptr<MemObj> mem_;
};

// MatMul's optional bias [N] (input 2), or null.
const float* matMulBias(const std::vector<RuntimeTensor*>& inputs) {
  return optionalFloats(inputs, 2);
}

class GemmExecution : public Execution {
 public:
  GemmExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &a = *inputs[0], &b = *inputs[1];
    transA_ = node_.getInt("transA", 0) != 0;
    const bool transB = node_.getInt("transB", 0) != 0;
    M_ = transA_ ? a.shape[1] : a.shape[0];
    K_ = transA_ ? a.shape[0] : a.shape[1];
    N_ = transB ? b.shape[0] : b.shape[1];
    epilogue_ = GemmEpilogue();
    epilogue_.alpha = node_.getFloat("alpha", 1.f);
    epilogue_.beta = node_.getFloat("beta", 1.f);
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &epilogue_.act));
    hasC_ = inputs.size() > 2 && inputs[2];
    if (hasC_) {
      const Shape& c = inputs[2]->shape;  // broadcast to (M, N), checked by the shape fn
      const int64_t rows = c.size() == 2 ? c[0] : 1, cols = c.empty() ? 1 : c.back();
      epilogue_.biasRowStride = rows == 1 ? 0 : cols;
      epilogue_.biasColStride = cols == 1 ? 0 : 1;
    }
    const float* src = reinterpret_cast<const float*>(b.host());
    return transB ? packed_.pack(backend(), src, 1, K_, K_, N_) : packed_.pack(backend(), src, N_, 1, K_, N_);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    GemmA a;
    a.data = reinterpret_cast<const float*>(inputs[0]->host());
    a.rowStride = transA_ ? 1 : K_;
    a.colStride = transA_ ? M_ : 1;
    GemmEpilogue ep = epilogue_;
    ep.bias = hasC_ ? reinterpret_cast<const float*>(inputs[2]->host()) : nullptr;
    packedGemm(static_cast<CPUBackend*>(backend())->threadPool(), cpuFunctions(), M_, N_, K_, a, packed_.operand(),
               reinterpret_cast<float*>(outputs[0]->host()), N_, ep);
    return Status::ok();
  }

 private:
  const Node& node_;
  bool transA_ = false, hasC_ = false;
  int64_t M_ = 0, N_ = 0, K_ = 0;
  GemmEpilogue epilogue_;
  PackedB packed_;
};

// A [..., M, K] times a constant 2-D B [K, N]: every batch of A is rows of one product.
class MatMulExecution : public Execution {
 public:
  MatMulExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &a = *inputs[0], &b = *inputs[1];
    K_ = b.shape[0];
    N_ = b.shape[1];
    M_ = K_ > 0 ? a.elements() / K_ : 0;
    epilogue_ = GemmEpilogue();
    epilogue_.biasColStride = 1;  // bias [N] along every row
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &epilogue_.act));
    return packed_.pack(backend(), reinterpret_cast<const float*>(b.host()), N_, 1, K_, N_);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    GemmA a;
    a.data = reinterpret_cast<const float*>(inputs[0]->host());
    a.rowStride = K_;
    GemmEpilogue ep = epilogue_;
    ep.bias = matMulBias(inputs);
    packedGemm(static_cast<CPUBackend*>(backend())->threadPool(), cpuFunctions(), M_, N_, K_, a, packed_.operand(),
               reinterpret_cast<float*>(outputs[0]->host()), N_, ep);
    return Status::ok();
  }

 private:
  const Node& node_;
  int64_t M_ = 0, N_ = 0, K_ = 0;
  GemmEpilogue epilogue_;
  PackedB packed_;
};

// A [..., M, K] times B [..., K, N], both activations, batch dimensions broadcast: B is read
// in place. Many batches (attention heads) are split over the threads, a single one inside.
class BatchedMatMulExecution : public Execution {
 public:
  BatchedMatMulExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const Shape &sa = inputs[0]->shape, &sb = inputs[1]->shape;
    M_ = sa[sa.size() - 2], K_ = sa.back(), N_ = sb.back();
    const Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
    Shape batch;
    OSPREY_RETURN_IF_ERROR(broadcastShapes(batchA, batchB, &batch));
    const size_t rank = batch.size();
    aOffsets_.assign(shapeElements(batch), 0);
    bOffsets_.assign(shapeElements(batch), 0);
    forEachBroadcast(batch, broadcastStrides(batchA, rank, batch), broadcastStrides(batchB, rank, batch),
                     [&](int64_t i, int64_t oa, int64_t ob) {
                       aOffsets_[i] = oa * M_ * K_;
                       bOffsets_[i] = ob * K_ * N_;
                     });
    epilogue_ = GemmEpilogue();
    epilogue_.biasColStride = 1;
    return FusedActivation::fromNode(node_, &epilogue_.act);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* a = reinterpret_cast<const float*>(inputs[0]->host());
    const float* b = reinterpret_cast<const float*>(inputs[1]->host());
    float* c = reinterpret_cast<float*>(outputs[0]->host());
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int64_t batches = static_cast<int64_t>(aOffsets_.size());
    GemmEpilogue ep = epilogue_;
    ep.bias = matMulBias(inputs);
    auto one = [&](int64_t i, ThreadPool* inner) {
      GemmA ga;
      ga.data = a + aOffsets_[i];
      ga.rowStride = K_;
      GemmB gb;
      gb.data = b + bOffsets_[i];
      gb.rowStride = N_;
      packedGemm(inner, cpuFunctions(), M_, N_, K_, ga, gb, c + i * M_ * N_, N_, ep);
    };
    if (pool && batches >= pool->threads()) {
      parallelFor(pool, batches, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) one(i, nullptr);
      });
    } else {
      for (int64_t i = 0; i < batches; ++i) one(i, pool);
    }
    return Status::ok();
  }

 private:
  const Node& node_;
  int64_t M_ = 0, N_ = 0, K_ = 0;
  std::vector<int64_t> aOffsets_, bOffsets_;
  GemmEpilogue epilogue_;
};

bool isFloat32(const RuntimeTensor* t) { return t && t->dtype == DataType::Float32; }

}  // namespace

std::unique_ptr<Execution> createGemmExecution(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || !isFloat32(inputs[0]) || !isFloat32(inputs[1]) || !inputs[1]->constData)
    return nullptr;
  if (inputs[0]->shape.size() != 2 || inputs[1]->shape.size() != 2) return nullptr;
  if (inputs.size() > 2 && inputs[2] && (!isFloat32(inputs[2]) || inputs[2]->shape.size() > 2)) return nullptr;
  return std::make_unique<GemmExecution>(backend, op);
}

std::unique_ptr<Execution> createMatMulExecution(CPUBackend* backend, const OpRef& op,
                                                 const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || !isFloat32(inputs[0]) || !isFloat32(inputs[1])) return nullptr;
  if (inputs.size() > 3) return nullptr;
  if (inputs.size() > 2 && inputs[2] && (!isFloat32(inputs[2]) || inputs[2]->shape.size() != 1)) return nullptr;
  if (inputs[0]->shape.size() < 2 || inputs[1]->shape.size() < 2) return nullptr;  // 1-D: the reference
  if (inputs[1]->constData && inputs[1]->shape.size() == 2) return std::make_unique<MatMulExecution>(backend, op);
  return std::make_unique<BatchedMatMulExecution>(backend, op);
}

}  // namespace osprey
