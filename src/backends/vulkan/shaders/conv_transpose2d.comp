#version 450
#extension GL_GOOGLE_include_directive : require
// 2-D ConvTranspose, one invocation per output: y[n, oc, oh, ow] gathers every (input channel of
// oc's group, kh, kw) whose scatter lands on (oh, ow): ih * SH - PH + kh * DH == oh. W is
// [C, OC / group, KH, KW]; `group` is the group count; bias and activation as for Conv.
#include "common.glsl"
#include "conv_params.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;

void main() {
  const uint i = flat_index();
  const int P = p.OH * p.OW;
  if (i >= uint(p.N * p.OC * P)) return;
  const int pixel = int(i) % P, oc = (int(i) / P) % p.OC, n = int(i) / (P * p.OC);
  const int oh = pixel / p.OW, ow = pixel % p.OW;
  const int groupOut = p.OC / p.group, groupIn = p.C / p.group;
  const int g = oc / groupOut, ocg = oc % groupOut;
  float acc = 0.0;
  for (int kh = 0; kh < p.KH; ++kh) {
    const int th = oh + p.PH - kh * p.DH;
    if (th < 0 || th % p.SH != 0 || th / p.SH >= p.H) continue;
    const int ih = th / p.SH;
    for (int kw = 0; kw < p.KW; ++kw) {
      const int tw = ow + p.PW - kw * p.DW;
      if (tw < 0 || tw % p.SW != 0 || tw / p.SW >= p.W) continue;
      const int iw = tw / p.SW;
      for (int cg = 0; cg < groupIn; ++cg) {
        const int c = g * groupIn + cg;
        acc += float(x[p.xOff + ((n * p.C + c) * p.H + ih) * p.W + iw]) *
               float(w[p.wOff + ((c * groupOut + ocg) * p.KH + kh) * p.KW + kw]);
      }
    }
  }
  y[p.yOff + (n * p.OC + oc) * P + pixel] = SFLOAT(finish(acc, n, oc, pixel));
}
