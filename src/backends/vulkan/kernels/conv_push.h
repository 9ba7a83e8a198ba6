// The push constants of the convolution shaders (conv2d_gemm, conv2d_gemm_wide,
// conv2d_depthwise, conv_transpose2d), as shaders/conv_params.glsl declares them.
#pragma once
#include <cstdint>

namespace osprey::vulkan {

struct ConvPush {
  uint32_t xOff, wOff, biasOff, zOff, yOff;
  int32_t C, H, W, group;
  int32_t OC, OH, OW, N;
  int32_t KH, KW, SH, SW;
  int32_t DH, DW, PH, PW;
  int32_t hasBias, hasZ, act;
  float actA, actB;
};

}  // namespace osprey::vulkan
