#version 450
#extension GL_GOOGLE_include_directive : require
// A copy across the fp32 stem's edge within the device: float32 <-> the storage type (the fp16
// variant is the one used; the fp32 one is a plain copy). Binding 0 is the float32 tensor.
#include "common.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 0) buffer F32 { float f32[]; };
layout(std430, binding = 1) buffer Stored { SFLOAT stored[]; };
layout(push_constant) uniform Push { uint f32Off, storedOff, n, toStored; } p;

void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  if (p.toStored != 0u)
    stored[p.storedOff + i] = SFLOAT(f32[p.f32Off + i]);
  else
    f32[p.f32Off + i] = float(stored[p.storedOff + i]);
}
