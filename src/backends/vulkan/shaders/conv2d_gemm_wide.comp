#version 450
#extension GL_GOOGLE_include_directive : require
// conv2d_gemm.comp's implicit GEMM with 64x64 output tiles: 256 invocations, each computing a
// 4x4 block of (output channel, pixel), so that each value read from shared memory feeds four
// multiply-adds instead of one. Chosen where the output has enough such tiles to fill the GPU.
#include "common.glsl"
#include "conv_params.glsl"
#define TILE 64
#define KTILE 16
layout(local_size_x = 16, local_size_y = 16) in;

shared float tileW[KTILE][TILE];  // [reduction][output channel]
shared float tileX[KTILE][TILE];  // [reduction][pixel]

void main() {
  const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
  const int t = ly * 16 + lx;
  const int pixel0 = int(gl_WorkGroupID.x) * TILE, m0 = int(gl_WorkGroupID.y) * TILE;
  const int n = int(gl_WorkGroupID.z) / p.group, g = int(gl_WorkGroupID.z) % p.group;
  const int groupOut = p.OC / p.group, groupIn = p.C / p.group;
  const int K = groupIn * p.KH * p.KW, P = p.OH * p.OW, taps = p.KH * p.KW;
  const int xBase = (n * p.C + g * groupIn) * p.H * p.W;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (int k0 = 0; k0 < K; k0 += KTILE) {
    for (int e = 0; e < 4; ++e) {
      // W: consecutive invocations read consecutive reduction steps of one output channel.
      const int wi = t + e * 256, wk = wi % KTILE, wm = wi / KTILE;
      const int m = m0 + wm, k = k0 + wk;
      tileW[wk][wm] = m < groupOut && k < K ? float(w[p.wOff + (g * groupOut + m) * K + k]) : 0.0;
      // X: consecutive invocations gather consecutive output pixels of one reduction step.
      const int xi = t + e * 256, xk = xi / TILE, xp = xi % TILE;
      const int pixel = pixel0 + xp, kx = k0 + xk;
      float v = 0.0;
      if (kx < K && pixel < P) {
        const int c = kx / taps, r = kx % taps, oh = pixel / p.OW, ow = pixel % p.OW;
        const int ih = oh * p.SH - p.PH + (r / p.KW) * p.DH, iw = ow * p.SW - p.PW + (r % p.KW) * p.DW;
        if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v = float(x[p.xOff + xBase + (c * p.H + ih) * p.W + iw]);
      }
      tileX[xk][xp] = v;
    }
    barrier();
    for (int k = 0; k < KTILE; ++k) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = tileW[k][ly * 4 + i];
      for (int j = 0; j < 4; ++j) b[j] = tileX[k][lx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ly * 4 + i;
    if (m >= groupOut) continue;
    const int oc = g * groupOut + m;
    for (int j = 0; j < 4; ++j) {
      const int pixel = pixel0 + lx * 4 + j;
      if (pixel < P) y[p.yOff + (n * p.OC + oc) * P + pixel] = SFLOAT(finish(acc[i][j], n, oc, pixel));
    }
  }
}
