// 2-D max and average pooling on NCHW tensors. Windows are clipped to the input; the average
// divides by the valid count, or with count_include_pad by the part of the window inside the
// explicitly padded input (not the extra room ceil_mode adds). Sums accumulate in float even
// under half math (windows and global planes can be long); max is exact in either type.
__kernel void pool2d(IN(0) x, int xOff, OUT(1) y, int yOff, int4 inShape /* H, W, padEndH, padEndW */,
                     int4 outShape /* OH, OW, N*C, 0 */, int4 kernelStride /* KH, KW, SH, SW */,
                     int4 dilationPad /* DH, DW, PH, PW */, int isMax, int countIncludePad) {
  const int ow = get_global_id(0), oh = get_global_id(1), nc = get_global_id(2);
  const int H = inShape.s0, W = inShape.s1, OH = outShape.s0, OW = outShape.s1;
  if (ow >= OW || oh >= OH || nc >= outShape.s2) return;
  const int ih0 = oh * kernelStride.s2 - dilationPad.s2, iw0 = ow * kernelStride.s3 - dilationPad.s3;
  const int xb = nc * H * W;
  float acc = isMax ? -INFINITY : 0.f;
  int valid = 0, padded = 0;
  for (int kh = 0; kh < kernelStride.s0; ++kh) {
    const int ih = ih0 + kh * dilationPad.s0;
    const bool inPadH = ih >= -dilationPad.s2 && ih < H + inShape.s2;
    for (int kw = 0; kw < kernelStride.s1; ++kw) {
      const int iw = iw0 + kw * dilationPad.s1;
      if (inPadH && iw >= -dilationPad.s3 && iw < W + inShape.s3) ++padded;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      const float v = LD(0, x, xOff, xb + ih * W + iw);
      acc = isMax ? fmax(acc, v) : acc + v;
      ++valid;
    }
  }
  // As the reference: an all-padding window gives the lowest float (max) or NaN (average).
  if (isMax && valid == 0) acc = -FLT_MAX;
  if (!isMax) {
    const int count = countIncludePad ? padded : valid;
    acc = count ? acc / (float)count : NAN;
  }
  ST(1, y, yOff, (nc * OH + oh) * OW + ow, acc);
}

// Global pooling: one work group per (n, c) row reduces `size` elements in local memory.
#define GROUP 64
__kernel void global_pool(IN(0) x, int xOff, OUT(1) y, int yOff, int rows, int size, int isMax) {
  const int row = get_group_id(0), lid = get_local_id(0);
  __local float partial[GROUP];
  if (row >= rows) return;
  const int xb = row * size;
  float acc = isMax ? -INFINITY : 0.f;
  for (int i = lid; i < size; i += GROUP) {
    const float v = LD(0, x, xOff, xb + i);
    acc = isMax ? fmax(acc, v) : acc + v;
  }
  partial[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = GROUP / 2; s > 0; s >>= 1) {
    if (lid < s) partial[lid] = isMax ? fmax(partial[lid], partial[lid + s]) : partial[lid] + partial[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) ST(1, y, yOff, row, isMax ? partial[0] : partial[0] / (float)size);
}
