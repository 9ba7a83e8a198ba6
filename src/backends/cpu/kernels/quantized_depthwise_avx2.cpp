// The portable depthwise lanes kernel (quantized_depthwise_lanes.inl) compiled for AVX2 + FMA.
#include "backends/cpu/kernels/quantized_depthwise.h"

namespace osprey {

namespace {
#include "backends/cpu/kernels/quantized_depthwise_lanes.inl"
}  // namespace

void qdwconv_lanes16__avx2(const QDepthwiseLanesArgs& args, const float* x, const float* w, const int32_t* bias,
                           const float* scale, const QGemmOutputStage& stage, uint8_t* y) {
  depthwiseLanesPortable(args, x, w, bias, scale, stage, y);
}

}  // namespace osprey
