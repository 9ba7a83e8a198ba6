// Scalar kernels of the NC8HW8 layout ([N][C/8][H][W][8], see cpu_functions.h): the portable
// versions every CPU can run and the tests' second opinion on the vectorised ones.
#include <cmath>

#include "backends/cpu/kernels/cpu_functions.h"

namespace osprey {

namespace {
// Same rule as the vector kernels and FusedActivation's Clip: NaN passes through.
inline float clampTo(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }
}  // namespace

void f32_nc8_conv_6x16__scalar(const Nc8ConvArgs& a, int64_t positions, int64_t outBlocks, const float* x,
                               const float* w, const float* bias, const float* residual, float* y) {
  float acc[6][16] = {};
  for (int64_t t = 0; t < a.taps; ++t) {
    for (int64_t b = 0; b < a.inBlocks; ++b) {
      const float* wb = w + (a.tapWeights[t] * a.inBlocks + b) * 64;
      for (int64_t p = 0; p < positions; ++p) {
        const float* xp = x + p * a.positionStride + a.tapOffsets[t] + b * a.inBlockStride;
        for (int64_t i = 0; i < (b + 1 == a.inBlocks ? a.inLanes : 8); ++i) {
          const float v = xp[i];
          for (int64_t k = 0; k < outBlocks; ++k)
            for (int64_t l = 0; l < 8; ++l) acc[p][k * 8 + l] += v * wb[k * a.weightBlockStride + i * 8 + l];
        }
      }
    }
  }
  for (int64_t k = 0; k < outBlocks; ++k) {
    for (int64_t p = 0; p < positions; ++p) {
      const int64_t at = k * a.outBlockStride + p * 8;
      for (int64_t l = 0; l < 8; ++l) {
        float v = acc[p][k * 8 + l];
        if (bias) v += bias[k * 8 + l];
        if (residual) v += residual[at + l];
        y[at + l] = clampTo(v, a.lo, a.hi);
      }
    }
  }
}

void f32_nc8_dwconv_row__scalar(const BlockedDepthwiseArgs& a, int64_t oh, const float* x, const float* w,
                                const float* bias, const float* residual, float* y) {
  const int64_t ih0 = oh * a.strideH - a.padH;
  for (int64_t ow = 0; ow < a.outW; ++ow) {
    const int64_t iw0 = ow * a.strideW - a.padW;
    float acc[8];
    for (int64_t l = 0; l < 8; ++l) acc[l] = bias[l];
    forEachNc8DepthwiseTap(a, ih0, iw0, [&](int64_t xo, int64_t wo) {
      for (int64_t l = 0; l < 8; ++l) acc[l] += x[xo + l] * w[wo + l];
    });
    for (int64_t l = 0; l < 8; ++l) {
      const float v = acc[l] + (residual ? residual[ow * 8 + l] : 0.f);
      y[ow * 8 + l] = clampTo(v, a.lo, a.hi);
    }
  }
}

void f32_nc8_interleave__scalar(const float* planes, int64_t planeStride, int64_t channels, int64_t rowLength,
                                int64_t rows, int64_t dstRowStride, float* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < rowLength; ++i)
      for (int64_t c = 0; c < 8; ++c)
        dst[8 * (r * dstRowStride + i) + c] = c < channels ? planes[c * planeStride + r * rowLength + i] : 0.f;
}

void f32_nc8_deinterleave__scalar(const float* src, int64_t count, int64_t channels, float* planes,
                                  int64_t planeStride) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < count; ++i) planes[c * planeStride + i] = src[8 * i + c];
}

}  // namespace osprey
