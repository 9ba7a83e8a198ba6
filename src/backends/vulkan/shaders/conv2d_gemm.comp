#version 450
#extension GL_GOOGLE_include_directive : require
// General 2-D convolution as an implicit GEMM per (image, group): rows are the group's output
// channels, columns the output pixels, and the reduction runs over (input channel, kh, kw);
// the im2col column is gathered straight from x into shared memory, 16x16 tiles.
#include "common.glsl"
#include "conv_params.glsl"
#define TILE 16
layout(local_size_x = TILE, local_size_y = TILE) in;

shared AFLOAT tileW[TILE][TILE + 1];
shared AFLOAT tileX[TILE][TILE + 1];

void main() {
  const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
  const int pixel = int(gl_WorkGroupID.x) * TILE + lx;
  const int m = int(gl_WorkGroupID.y) * TILE + ly;
  const int n = int(gl_WorkGroupID.z) / GROUPS, g = int(gl_WorkGroupID.z) % GROUPS;
  const int oc = g * GROUP_OUT + m;
  const int xBase = int(p.xOff) + (n * IN_C + g * GROUP_IN) * IN_PIXELS;
  // This invocation's share of the next tiles is read from memory before the current tiles are
  // multiplied, so that the reads' latency overlaps the arithmetic.
  const bool rowIn = m < GROUP_OUT, pixelIn = pixel < OUT_PIXELS;
  float nextW = rowIn && lx < REDUCTION ? float(w[p.wOff + oc * REDUCTION + lx]) : 0.0;
  float nextX = pixelIn && ly < REDUCTION ? im2col(xBase, ly, pixel) : 0.0;
  float acc = 0.0;
  for (int k0 = 0; k0 < REDUCTION; k0 += TILE) {
    tileW[ly][lx] = AFLOAT(nextW);  // row ly (output channel), column lx (reduction)
    tileX[ly][lx] = AFLOAT(nextX);  // row ly (reduction), column lx (pixel)
    barrier();
    const int kw_ = k0 + TILE + lx, kx = k0 + TILE + ly;
    nextW = rowIn && kw_ < REDUCTION ? float(w[p.wOff + oc * REDUCTION + kw_]) : 0.0;
    nextX = pixelIn && kx < REDUCTION ? im2col(xBase, kx, pixel) : 0.0;
    AFLOAT part = AFLOAT(0.0);
    for (int k = 0; k < TILE; ++k) part += tileW[ly][k] * tileX[k][lx];
    acc += float(part);
    barrier();
  }
  if (m >= GROUP_OUT || pixel >= OUT_PIXELS) return;
  y[p.yOff + (n * OUT_C + oc) * OUT_PIXELS + pixel] = SFLOAT(finish(acc, n, oc, pixel));
}
