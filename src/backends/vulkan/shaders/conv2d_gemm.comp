#version 450
#extension GL_GOOGLE_include_directive : require
// General 2-D convolution as an implicit GEMM per (image, group): rows are the group's output
// channels, columns the output pixels, and the reduction runs over (input channel, kh, kw);
// the im2col column is gathered straight from x into shared memory, 16x16 tiles. With SPLITS > 1
// (few tiles, a long reduction) the grid's z runs over (image, group, slice of the reduction) and
// each workgroup writes its sums to `partial` [SPLITS, N, OC, OH * OW] for conv_split_sum.comp.
#include "common.glsl"
#include "conv_params.glsl"
#define TILE 16
layout(local_size_x = TILE, local_size_y = TILE) in;
layout(std430, binding = 5) writeonly buffer PartialBuf { float partial[]; };
// Each slice's reduction steps, a whole number of tiles.
const int SLICE = (REDUCTION + TILE * SPLITS - 1) / (TILE * SPLITS) * TILE;

shared AFLOAT tileW[TILE][TILE + 1];
shared AFLOAT tileX[TILE][TILE + 1];

void main() {
  const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
  const int pixel = int(gl_WorkGroupID.x) * TILE + lx;
  const int m = int(gl_WorkGroupID.y) * TILE + ly;
  const int split = int(gl_WorkGroupID.z) % SPLITS, image = int(gl_WorkGroupID.z) / SPLITS;
  const int n = image / GROUPS, g = image % GROUPS;
  const int oc = g * GROUP_OUT + m;
  const int kBegin = split * SLICE, kEnd = min(REDUCTION, kBegin + SLICE);
  const int xBase = int(p.xOff) + (n * IN_C + g * GROUP_IN) * IN_PIXELS;
  // This invocation's share of the next tiles is read from memory before the current tiles are
  // multiplied, so that the reads' latency overlaps the arithmetic.
  const bool rowIn = m < GROUP_OUT, pixelIn = pixel < OUT_PIXELS;
  // W tile: row ly (output channel), column lx (reduction); X tile: row ly (reduction), column lx.
  float nextW = weightTile(rowIn, oc, kBegin + lx, kEnd), nextX = im2colTile(pixelIn, xBase, kBegin + ly, pixel, kEnd);
  float acc = 0.0;
  for (int k0 = kBegin; k0 < kEnd; k0 += TILE) {
    tileW[ly][lx] = AFLOAT(nextW);
    tileX[ly][lx] = AFLOAT(nextX);
    barrier();
    nextW = weightTile(rowIn, oc, k0 + TILE + lx, kEnd);
    nextX = im2colTile(pixelIn, xBase, k0 + TILE + ly, pixel, kEnd);
    AFLOAT part = AFLOAT(0.0);
    for (int k = 0; k < TILE; ++k) part += tileW[ly][k] * tileX[k][lx];
    acc += float(part);
    barrier();
  }
  if (m >= GROUP_OUT || pixel >= OUT_PIXELS) return;
  const int at = (n * OUT_C + oc) * OUT_PIXELS + pixel;
  if (SPLITS > 1)
    partial[p.partialOff + split * p.N * OUT_C * OUT_PIXELS + at] = acc;
  else
    y[p.yOff + at] = SFLOAT(finish(acc, n, oc, pixel));
}
