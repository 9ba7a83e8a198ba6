#version 450
#extension GL_GOOGLE_include_directive : require
// Raster's fill value (Pad's constant) written over the whole output before its regions.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push { uint yOff, n; float value; } p;

void main() {
  const uint i = flat_index();
  if (i < p.n) y[p.yOff + i] = SFLOAT(p.value);
}
