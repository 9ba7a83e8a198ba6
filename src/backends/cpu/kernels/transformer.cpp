// CPU LayerNormalization over the last axis and Attention (3-D Q/K/V, no mask or cache) in
// float32. Attention runs per (batch, head, block of query rows): K^T packed into GEMM panels,
// scores = Q K^T, softmax in place, output = P V written straight into its head's columns.
#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

bool isFloat32(const RuntimeTensor* t) { return t && t->dtype == DataType::Float32 && t->layout == Layout::NCHW; }

// Only outputs [0, n) may be requested.
bool onlyOutputs(const std::vector<RuntimeTensor*>& outputs, size_t n) {
  for (size_t i = n; i < outputs.size(); ++i)
    if (outputs[i]) return false;
  return outputs.size() >= n && outputs[0];
}

class LayerNormExecution : public Execution {
 public:
  LayerNormExecution(CPUBackend* backend, float epsilon) : Execution(backend), epsilon_(epsilon) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* gamma = reinterpret_cast<const float*>(inputs[1]->host());
    const float* beta = optionalFloats(inputs, 2);
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const int64_t n = inputs[0]->shape.back(), rows = n ? inputs[0]->elements() / n : 0;
    const LayerNormRowKernel row = cpuFunctions().layerNormRow;
    ThreadPool* pool = rows * n >= 8192 ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    const float eps = epsilon_;
    parallelFor(pool, rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) row(x + r * n, n, eps, gamma, beta, y + r * n);
    });
    return Status::ok();
  }

 private:
  float epsilon_;
};

// A parameter that is one value per element of the last axis, the same for every row.
bool perLastAxis(const RuntimeTensor* p, int64_t n) {
  if (!isFloat32(p) || p->elements() != n) return false;
  return !p->shape.empty() && p->shape.back() == n;
}

constexpr int64_t kAttentionRows = 64;  // at most this many query rows per task: scores stay in L2

