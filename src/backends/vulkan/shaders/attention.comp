#version 450
#extension GL_GOOGLE_include_directive : require
// Attention, the encoder form: one workgroup per (batch, query head, query row). The row's
// scores live in shared memory (at most MAX_KEYS keys; the creator declines longer rows): scores,
// then the maximum, then exp and its sum, then each output channel as a weighted sum of V rows.
// Keys all masked give zero probabilities and so a zero row, as the reference kernel does.
#include "common.glsl"
#include "group_reduce.glsl"
#define MAX_KEYS 3072  // with the rest, under the 16 KB of shared memory every device has
#define MAX_DIM 256
#define MASK_NONE 0
#define MASK_ADDITIVE 1
#define MASK_BOOL 2
layout(std430, binding = 0) readonly buffer Q { SFLOAT q[]; };
layout(std430, binding = 1) readonly buffer K { SFLOAT k[]; };
layout(std430, binding = 2) readonly buffer V { SFLOAT v[]; };
layout(std430, binding = 3) readonly buffer MaskF { SFLOAT maskF[]; };
layout(std430, binding = 4) readonly buffer MaskB { uint maskB[]; };  // the same buffer, as bytes
layout(std430, binding = 5) writeonly buffer O { SFLOAT o[]; };
layout(push_constant) uniform Push {
  uint qOff, kOff, vOff, maskOff, oOff;
  int qHeads, kvHeads, qSeq, kvSeq, dim, vDim;
  int qs[3], ks[3], vs[3], os[3];  // element strides of batch, head, sequence
  int ms[4];                       // mask strides over (batch, head, query, key); 0 broadcasts
  int maskLength, flags;           // flags: mask kind | causal << 2
  float scale;
} p;

shared float scores[MAX_KEYS];
shared float qrow[MAX_DIM];

void main() {
  const int lid = int(gl_LocalInvocationID.x);
  const int row = int(gl_WorkGroupID.x), head = int(gl_WorkGroupID.y), batch = int(gl_WorkGroupID.z);
  const int kvHead = head / (p.qHeads / p.kvHeads);
  const int maskKind = p.flags & 3;
  const bool causal = (p.flags & 4) != 0;
  const int qBase = int(p.qOff) + batch * p.qs[0] + head * p.qs[1] + row * p.qs[2];
  for (int d = lid; d < p.dim; d += GROUP) qrow[d] = float(q[qBase + d]);
  barrier();
  const int kBase = int(p.kOff) + batch * p.ks[0] + kvHead * p.ks[1];
  const int maskRow = batch * p.ms[0] + head * p.ms[1] + row * p.ms[2];
  float localMax = NEG_INF;
  for (int j = lid; j < p.kvSeq; j += GROUP) {
    float s = NEG_INF;
    if (!(causal && j > row) && (maskKind == MASK_NONE || j < p.maskLength)) {
      const int kRow = kBase + j * p.ks[2];
      float dot = 0.0;
      for (int d = 0; d < p.dim; ++d) dot += qrow[d] * float(k[kRow + d]);
      s = dot * p.scale;
      const int m = maskRow + j * p.ms[3];
      if (maskKind == MASK_ADDITIVE) s += float(maskF[p.maskOff + m]);
      if (maskKind == MASK_BOOL) {
        const uint at = p.maskOff + uint(m);
        if (((maskB[at >> 2] >> (8u * (at & 3u))) & 0xffu) == 0u) s = NEG_INF;
      }
    }
    scores[j] = s;
    localMax = max(localMax, s);
  }
  const float rowMax = groupReduce(localMax, true);
  float localSum = 0.0;
  for (int j = lid; j < p.kvSeq; j += GROUP) {
    const float e = rowMax == NEG_INF ? 0.0 : exp(scores[j] - rowMax);
    scores[j] = e;
    localSum += e;
  }
  const float sum = groupReduce(localSum, false);
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  const int vBase = int(p.vOff) + batch * p.vs[0] + kvHead * p.vs[1];
  const int oBase = int(p.oOff) + batch * p.os[0] + head * p.os[1] + row * p.os[2];
  for (int d = lid; d < p.vDim; d += GROUP) {
    float acc = 0.0;
    for (int j = 0; j < p.kvSeq; ++j) acc += scores[j] * float(v[vBase + j * p.vs[2] + d]);
    o[oBase + d] = SFLOAT(acc * inv);
  }
}
