// What the convolution shaders share (kernels/conv_push.h on the host): the geometry as
// specialization constants, so that each convolution gets a pipeline whose index arithmetic
// (divisions by the output width, the taps, the strides) is folded at pipeline creation, and
// whose bias / residual / activation branches are resolved there too; the tensors' element
// offsets, the batch and the activation's parameters as push constants. Tensors: x [N, C, H, W],
// w [OC, C / group, KH, KW] (ConvTranspose: [C, OC / group, KH, KW]), bias [OC], z (residual)
// and y [N, OC, OH, OW].
#ifndef OSPREY_CONV_PARAMS_GLSL
#define OSPREY_CONV_PARAMS_GLSL
layout(std430, binding = 0) readonly buffer XBuf { SFLOAT x[]; };
layout(std430, binding = 1) readonly buffer WBuf { SFLOAT w[]; };
layout(std430, binding = 2) readonly buffer BiasBuf { SFLOAT bias[]; };
layout(std430, binding = 3) readonly buffer ZBuf { SFLOAT z[]; };
layout(std430, binding = 4) writeonly buffer YBuf { SFLOAT y[]; };
layout(constant_id = 0) const int IN_C = 1;
layout(constant_id = 1) const int IN_H = 1;
layout(constant_id = 2) const int IN_W = 1;
// The group count; the depthwise shader's channel multiplier OC / C.
layout(constant_id = 3) const int GROUPS = 1;
layout(constant_id = 4) const int OUT_C = 1;
layout(constant_id = 5) const int OUT_H = 1;
layout(constant_id = 6) const int OUT_W = 1;
layout(constant_id = 7) const int K_H = 1;
layout(constant_id = 8) const int K_W = 1;
layout(constant_id = 9) const int S_H = 1;
layout(constant_id = 10) const int S_W = 1;
layout(constant_id = 11) const int D_H = 1;
layout(constant_id = 12) const int D_W = 1;
layout(constant_id = 13) const int P_H = 0;
layout(constant_id = 14) const int P_W = 0;
layout(constant_id = 15) const int HAS_BIAS = 0;
layout(constant_id = 16) const int HAS_Z = 0;
layout(constant_id = 17) const int ACT = 0;
// conv2d_gemm.comp's split of the reduction into SPLITS slices, each summed by workgroups of
// their own into the fp32 partials that conv_split_sum.comp adds up and finishes.
layout(constant_id = 18) const int SPLITS = 1;
layout(push_constant) uniform Push {
  uint xOff, wOff, biasOff, zOff, yOff, partialOff;
  int N;
  float actA, actB;
} p;

const int OUT_PIXELS = OUT_H * OUT_W;
const int IN_PIXELS = IN_H * IN_W;
const int TAPS = K_H * K_W;
const int GROUP_OUT = OUT_C / GROUPS, GROUP_IN = IN_C / GROUPS;
// The implicit GEMM's reduction: (input channel of the group, kh, kw).
const int REDUCTION = GROUP_IN * TAPS;
// 1x1, stride 1, no padding: the im2col matrix is x itself.
const bool POINTWISE = K_H == 1 && K_W == 1 && S_H == 1 && S_W == 1 && P_H == 0 && P_W == 0;

// Element (reduction step k, output pixel) of the im2col matrix of the image and group whose
// first input channel starts at xBase; zero in the padding.
float im2col(int xBase, int k, int pixel) {
  if (POINTWISE) return float(x[xBase + k * IN_PIXELS + pixel]);
  const int c = k / TAPS, r = k % TAPS, oh = pixel / OUT_W, ow = pixel % OUT_W;
  const int ih = oh * S_H - P_H + (r / K_W) * D_H, iw = ow * S_W - P_W + (r % K_W) * D_W;
  return ih >= 0 && ih < IN_H && iw >= 0 && iw < IN_W ? float(x[xBase + (c * IN_H + ih) * IN_W + iw]) : 0.0;
}

// The GEMM shaders' tile elements: the weight of output channel `oc` at reduction step k (w as
// an [OC, REDUCTION] matrix) and the im2col element (k, pixel); zero outside the output
// (`inside` false) or past the reduction (or its slice), which ends at kEnd.
float weightTile(bool inside, int oc, int k, int kEnd) { return inside && k < kEnd ? float(w[p.wOff + oc * REDUCTION + k]) : 0.0; }
float im2colTile(bool inside, int xBase, int k, int pixel, int kEnd) {
  return inside && k < kEnd ? im2col(xBase, k, pixel) : 0.0;
}

// Bias, the residual and the activation, in the order the reference applies them.
float finish(float acc, int n, int oc, int pixel) {
  if (HAS_BIAS != 0) acc += float(bias[p.biasOff + oc]);
  if (HAS_Z != 0) acc += float(z[p.zOff + (n * OUT_C + oc) * OUT_PIXELS + pixel]);
  return activate(acc, ACT, p.actA, p.actB);
}
#endif
