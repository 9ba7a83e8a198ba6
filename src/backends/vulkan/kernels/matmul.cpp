// MatMul (numpy: 1-D operands, broadcast batches, the converter's bias [N] as C) and Gemm
// (transposes, alpha/beta, C broadcast to (M, N)), with the converter's fused activation,
// through one strided tiled shader (matmul.comp).
#include "backends/vulkan/vk_execution.h"
#include "ops/activation.h"

namespace osprey::vulkan {

namespace {

struct MatMulPush {
  uint32_t aOff, bOff, cOff, yOff;
  int32_t M, N, K, batch;
  int32_t a[3], b[3], c[3];  // strides: batch, row, col
  int32_t hasC;
  float alpha, beta;
  int32_t act;
  float actA, actB;
};

class MatMulExecution : public VkExecution {
 public:
  MatMulExecution(VulkanBackend* b, MatMulPush plan) : VkExecution(b), p_(plan) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), "matmul", 4, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> offsets;
    // Without C the shader never reads binding 2; A stands in so every binding has a buffer.
    OSPREY_RETURN_IF_ERROR(locate({in[0], in[1], p_.hasC ? in[2] : in[0], out[0]}, &buffers, &offsets));
    MatMulPush push = p_;
    push.aOff = offsets[0];
    push.bOff = offsets[1];
    push.cOff = offsets[2];
    push.yOff = offsets[3];
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, push, {ceilDiv(p_.N, 16), ceilDiv(p_.M, 16), uint32_t(p_.batch)}));
    return vk()->afterOp();
  }

 private:
  MatMulPush p_;
  Dispatch dispatch_;
};

void strides(int32_t* s, int64_t batch, int64_t row, int64_t col) {
  s[0] = static_cast<int32_t>(batch);
  s[1] = static_cast<int32_t>(row);
  s[2] = static_cast<int32_t>(col);
}

}  // namespace

std::unique_ptr<Execution> createMatMul(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() < 2 || !in[0] || !in[1] || out.size() != 1 || !out[0] || !allFloat(in) || !allFloat(out))
    return nullptr;
  MatMulPush p{};
  p.alpha = p.beta = 1.f;
  FusedActivation act;
  if (!FusedActivation::fromNode(*op.node, &act)) return nullptr;
  p.act = static_cast<int32_t>(act.kind);
  p.actA = act.a;
  p.actB = act.b;
  const Shape& a = in[0]->shape;
  const Shape& bs = in[1]->shape;
  p.batch = 1;
  if (op.type == OpType::Gemm) {
    if (a.size() != 2 || bs.size() != 2) return nullptr;
    const bool transA = op.node->getInt("transA", 0) != 0, transB = op.node->getInt("transB", 0) != 0;
    p.M = static_cast<int32_t>(transA ? a[1] : a[0]);
    p.K = static_cast<int32_t>(transA ? a[0] : a[1]);
    p.N = static_cast<int32_t>(transB ? bs[0] : bs[1]);
    strides(p.a, 0, transA ? 1 : p.K, transA ? p.M : 1);
    strides(p.b, 0, transB ? 1 : p.N, transB ? p.K : 1);
    p.alpha = op.node->getFloat("alpha", 1.f);
    p.beta = op.node->getFloat("beta", 1.f);
    if (in.size() > 2 && in[2]) {
      const Shape& c = in[2]->shape;
      if (c.size() > 2) return nullptr;
      const int64_t rows = c.size() == 2 ? c[0] : 1, cols = c.empty() ? 1 : c.back();
      p.hasC = 1;
      strides(p.c, 0, rows == 1 ? 0 : cols, cols == 1 ? 0 : 1);
    }
    return std::make_unique<MatMulExecution>(b, p);
  }
  if (op.type != OpType::MatMul || a.empty() || bs.empty()) return nullptr;
  // 1-D operands: A [K] is a row (1, K), B [K] a column (K, 1).
  const int64_t M = a.size() == 1 ? 1 : a[a.size() - 2], K = a.back(), N = bs.size() == 1 ? 1 : bs.back();
  const int64_t kB = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (kB != K) return nullptr;
  const int64_t batchA = a.size() > 2 ? shapeElements(Shape(a.begin(), a.end() - 2)) : 1;
  const int64_t batchB = bs.size() > 2 ? shapeElements(Shape(bs.begin(), bs.end() - 2)) : 1;
  const int64_t batch = std::max(batchA, batchB);
  // Batches broadcast only whole (one side has one batch, or both the same count).
  if ((batchA != batch && batchA != 1) || (batchB != batch && batchB != 1)) return nullptr;
  if (out[0]->elements() != batch * M * N || batch > 65535) return nullptr;
  p.M = static_cast<int32_t>(M);
  p.N = static_cast<int32_t>(N);
  p.K = static_cast<int32_t>(K);
  p.batch = static_cast<int32_t>(batch);
  strides(p.a, batchA == 1 ? 0 : M * K, K, 1);
  strides(p.b, batchB == 1 ? 0 : K * N, N, 1);
  if (in.size() > 2 && in[2]) {
    if (in[2]->shape != Shape{N} || bs.size() < 2) return nullptr;  // the shape fn reports it
    p.hasC = 1;
    strides(p.c, 0, 0, 1);  // bias [N]: one value per column, the same on every row
  }
  return std::make_unique<MatMulExecution>(b, p);
}

}  // namespace osprey::vulkan
