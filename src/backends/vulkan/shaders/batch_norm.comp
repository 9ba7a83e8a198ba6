#version 450
#extension GL_GOOGLE_include_directive : require
// BatchNormalization (inference): y = (x - mean) / sqrt(var + eps) * scale + bias per channel.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) readonly buffer Mean { float mean[]; };
layout(std430, binding = 4) readonly buffer Var { float var[]; };
layout(std430, binding = 5) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint xOff, scaleOff, biasOff, meanOff, varOff, yOff; int n, C, inner; float eps; } p;

void main() {
  const uint i = flat_index();
  if (i >= uint(p.n)) return;
  const uint c = (i / uint(p.inner)) % uint(p.C);
  const float v = (x[p.xOff + i] - mean[p.meanOff + c]) / sqrt(var[p.varOff + c] + p.eps);
  y[p.yOff + i] = v * scale[p.scaleOff + c] + bias[p.biasOff + c];
}
