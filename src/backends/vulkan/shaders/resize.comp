#version 450
#extension GL_GOOGLE_include_directive : require
// Resize (every mode and coordinate transformation): the reference's taps (ops/resize.h), made on
// the host per axis, blended per output element over up to 4 axes (leading 1-axes added). The
// table holds, per axis: first[out + 1] (tap ranges), taps as (input index, weight bits), and
// outside[out] (tf_crop_and_resize samples beyond the input take the extrapolation value).
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) readonly buffer Table { uint table[]; };
layout(std430, binding = 2) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push {
  uint xOff, yOff, n;
  int inShape[4], outShape[4];
  int firstOff[4], tapOff[4], outsideOff[4];
  float extrapolation;
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  int o[4];
  int rest = int(i);
  for (int d = 3; d >= 0; --d) {
    o[d] = rest % p.outShape[d];
    rest /= p.outShape[d];
  }
  for (int d = 0; d < 4; ++d)
    if (table[p.outsideOff[d] + o[d]] != 0u) {
      y[p.yOff + i] = SFLOAT(p.extrapolation);
      return;
    }
  int lo[4], hi[4];
  for (int d = 0; d < 4; ++d) {
    lo[d] = int(table[p.firstOff[d] + o[d]]);
    hi[d] = int(table[p.firstOff[d] + o[d] + 1]);
  }
  float acc = 0.0;
  for (int t0 = lo[0]; t0 < hi[0]; ++t0) {
    const int i0 = int(table[p.tapOff[0] + 2 * t0]);
    const float w0 = uintBitsToFloat(table[p.tapOff[0] + 2 * t0 + 1]);
    for (int t1 = lo[1]; t1 < hi[1]; ++t1) {
      const int i1 = i0 * p.inShape[1] + int(table[p.tapOff[1] + 2 * t1]);
      const float w1 = w0 * uintBitsToFloat(table[p.tapOff[1] + 2 * t1 + 1]);
      for (int t2 = lo[2]; t2 < hi[2]; ++t2) {
        const int i2 = i1 * p.inShape[2] + int(table[p.tapOff[2] + 2 * t2]);
        const float w2 = w1 * uintBitsToFloat(table[p.tapOff[2] + 2 * t2 + 1]);
        for (int t3 = lo[3]; t3 < hi[3]; ++t3) {
          const int i3 = i2 * p.inShape[3] + int(table[p.tapOff[3] + 2 * t3]);
          acc += w2 * uintBitsToFloat(table[p.tapOff[3] + 2 * t3 + 1]) * float(x[p.xOff + i3]);
        }
      }
    }
  }
  y[p.yOff + i] = SFLOAT(acc);
}
