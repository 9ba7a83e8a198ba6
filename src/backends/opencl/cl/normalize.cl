// Softmax / LogSoftmax, LayerNormalization and reductions. Tensors are viewed as
// (outer, axis, inner); one work item per (outer, inner) line, reading along the axis.
// Sums along an axis (softmax's denominator, mean and variance, ReduceSum / ReduceMean) stay float
// under half math, as MNN keeps them: an axis of thousands would overflow or round them away.
// Per-element work (max, x - max, exp, the normalised value) is REAL.
__kernel void softmax(IN(0) x, int xOff, OUT(1) y, int yOff, int outer, int axis, int inner,
                      int isLog) {
  const int i = get_global_id(0), o = get_global_id(1);
  if (i >= inner || o >= outer) return;
  const int base = o * axis * inner + i;
  REAL m = -INFINITY;
  for (int k = 0; k < axis; ++k) m = fmax(m, LD(0, x, xOff, base + k * inner));
  float sum = 0.f;
  for (int k = 0; k < axis; ++k) sum += exp(LD(0, x, xOff, base + k * inner) - m);
  const float logSum = log(sum);
  for (int k = 0; k < axis; ++k) {
    const REAL v = LD(0, x, xOff, base + k * inner) - m;
    ST(1, y, yOff, base + k * inner, isLog ? v - logSum : exp(v) / sum);
  }
}

// LayerNormalization over the trailing `size` elements of each of `rows` rows; scale and bias
// have `size` elements. One work group of GROUP items per row.
#define GROUP 64
__kernel void layer_norm(IN(0) x, int xOff, IN(1) scale, int scaleOff, IN(2) bias, int biasOff, int hasBias,
                         OUT(3) y, int yOff, int rows,
                         int size, float eps) {
  const int row = get_group_id(0), lid = get_local_id(0);
  __local float partial[GROUP];
  __local float stats[2];
  const int xb = row * size;
  float s = 0.f;
  for (int i = lid; i < size; i += GROUP) s += LD(0, x, xOff, xb + i);
  partial[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step >>= 1) {
    if (lid < step) partial[lid] += partial[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) stats[0] = partial[0] / (float)size;
  barrier(CLK_LOCAL_MEM_FENCE);
  const float mean = stats[0];
  float q = 0.f;
  for (int i = lid; i < size; i += GROUP) {
    const float d = LD(0, x, xOff, xb + i) - mean;
    q += d * d;
  }
  partial[lid] = q;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step >>= 1) {
    if (lid < step) partial[lid] += partial[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) stats[1] = rsqrt(partial[0] / (float)size + eps);
  barrier(CLK_LOCAL_MEM_FENCE);
  const float inv = stats[1];
  if (row >= rows) return;
  for (int i = lid; i < size; i += GROUP) {
    REAL v = (REAL)((LD(0, x, xOff, xb + i) - mean) * inv) * LD(1, scale, scaleOff, i);
    if (hasBias) v += LD(2, bias, biasOff, i);
    ST(3, y, yOff, row * size + i, v);
  }
}

#define R_SUM 0
#define R_MEAN 1
#define R_MAX 2
#define R_MIN 3
__kernel void reduce(IN(0) x, int xOff, OUT(1) y, int yOff, int outer, int axis, int inner, int op) {
  const int i = get_global_id(0), o = get_global_id(1);
  if (i >= inner || o >= outer) return;
  const int base = o * axis * inner + i;
  float acc = op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0.f;
  for (int k = 0; k < axis; ++k) {
    const float v = LD(0, x, xOff, base + k * inner);
    acc = op == R_MAX ? fmax(acc, v) : op == R_MIN ? fmin(acc, v) : acc + v;
  }
  if (op == R_MEAN) acc /= (float)axis;
  ST(1, y, yOff, o * inner + i, acc);
}
