// What the convolution shaders (conv2d_gemm, conv2d_gemm_wide, conv2d_depthwise,
// conv_transpose2d) take, as shaders/conv_params.glsl declares it: the geometry as
// specialization constants, the element offsets, batch and activation parameters as push
// constants.
#pragma once
#include <cstdint>
#include <vector>

#include "osprey/types.h"
#include "ops/activation.h"
#include "ops/window.h"

namespace osprey::vulkan {

struct ConvPush {
  uint32_t xOff, wOff, biasOff, zOff, yOff, partialOff;
  int32_t N;
  float actA, actB;
};

// The specialization constants 0..18 of conv_params.glsl. `groups`: the group count (the
// channel multiplier for the depthwise shader); `splits`: conv2d_gemm.comp's slices of the reduction.
inline std::vector<int32_t> convSpecialization(const Shape& x, const Shape& y, const Window& w, int64_t groups,
                                               bool hasBias, bool hasZ, const FusedActivation& act,
                                               int64_t splits = 1) {
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  return {i32(x[1]),          i32(x[2]),          i32(x[3]),           i32(groups),
          i32(y[1]),          i32(y[2]),          i32(y[3]),           i32(w.kernel[1]),
          i32(w.kernel[2]),   i32(w.stride[1]),   i32(w.stride[2]),    i32(w.dilation[1]),
          i32(w.dilation[2]), i32(w.padBegin[1]), i32(w.padBegin[2]),  hasBias,
          hasZ,               static_cast<int32_t>(act.kind), i32(splits)};
}

}  // namespace osprey::vulkan
