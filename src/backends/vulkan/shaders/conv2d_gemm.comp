#version 450
#extension GL_GOOGLE_include_directive : require
// General 2-D convolution as an implicit GEMM per (image, group): rows are the group's output
// channels, columns the output pixels, and the reduction runs over (input channel, kh, kw);
// the im2col column is gathered straight from x into shared memory, 16x16 tiles.
#include "common.glsl"
#include "conv_params.glsl"
#define TILE 16
layout(local_size_x = TILE, local_size_y = TILE) in;

shared float tileW[TILE][TILE + 1];
shared float tileX[TILE][TILE + 1];

void main() {
  const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
  const int pixel = int(gl_WorkGroupID.x) * TILE + lx;
  const int m = int(gl_WorkGroupID.y) * TILE + ly;
  const int n = int(gl_WorkGroupID.z) / p.group, g = int(gl_WorkGroupID.z) % p.group;
  const int groupOut = p.OC / p.group, groupIn = p.C / p.group;
  const int K = groupIn * p.KH * p.KW, P = p.OH * p.OW;
  const int oc = g * groupOut + m;
  // The pixel this invocation loads for the X tile (column lx of the tile, as computed).
  const int oh = pixel / p.OW, ow = pixel % p.OW;
  const int xBase = (n * p.C + g * groupIn) * p.H * p.W;
  float acc = 0.0;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int kw_ = k0 + lx;  // the W tile: row ly (output channel), column lx (reduction)
    tileW[ly][lx] = m < groupOut && kw_ < K ? float(w[p.wOff + oc * K + kw_]) : 0.0;
    const int kx = k0 + ly;  // the X tile: row ly (reduction), column lx (pixel)
    float v = 0.0;
    if (kx < K && pixel < P) {
      const int c = kx / (p.KH * p.KW), r = kx % (p.KH * p.KW);
      const int ih = oh * p.SH - p.PH + (r / p.KW) * p.DH, iw = ow * p.SW - p.PW + (r % p.KW) * p.DW;
      if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) v = float(x[p.xOff + xBase + (c * p.H + ih) * p.W + iw]);
    }
    tileX[ly][lx] = v;
    barrier();
    for (int k = 0; k < TILE; ++k) acc += tileW[ly][k] * tileX[k][lx];
    barrier();
  }
  if (m >= groupOut || pixel >= P) return;
  y[p.yOff + (n * p.OC + oc) * P + pixel] = SFLOAT(finish(acc, n, oc, pixel));
}
