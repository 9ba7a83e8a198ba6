// Elementwise ops: unary (activations and math), binary with numpy broadcast, and
// BatchNormalization (inference).
#include <cfloat>

#include "backends/vulkan/vk_execution.h"
#include "ops/activation.h"

namespace osprey::vulkan {

namespace {

// Past the fused-activation codes (FusedActivation::Kind), as unary.comp numbers them.
enum UnaryCode { kExp = 20, kLog, kSqrt, kReciprocal, kNeg, kAbs, kErf };

struct UnaryPush {
  uint32_t xOff, yOff, n;
  int32_t op;
  float a, b;
};

class UnaryExecution : public VkExecution {
 public:
  UnaryExecution(VulkanBackend* b, int code, float a, float bb) : VkExecution(b), code_(code), a_(a), b_(bb) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), "unary", 2, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> offsets;
    OSPREY_RETURN_IF_ERROR(locate({in[0], out[0]}, &buffers, &offsets));
    const int64_t n = out[0]->elements();
    UnaryPush push{offsets[0], offsets[1], static_cast<uint32_t>(n), code_, a_, b_};
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, push, elementwiseGroups(n)));
    return vk()->afterOp();
  }

 private:
  int code_;
  float a_, b_;
  Dispatch dispatch_;
};

enum BinaryCode { kAdd = 0, kSub, kMul, kDiv, kPow, kMax, kMin, kPRelu };
constexpr size_t kMaxRank = 6;

struct BinaryPush {
  uint32_t aOff, bOff, yOff, n;
  int32_t op;
  int32_t shape[kMaxRank], aStride[kMaxRank], bStride[kMaxRank];
};

// Row-major strides of `shape`, with 0 for size-1 dims (broadcast), right-aligned to kMaxRank.
void broadcastStrides(const Shape& shape, int32_t* strides) {
  int64_t s = 1;
  for (size_t i = 0; i < kMaxRank; ++i) strides[i] = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t d = shape.size() - 1 - i;
    strides[kMaxRank - 1 - i] = shape[d] == 1 ? 0 : static_cast<int32_t>(s);
    s *= shape[d];
  }
}

class BinaryExecution : public VkExecution {
 public:
  BinaryExecution(VulkanBackend* b, int code) : VkExecution(b), code_(code) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), "binary", 3, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> offsets;
    OSPREY_RETURN_IF_ERROR(locate({in[0], in[1], out[0]}, &buffers, &offsets));
    const Shape& y = out[0]->shape;
    const int64_t n = out[0]->elements();
    BinaryPush push{offsets[0], offsets[1], offsets[2], static_cast<uint32_t>(n), code_, {}, {}, {}};
    const size_t lead = kMaxRank - y.size();
    for (size_t d = 0; d < kMaxRank; ++d) push.shape[d] = d < lead ? 1 : static_cast<int32_t>(y[d - lead]);
    broadcastStrides(in[0]->shape, push.aStride);
    broadcastStrides(in[1]->shape, push.bStride);
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, push, elementwiseGroups(n)));
    return vk()->afterOp();
  }

 private:
  int code_;
  Dispatch dispatch_;
};

struct BatchNormPush {
  uint32_t xOff, scaleOff, biasOff, meanOff, varOff, yOff;
  int32_t n, C, inner;
  float eps;
};

class BatchNormExecution : public VkExecution {
 public:
  BatchNormExecution(VulkanBackend* b, float eps) : VkExecution(b), eps_(eps) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), "batch_norm", 6, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    OSPREY_RETURN_IF_ERROR(locate({in[0], in[1], in[2], in[3], in[4], out[0]}, &buffers, &o));
    const Shape& x = in[0]->shape;
    const int64_t n = in[0]->elements(), C = x[1], inner = n / std::max<int64_t>(x[0] * C, 1);
    BatchNormPush p{o[0], o[1], o[2], o[3], o[4], o[5], static_cast<int32_t>(n), static_cast<int32_t>(C),
                    static_cast<int32_t>(inner), eps_};
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, elementwiseGroups(n)));
    return vk()->afterOp();
  }

 private:
  float eps_;
  Dispatch dispatch_;
};

// A constant scalar input (Clip's bounds), or `fallback` when absent; false if not constant.
bool constantScalar(const std::vector<RuntimeTensor*>& in, size_t i, float fallback, float* out) {
  *out = fallback;
  if (in.size() <= i || !in[i]) return true;
  if (!in[i]->constData || in[i]->elements() != 1 || in[i]->dtype != DataType::Float32) return false;
  *out = *reinterpret_cast<const float*>(in[i]->constData);
  return true;
}

}  // namespace

std::unique_ptr<Execution> createUnary(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                       const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.empty() || !in[0] || out.size() != 1 || !out[0]) return nullptr;
  if (in[0]->dtype != DataType::Float32 || out[0]->dtype != DataType::Float32) return nullptr;
  if (op.type == OpType::Clip) {
    float lo = 0, hi = 0;
    if (!constantScalar(in, 1, -FLT_MAX, &lo) || !constantScalar(in, 2, FLT_MAX, &hi)) return nullptr;
    return std::make_unique<UnaryExecution>(b, static_cast<int>(FusedActivation::Kind::Clip), lo, hi);
  }
  FusedActivation act;
  if (FusedActivation::fromOp(*op.node, &act))
    return std::make_unique<UnaryExecution>(b, static_cast<int>(act.kind), act.a, act.b);
  int code = 0;
  switch (op.type) {
    case OpType::Exp: code = kExp; break;
    case OpType::Log: code = kLog; break;
    case OpType::Sqrt: code = kSqrt; break;
    case OpType::Reciprocal: code = kReciprocal; break;
    case OpType::Neg: code = kNeg; break;
    case OpType::Abs: code = kAbs; break;
    case OpType::Erf: code = kErf; break;
    default: return nullptr;
  }
  return std::make_unique<UnaryExecution>(b, code, 0.f, 0.f);
}

std::unique_ptr<Execution> createBinary(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (in.size() != 2 || !in[0] || !in[1] || out.size() != 1 || !out[0] || !allFloat(in) || !allFloat(out)) return nullptr;
  if (out[0]->shape.size() > kMaxRank || out[0]->elements() > INT32_MAX) return nullptr;
  int code = 0;
  switch (op.type) {
    case OpType::Add: code = kAdd; break;
    case OpType::Sub: code = kSub; break;
    case OpType::Mul: code = kMul; break;
    case OpType::Div: code = kDiv; break;
    case OpType::Pow: code = kPow; break;
    case OpType::Max: code = kMax; break;
    case OpType::Min: code = kMin; break;
    case OpType::PRelu: code = kPRelu; break;
    default: return nullptr;
  }
  return std::make_unique<BinaryExecution>(b, code);
}

std::unique_ptr<Execution> createBatchNorm(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                           const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() != 5 || out.empty() || !out[0] || !allFloat(in) || !allFloat(out)) return nullptr;
  for (auto* t : in)
    if (!t) return nullptr;
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i]) return nullptr;  // training-mode outputs
  if (in[0]->shape.size() < 2 || op.node->getInt("training_mode", 0) != 0) return nullptr;
  for (int i = 1; i < 5; ++i)
    if (in[i]->elements() != in[0]->shape[1]) return nullptr;
  return std::make_unique<BatchNormExecution>(b, op.node->getFloat("epsilon", 1e-5f));
}

}  // namespace osprey::vulkan
