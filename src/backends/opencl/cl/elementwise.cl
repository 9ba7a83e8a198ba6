// Elementwise unary and binary ops. Binary ops broadcast numpy-style: both inputs are read
// through strides over the output's (up to 6-D) index, with stride 0 along broadcast dims.
// Past the fused-activation codes of common.cl (activate() takes those).
#define U_EXP 20
#define U_LOG 21
#define U_SQRT 22
#define U_RECIPROCAL 23
#define U_NEG 24
#define U_ABS 25
#define U_ERF 26

__kernel void unary(IN(0) x, int xOff, OUT(1) y, int yOff, int n, int op, float a, float b) {
  const int i = get_global_id(0);
  if (i >= n) return;
  const REAL v = LD(0, x, xOff, i);
  REAL r;
  switch (op) {
    case U_EXP: r = exp(v); break;
    case U_LOG: r = log(v); break;
    case U_SQRT: r = sqrt(v); break;
    case U_RECIPROCAL: r = (REAL)1 / v; break;
    case U_NEG: r = -v; break;
    case U_ABS: r = fabs(v); break;
    case U_ERF: r = erf(v); break;
    default: r = activate(v, op, a, b); break;
  }
  ST(1, y, yOff, i, r);
}

#define B_ADD 0
#define B_SUB 1
#define B_MUL 2
#define B_DIV 3
#define B_POW 4
#define B_MAX 5
#define B_MIN 6
#define B_PRELU 7
#define B_MEAN 8

inline REAL binaryOp(REAL a, REAL b, int op) {
  switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return pow(a, b);
    case B_MAX: return fmax(a, b);
    case B_MIN: return fmin(a, b);
    case B_PRELU: return a < (REAL)0 ? a * b : a;
    default: return (REAL)0.5f * (a + b);
  }
}

// shape: the output's dims (s0 outermost .. s5 innermost, leading 1s); aStride/bStride: the
// inputs' element strides per output dim (0 where broadcast).
__kernel void binary(IN(0) a, int aOff, IN(1) b, int bOff, OUT(2) y, int yOff,
                     int n, int8 shape, int8 aStride, int8 bStride, int op) {
  const int i = get_global_id(0);
  if (i >= n) return;
  int rest = i, ai = 0, bi = 0, d;
#define STEP(s)                   \
  d = rest % shape.s;             \
  rest /= shape.s;                \
  ai += d * aStride.s;            \
  bi += d * bStride.s;
  STEP(s5) STEP(s4) STEP(s3) STEP(s2) STEP(s1) STEP(s0)
#undef STEP
  ST(2, y, yOff, i, binaryOp(LD(0, a, aOff, ai), LD(1, b, bOff, bi), op));
}

// Same shapes, or b a scalar (bScalar): the common cases without index arithmetic.
__kernel void binary_flat(IN(0) a, int aOff, IN(1) b, int bOff, OUT(2) y, int yOff,
                          int n, int bScalar, int op) {
  const int i = get_global_id(0);
  if (i >= n) return;
  ST(2, y, yOff, i, binaryOp(LD(0, a, aOff, i), LD(1, b, bOff, bScalar ? 0 : i), op));
}

// BatchNormalization (inference): y = (x - mean) / sqrt(var + eps) * scale + bias per channel.
// sqrt(var + eps) is taken in float: eps (1e-5 typically) is below half's smallest normal.
__kernel void batch_norm(IN(0) x, int xOff, IN(1) scale, int scaleOff, IN(2) bias, int biasOff, IN(3) mean,
                         int meanOff, IN(4) var, int varOff, OUT(5) y, int yOff, int n, int C, int inner,
                         float eps) {
  const int i = get_global_id(0);
  if (i >= n) return;
  const int c = (i / inner) % C;
  const REAL v = (LD(0, x, xOff, i) - LD(3, mean, meanOff, c)) / (REAL)sqrt(LD(4, var, varOff, c) + eps);
  ST(5, y, yOff, i, v * LD(1, scale, scaleOff, c) + LD(2, bias, biasOff, c));
}
