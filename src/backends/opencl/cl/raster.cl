// Raster: strided 3-D region copies (geometry lowering of Transpose, Concat, Slice, Reshape ...).
// int4 views: s0..s2 the strides (outer to inner), s3 the offset, all in elements.
__kernel void raster_region(IN(0) src, int srcOff, OUT(1) dst, int dstOff, int4 srcView,
                            int4 dstView, int4 size) {
  const int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  if (x >= size.s2 || y >= size.s1 || z >= size.s0) return;
  const int s = srcView.s3 + z * srcView.s0 + y * srcView.s1 + x * srcView.s2;
  const int d = dstView.s3 + z * dstView.s0 + y * dstView.s1 + x * dstView.s2;
  ST(1, dst, dstOff, d, LD(0, src, srcOff, s));
}

__kernel void fill(OUT(0) dst, int dstOff, int n, float value) {
  const int i = get_global_id(0);
  if (i < n) ST(0, dst, dstOff, i, value);
}
