#version 450
#extension GL_GOOGLE_include_directive : require
// ReduceSum / Mean / Max / Min over the axis of an (outer, axis, inner) view (one contiguous run
// of reduced axes): one invocation per output.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push { uint xOff, yOff; int outer, axis, inner, op; } p;

#define R_SUM 0
#define R_MEAN 1
#define R_MAX 2
#define R_MIN 3

void main() {
  const uint line = flat_index();
  if (line >= uint(p.outer * p.inner)) return;
  const int o = int(line) / p.inner, i = int(line) % p.inner;
  const int base = int(p.xOff) + o * p.axis * p.inner + i;
  float acc = p.op == R_MAX ? NEG_INF : p.op == R_MIN ? POS_INF : 0.0;
  for (int k = 0; k < p.axis; ++k) {
    const float v = float(x[base + k * p.inner]);
    acc = p.op == R_MAX ? max(acc, v) : p.op == R_MIN ? min(acc, v) : acc + v;
  }
  if (p.op == R_MEAN) acc /= float(p.axis);
  y[p.yOff + line] = SFLOAT(acc);
}
