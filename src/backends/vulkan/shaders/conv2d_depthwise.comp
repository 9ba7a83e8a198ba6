#version 450
#extension GL_GOOGLE_include_directive : require
// Depthwise 2-D convolution (group == C, OC = C * multiplier; GROUPS holds the multiplier): one
// invocation per output.
#include "common.glsl"
#include "conv_params.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;

void main() {
  const uint i = flat_index();
  if (i >= uint(p.N * OUT_C * OUT_PIXELS)) return;
  const int pixel = int(i) % OUT_PIXELS, oc = (int(i) / OUT_PIXELS) % OUT_C, n = int(i) / (OUT_PIXELS * OUT_C);
  const int c = oc / GROUPS, oh = pixel / OUT_W, ow = pixel % OUT_W;
  const int xBase = int(p.xOff) + (n * IN_C + c) * IN_PIXELS, wBase = int(p.wOff) + oc * TAPS;
  float acc = 0.0;
  for (int kh = 0; kh < K_H; ++kh) {
    const int ih = oh * S_H - P_H + kh * D_H;
    if (ih < 0 || ih >= IN_H) continue;
    for (int kw = 0; kw < K_W; ++kw) {
      const int iw = ow * S_W - P_W + kw * D_W;
      if (iw >= 0 && iw < IN_W) acc += float(x[xBase + ih * IN_W + iw]) * float(w[wBase + kh * K_W + kw]);
    }
  }
  y[p.yOff + (n * OUT_C + oc) * OUT_PIXELS + pixel] = SFLOAT(finish(acc, n, oc, pixel));
}
