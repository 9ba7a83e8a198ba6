#include "backends/cuda/math/math_util.h"

#include <cstring>

#include "core/dtype.h"

namespace osprey::cuda_math {

#define OSPREY_SAME_KIND(name) \
  static_assert(static_cast<int>(ActivationKind::name) == static_cast<int>(FusedActivation::Kind::name))
OSPREY_SAME_KIND(None);
OSPREY_SAME_KIND(Relu);
OSPREY_SAME_KIND(Clip);
OSPREY_SAME_KIND(LeakyRelu);
OSPREY_SAME_KIND(Sigmoid);
OSPREY_SAME_KIND(HardSigmoid);
OSPREY_SAME_KIND(HardSwish);
OSPREY_SAME_KIND(Tanh);
OSPREY_SAME_KIND(Elu);
OSPREY_SAME_KIND(Gelu);
OSPREY_SAME_KIND(Swish);
#undef OSPREY_SAME_KIND

bool toElementType(DataType dtype, ElementType* out) {
  switch (dtype) {
    case DataType::Float32: *out = ElementType::F32; return true;
    case DataType::Float16: *out = ElementType::F16; return true;
    case DataType::BFloat16: *out = ElementType::BF16; return true;
    default: return false;
  }
}

DeviceActivation toDeviceActivation(const FusedActivation& act) {
  return {static_cast<ActivationKind>(static_cast<int>(act.kind)), act.a, act.b};
}

std::vector<uint8_t> packFloats(const float* src, int64_t count, DataType dtype) {
  std::vector<uint8_t> out(static_cast<size_t>(count) * dataTypeSize(dtype));
  if (dtype == DataType::Float32) {
    if (count) std::memcpy(out.data(), src, out.size());
    return out;
  }
  for (int64_t i = 0; i < count; ++i) storeFromDouble(dtype, out.data(), i, src[i]);
  return out;
}

std::vector<float> filterToChannelsLast(const float* kcrs, int64_t k, int64_t c, int64_t spatial, int64_t paddedC) {
  if (paddedC < c) paddedC = c;
  std::vector<float> krsc(static_cast<size_t>(k * paddedC * spatial), 0.f);
  for (int64_t o = 0; o < k; ++o)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t s = 0; s < spatial; ++s) krsc[(o * spatial + s) * paddedC + i] = kcrs[(o * c + i) * spatial + s];
  return krsc;
}

}  // namespace osprey::cuda_math
