#version 450
#extension GL_GOOGLE_include_directive : require
// Gather along one axis: y[outer, j, inner] = data[outer, indices[j] (negative counts from the
// end), inner]. Elements move as `words` words (32-bit; 16-bit float16_t in the fp16 variant),
// indices are int32 or the low word of int64 (idxWords 2). An index outside the axis, which
// the reference reports as an error, writes zeros here: a shader cannot fail.
#include "common.glsl"
#ifdef OSP_FP16
#define WORD float16_t
#else
#define WORD uint
#endif
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer Data { WORD data[]; };
layout(std430, binding = 1) readonly buffer Indices { int indices[]; };
layout(std430, binding = 2) writeonly buffer Y { WORD y[]; };
layout(push_constant) uniform Push {
  uint dataOff, idxOff, yOff, n;  // offsets in words
  int axisDim, inner, count;      // count: the number of indices
  uint idxWords, words;
} p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const int innerAt = int(i) % p.inner, j = (int(i) / p.inner) % p.count, outer = int(i) / (p.inner * p.count);
  int index = indices[p.idxOff + uint(j) * p.idxWords];
  if (index < 0) index += p.axisDim;
  const bool valid = index >= 0 && index < p.axisDim;
  const uint src = (uint(outer * p.axisDim + (valid ? index : 0)) * uint(p.inner) + uint(innerAt)) * p.words;
  for (uint w = 0; w < p.words; ++w) y[p.yOff + i * p.words + w] = valid ? data[p.dataOff + src + w] : WORD(0);
}
