// 2-D convolution on NCHW tensors as an implicit GEMM per (image, group):
//   Y[oc][p] = sum_k W[oc][k] * X'[k][p],  k = (c, kh, kw) over the group's input channels,
// where X' (im2col of the input) is never stored: tiles of it are gathered straight from X,
// with zeros for padding. Weights OIHW are already W[oc][k] row-major. 16x16 tiles in local
// memory, launched with 16x16 work groups over (pixels, output channels per group, N * group).
// `pointwise` (1x1, stride 1, no padding) reads X' = X directly. Every kernel adds the optional
// residual Z (Y's shape; `hasRes`) before the activation: Y = act(conv(X, W) + B + Z).
// Tiles, products and the epilogue are REAL; the GEMM accumulators stay float even under half
// math: K reaches thousands (4608 in resnet50's last 3x3 layers), and a half sum that long loses
// about log2(K) of its 11 bits, while a half product costs no more than storing its inputs in
// half already did.
#define TILE 16

__kernel void conv2d_gemm(IN(0) x, int xOff, IN(1) w, int wOff, IN(2) bias, int biasOff, int hasBias,
                          IN(3) res, int resOff, int hasRes, OUT(4) y, int yOff, int4 inShape /* C, H, W, group */,
                          int4 outShape /* OC, OH, OW, N */, int4 kernelStride /* KH, KW, SH, SW */,
                          int4 dilationPad /* DH, DW, PH, PW */, int pointwise, int act, float actA, float actB) {
  const int C = inShape.s0, H = inShape.s1, W = inShape.s2, group = inShape.s3;
  const int OC = outShape.s0, OH = outShape.s1, OW = outShape.s2;
  const int KH = kernelStride.s0, KW = kernelStride.s1, taps = KH * KW;
  const int M = OC / group, Cg = C / group, K = Cg * taps, P = OH * OW;
  const int z = get_global_id(2), n = z / group, g = z % group;
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int tileRow = get_group_id(1) * TILE, tileCol = get_group_id(0) * TILE;
  __local REAL tileA[TILE][TILE + 1];
  __local REAL tileB[TILE][TILE + 1];
  const int xb = (n * C + g * Cg) * H * W, wb = g * M * K;
  // The pixel this work item gathers for tileB is fixed across k: precompute its origin.
  const int bp = tileCol + lx;
  const int boh = bp / OW, bow = bp % OW;
  const int ih0 = boh * kernelStride.s2 - dilationPad.s2, iw0 = bow * kernelStride.s3 - dilationPad.s3;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    const int ar = tileRow + ly, ak = k0 + lx;
    tileA[ly][lx] = ar < M && ak < K ? LD(1, w, wOff, wb + ar * K + ak) : (REAL)0;
    const int bk = k0 + ly;
    REAL v = 0;
    if (bk < K && bp < P) {
      if (pointwise) {
        v = LD(0, x, xOff, xb + bk * P + bp);
      } else {
        const int c = bk / taps, r = bk % taps, kh = r / KW, kw = r % KW;
        const int ih = ih0 + kh * dilationPad.s0, iw = iw0 + kw * dilationPad.s1;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = LD(0, x, xOff, xb + (c * H + ih) * W + iw);
      }
    }
    tileB[ly][lx] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) acc += tileA[ly][k] * tileB[k][lx];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int row = tileRow + ly, col = tileCol + lx;
  if (row >= M || col >= P || n >= outShape.s3) return;
  const int oc = g * M + row, yi = (n * OC + oc) * P + col;
  const REAL v = (REAL)acc + (hasBias ? LD(2, bias, biasOff, oc) : (REAL)0) + (hasRes ? LD(3, res, resOff, yi) : (REAL)0);
  ST(4, y, yOff, yi, activate(v, act, actA, actB));
}

