// Plain types shared by the math kernels (.cu, compiled by nvcc without Osprey headers) and the
// executions (.cpp) that launch them.
#pragma once
#include <cstdint>

namespace osprey::cuda_math {

// Storage type of the floating-point tensors a kernel reads and writes.
enum class ElementType : int { F32 = 0, F16 = 1, BF16 = 2 };

// A fused activation (src/ops/activation.h); `kind` has the values of FusedActivation::Kind,
// which math_types.cpp checks at compile time.
enum class ActivationKind : int { None, Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Elu, Gelu, Swish };
struct DeviceActivation {
  ActivationKind kind = ActivationKind::None;
  float a = 0.f, b = 0.f;
};

}  // namespace osprey::cuda_math
