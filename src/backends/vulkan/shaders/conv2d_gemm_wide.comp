#version 450
#extension GL_GOOGLE_include_directive : require
// conv2d_gemm.comp's implicit GEMM with 64x64 output tiles: 256 invocations, each computing a
// 4x4 block of (output channel, pixel), so that each value read from shared memory feeds four
// multiply-adds instead of one; the tiles are stored as 4-vectors so that one read brings the
// four values a row (or column) of the block needs. Chosen where the output has enough such
// tiles to fill the GPU.
#include "common.glsl"
#include "conv_params.glsl"
#define TILE 64
#define KTILE 16
layout(local_size_x = 16, local_size_y = 16) in;

shared AVEC4 tileW[KTILE][TILE / 4];  // [reduction][output channel / 4]
shared AVEC4 tileX[KTILE][TILE / 4];  // [reduction][pixel / 4]

// Which elements of the tiles invocation t loads, e = 0..3 in steps of 256 invocations: W row wm
// (output channel), column wk; X row xk (reduction), column xp (pixel). Consecutive invocations
// read consecutive reduction steps of one output channel, and consecutive pixels of one step.
void tileSlot(int t, int e, out int wm, out int wk, out int xk, out int xp) {
  const int i = t + e * 256;
  wm = i / KTILE;
  wk = i % KTILE;
  xk = i / TILE;
  xp = i % TILE;
}

// Invocation t's elements of the tiles that start at reduction step k0.
void fetchTiles(int t, int k0, int m0, int pixel0, int g, int xBase, out float w4[4], out float x4[4]) {
  for (int e = 0; e < 4; ++e) {
    int wm, wk, xk, xp;
    tileSlot(t, e, wm, wk, xk, xp);
    w4[e] = weightTile(m0 + wm < GROUP_OUT, g * GROUP_OUT + m0 + wm, k0 + wk, REDUCTION);
    x4[e] = im2colTile(pixel0 + xp < OUT_PIXELS, xBase, k0 + xk, pixel0 + xp, REDUCTION);
  }
}

void main() {
  const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
  const int t = ly * 16 + lx;
  const int pixel0 = int(gl_WorkGroupID.x) * TILE, m0 = int(gl_WorkGroupID.y) * TILE;
  const int n = int(gl_WorkGroupID.z) / GROUPS, g = int(gl_WorkGroupID.z) % GROUPS;
  const int xBase = int(p.xOff) + (n * IN_C + g * GROUP_IN) * IN_PIXELS;
  // The next tiles are read before the current ones are multiplied.
  float nextW[4], nextX[4];
  fetchTiles(t, 0, m0, pixel0, g, xBase, nextW, nextX);
  vec4 acc[4];  // acc[i][j]: output channel m0 + ly * 4 + i, pixel pixel0 + lx * 4 + j
  for (int i = 0; i < 4; ++i) acc[i] = vec4(0.0);
  for (int k0 = 0; k0 < REDUCTION; k0 += KTILE) {
    for (int e = 0; e < 4; ++e) {
      int wm, wk, xk, xp;
      tileSlot(t, e, wm, wk, xk, xp);
      tileW[wk][wm / 4][wm % 4] = AFLOAT(nextW[e]);
      tileX[xk][xp / 4][xp % 4] = AFLOAT(nextX[e]);
    }
    barrier();
    fetchTiles(t, k0 + KTILE, m0, pixel0, g, xBase, nextW, nextX);
    AVEC4 part[4];
    for (int i = 0; i < 4; ++i) part[i] = AVEC4(0.0);
    for (int k = 0; k < KTILE; ++k) {
      const AVEC4 a = tileW[k][ly], b = tileX[k][lx];
      part[0] += a.x * b;
      part[1] += a.y * b;
      part[2] += a.z * b;
      part[3] += a.w * b;
    }
    for (int i = 0; i < 4; ++i) acc[i] += vec4(part[i]);
    barrier();
  }
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ly * 4 + i;
    if (m >= GROUP_OUT) continue;
    const int oc = g * GROUP_OUT + m;
    for (int j = 0; j < 4; ++j) {
      const int pixel = pixel0 + lx * 4 + j;
      if (pixel < OUT_PIXELS) y[p.yOff + (n * OUT_C + oc) * OUT_PIXELS + pixel] = SFLOAT(finish(acc[i][j], n, oc, pixel));
    }
  }
}
