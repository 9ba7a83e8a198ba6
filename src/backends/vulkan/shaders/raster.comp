#version 450
#extension GL_GOOGLE_include_directive : require
// Raster: one strided 3-D region copy (geometry lowering of Transpose, Concat, Slice, Reshape...)
// of elements of `words` words each: 32-bit words, so one shader moves float32, int32 and int64;
// in the fp16 variant, 16-bit words, for float tensors stored as float16_t (words = 1).
#include "common.glsl"
#ifdef OSP_FP16
#define WORD float16_t
#else
#define WORD uint
#endif
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) readonly buffer Src { WORD src[]; };
layout(std430, binding = 1) writeonly buffer Dst { WORD dst[]; };
layout(push_constant) uniform Push {
  uint srcOff, dstOff;             // in words
  int srcStride[3], srcStart;      // in elements, outermost first
  int dstStride[3], dstStart;
  int size[3];
  uint words;
} p;

void main() {
  const uint i = flat_index();
  if (i >= uint(p.size[0] * p.size[1] * p.size[2])) return;
  const int x = int(i) % p.size[2], y = (int(i) / p.size[2]) % p.size[1], z = int(i) / (p.size[2] * p.size[1]);
  const int s = p.srcStart + z * p.srcStride[0] + y * p.srcStride[1] + x * p.srcStride[2];
  const int d = p.dstStart + z * p.dstStride[0] + y * p.dstStride[1] + x * p.dstStride[2];
  for (uint w = 0; w < p.words; ++w) dst[p.dstOff + uint(d) * p.words + w] = src[p.srcOff + uint(s) * p.words + w];
}
