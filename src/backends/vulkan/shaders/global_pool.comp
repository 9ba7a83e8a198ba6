#version 450
#extension GL_GOOGLE_include_directive : require
// Global max / average pooling: one workgroup per (n, c) row reduces it (group_reduce.glsl).
#include "common.glsl"
#include "group_reduce.glsl"
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push { uint xOff, yOff; int rows, size, isMax; } p;

void main() {
  const int row = int(gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x), lid = int(gl_LocalInvocationID.x);
  const bool inRange = row < p.rows;
  float acc = p.isMax != 0 ? NEG_INF : 0.0;
  if (inRange)
    for (int i = lid; i < p.size; i += GROUP) {
      const float v = float(x[p.xOff + row * p.size + i]);
      acc = p.isMax != 0 ? max(acc, v) : acc + v;
    }
  const float total = groupReduce(acc, p.isMax != 0);
  if (inRange && lid == 0) y[p.yOff + row] = SFLOAT(p.isMax != 0 ? total : total / float(p.size));
}
