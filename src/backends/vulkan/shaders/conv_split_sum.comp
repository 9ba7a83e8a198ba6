#version 450
#extension GL_GOOGLE_include_directive : require
// The second pass of a convolution whose reduction conv2d_gemm.comp split into SPLITS slices:
// one invocation per output adds the slices' fp32 partial sums, then bias, residual and activation.
#include "common.glsl"
#include "conv_params.glsl"
layout(local_size_x = ELEMENTWISE_GROUP) in;
layout(std430, binding = 5) readonly buffer PartialBuf { float partial[]; };

void main() {
  const uint i = flat_index();
  const int outputs = p.N * OUT_C * OUT_PIXELS;
  if (i >= uint(outputs)) return;
  const int pixel = int(i) % OUT_PIXELS, oc = (int(i) / OUT_PIXELS) % OUT_C, n = int(i) / (OUT_PIXELS * OUT_C);
  float acc = 0.0;
  for (int s = 0; s < SPLITS; ++s) acc += partial[p.partialOff + s * outputs + int(i)];
  y[p.yOff + i] = SFLOAT(finish(acc, n, oc, pixel));
}
