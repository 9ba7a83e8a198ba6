// Prepended to every program. FLOAT is the storage type of float tensors: half when the
// backend stores fp16 (-DUSE_FP16), float otherwise. REAL is the compute type: half with
// -DUSE_FP16_MATH (set only together with USE_FP16, and only where the device has cl_khr_fp16),
// float otherwise. Without half math LOAD widens and STORE narrows (vload_half /
// vstore_half_rte, core OpenCL, so fp16 storage works even where cl_khr_fp16 is missing); with it
// they are plain half accesses. One kernel text serves all three: constants are cast to REAL so
// that half arithmetic stays half (a float operand would promote it) and builtins like fmax
// find one overload. Long sums stay float in every mode (see the kernels).
#ifdef USE_FP16_MATH
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef half FLOAT;
typedef half REAL;
#define LOAD(p, i) ((p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = (FLOAT)(v))
#elif defined(USE_FP16)
typedef half FLOAT;
typedef float REAL;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((float)(v), (i), (p))
#else
typedef float FLOAT;
typedef float REAL;
#define LOAD(p, i) ((float)(p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = (FLOAT)(v))
#endif

// Tensor storage, per argument slot k (0..5): a buffer, or with -DIMGk an image2d (CL_R,
// float or half texels) holding element i at texel (i % width, i / width), the width a power
// of two. Kernels are written once: IN(k) / OUT(k) declare the argument, LD(k, p, off, i) /
// ST(k, p, off, i, v) read and write element i. `off` is the tensor's element offset in its
// buffer, or log2 of its image's width (a mask and a shift, no division, per access).
// An image is read-only or write-only in a kernel, so a tensor is never both (in-place ops
// copy their input first).
#define IN(k) IN_##k
#define OUT(k) OUT_##k
#define LD(k, p, off, i) LD_##k(p, off, i)
#define ST(k, p, off, i, v) ST_##k(p, off, i, v)
#define LD_BUF(p, off, i) LOAD(p, (off) + (i))
#define ST_BUF(p, off, i, v) STORE(p, (off) + (i), v)
#define LD_IMG(p, w, i) ldImage(p, w, i)
#define ST_IMG(p, w, i, v) stImage(p, w, i, v)
#ifdef USE_IMAGE  // set with any IMGk: image code only where the device has images
__constant sampler_t imageSampler = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;
#ifdef USE_FP16_MATH  // half texels read and written as half (cl_khr_fp16), no float round trip
inline REAL ldImage(__read_only image2d_t p, int shift, int i) {
  return read_imageh(p, imageSampler, (int2)(i & ((1 << shift) - 1), i >> shift)).x;
}
inline void stImage(__write_only image2d_t p, int shift, int i, REAL v) {
  write_imageh(p, (int2)(i & ((1 << shift) - 1), i >> shift), (half4)(v, 0, 0, 0));
}
#else
inline float ldImage(__read_only image2d_t p, int shift, int i) {
  return read_imagef(p, imageSampler, (int2)(i & ((1 << shift) - 1), i >> shift)).x;
}
inline void stImage(__write_only image2d_t p, int shift, int i, float v) {
  write_imagef(p, (int2)(i & ((1 << shift) - 1), i >> shift), (float4)(v, 0.f, 0.f, 0.f));
}
#endif
#endif
#ifdef IMG0
#define IN_0 __read_only image2d_t
#define OUT_0 __write_only image2d_t
#define LD_0 LD_IMG
#define ST_0 ST_IMG
#else
#define IN_0 __global const FLOAT*
#define OUT_0 __global FLOAT*
#define LD_0 LD_BUF
#define ST_0 ST_BUF
#endif
#ifdef IMG1
#define IN_1 __read_only image2d_t
#define OUT_1 __write_only image2d_t
#define LD_1 LD_IMG
#define ST_1 ST_IMG
#else
#define IN_1 __global const FLOAT*
#define OUT_1 __global FLOAT*
#define LD_1 LD_BUF
#define ST_1 ST_BUF
#endif
#ifdef IMG2
#define IN_2 __read_only image2d_t
#define OUT_2 __write_only image2d_t
#define LD_2 LD_IMG
#define ST_2 ST_IMG
#else
#define IN_2 __global const FLOAT*
#define OUT_2 __global FLOAT*
#define LD_2 LD_BUF
#define ST_2 ST_BUF
#endif
#ifdef IMG3
#define IN_3 __read_only image2d_t
#define OUT_3 __write_only image2d_t
#define LD_3 LD_IMG
#define ST_3 ST_IMG
#else
#define IN_3 __global const FLOAT*
#define OUT_3 __global FLOAT*
#define LD_3 LD_BUF
#define ST_3 ST_BUF
#endif
#ifdef IMG4
#define IN_4 __read_only image2d_t
#define OUT_4 __write_only image2d_t
#define LD_4 LD_IMG
#define ST_4 ST_IMG
#else
#define IN_4 __global const FLOAT*
#define OUT_4 __global FLOAT*
#define LD_4 LD_BUF
#define ST_4 ST_BUF
#endif
#ifdef IMG5
#define IN_5 __read_only image2d_t
#define OUT_5 __write_only image2d_t
#define LD_5 LD_IMG
#define ST_5 ST_IMG
#else
#define IN_5 __global const FLOAT*
#define OUT_5 __global FLOAT*
#define LD_5 LD_BUF
#define ST_5 ST_BUF
#endif

// Fused activations, numbered as FusedActivation::Kind (src/ops/activation.h).
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

// In REAL: half under half math, so a, b are cast once and every constant is REAL.
inline REAL activate(REAL x, int kind, float actA, float actB) {
  const REAL a = (REAL)actA, b = (REAL)actB;
  switch (kind) {
    case ACT_RELU: return fmax(x, (REAL)0);
    case ACT_CLIP: return fmin(fmax(x, a), b);
    case ACT_LEAKY_RELU: return x >= (REAL)0 ? x : a * x;
    case ACT_SIGMOID: return (REAL)1 / ((REAL)1 + exp(-x));
    case ACT_HARD_SIGMOID: return fmax((REAL)0, fmin((REAL)1, a * x + b));
    case ACT_HARD_SWISH: return x * fmax((REAL)0, fmin((REAL)1, x / (REAL)6 + (REAL)0.5f));
    case ACT_TANH: return tanh(x);
    case ACT_ELU: return x >= (REAL)0 ? x : a * (exp(x) - (REAL)1);
    case ACT_GELU:
      if (actA != 0.f)
        return (REAL)0.5f * x * ((REAL)1 + tanh((REAL)0.7978845608028654f * (x + (REAL)0.044715f * x * x * x)));
      return (REAL)0.5f * x * ((REAL)1 + erf(x * (REAL)0.7071067811865476f));
    case ACT_SWISH: return x / ((REAL)1 + exp(-a * x));
    default: return x;
  }
}
