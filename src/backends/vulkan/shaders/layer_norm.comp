#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNormalization over the trailing `size` elements of each row; one workgroup per row
// reduces the mean, then the variance (group_reduce.glsl).
#include "common.glsl"
#include "group_reduce.glsl"
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) readonly buffer Scale { SFLOAT scale[]; };
layout(std430, binding = 2) readonly buffer Bias { SFLOAT bias[]; };
layout(std430, binding = 3) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push { uint xOff, scaleOff, biasOff, yOff; int rows, size, hasBias; float eps; } p;

void main() {
  const int row = int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x), lid = int(gl_LocalInvocationID.x);
  const bool inRange = row < p.rows;
  const int xb = int(p.xOff) + (inRange ? row : 0) * p.size;
  float s = 0.0;
  if (inRange)
    for (int i = lid; i < p.size; i += GROUP) s += float(x[xb + i]);
  const float mean = groupReduce(s, false) / float(p.size);
  float q = 0.0;
  if (inRange)
    for (int i = lid; i < p.size; i += GROUP) {
      const float d = float(x[xb + i]) - mean;
      q += d * d;
    }
  const float inv = inversesqrt(groupReduce(q, false) / float(p.size) + p.eps);
  if (!inRange) return;
  for (int i = lid; i < p.size; i += GROUP) {
    float v = (float(x[xb + i]) - mean) * inv * float(scale[p.scaleOff + i]);
    if (p.hasBias != 0) v += float(bias[p.biasOff + i]);
    y[p.yOff + row * p.size + i] = SFLOAT(v);
  }
}
