// Attention (ONNX opset 23/24) on CUDA: the fused kernel of attention_kernel.cu for the encoder
// form (3-D or 4-D Q/K/V, grouped heads, float or bool attn_mask broadcast over
// (batch, heads, queries, keys), scale, is_causal). Past key/value caches, nonpad_kv_seqlen,
// softcap and the optional outputs stay on the CPU.
#include <cmath>
#include <memory>

#include "backends/cuda/math/attention_kernel.h"
#include "backends/cuda/math/math_executions.h"
#include "backends/cuda/math/math_util.h"

namespace osprey::cuda {

namespace {

using cuda_math::AttentionParams;
using cuda_math::MaskKind;

// (batch, heads, sequence, head size) and element strides of a 3-D (B, S, H*D) or 4-D tensor.
bool headView(const Shape& s, int64_t heads, int* b, int* h, int* seq, int* dim, int64_t stride[3]) {
  if (s.size() == 4) {
    *b = static_cast<int>(s[0]);
    *h = static_cast<int>(s[1]);
    *seq = static_cast<int>(s[2]);
    *dim = static_cast<int>(s[3]);
    stride[2] = s[3];
    stride[1] = s[2] * s[3];
    stride[0] = s[1] * stride[1];
    return true;
  }
  if (s.size() != 3 || heads < 1 || s[2] % heads != 0) return false;
  *b = static_cast<int>(s[0]);
  *h = static_cast<int>(heads);
  *seq = static_cast<int>(s[1]);
  *dim = static_cast<int>(s[2] / heads);
  stride[2] = s[2];
  stride[1] = *dim;
  stride[0] = s[1] * s[2];
  return true;
}

bool present(const std::vector<RuntimeTensor*>& v, size_t i) { return i < v.size() && v[i]; }

class AttentionExecution : public Execution {
 public:
  AttentionExecution(CUDABackend* backend, const Node* node) : Execution(backend), cuda_(backend), node_(node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    AttentionParams p;
    const int64_t qHeads = node_->getInt("q_num_heads", 0), kvHeads = node_->getInt("kv_num_heads", 0);
    int bq, bk, bv, hv, seqV, dimK;
    if (!headView(inputs[0]->shape, qHeads, &bq, &p.qHeads, &p.qSeq, &p.dim, p.qStride) ||
        !headView(inputs[1]->shape, kvHeads, &bk, &p.kvHeads, &p.kvSeq, &dimK, p.kStride) ||
        !headView(inputs[2]->shape, kvHeads, &bv, &hv, &seqV, &p.vDim, p.vStride))
      return Status::invalidModel("Attention: Q/K/V shapes do not split into heads");
    if (bq != bk || bq != bv || dimK != p.dim || hv != p.kvHeads || seqV != p.kvSeq || p.qHeads % p.kvHeads != 0)
      return Status::invalidModel("Attention: Q " + shapeToString(inputs[0]->shape) + ", K " +
                                  shapeToString(inputs[1]->shape) + " and V " + shapeToString(inputs[2]->shape) +
                                  " disagree");
    p.batch = bq;
    int ob, oh, os, od;
    Shape outHeads = outputs[0]->shape;
    if (!headView(outHeads, p.qHeads, &ob, &oh, &os, &od, p.oStride))
      return Status::internal("Attention: output does not split into heads");
    p.scale = node_->hasAttr("scale") ? node_->getFloat("scale", 1.f) : 1.f / std::sqrt(static_cast<float>(p.dim));
    p.causal = node_->getInt("is_causal", 0) == 1;
    if (present(inputs, 3)) {
      const RuntimeTensor& m = *inputs[3];
      p.maskKind = m.dtype == DataType::Bool ? MaskKind::Bool : MaskKind::Additive;
      p.maskLength = static_cast<int>(m.shape.back());
      // Strides of the mask broadcast (right-aligned) to (batch, heads, queries, keys).
      const Shape target{p.batch, p.qHeads, p.qSeq, p.maskLength};
      int64_t stride = 1;
      for (int d = 3; d >= 0; --d) {
        const int src = static_cast<int>(m.shape.size()) - 4 + d;
        const int64_t extent = src >= 0 ? m.shape[src] : 1;
        if (extent != 1 && extent != target[d])
          return Status::invalidModel("attn_mask " + shapeToString(m.shape) + " does not broadcast to " +
                                      shapeToString(target));
        p.maskStride[d] = extent == 1 ? 0 : stride;
        stride *= extent;
      }
    }
    params_ = p;
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    AttentionParams p = params_;
    p.q = cuda_->devicePtr(inputs[0]);
    p.k = cuda_->devicePtr(inputs[1]);
    p.v = cuda_->devicePtr(inputs[2]);
    p.mask = present(inputs, 3) ? cuda_->devicePtr(inputs[3]) : nullptr;
    p.o = cuda_->devicePtr(outputs[0]);
    cuda_math::ElementType type;
    if (!cuda_math::toElementType(cuda_->storageType(outputs[0]), &type))
      return Status::internal("Attention on a non-float tensor");
    OSPREY_CUDA_RETURN_IF_ERROR(cuda_math::launchAttention(cuda_->stream(), type, p), "attention kernel");
    return Status::ok();
  }

 private:
  CUDABackend* cuda_;
  const Node* node_;
  AttentionParams params_;
};

}  // namespace

std::unique_ptr<Execution> createAttentionExecution(CUDABackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 3 || !inputs[0] || !inputs[1] || !inputs[2] || outputs.empty() || !outputs[0])
    return nullptr;
  for (size_t i = 4; i < inputs.size(); ++i)
    if (inputs[i]) return nullptr;  // past key/value, nonpad_kv_seqlen
  for (size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i]) return nullptr;  // present key/value, qk_matmul_output
  const DataType t = inputs[0]->dtype;
  cuda_math::ElementType type;
  if (!cuda_math::toElementType(t, &type) || inputs[1]->dtype != t || inputs[2]->dtype != t) return nullptr;
  if (present(inputs, 3) && inputs[3]->dtype != t && inputs[3]->dtype != DataType::Bool) return nullptr;
  if (op.node->getFloat("softcap", 0.f) != 0.f) return nullptr;
  if (op.node->getInt("is_causal", 0) == 1 && inputs[0]->shape.size() >= 3) {
    // The kernel's causal mask assumes as many queries as keys (no past, no offset).
    const size_t seqAxis = inputs[0]->shape.size() == 4 ? 2 : 1;
    if (inputs[0]->shape[seqAxis] != inputs[1]->shape[seqAxis]) return nullptr;
  }
  for (int i = 0; i < 4; ++i)
    if (present(inputs, i) && inputs[i]->layout != Layout::NCHW && inputs[i]->shape.size() >= 2) return nullptr;
  const int64_t qHeads = op.node->getInt("q_num_heads", 0), kvHeads = op.node->getInt("kv_num_heads", 0);
  const Shape &q = inputs[0]->shape, &v = inputs[2]->shape;
  const int64_t dim = q.size() == 4 ? q[3] : (qHeads > 0 && q.size() == 3 ? q[2] / qHeads : 0);
  const int64_t vDim = v.size() == 4 ? v[3] : (kvHeads > 0 && v.size() == 3 ? v[2] / kvHeads : 0);
  if (dim < 1 || vDim < 1 || dim > cuda_math::kAttentionMaxHeadDim || vDim > cuda_math::kAttentionMaxHeadDim)
    return nullptr;
  return std::make_unique<AttentionExecution>(backend, op.node);
}

}  // namespace osprey::cuda
