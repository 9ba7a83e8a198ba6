// Attention (ONNX opset 23/24), the encoder form, through attention.comp: 3-D or 4-D Q/K/V,
// grouped query heads, a float or bool attn_mask broadcast over (batch, heads, queries, keys),
// scale and is_causal. Past key/value caches, nonpad_kv_seqlen, softcap, the optional outputs
// and rows longer than the shader's shared memory run on the CPU.
#include <cmath>

#include "backends/vulkan/vk_execution.h"

namespace osprey::vulkan {

namespace {

constexpr int64_t kMaxKeys = 3072;  // attention.comp's MAX_KEYS
constexpr int64_t kMaxHeadDim = 256;  // and MAX_DIM

struct AttentionPush {
  uint32_t qOff, kOff, vOff, maskOff, oOff;
  int32_t qHeads, kvHeads, qSeq, kvSeq, dim, vDim;
  int32_t qs[3], ks[3], vs[3], os[3];
  int32_t ms[4];
  int32_t maskLength, flags;
  float scale;
};

// Batch, heads, sequence, channels and the element strides of batch, head and sequence of a
// 3-D (B, S, H*D) or 4-D (B, H, S, D) tensor.
struct Heads {
  int64_t batch = 0, heads = 0, seq = 0, dim = 0;
  int32_t stride[3] = {0, 0, 0};
};

bool splitHeads(const Shape& s, int64_t heads, Heads* h) {
  if (s.size() == 4) {
    *h = {s[0], s[1], s[2], s[3], {static_cast<int32_t>(s[1] * s[2] * s[3]), static_cast<int32_t>(s[2] * s[3]),
                                   static_cast<int32_t>(s[3])}};
    return true;
  }
  if (s.size() != 3 || heads < 1 || s[2] % heads != 0) return false;
  *h = {s[0], heads, s[1], s[2] / heads,
        {static_cast<int32_t>(s[1] * s[2]), static_cast<int32_t>(s[2] / heads), static_cast<int32_t>(s[2])}};
  return true;
}

bool present(const std::vector<RuntimeTensor*>& v, size_t i) { return i < v.size() && v[i]; }

class AttentionExecution : public VkExecution {
 public:
  AttentionExecution(VulkanBackend* b, AttentionPush plan, int64_t batch, bool mask)
      : VkExecution(b), p_(plan), batch_(batch), mask_(mask) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), "attention", 6, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    // Without a mask the shader reads neither mask binding; Q stands in for them.
    const RuntimeTensor* mask = mask_ ? in[3] : in[0];
    OSPREY_RETURN_IF_ERROR(locate({in[0], in[1], in[2], mask, mask, out[0]}, &buffers, &o));
    AttentionPush push = p_;
    push.qOff = o[0];
    push.kOff = o[1];
    push.vOff = o[2];
    push.maskOff = o[3];
    push.oOff = o[5];
    const std::array<uint32_t, 3> groups{uint32_t(p_.qSeq), uint32_t(p_.qHeads), uint32_t(batch_)};
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, push, groups));
    return vk()->afterOp();
  }

 private:
  AttentionPush p_;
  int64_t batch_;
  bool mask_;
  Dispatch dispatch_;
};

}  // namespace

std::unique_ptr<Execution> createAttention(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                           const std::vector<RuntimeTensor*>& out) {
  if (!op.node || !present(in, 0) || !present(in, 1) || !present(in, 2) || out.empty() || !out[0]) return nullptr;
  for (size_t i = 4; i < in.size(); ++i)
    if (in[i]) return nullptr;  // past key/value, nonpad_kv_seqlen
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i]) return nullptr;  // present key/value, qk_matmul_output
  if (!allFloat({in[0], in[1], in[2], out[0]}) || op.node->getFloat("softcap", 0.f) != 0.f) return nullptr;
  const int64_t qHeadsAttr = op.node->getInt("q_num_heads", 0), kvHeadsAttr = op.node->getInt("kv_num_heads", 0);
  Heads q, k, v, o;
  if (!splitHeads(in[0]->shape, qHeadsAttr, &q) || !splitHeads(in[1]->shape, kvHeadsAttr, &k) ||
      !splitHeads(in[2]->shape, kvHeadsAttr, &v) || !splitHeads(out[0]->shape, q.heads, &o))
    return nullptr;
  if (k.batch != q.batch || v.batch != q.batch || k.dim != q.dim || v.heads != k.heads || v.seq != k.seq ||
      k.heads < 1 || q.heads % k.heads != 0 || o.dim != v.dim)
    return nullptr;  // the shape function reports it
  if (k.seq > kMaxKeys || q.dim > kMaxHeadDim || q.seq > 65535 || q.heads > 65535 || q.batch > 65535) return nullptr;
  const bool causal = op.node->getInt("is_causal", 0) == 1;
  if (causal && q.seq != k.seq) return nullptr;  // the causal offset of a past or padding
  AttentionPush p{};
  p.qHeads = static_cast<int32_t>(q.heads);
  p.kvHeads = static_cast<int32_t>(k.heads);
  p.qSeq = static_cast<int32_t>(q.seq);
  p.kvSeq = static_cast<int32_t>(k.seq);
  p.dim = static_cast<int32_t>(q.dim);
  p.vDim = static_cast<int32_t>(v.dim);
  std::copy(q.stride, q.stride + 3, p.qs);
  std::copy(k.stride, k.stride + 3, p.ks);
  std::copy(v.stride, v.stride + 3, p.vs);
  std::copy(o.stride, o.stride + 3, p.os);
  p.scale = op.node->hasAttr("scale") ? op.node->getFloat("scale", 1.f) : 1.f / std::sqrt(static_cast<float>(q.dim));
  int32_t maskKind = 0;
  const bool hasMask = present(in, 3);
  if (hasMask) {
    const RuntimeTensor& m = *in[3];
    if (m.dtype == DataType::Float32) maskKind = 1;
    else if (m.dtype == DataType::Bool) maskKind = 2;
    else return nullptr;
    if (m.shape.empty() || m.shape.size() > 4 || m.shape.back() > k.seq) return nullptr;
    p.maskLength = static_cast<int32_t>(m.shape.back());
    // Strides of the mask broadcast (right-aligned) to (batch, heads, queries, keys).
    const Shape target{q.batch, q.heads, q.seq, m.shape.back()};
    int64_t stride = 1;
    for (int d = 3; d >= 0; --d) {
      const int src = static_cast<int>(m.shape.size()) - 4 + d;
      const int64_t extent = src >= 0 ? m.shape[src] : 1;
      if (extent != 1 && extent != target[d]) return nullptr;
      p.ms[d] = extent == 1 ? 0 : static_cast<int32_t>(stride);
      stride *= extent;
    }
  }
  p.flags = maskKind | (causal ? 4 : 0);
  return std::make_unique<AttentionExecution>(b, p, q.batch, hasMask);
}

}  // namespace osprey::vulkan
