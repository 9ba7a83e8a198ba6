#version 450
#extension GL_GOOGLE_include_directive : require
// Binary ops with numpy broadcast: both inputs are read through strides over the output's
// (up to 6-D) index, with stride 0 along broadcast dims.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer A { SFLOAT a[]; };
layout(std430, binding = 1) readonly buffer B { SFLOAT b[]; };
layout(std430, binding = 2) writeonly buffer Y { SFLOAT y[]; };
layout(push_constant) uniform Push {
  uint aOff, bOff, yOff, n;
  int op;
  int shape[6];  // outermost first, leading 1s
  int aStride[6], bStride[6];
} p;

#define B_ADD 0
#define B_SUB 1
#define B_MUL 2
#define B_DIV 3
#define B_POW 4
#define B_MAX 5
#define B_MIN 6
#define B_PRELU 7

// C's pow: GLSL's pow(u, v) is undefined for u < 0 (NaN on most drivers: GPT-2's x^3 in its
// GELU) and for u = 0 with v <= 0.
float c_pow(float u, float v) {
  if (v == 0.0) return 1.0;
  const float m = abs(u);
  if (m == 0.0) return v > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  const float r = pow(m, v);
  if (u > 0.0 || isnan(u)) return r;
  if (floor(v) != v) return uintBitsToFloat(0x7fc00000u);  // a negative base to a fractional power
  return mod(v, 2.0) == 1.0 ? -r : r;
}

float binary_op(float u, float v) {
  switch (p.op) {
    case B_ADD: return u + v;
    case B_SUB: return u - v;
    case B_MUL: return u * v;
    case B_DIV: return u / v;
    case B_POW: return c_pow(u, v);
    case B_MAX: return max(u, v);
    case B_MIN: return min(u, v);
    default: return u < 0.0 ? u * v : u;
  }
}

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  int rest = int(i), ai = 0, bi = 0;
  for (int d = 5; d >= 0; --d) {
    const int coord = rest % p.shape[d];
    rest /= p.shape[d];
    ai += coord * p.aStride[d];
    bi += coord * p.bStride[d];
  }
  y[p.yOff + i] = SFLOAT(binary_op(float(a[p.aOff + ai]), float(b[p.bOff + bi])));
}
