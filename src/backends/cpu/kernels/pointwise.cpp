// The portable pointwise kernel (each function as the reference kernels compute it) and the
// mapping from ops and fused activations to PointwiseOp.
#include "backends/cpu/kernels/pointwise.h"

#include <cmath>

namespace osprey {

namespace {

float softplus(float v) { return v > 0.f ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }

template <class F>
void map(const float* x, float* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

}  // namespace

void f32_tanh__scalar(const float* x, float* y, int64_t n) { map(x, y, n, [](float v) { return std::tanh(v); }); }

void f32_pointwise__scalar(const Pointwise& p, const float* x, float* y, int64_t n) {
  const float a = p.a, b = p.b;
  switch (p.op) {
    case PointwiseOp::Relu: return map(x, y, n, [](float v) { return v < 0.f ? 0.f : v; });
    case PointwiseOp::Clip: return map(x, y, n, [a, b](float v) { return v < a ? a : (v > b ? b : v); });
    case PointwiseOp::LeakyRelu: return map(x, y, n, [a](float v) { return v < 0.f ? a * v : v; });
    case PointwiseOp::HardSigmoid:
      return map(x, y, n, [a, b](float v) { return std::fmax(0.f, std::fmin(1.f, a * v + b)); });
    case PointwiseOp::HardSwish:
      return map(x, y, n, [](float v) { return v * std::fmax(0.f, std::fmin(1.f, 1.f / 6.f * v + 0.5f)); });
    case PointwiseOp::Abs: return map(x, y, n, [](float v) { return std::fabs(v); });
    case PointwiseOp::Neg: return map(x, y, n, [](float v) { return -v; });
    case PointwiseOp::Sqrt: return map(x, y, n, [](float v) { return std::sqrt(v); });
    case PointwiseOp::Reciprocal: return map(x, y, n, [](float v) { return 1.f / v; });
    case PointwiseOp::Floor: return map(x, y, n, [](float v) { return std::floor(v); });
    case PointwiseOp::Ceil: return map(x, y, n, [](float v) { return std::ceil(v); });
    case PointwiseOp::Round: return map(x, y, n, [](float v) { return std::nearbyint(v); });
    case PointwiseOp::Exp: return map(x, y, n, [](float v) { return std::exp(v); });
    case PointwiseOp::Tanh: return f32_tanh__scalar(x, y, n);
    case PointwiseOp::Elu: return map(x, y, n, [a](float v) { return v < 0.f ? a * std::expm1(v) : v; });
    case PointwiseOp::Selu:
      return map(x, y, n, [a, b](float v) { return v > 0.f ? b * v : b * a * std::expm1(v); });
    case PointwiseOp::Softplus: return map(x, y, n, softplus);
    case PointwiseOp::Mish: return map(x, y, n, [](float v) { return v * std::tanh(softplus(v)); });
  }
}

bool pointwiseOfNode(const Node& node, Pointwise* out) {
  Pointwise p;
  switch (node.type) {
    case OpType::Relu: p.op = PointwiseOp::Relu; break;
    case OpType::LeakyRelu: p.op = PointwiseOp::LeakyRelu, p.a = node.getFloat("alpha", 0.01f); break;
    case OpType::HardSigmoid:
      p.op = PointwiseOp::HardSigmoid, p.a = node.getFloat("alpha", 0.2f), p.b = node.getFloat("beta", 0.5f);
      break;
    case OpType::HardSwish: p.op = PointwiseOp::HardSwish; break;
    case OpType::Abs: p.op = PointwiseOp::Abs; break;
    case OpType::Neg: p.op = PointwiseOp::Neg; break;
    case OpType::Sqrt: p.op = PointwiseOp::Sqrt; break;
    case OpType::Reciprocal: p.op = PointwiseOp::Reciprocal; break;
    case OpType::Floor: p.op = PointwiseOp::Floor; break;
    case OpType::Ceil: p.op = PointwiseOp::Ceil; break;
    case OpType::Round: p.op = PointwiseOp::Round; break;
    case OpType::Exp: p.op = PointwiseOp::Exp; break;
    case OpType::Tanh: p.op = PointwiseOp::Tanh; break;
    case OpType::Elu: p.op = PointwiseOp::Elu, p.a = node.getFloat("alpha", 1.f); break;
    case OpType::Selu:
      p.op = PointwiseOp::Selu, p.a = node.getFloat("alpha", 1.67326319217681884765625f);
      p.b = node.getFloat("gamma", 1.05070102214813232421875f);
      break;
    case OpType::Softplus: p.op = PointwiseOp::Softplus; break;
    case OpType::Mish: p.op = PointwiseOp::Mish; break;
    default: return false;
  }
  *out = p;
  return true;
}

bool pointwiseOfActivation(const FusedActivation& act, Pointwise* out) {
  using Kind = FusedActivation::Kind;
  Pointwise p;
  p.a = act.a, p.b = act.b;
  switch (act.kind) {
    case Kind::Relu: p.op = PointwiseOp::Relu; break;
    case Kind::Clip: p.op = PointwiseOp::Clip; break;
    case Kind::LeakyRelu: p.op = PointwiseOp::LeakyRelu; break;
    case Kind::HardSigmoid: p.op = PointwiseOp::HardSigmoid; break;
    case Kind::HardSwish: p.op = PointwiseOp::HardSwish; break;
    case Kind::Tanh: p.op = PointwiseOp::Tanh; break;
    case Kind::Elu: p.op = PointwiseOp::Elu; break;
    default: return false;
  }
  *out = p;
  return true;
}

}  // namespace osprey
