#version 450
#extension GL_GOOGLE_include_directive : require
// 2-D ConvTranspose, one invocation per output: y[n, oc, oh, ow] gathers every (input channel of
// oc's group, kh, kw) whose scatter lands on (oh, ow): ih * SH - PH + kh * DH == oh. W is
// [C, OC / group, KH, KW]; GROUPS is the group count; bias and activation as for Conv.
#include "common.glsl"
#include "conv_params.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;

void main() {
  const uint i = flat_index();
  if (i >= uint(p.N * OUT_C * OUT_PIXELS)) return;
  const int pixel = int(i) % OUT_PIXELS, oc = (int(i) / OUT_PIXELS) % OUT_C, n = int(i) / (OUT_PIXELS * OUT_C);
  const int oh = pixel / OUT_W, ow = pixel % OUT_W;
  const int g = oc / GROUP_OUT, ocg = oc % GROUP_OUT;
  float acc = 0.0;
  for (int kh = 0; kh < K_H; ++kh) {
    const int th = oh + P_H - kh * D_H;
    if (th < 0 || th % S_H != 0 || th / S_H >= IN_H) continue;
    const int ih = th / S_H;
    for (int kw = 0; kw < K_W; ++kw) {
      const int tw = ow + P_W - kw * D_W;
      if (tw < 0 || tw % S_W != 0 || tw / S_W >= IN_W) continue;
      const int iw = tw / S_W;
      for (int cg = 0; cg < GROUP_IN; ++cg) {
        const int c = g * GROUP_IN + cg;
        acc += float(x[p.xOff + ((n * IN_C + c) * IN_H + ih) * IN_W + iw]) *
               float(w[p.wOff + ((c * GROUP_OUT + ocg) * K_H + kh) * K_W + kw]);
      }
    }
  }
  y[p.yOff + (n * OUT_C + oc) * OUT_PIXELS + pixel] = SFLOAT(finish(acc, n, oc, pixel));
}
