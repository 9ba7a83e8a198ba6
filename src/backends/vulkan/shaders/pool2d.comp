#version 450
#extension GL_GOOGLE_include_directive : require
// 2-D max and average pooling, one invocation per output. Windows are clipped to the input;
// the average divides by the valid count, or with count_include_pad by the part of the window
// inside the explicitly padded input (not the extra room ceil_mode adds).
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push {
  uint xOff, yOff;
  int H, W, padEndH, padEndW;
  int OH, OW, rows;
  int KH, KW, SH, SW;
  int DH, DW, PH, PW;
  int isMax, countIncludePad;
} p;

void main() {
  const uint i = flat_index();
  if (i >= uint(p.rows * p.OH * p.OW)) return;
  const int ow = int(i) % p.OW, oh = (int(i) / p.OW) % p.OH, row = int(i) / (p.OW * p.OH);
  const int ih0 = oh * p.SH - p.PH, iw0 = ow * p.SW - p.PW;
  const int xBase = int(p.xOff) + row * p.H * p.W;
  float acc = p.isMax != 0 ? NEG_INF : 0.0;
  int valid = 0, padded = 0;
  for (int kh = 0; kh < p.KH; ++kh) {
    const int ih = ih0 + kh * p.DH;
    const bool inPadH = ih >= -p.PH && ih < p.H + p.padEndH;
    for (int kw = 0; kw < p.KW; ++kw) {
      const int iw = iw0 + kw * p.DW;
      if (inPadH && iw >= -p.PW && iw < p.W + p.padEndW) ++padded;
      if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
      const float v = float(x[xBase + ih * p.W + iw]);
      acc = p.isMax != 0 ? max(acc, v) : acc + v;
      ++valid;
    }
  }
  // As the reference: an all-padding window gives the lowest float (max) or NaN (average).
  if (p.isMax != 0 && valid == 0) acc = LOWEST_FLOAT;
  if (p.isMax == 0) {
    const int count = p.countIncludePad != 0 ? padded : valid;
    acc = count != 0 ? acc / float(count) : QUIET_NAN;
  }
  y[p.yOff + i] = SFLOAT(acc);
}
