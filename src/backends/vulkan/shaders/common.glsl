// Shared by every shader: the fused activations (codes = FusedActivation::Kind), erf (GLSL has
// none), special float values and the flat index of elementwise dispatches.
#ifndef OSPREY_COMMON_GLSL
#define OSPREY_COMMON_GLSL

// Float tensors are stored as SFLOAT: float, or float16_t when compiled with -DOSP_FP16
// (BackendConfig precision Low, on devices with storageBuffer16BitAccess). Arithmetic is fp32:
// reads widen with float(), writes narrow with SFLOAT(), so the fp16 variant needs only 16-bit
// storage. The exception is AFLOAT, the type the GEMM-shaped shaders multiply in: float16_t in
// their _fp16a variant (-DOSP_FP16_MATH, devices with shaderFloat16), where they sum at most 16
// products in fp16 before adding them into fp32 accumulators.
#ifdef OSP_FP16
#extension GL_EXT_shader_16bit_storage : require
#define SFLOAT float16_t
#else
#define SFLOAT float
#endif
#ifdef OSP_FP16_MATH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define AFLOAT float16_t
#define AVEC4 f16vec4
#else
#define AFLOAT float
#define AVEC4 vec4
#endif

#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_CLIP 2
#define ACT_LEAKY_RELU 3
#define ACT_SIGMOID 4
#define ACT_HARD_SIGMOID 5
#define ACT_HARD_SWISH 6
#define ACT_TANH 7
#define ACT_ELU 8
#define ACT_GELU 9
#define ACT_SWISH 10

#define NEG_INF uintBitsToFloat(0xff800000u)
#define POS_INF uintBitsToFloat(0x7f800000u)
#define QUIET_NAN uintBitsToFloat(0x7fc00000u)
#define LOWEST_FLOAT (-3.402823466e+38)

// Abramowitz & Stegun 7.1.26: absolute error below 1.5e-7.
float erf_approx(float x) {
  const float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  const float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(x) * (1.0 - poly * exp(-x * x));
}

// tanh through exp overflows to inf/inf = NaN past |x| ~ 44 on some drivers; it is +-1 there.
float safe_tanh(float x) { return tanh(clamp(x, -15.0, 15.0)); }

float activate(float x, int kind, float a, float b) {
  switch (kind) {
    case ACT_RELU: return max(x, 0.0);
    case ACT_CLIP: return min(max(x, a), b);
    case ACT_LEAKY_RELU: return x >= 0.0 ? x : a * x;
    case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ACT_HARD_SIGMOID: return max(0.0, min(1.0, a * x + b));
    case ACT_HARD_SWISH: return x * max(0.0, min(1.0, x / 6.0 + 0.5));
    case ACT_TANH: return safe_tanh(x);
    case ACT_ELU: return x >= 0.0 ? x : a * (exp(x) - 1.0);
    case ACT_GELU:
      if (a != 0.0) return 0.5 * x * (1.0 + safe_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1.0 + erf_approx(x * 0.7071067811865476));
    case ACT_SWISH: return x / (1.0 + exp(-a * x));
    default: return x;
  }
}

// Elementwise shaders: 256 invocations per group over a 2-D grid of groups (elementwiseGroups).
#define ELEMENTWISE_GROUP 256
uint flat_index() { return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * ELEMENTWISE_GROUP; }

#endif
