// The transforms of Winograd F(2x2, 3x3) over one row of tiles, written once and compiled twice
// (like depthwise_kernel.h): into cpu_features.cpp with the baseline flags and into
// kernels_avx2.cpp, where the compiler vectorises the loop over tiles. Internal linkage keeps the
// two compilations apart.
//
// With d a 4x4 input tile and g a 3x3 filter, the 2x2 output is A^T [(G g G^T) . (B^T d B)] A:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  A^T = [1 1 1 0; 0 1 -1 -1],
//   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
// Position p = 4a + b of the 16 transformed values is one GEMM of the convolution.
#pragma once
#include <cstdint>

#include "backends/cpu/kernels/cpu_functions.h"

namespace osprey {
namespace {

// v[p * posStride + t] = (B^T d_t B)[p] for tiles t < tiles, where tile t reads columns
// 2t .. 2t+3 of the four input rows.
inline void winogradInputRow2x3(const float* const* rows, int64_t tiles, float* v, int64_t posStride) {
  const float* __restrict r0 = rows[0];
  const float* __restrict r1 = rows[1];
  const float* __restrict r2 = rows[2];
  const float* __restrict r3 = rows[3];
  for (int64_t t = 0; t < tiles; ++t) {
    float u[4][4];  // B^T d: rows combined, per column k
    for (int k = 0; k < 4; ++k) {
      const float d0 = r0[2 * t + k], d1 = r1[2 * t + k], d2 = r2[2 * t + k], d3 = r3[2 * t + k];
      u[0][k] = d0 - d2;
      u[1][k] = d1 + d2;
      u[2][k] = d2 - d1;
      u[3][k] = d1 - d3;
    }
    for (int a = 0; a < 4; ++a) {
      v[(4 * a + 0) * posStride + t] = u[a][0] - u[a][2];
      v[(4 * a + 1) * posStride + t] = u[a][1] + u[a][2];
      v[(4 * a + 2) * posStride + t] = u[a][2] - u[a][1];
      v[(4 * a + 3) * posStride + t] = u[a][1] - u[a][3];
    }
  }
}

// One output finished by the stage (z: its residual, or null).
inline float winogradFinish(float v, const float* z, int64_t i, const WinogradOutputStage& stage) {
  v += stage.bias;
  if (z) v += z[i];
  v = v < stage.lo ? stage.lo : v;  // NaN stays NaN, as in the GEMM's output stage
  return v > stage.hi ? stage.hi : v;
}

// The stage over n outputs of one row, a loop of its own so that the transform's loop and this
// one both vectorise.
inline void winogradFinishRow(float* __restrict y, const float* __restrict z, int64_t n,
                              const WinogradOutputStage& stage) {
  const float bias = stage.bias, lo = stage.lo, hi = stage.hi;
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i] + bias + (z ? z[i] : 0.f);
    v = v < lo ? lo : v;
    y[i] = v > hi ? hi : v;
  }
}

// The 2x2 outputs of tiles t < tiles from m[p * posStride + t]: y0[2t], y0[2t+1] (first output
// row) and y1[2t], y1[2t+1] (second), then the stage over both rows.
inline void winogradOutputRow2x3(const float* m, int64_t posStride, int64_t tiles, float* __restrict y0,
                                 float* __restrict y1, const WinogradOutputStage& stage) {
  for (int64_t t = 0; t < tiles; ++t) {
    float s[2][4];  // A^T m: rows combined, per column b
    for (int b = 0; b < 4; ++b) {
      const float m0 = m[b * posStride + t], m1 = m[(4 + b) * posStride + t];
      const float m2 = m[(8 + b) * posStride + t], m3 = m[(12 + b) * posStride + t];
      s[0][b] = m0 + m1 + m2;
      s[1][b] = m1 - m2 - m3;
    }
    y0[2 * t] = s[0][0] + s[0][1] + s[0][2];
    y0[2 * t + 1] = s[0][1] - s[0][2] - s[0][3];
    y1[2 * t] = s[1][0] + s[1][1] + s[1][2];
    y1[2 * t + 1] = s[1][1] - s[1][2] - s[1][3];
  }
  winogradFinishRow(y0, stage.z0, 2 * tiles, stage);
  winogradFinishRow(y1, stage.z1, 2 * tiles, stage);
}

// The same output transform over channels, for products laid out with tiles as rows: the 2x2
// outputs of channel c from m[p * posStride + c], into rows y00 (top left), y01, y10, y11.
inline void winogradOutputChannels2x3(const float* m, int64_t posStride, int64_t channels, float* __restrict y00,
                                      float* __restrict y01, float* __restrict y10, float* __restrict y11) {
  for (int64_t c = 0; c < channels; ++c) {
    float s[2][4];
    for (int b = 0; b < 4; ++b) {
      const float m0 = m[b * posStride + c], m1 = m[(4 + b) * posStride + c];
      const float m2 = m[(8 + b) * posStride + c], m3 = m[(12 + b) * posStride + c];
      s[0][b] = m0 + m1 + m2;
      s[1][b] = m1 - m2 - m3;
    }
    y00[c] = s[0][0] + s[0][1] + s[0][2];
    y01[c] = s[0][1] - s[0][2] - s[0][3];
    y10[c] = s[1][0] + s[1][1] + s[1][2];
    y11[c] = s[1][1] - s[1][2] - s[1][3];
  }
}

}  // namespace
}  // namespace osprey
