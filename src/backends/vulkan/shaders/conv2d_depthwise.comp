#version 450
#extension GL_GOOGLE_include_directive : require
// Depthwise 2-D convolution (group == C, OC = C * multiplier): one invocation per output.
#include "common.glsl"
#include "conv_params.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;

void main() {
  const uint i = flat_index();
  const int P = p.OH * p.OW;
  if (i >= uint(p.N * p.OC * P)) return;
  const int pixel = int(i) % P, oc = (int(i) / P) % p.OC, n = int(i) / (P * p.OC);
  const int c = oc / p.group, oh = pixel / p.OW, ow = pixel % p.OW;
  const int xBase = int(p.xOff) + (n * p.C + c) * p.H * p.W, wBase = int(p.wOff) + oc * p.KH * p.KW;
  float acc = 0.0;
  for (int kh = 0; kh < p.KH; ++kh) {
    const int ih = oh * p.SH - p.PH + kh * p.DH;
    if (ih < 0 || ih >= p.H) continue;
    for (int kw = 0; kw < p.KW; ++kw) {
      const int iw = ow * p.SW - p.PW + kw * p.DW;
      if (iw >= 0 && iw < p.W) acc += float(x[xBase + ih * p.W + iw]) * float(w[wBase + kh * p.KW + kw]);
    }
  }
  y[p.yOff + (n * p.OC + oc) * P + pixel] = SFLOAT(finish(acc, n, oc, pixel));
}