// The same implicit GEMM with 64x64 output tiles: each of the 16x16 work items accumulates a
// 4x4 block (rows ty + 16 i, columns tx + 16 j), so every value loaded into local memory feeds
// four multiply-adds. Chosen for layers with at least 64 output channels and 64 pixels.
#define BIG 64
__kernel void conv2d_gemm_64(IN(0) x, int xOff, IN(1) w, int wOff, IN(2) bias, int biasOff, int hasBias,
                             IN(3) res, int resOff, int hasRes, OUT(4) y, int yOff, int4 inShape, int4 outShape,
                             int4 kernelStride, int4 dilationPad, int pointwise, int act, float actA, float actB) {
  const int C = inShape.s0, H = inShape.s1, W = inShape.s2, group = inShape.s3;
  const int OC = outShape.s0, OH = outShape.s1, OW = outShape.s2;
  const int KH = kernelStride.s0, KW = kernelStride.s1, taps = KH * KW;
  const int M = OC / group, Cg = C / group, K = Cg * taps, P = OH * OW;
  const int z = get_group_id(2), n = z / group, g = z % group;
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * TILE + tx;
  const int m0 = get_group_id(1) * BIG, p0 = get_group_id(0) * BIG;
  __local REAL As[TILE][BIG + 1];
  __local REAL Bs[TILE][BIG + 1];
  const int xb = (n * C + g * Cg) * H * W, wb = g * M * K;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    for (int l = 0; l < 4; ++l) {
      const int idx = tid + l * TILE * TILE;
      const int am = idx / TILE, ak = idx % TILE;
      As[ak][am] = m0 + am < M && k0 + ak < K ? LD(1, w, wOff, wb + (m0 + am) * K + k0 + ak) : (REAL)0;
      const int bk = idx / BIG, bn = idx % BIG;
      const int k = k0 + bk, p = p0 + bn;
      REAL v = 0;
      if (k < K && p < P) {
        if (pointwise) {
          v = LD(0, x, xOff, xb + k * P + p);
        } else {
          const int c = k / taps, r = k % taps, kh = r / KW, kw = r % KW;
          const int ih = (p / OW) * kernelStride.s2 - dilationPad.s2 + kh * dilationPad.s0;
          const int iw = (p % OW) * kernelStride.s3 - dilationPad.s3 + kw * dilationPad.s1;
          if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = LD(0, x, xOff, xb + (c * H + ih) * W + iw);
        }
      }
      Bs[bk][bn] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) {
      REAL a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = As[k][ty + TILE * i];
      for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + TILE * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (n >= outShape.s3) return;
  for (int i = 0; i < 4; ++i) {
    const int row = m0 + ty + TILE * i;
    if (row >= M) break;
    const int oc = g * M + row;
    const REAL b0 = hasBias ? LD(2, bias, biasOff, oc) : (REAL)0;
    for (int j = 0; j < 4; ++j) {
      const int col = p0 + tx + TILE * j, yi = (n * OC + oc) * P + col;
      if (col >= P) continue;
      const REAL v = (REAL)acc[i][j] + b0 + (hasRes ? LD(3, res, resOff, yi) : (REAL)0);
      ST(4, y, yOff, yi, activate(v, act, actA, actB));
    }
  }
}

// Depthwise (one input channel per group, OC = C * multiplier): one output element per item.
// The sum runs over one window (KH * KW taps), short enough for a REAL accumulator.
__kernel void conv2d_depthwise(IN(0) x, int xOff, IN(1) w, int wOff,
                               IN(2) bias, int biasOff, int hasBias, IN(3) res, int resOff, int hasRes,
                               OUT(4) y, int yOff,
                               int4 inShape /* C, H, W, multiplier */, int4 outShape /* OC, OH, OW, N */,
                               int4 kernelStride, int4 dilationPad, int act, float actA, float actB) {
  const int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
  const int C = inShape.s0, H = inShape.s1, W = inShape.s2, mult = inShape.s3;
  const int OC = outShape.s0, OH = outShape.s1, OW = outShape.s2, N = outShape.s3;
  if (ow >= OW || oh >= OH || z >= N * OC) return;
  const int n = z / OC, oc = z % OC, c = oc / mult;
  const int KH = kernelStride.s0, KW = kernelStride.s1;
  const int ih0 = oh * kernelStride.s2 - dilationPad.s2, iw0 = ow * kernelStride.s3 - dilationPad.s3;
  const int xb = (n * C + c) * H * W, wb = oc * KH * KW;
  REAL acc = hasBias ? LD(2, bias, biasOff, oc) : (REAL)0;
  for (int kh = 0; kh < KH; ++kh) {
    const int ih = ih0 + kh * dilationPad.s0;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      const int iw = iw0 + kw * dilationPad.s1;
      if (iw < 0 || iw >= W) continue;
      acc += LD(0, x, xOff, xb + ih * W + iw) * LD(1, w, wOff, wb + kh * KW + kw);
    }
  }
  const int yi = ((n * OC + oc) * OH + oh) * OW + ow;
  if (hasRes) acc += LD(3, res, resOff, yi);
  ST(4, y, yOff, yi, activate(acc, act, actA, actB));
}
