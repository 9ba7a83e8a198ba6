#version 450
#extension GL_GOOGLE_include_directive : require
// Unary ops: the fused-activation codes of common.glsl, plus the math ops numbered from 20.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer X { SFLOAT x[]; };
layout(std430, binding = 1) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push { uint xOff, yOff, n; int op; float a, b; } p;

#define U_EXP 20
#define U_LOG 21
#define U_SQRT 22
#define U_RECIPROCAL 23
#define U_NEG 24
#define U_ABS 25
#define U_ERF 26

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const float v = float(x[p.xOff + i]);
  float r;
  switch (p.op) {
    case U_EXP: r = exp(v); break;
    // GLSL leaves log(v <= 0) and sqrt(v < 0) undefined; C gives -inf at 0 and NaN below.
    case U_LOG: r = v > 0.0 ? log(v) : v == 0.0 ? uintBitsToFloat(0xff800000u) : uintBitsToFloat(0x7fc00000u); break;
    case U_SQRT: r = v >= 0.0 ? sqrt(v) : uintBitsToFloat(0x7fc00000u); break;
    case U_RECIPROCAL: r = 1.0 / v; break;
    case U_NEG: r = -v; break;
    case U_ABS: r = abs(v); break;
    case U_ERF: r = erf_approx(v); break;
    default: r = activate(v, p.op, p.a, p.b); break;
  }
  y[p.yOff + i] = SFLOAT(r);
}
