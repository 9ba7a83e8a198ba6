// A sum or maximum over the invocations of a workgroup whose size is specialization constant 0
// (a power of two; the default 64 where the host gives none). In the _sg variants (-DOSP_SUBGROUPS,
// devices whose subgroups do arithmetic in compute shaders) each subgroup reduces in registers and
// only its one value goes through shared memory; otherwise a tree in shared memory. Call it from
// uniform control flow: every invocation of the group takes part.
#ifndef OSPREY_GROUP_REDUCE_GLSL
#define OSPREY_GROUP_REDUCE_GLSL
#ifdef OSP_SUBGROUPS
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x_id = 0) in;
layout(local_size_x = 64) in;
#define GROUP int(gl_WorkGroupSize.x)

shared float groupScratch[gl_WorkGroupSize.x];

float groupReduce(float value, bool takeMax) {
#ifdef OSP_SUBGROUPS
  value = takeMax ? subgroupMax(value) : subgroupAdd(value);
  if (subgroupElect()) groupScratch[gl_SubgroupID] = value;
  barrier();
  float total = groupScratch[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) total = takeMax ? max(total, groupScratch[i]) : total + groupScratch[i];
#else
  const int lid = int(gl_LocalInvocationID.x);
  groupScratch[lid] = value;
  barrier();
  for (int s = GROUP / 2; s > 0; s >>= 1) {
    if (lid < s) groupScratch[lid] = takeMax ? max(groupScratch[lid], groupScratch[lid + s]) : groupScratch[lid] + groupScratch[lid + s];
    barrier();
  }
  const float total = groupScratch[0];
#endif
  barrier();  // everyone has read the scratch before it is written again
  return total;
}
#endif
