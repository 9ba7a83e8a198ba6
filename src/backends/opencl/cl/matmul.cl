// Batched matrix product Y[b] = act(alpha * A[b] x B[b] + beta * C) with arbitrary element
// strides, so transposes and broadcast batches need no copies. 16x16 tiles in local memory;
// launched with a 16x16 work group over (N, M, batch) rounded up to whole tiles.
// Tiles, products and the epilogue are REAL; the accumulator stays float (long K, as in conv.cl).
#define TILE 16

__kernel void matmul(IN(0) a, int aOff, IN(1) b, int bOff, IN(2) c, int cOff, int hasC, OUT(3) y, int yOff,
                     int4 mnkBatch /* M, N, K, batch */,
                     int4 aStrides /* batch, row (m), col (k), 0 */, int4 bStrides /* batch, row (k), col (n), 0 */,
                     int4 cStrides /* batch, row, col, 0 */, float alpha, float beta, int act, float actA, float actB) {
  const int col = get_global_id(0), row = get_global_id(1), batch = get_global_id(2);
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int M = mnkBatch.s0, N = mnkBatch.s1, K = mnkBatch.s2;
  __local REAL tileA[TILE][TILE + 1];
  __local REAL tileB[TILE][TILE + 1];
  const int ab = batch * aStrides.s0, bb = batch * bStrides.s0;
  const int tileRow = get_group_id(1) * TILE, tileCol = get_group_id(0) * TILE;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // Work item (lx, ly) loads A[tileRow + ly][k0 + lx] and B[k0 + ly][tileCol + lx].
    const int ar = tileRow + ly, ak = k0 + lx, bk = k0 + ly, bc = tileCol + lx;
    tileA[ly][lx] = ar < M && ak < K ? LD(0, a, aOff, ab + ar * aStrides.s1 + ak * aStrides.s2) : (REAL)0;
    tileB[ly][lx] = bk < K && bc < N ? LD(1, b, bOff, bb + bk * bStrides.s1 + bc * bStrides.s2) : (REAL)0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) acc += tileA[ly][k] * tileB[k][lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row >= M || col >= N || batch >= mnkBatch.s3) return;
  REAL v = (REAL)(alpha * acc);
  if (hasC) v += (REAL)beta * LD(2, c, cOff, batch * cStrides.s0 + row * cStrides.s1 + col * cStrides.s2);
  ST(3, y, yOff, (batch * M + row) * N + col, activate(v, act, actA, actB));
}
