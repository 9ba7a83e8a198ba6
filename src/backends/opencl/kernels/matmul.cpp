// MatMul (numpy: 1-D operands, broadcast batches, the converter's bias [N] as a C broadcast
// over rows) and Gemm (transposes, alpha/beta, C broadcast to (M, N)), both with the
// converter's fused activation, through one strided tiled kernel.
#include "backends/opencl/cl_execution.h"
#include "ops/activation.h"

namespace osprey::opencl {

namespace {

struct MatMulPlan {
  int64_t M = 0, N = 0, K = 0, batch = 1;
  cl_int4 a{}, b{}, c{};  // strides: batch, row, col
  bool hasC = false;
  float alpha = 1.f, beta = 1.f;
  FusedActivation act;
};

class MatMulExecution : public CLExecution {
 public:
  MatMulExecution(OpenCLBackend* b, MatMulPlan plan) : CLExecution(b), p_(plan) {}
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    return kernel_.create(cl(), "matmul", "matmul", {in[0], in[1], p_.hasC ? in[2] : in[0], out[0]});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    DeviceRef c = p_.hasC ? ref(in[2]) : ref(in[0]);
    kernel_.begin().mem(ref(in[0])).mem(ref(in[1])).mem(c).arg(cl_int(p_.hasC)).mem(ref(out[0]));
    kernel_.arg(int4Of(p_.M, p_.N, p_.K, p_.batch)).arg(p_.a).arg(p_.b).arg(p_.c);
    kernel_.arg(p_.alpha).arg(p_.beta).arg(cl_int(static_cast<int>(p_.act.kind))).arg(p_.act.a).arg(p_.act.b);
    size_t global[3] = {static_cast<size_t>(p_.N), static_cast<size_t>(p_.M), static_cast<size_t>(p_.batch)};
    size_t local[3] = {16, 16, 1};
    return kernel_.launchGroups(cl(), 3, global, local);
  }

 private:
  MatMulPlan p_;
  Kernel kernel_;
};

}  // namespace

std::unique_ptr<Execution> createMatMul(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() < 2 || !in[0] || !in[1] || out.size() != 1 || !allFloat(in) || !allFloat(out))
    return nullptr;
  MatMulPlan p;
  if (!FusedActivation::fromNode(*op.node, &p.act)) return nullptr;
  const Shape& a = in[0]->shape;
  const Shape& bs = in[1]->shape;
  if (op.type == OpType::Gemm) {
    if (a.size() != 2 || bs.size() != 2) return nullptr;
    const bool transA = op.node->getInt("transA", 0) != 0, transB = op.node->getInt("transB", 0) != 0;
    p.M = transA ? a[1] : a[0];
    p.K = transA ? a[0] : a[1];
    p.N = transB ? bs[0] : bs[1];
    p.a = int4Of(0, transA ? 1 : p.K, transA ? p.M : 1, 0);
    p.b = int4Of(0, transB ? 1 : p.N, transB ? p.K : 1, 0);
    p.alpha = op.node->getFloat("alpha", 1.f);
    p.beta = op.node->getFloat("beta", 1.f);
    if (in.size() > 2 && in[2]) {
      const Shape& c = in[2]->shape;
      if (c.size() > 2) return nullptr;
      const int64_t rows = c.size() == 2 ? c[0] : 1, cols = c.empty() ? 1 : c.back();
      p.hasC = true;
      p.c = int4Of(0, rows == 1 ? 0 : cols, cols == 1 ? 0 : 1, 0);
    }
    return std::make_unique<MatMulExecution>(b, p);
  }
  if (op.type != OpType::MatMul || a.empty() || bs.empty()) return nullptr;
  // 1-D operands: A [K] is a row (1, K), B [K] a column (K, 1).
  p.M = a.size() == 1 ? 1 : a[a.size() - 2];
  p.K = a.back();
  p.N = bs.size() == 1 ? 1 : bs.back();
  const int64_t kB = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (kB != p.K) return nullptr;
  const int64_t batchA = a.size() > 2 ? shapeElements(Shape(a.begin(), a.end() - 2)) : 1;
  const int64_t batchB = bs.size() > 2 ? shapeElements(Shape(bs.begin(), bs.end() - 2)) : 1;
  p.batch = std::max(batchA, batchB);
  // Batches broadcast only whole (one side has one batch, or both the same count).
  if ((batchA != p.batch && batchA != 1) || (batchB != p.batch && batchB != 1)) return nullptr;
  if (out[0]->elements() != p.batch * p.M * p.N) return nullptr;
  p.a = int4Of(batchA == 1 ? 0 : p.M * p.K, p.K, 1, 0);
  p.b = int4Of(batchB == 1 ? 0 : p.K * p.N, p.N, 1, 0);
  if (in.size() > 2 && in[2]) {
    if (in[2]->shape != Shape{p.N} || bs.size() < 2) return nullptr;  // the shape fn reports it
    p.hasC = true;
    p.c = int4Of(0, 0, 1, 0);  // bias [N]: one value per column, the same on every row
  }
  return std::make_unique<MatMulExecution>(b, p);
}

}  // namespace osprey::opencl