class AttentionExecution : public Execution {
 public:
  AttentionExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const Shape &q = inputs[0]->shape, &k = inputs[1]->shape, &v = inputs[2]->shape;
    qHeads_ = node_.getInt("q_num_heads", 0), kvHeads_ = node_.getInt("kv_num_heads", 0);
    if (qHeads_ < 1 || kvHeads_ < 1 || qHeads_ % kvHeads_ != 0 || q[2] % qHeads_ != 0 || k[2] % kvHeads_ != 0 ||
        v[2] % kvHeads_ != 0)
      return Status::invalidModel(node_.describe() + ": Q " + shapeToString(q) + " / K " + shapeToString(k) +
                                  " do not split into q_num_heads / kv_num_heads heads");
    batch_ = q[0], qSeq_ = q[1], kvSeq_ = k[1];
    dim_ = q[2] / qHeads_, vDim_ = v[2] / kvHeads_;
    scale_ = node_.hasAttr("scale") ? node_.getFloat("scale", 1.f) : 1.f / std::sqrt(static_cast<float>(dim_));
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int threads = pool ? pool->threads() : 1;
    const CpuFunctions& fn = cpuFunctions();
    // Query rows split evenly into blocks, as many blocks for each thread where a few more
    // blocks do it: 197 rows as 64 + 64 + 64 + 5 left one thread twice the other's rows.
    blocks_ = std::max<int64_t>(1, (qSeq_ + kAttentionRows - 1) / kAttentionRows);
    for (int64_t b = blocks_; b < blocks_ + threads && b <= qSeq_; ++b)
      if (batch_ * qHeads_ * b % threads == 0) {
        blocks_ = b;
        break;
      }
    blockRows_ = std::max<int64_t>(1, (qSeq_ + blocks_ - 1) / blocks_);
    scratch_.assign(threads, std::vector<float>(packedBSize(fn, dim_, kvSeq_) + blockRows_ * kvSeq_));
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* q = reinterpret_cast<const float*>(inputs[0]->host());
    const float* k = reinterpret_cast<const float*>(inputs[1]->host());
    const float* v = reinterpret_cast<const float*>(inputs[2]->host());
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    if (kvSeq_ == 0) {  // no keys: every probability row is empty, so is every output
      std::fill(y, y + outputs[0]->elements(), 0.f);
      return Status::ok();
    }
    const CpuFunctions& fn = cpuFunctions();
    const int64_t blocks = blocks_, tasks = batch_ * qHeads_ * blocks;
    const int64_t qStride = qHeads_ * dim_, kStride = kvHeads_ * dim_, vStride = kvHeads_ * vDim_, yStride = qHeads_ * vDim_;
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int64_t slots = static_cast<int64_t>(scratch_.size());
    parallelFor(tasks > 1 ? pool : nullptr, slots, [&](int64_t begin, int64_t end) {
      for (int64_t slot = begin; slot < end; ++slot) {
        float* packedK = scratch_[slot].data();
        float* scores = packedK + packedBSize(fn, dim_, kvSeq_);
        int64_t packedFor = -1;  // (batch, kv head) whose K^T is in packedK
        for (int64_t t = slot; t < tasks; t += slots) {
          const int64_t bh = t / blocks, b = bh / qHeads_, h = bh % qHeads_, hk = h / (qHeads_ / kvHeads_);
          const int64_t row0 = (t % blocks) * blockRows_, rows = std::min(blockRows_, qSeq_ - row0);
          if (rows <= 0) continue;
          if (packedFor != b * kvHeads_ + hk) {
            packGemmB(fn, k + b * kvSeq_ * kStride + hk * dim_, 1, kStride, dim_, kvSeq_, packedK);
            packedFor = b * kvHeads_ + hk;
          }
          GemmA qa;
          qa.data = q + (b * qSeq_ + row0) * qStride + h * dim_;
          qa.rowStride = qStride;
          GemmB kb;
          kb.data = packedK;
          kb.packed = true;
          packedGemm(nullptr, fn, rows, kvSeq_, dim_, qa, kb, scores, kvSeq_, GemmEpilogue());
          for (int64_t r = 0; r < rows; ++r) fn.softmaxRow(scores + r * kvSeq_, scores + r * kvSeq_, kvSeq_, scale_);
          GemmA pa;
          pa.data = scores;
          pa.rowStride = kvSeq_;
          GemmB vb;
          vb.data = v + b * kvSeq_ * vStride + hk * vDim_;
          vb.rowStride = vStride;
          packedGemm(nullptr, fn, rows, vDim_, kvSeq_, pa, vb, y + (b * qSeq_ + row0) * yStride + h * vDim_, yStride,
                     GemmEpilogue());
        }
      }
    });
    return Status::ok();
  }

 private:
  const Node& node_;
  int64_t qHeads_ = 0, kvHeads_ = 0, batch_ = 0, qSeq_ = 0, kvSeq_ = 0, dim_ = 0, vDim_ = 0;
  int64_t blocks_ = 1, blockRows_ = 1;  // query rows per (batch, head): blocks_ tasks of blockRows_
  float scale_ = 1.f;
  std::vector<std::vector<float>> scratch_;  // per thread: packed K^T, then scores
};

}  // namespace

std::unique_ptr<Execution> createLayerNormExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || !isFloat32(inputs[0]) || inputs[0]->shape.empty() || !onlyOutputs(outputs, 1))
    return nullptr;
  const int64_t rank = static_cast<int64_t>(inputs[0]->shape.size());
  int64_t axis = op.node->getInt("axis", -1);
  if (axis < 0) axis += rank;
  const int64_t n = inputs[0]->shape.back();
  if (axis != rank - 1 || n == 0 || op.node->getInt("stash_type", 1) != 1) return nullptr;
  if (!perLastAxis(inputs[1], n) || (inputs.size() > 2 && inputs[2] && !perLastAxis(inputs[2], n))) return nullptr;
  return std::make_unique<LayerNormExecution>(backend, op.node->getFloat("epsilon", 1e-5f));
}

std::unique_ptr<Execution> createAttentionExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 3 || !onlyOutputs(outputs, 1)) return nullptr;
  for (size_t i = 3; i < inputs.size(); ++i)
    if (inputs[i]) return nullptr;  // mask, past key/value, nonpad lengths: the reference
  for (int i = 0; i < 3; ++i)
    if (!isFloat32(inputs[i]) || inputs[i]->shape.size() != 3) return nullptr;
  const Node& n = *op.node;
  if (n.getInt("is_causal", 0) != 0 || n.getFloat("softcap", 0.f) != 0.f || n.getInt("qk_matmul_output_mode", 0) != 0)
    return nullptr;
  return std::make_unique<AttentionExecution>(backend, op);
}

}  // namespace osprey
