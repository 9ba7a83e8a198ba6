#version 450
#extension GL_GOOGLE_include_directive : require
// BatchNormalization (inference): y = (x - mean) / sqrt(var + eps) * scale + bias per channel.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) readonly buffer Scale { SFLOAT scale[]; };
layout(std430, binding = 2) readonly buffer Bias { SFLOAT bias[]; };
layout(std430, binding = 3) readonly buffer Mean { SFLOAT mean[]; };
layout(std430, binding = 4) readonly buffer Var { SFLOAT var[]; };
layout(std430, binding = 5) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push { uint xOff, scaleOff, biasOff, meanOff, varOff, yOff; int n, C, inner; float eps; } p;

void main() {
  const uint i = flat_index();
  if (i >= uint(p.n)) return;
  const uint c = (i / uint(p.inner)) % uint(p.C);
  const float v = (float(x[p.xOff + i]) - float(mean[p.meanOff + c])) / sqrt(float(var[p.varOff + c]) + p.eps);
  y[p.yOff + i] = SFLOAT(v * float(scale[p.scaleOff + c]) + float(bias[p.biasOff + c]));
}
