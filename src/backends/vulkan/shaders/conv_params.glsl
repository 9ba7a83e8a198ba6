// The push constants of both convolution shaders (ConvPush in kernels/conv.cpp), and their
// tensors: x [N, C, H, W], w [OC, C / group, KH, KW], bias [OC], z (residual) and y [N, OC, OH, OW].
#ifndef OSPREY_CONV_PARAMS_GLSL
#define OSPREY_CONV_PARAMS_GLSL
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) readonly buffer W { SFLOAT w[]; };
layout(std430, binding = 2) readonly buffer Bias { SFLOAT bias[]; };
layout(std430, binding = 3) readonly buffer Z { SFLOAT z[]; };
layout(std430, binding = 4) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push {
  uint xOff, wOff, biasOff, zOff, yOff;
  int C, H, W, group;  // group: the channel multiplier OC / C in the depthwise shader
  int OC, OH, OW, N;
  int KH, KW, SH, SW;
  int DH, DW, PH, PW;
  int hasBias, hasZ, act;
  float actA, actB;
} p;

// Bias, the residual and the activation, in the order the reference applies them.
float finish(float acc, int n, int oc, int pixel) {
  if (p.hasBias != 0) acc += float(bias[p.biasOff + oc]);
  const int at = (n * p.OC + oc) * p.OH * p.OW + pixel;
  if (p.hasZ != 0) acc += float(z[p.zOff + at]);
  return activate(acc, p.act, p.actA, p.actB);
}
#endif
