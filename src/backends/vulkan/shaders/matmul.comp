#version 450
#extension GL_GOOGLE_include_directive : require
// Batched strided GEMM: Y = act(alpha * A x B + beta * C), 16x16 output tiles with the A and B
// tiles staged in shared memory. Strides (batch, row, col) let one shader read transposed
// operands (Gemm's transA/transB) and broadcast batches or C.
#include "common.glsl"
#define TILE 16
layout(local_size_x = TILE, local_size_y = TILE) in;
layout(std430, binding = 0) readonly buffer A { SFLOAT a[]; };
layout(std430, binding = 1) readonly buffer B { SFLOAT b[]; };
layout(std430, binding = 2) readonly buffer C { SFLOAT c[]; };
layout(std430, binding = 3) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push {
  uint aOff, bOff, cOff, yOff;
  int M, N, K, batch;
  int aStride[3], bStride[3], cStride[3];
  int hasC;
  float alpha, beta;
  int act;
  float actA, actB;
} p;

shared AFLOAT tileA[TILE][TILE + 1];
shared AFLOAT tileB[TILE][TILE + 1];

void main() {
  const int lx = int(gl_LocalInvocationID.x), ly = int(gl_LocalInvocationID.y);
  const int col = int(gl_WorkGroupID.x) * TILE + lx, row = int(gl_WorkGroupID.y) * TILE + ly;
  const int n = int(gl_WorkGroupID.z);
  const int aBase = n * p.aStride[0], bBase = n * p.bStride[0];
  float acc = 0.0;
  for (int k0 = 0; k0 < p.K; k0 += TILE) {
    const int ka = k0 + lx, kb = k0 + ly;
    tileA[ly][lx] = AFLOAT(row < p.M && ka < p.K ? float(a[p.aOff + aBase + row * p.aStride[1] + ka * p.aStride[2]]) : 0.0);
    tileB[ly][lx] = AFLOAT(kb < p.K && col < p.N ? float(b[p.bOff + bBase + kb * p.bStride[1] + col * p.bStride[2]]) : 0.0);
    barrier();
    AFLOAT part = AFLOAT(0.0);
    for (int k = 0; k < TILE; ++k) part += tileA[ly][k] * tileB[k][lx];
    acc += float(part);
    barrier();
  }
  if (row >= p.M || col >= p.N) return;
  float v = p.alpha * acc;
  if (p.hasC != 0) v += p.beta * float(c[p.cOff + n * p.cStride[0] + row * p.cStride[1] + col * p.cStride[2]]);
  y[p.yOff + (n * p.M + row) * p.N + col] = SFLOAT(activate(v, p.act, p.actA, p.actB));
}
