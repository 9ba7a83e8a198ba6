// Resize of the last two dims (nearest and linear) through per-axis tap tables made on the
// host: output row oh reads input rows rows[2*oh] and rows[2*oh+1] with weight rowW[oh] on the
// second (0 for nearest); the same for columns. The weights come as float and blend in REAL.
__kernel void resize2d(IN(0) x, int xOff, OUT(1) y, int yOff, __global const int* taps,
                       __global const float* weights, int4 sizes /* H, W, OH, OW */, int planes) {
  const int ow = get_global_id(0), oh = get_global_id(1), p = get_global_id(2);
  const int H = sizes.s0, W = sizes.s1, OH = sizes.s2, OW = sizes.s3;
  if (ow >= OW || oh >= OH || p >= planes) return;
  const int r0 = taps[2 * oh], r1 = taps[2 * oh + 1];
  const int c0 = taps[2 * OH + 2 * ow], c1 = taps[2 * OH + 2 * ow + 1];
  const REAL wr = (REAL)weights[oh], wc = (REAL)weights[OH + ow];
  const int xb = p * H * W;
  const REAL top = ((REAL)1 - wc) * LD(0, x, xOff, xb + r0 * W + c0) + wc * LD(0, x, xOff, xb + r0 * W + c1);
  const REAL bottom = ((REAL)1 - wc) * LD(0, x, xOff, xb + r1 * W + c0) + wc * LD(0, x, xOff, xb + r1 * W + c1);
  ST(1, y, yOff, (p * OH + oh) * OW + ow, ((REAL)1 - wr) * top + wr * bottom);
}
