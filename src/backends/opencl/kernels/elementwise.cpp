// Elementwise ops: unary (activations and math), binary with numpy broadcast (two-input
// Max/Min/Sum/Mean too), Clip with constant bounds, BatchNormalization.
#include <cfloat>

#include "backends/opencl/cl_execution.h"
#include "ops/activation.h"

namespace osprey::opencl {

std::vector<int> broadcastStrides(const Shape& shape, size_t rank) {
  std::vector<int> strides(rank, 0);
  int64_t s = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t d = shape.size() - 1 - i;
    strides[rank - 1 - i] = shape[d] == 1 ? 0 : static_cast<int>(s);
    s *= shape[d];
  }
  return strides;
}

namespace {

// Unary op codes: the fused-activation kinds (1..10, Swish among them) plus the math ops of
// elementwise.cl, numbered from 20.
enum UnaryCode { kExp = 20, kLog, kSqrt, kReciprocal, kNeg, kAbs, kErf };

class UnaryExecution : public CLExecution {
 public:
  UnaryExecution(OpenCLBackend* b, int code, float a, float bb) : CLExecution(b), code_(code), a_(a), b_(bb) {}
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    return kernel_.create(cl(), "elementwise", "unary", {in[0], out[0]});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const int64_t n = out[0]->elements();
    kernel_.begin().mem(ref(in[0])).mem(ref(out[0])).arg(cl_int(n)).arg(cl_int(code_)).arg(a_).arg(b_);
    return kernel_.launch(cl(), n);
  }

 private:
  int code_;
  float a_, b_;
  Kernel kernel_;
};

enum BinaryCode { kAdd = 0, kSub, kMul, kDiv, kPow, kMax, kMin, kPRelu, kMean };

class BinaryExecution : public CLExecution {
 public:
  BinaryExecution(OpenCLBackend* b, int code) : CLExecution(b), code_(code) {}
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const Shape& y = out[0]->shape;
    flat_ = in[0]->shape == y && (in[1]->shape == y || in[1]->elements() == 1);
    if (y.size() > 6) return Status::unsupported("OpenCL binary op: rank " + std::to_string(y.size()) + " > 6");
    return kernel_.create(cl(), "elementwise", flat_ ? "binary_flat" : "binary", {in[0], in[1], out[0]});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const int64_t n = out[0]->elements();
    kernel_.begin().mem(ref(in[0])).mem(ref(in[1])).mem(ref(out[0])).arg(cl_int(n));
    if (flat_) {
      kernel_.arg(cl_int(in[1]->elements() == 1 && in[1]->shape != out[0]->shape)).arg(cl_int(code_));
      return kernel_.launch(cl(), n);
    }
    cl_int8 shape, sa, sb;
    const Shape& y = out[0]->shape;
    std::vector<int> a = broadcastStrides(in[0]->shape, 6), b = broadcastStrides(in[1]->shape, 6);
    for (int d = 0; d < 8; ++d) {
      const int64_t lead = 6 - static_cast<int64_t>(y.size());
      shape.s[d] = d < 6 ? (d < lead ? 1 : static_cast<cl_int>(y[d - lead])) : 1;
      sa.s[d] = d < 6 ? a[d] : 0;
      sb.s[d] = d < 6 ? b[d] : 0;
    }
    kernel_.arg(shape).arg(sa).arg(sb).arg(cl_int(code_));
    return kernel_.launch(cl(), n);
  }

 private:
  int code_;
  bool flat_ = false;
  Kernel kernel_;
};

class BatchNormExecution : public CLExecution {
 public:
  BatchNormExecution(OpenCLBackend* b, float eps) : CLExecution(b), eps_(eps) {}
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    return kernel_.create(cl(), "elementwise", "batch_norm", {in[0], in[1], in[2], in[3], in[4], out[0]});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const Shape& x = in[0]->shape;
    const int64_t n = in[0]->elements(), C = x[1], inner = n / std::max<int64_t>(x[0] * C, 1);
    kernel_.begin().mem(ref(in[0])).mem(ref(in[1])).mem(ref(in[2])).mem(ref(in[3])).mem(ref(in[4])).mem(ref(out[0]));
    kernel_.arg(cl_int(n)).arg(cl_int(C)).arg(cl_int(inner)).arg(eps_);
    return kernel_.launch(cl(), n);
  }

 private:
  float eps_;
  Kernel kernel_;
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

std::unique_ptr<Execution> createUnary(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                       const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.empty() || !in[0] || out.size() != 1 || !out[0]) return nullptr;
  if (in[0]->dtype != DataType::Float32 || out[0]->dtype != DataType::Float32) return nullptr;
  FusedActivation act;
  if (op.type == OpType::Clip) {
    float lo = 0, hi = 0;
    if (!constantScalar(in, 1, -FLT_MAX, &lo) || !constantScalar(in, 2, FLT_MAX, &hi)) return nullptr;
    // numpy.clip order: min first, then max (min > max gives max everywhere).
    return std::make_unique<UnaryExecution>(b, static_cast<int>(FusedActivation::Kind::Clip), lo, hi);
  }
  if (FusedActivation::fromOp(*op.node, &act))
    return std::make_unique<UnaryExecution>(b, static_cast<int>(act.kind), act.a, act.b);
  int code = 0;
  switch (op.type) {
    case OpType::Exp:
      code = kExp;
      break;
    case OpType::Log:
      code = kLog;
      break;
    case OpType::Sqrt:
      code = kSqrt;
      break;
    case OpType::Reciprocal:
      code = kReciprocal;
      break;
    case OpType::Neg:
      code = kNeg;
      break;
    case OpType::Abs:
      code = kAbs;
      break;
    case OpType::Erf:
      code = kErf;
      break;
    default:
      return nullptr;
  }
  return std::make_unique<UnaryExecution>(b, code, 0.f, 0.f);
}

std::unique_ptr<Execution> createBinary(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (in.size() != 2 || !in[0] || !in[1] || out.size() != 1 || !allFloat(in) || !allFloat(out)) return nullptr;
  if (out[0]->shape.size() > 6) return nullptr;
  int code = 0;
  switch (op.type) {
    case OpType::Add:
    case OpType::Sum:
      code = kAdd;
      break;
    case OpType::Sub:
      code = kSub;
      break;
    case OpType::Mul:
      code = kMul;
      break;
    case OpType::Div:
      code = kDiv;
      break;
    case OpType::Pow:
      code = kPow;
      break;
    case OpType::Max:
      code = kMax;
      break;
    case OpType::Min:
      code = kMin;
      break;
    case OpType::PRelu:
      code = kPRelu;
      break;
    case OpType::Mean:
      code = kMean;
      break;
    default:
      return nullptr;
  }
  return std::make_unique<BinaryExecution>(b, code);
}

std::unique_ptr<Execution> createBatchNorm(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
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

}  // namespace osprey::opencl
