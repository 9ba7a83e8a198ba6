// Activations that the converter fuses into Conv, ConvTranspose, Gemm and MatMul. The fused op
// carries attributes `activation` (an op name: Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid,
// HardSwish, Tanh, Elu, Gelu, Swish) and `activation_params` (floats: Clip min/max, LeakyRelu
// alpha, HardSigmoid alpha/beta, Elu alpha, Gelu approximate as 0/1, Swish alpha).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "core/graph.h"

namespace osprey {

struct FusedActivation {
  enum class Kind { None, Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Elu, Gelu, Swish };
  Kind kind = Kind::None;
  float a = 0.f, b = 0.f;

  static Status fromNode(const Node& node, FusedActivation* out);
  // The activation an op of `type` (with attributes of `node`) would be, if fusable.
  static bool fromOp(const Node& node, FusedActivation* out);
  void store(Node& node) const;

  float apply(float x) const {
    switch (kind) {
      case Kind::None: return x;
      case Kind::Relu: return x > 0.f ? x : 0.f;
      case Kind::Clip: return x < a ? a : (x > b ? b : x);
      case Kind::LeakyRelu: return x >= 0.f ? x : a * x;
      case Kind::Sigmoid: return 1.f / (1.f + std::exp(-x));
      case Kind::HardSigmoid: return std::fmax(0.f, std::fmin(1.f, a * x + b));
      case Kind::HardSwish: return x * std::fmax(0.f, std::fmin(1.f, x / 6.f + 0.5f));
      case Kind::Tanh: return std::tanh(x);
      case Kind::Elu: return x >= 0.f ? x : a * (std::exp(x) - 1.f);
      case Kind::Gelu:
        if (a != 0.f) return 0.5f * x * (1.f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
        return 0.5f * x * (1.f + std::erf(x * 0.7071067811865476f));
      case Kind::Swish: return x / (1.f + std::exp(-a * x));
    }
    return x;
  }
};

}  // namespace osprey
