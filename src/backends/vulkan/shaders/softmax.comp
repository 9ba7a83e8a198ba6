#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax / LogSoftmax over the axis of an (outer, axis, inner) view: one invocation per line.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push { uint xOff, yOff; int outer, axis, inner, isLog; } p;

void main() {
  const uint line = flat_index();
  if (line >= uint(p.outer * p.inner)) return;
  const int o = int(line) / p.inner, i = int(line) % p.inner;
  const int base = o * p.axis * p.inner + i;
  float m = NEG_INF;
  for (int k = 0; k < p.axis; ++k) m = max(m, float(x[p.xOff + base + k * p.inner]));
  float sum = 0.0;
  for (int k = 0; k < p.axis; ++k) sum += exp(float(x[p.xOff + base + k * p.inner]) - m);
  const float logSum = log(sum);
  for (int k = 0; k < p.axis; ++k) {
    const float v = float(x[p.xOff + base + k * p.inner]) - m;
    y[p.yOff + base + k * p.inner] = SFLOAT(p.isLog != 0 ? v - logSum : exp(v) / sum);
  }
}
