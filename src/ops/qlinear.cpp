// Integer matrix products and convolutions: MatMulInteger, QLinearMatMul (opset 21),
// ConvInteger and QLinearConv. Operands are uint8 or int8; zero points are subtracted before
// the product, which accumulates exactly in int32 (padding contributes zero after the shift).
// QLinear* requantise: y = saturate(rint(acc * (a_scale * b_scale / y_scale)) + y_zero_point)
// with the multiplier computed in the scales' type and the product in double, as the ONNX
// reference does; QLinearMatMul with requantize = "fixed_point" (TFLite's BATCH_MATMUL) uses
// TFLite's integer multiplier instead (ops/fixed_point_requantize.h). Zero points and scales are
// per tensor, per row of A / per column of B (1-D, or N-D of shape [..., M, 1] / [..., 1, N]),
// or per output channel for W.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/fixed_point_requantize.h"
#include "ops/op_util.h"
#include "ops/window.h"

namespace osprey {

namespace {

bool isByteType(DataType t) { return t == DataType::UInt8 || t == DataType::Int8; }

bool isFloatType(DataType t) {
  return t == DataType::Float32 || t == DataType::Float64 || t == DataType::Float16 || t == DataType::BFloat16;
}

Status requireByte(const TensorView& v, const char* what) {
  if (!isByteType(v.dtype))
    return Status::unsupported(std::string(what) + " has dtype " + dataTypeName(v.dtype) + "; expected uint8 or int8");
  return Status::ok();
}

// The values of t as doubles; zeros at shape time, when the value is not known yet.
std::vector<double> readAll(const TensorView& t) {
  std::vector<double> v(static_cast<size_t>(t.elements()), 0.0);
  if (!t.data) return v;
  for (size_t i = 0; i < v.size(); ++i) v[i] = loadAsDouble(t.dtype, t.data, static_cast<int64_t>(i));
  return v;
}

double firstValue(const TensorView& t) { return t.data ? loadAsDouble(t.dtype, t.data, 0) : 0.0; }

// The batched product of A (.., M, K) and B (.., K, N) with numpy broadcasting of the leading
// dimensions and 1-D operands promoted as MatMul does.
struct MatMulShape {
  int64_t m = 1, k = 1, n = 1;
  Shape batch, out;
  std::vector<int64_t> aOff, bOff;  // element offset of each batch's matrix
};

std::vector<int64_t> batchOffsets(const Shape& operandBatch, const Shape& batch, int64_t matrixSize) {
  const std::vector<int64_t> st = broadcastStrides(operandBatch, batch.size(), batch);
  std::vector<int64_t> off(static_cast<size_t>(shapeElements(batch)), 0);
  std::vector<int64_t> idx(batch.size(), 0);
  for (size_t b = 0; b < off.size(); ++b) {
    int64_t o = 0;
    for (size_t d = 0; d < batch.size(); ++d) o += idx[d] * st[d];
    off[b] = o * matrixSize;
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return off;
}

Status matMulShape(const Shape& a, const Shape& b, MatMulShape* s) {
  if (a.empty() || b.empty())
    return Status::invalidModel("MatMul operands " + shapeToString(a) + " and " + shapeToString(b) +
                                " must have rank 1 or more");
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a, b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  s->m = a2[a2.size() - 2], s->k = a2.back(), s->n = b2.back();
  if (b2[b2.size() - 2] != s->k)
    return Status::invalidModel("A " + shapeToString(a) + " and B " + shapeToString(b) +
                                " have different inner dimensions");
  const Shape ab(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  Status st = broadcastShapes(ab, bb, &s->batch);
  if (!st.isOk())
    return Status::invalidModel("batch dimensions of A " + shapeToString(a) + " and B " + shapeToString(b) +
                                " do not broadcast");
  s->out = s->batch;
  if (a.size() > 1) s->out.push_back(s->m);
  if (b.size() > 1) s->out.push_back(s->n);
  s->aOff = batchOffsets(ab, s->batch, s->m * s->k);
  s->bOff = batchOffsets(bb, s->batch, s->k * s->n);
  return Status::ok();
}

// A per-tensor, per-row (of A) or per-column (of B) parameter: value(batch, row, col).
struct RowColParam {
  std::vector<double> values;
  std::vector<int64_t> batchOff;
  int64_t rowStride = 0, colStride = 0;
  double at(int64_t b, int64_t r, int64_t c) const { return values[batchOff[b] + r * rowStride + c * colStride]; }
};

// `perRow`: the parameter varies along A's rows (shape [M] or [..., M, 1]); otherwise along
// B's columns ([N] or [..., 1, N]). An absent parameter is 0.
Status rowColParam(const TensorView* t, const MatMulShape& s, bool perRow, const char* what, RowColParam* p) {
  const int64_t batches = shapeElements(s.batch);
  *p = RowColParam();
  if (!t || !t->present) {
    p->values = {0.0};
    p->batchOff.assign(static_cast<size_t>(batches), 0);
    return Status::ok();
  }
  p->values = readAll(*t);
  if (t->elements() == 1) {
    p->batchOff.assign(static_cast<size_t>(batches), 0);
    return Status::ok();
  }
  const int64_t len = perRow ? s.m : s.n;
  Shape shape = t->shape;
  if (shape.size() == 1) shape = perRow ? Shape{shape[0], 1} : Shape{1, shape[0]};
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  const bool ok = perRow ? (cols == 1 && (rows == len || rows == 1)) : (rows == 1 && (cols == len || cols == 1));
  Shape bshape(shape.begin(), shape.end() - 2), joined;
  if (!ok || bshape.size() > s.batch.size() || !broadcastShapes(bshape, s.batch, &joined).isOk() || joined != s.batch)
    return Status::invalidModel(std::string(what) + " " + shapeToString(t->shape) + " must be a scalar or hold one value per " +
                                (perRow ? "row of A (" : "column of B (") + std::to_string(len) + ")");
  p->batchOff = batchOffsets(bshape, s.batch, rows * cols);
  p->rowStride = rows == 1 ? 0 : 1;
  p->colStride = cols == 1 ? 0 : 1;
  return Status::ok();
}

// acc[b][r][c] = sum_k (A - azp) (B - bzp), exact in int32 for byte operands.
void integerMatMul(const MatMulShape& s, const TensorView& a, const TensorView& b, const RowColParam& azp,
                   const RowColParam& bzp, std::vector<int32_t>* acc, ThreadPool* pool) {
  const int64_t batches = shapeElements(s.batch);
  acc->assign(static_cast<size_t>(batches * s.m * s.n), 0);
  const bool aSigned = a.dtype == DataType::Int8, bSigned = b.dtype == DataType::Int8;
  auto load = [](const void* p, bool sgn, int64_t i) {
    return sgn ? static_cast<int32_t>(static_cast<const int8_t*>(p)[i])
               : static_cast<int32_t>(static_cast<const uint8_t*>(p)[i]);
  };
  parallelFor(pool, batches * s.m, [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> arow(static_cast<size_t>(s.k));
    for (int64_t br = r0; br < r1; ++br) {
      const int64_t bi = br / s.m, r = br % s.m;
      const int32_t za = static_cast<int32_t>(azp.at(bi, r, 0));
      for (int64_t k = 0; k < s.k; ++k) arow[k] = load(a.data, aSigned, s.aOff[bi] + r * s.k + k) - za;
      int32_t* out = acc->data() + br * s.n;
      for (int64_t k = 0; k < s.k; ++k) {
        if (arow[k] == 0) continue;
        for (int64_t c = 0; c < s.n; ++c)
          out[c] += arow[k] * (load(b.data, bSigned, s.bOff[bi] + k * s.n + c) - static_cast<int32_t>(bzp.at(bi, 0, c)));
      }
    }
  });
}

// Rounds v to the precision of float dtype t, emulating arithmetic done in that type.
double roundTo(DataType t, double v) {
  if (t == DataType::Float32) return static_cast<float>(v);
  if (t == DataType::Float16) return static_cast<float>(float16_t(static_cast<float>(v)));
  if (t == DataType::BFloat16) return static_cast<float>(bfloat16_t(static_cast<float>(v)));
  return v;
}

void storeSaturated(DataType t, void* data, int64_t i, double v) {
  const double lo = t == DataType::Int8 ? -128 : 0, hi = t == DataType::Int8 ? 127 : 255;
  v = std::nearbyint(v);
  storeFromDouble(t, data, i, std::isnan(v) ? 0.0 : std::min(hi, std::max(lo, v)));
}

// ---- MatMulInteger ----

Status matMulIntegerSetup(const TensorViews& in, MatMulShape* s, RowColParam* azp, RowColParam* bzp) {
  OSPREY_RETURN_IF_ERROR(requireByte(in[0], "A"));
  OSPREY_RETURN_IF_ERROR(requireByte(in[1], "B"));
  OSPREY_RETURN_IF_ERROR(matMulShape(in[0].shape, in[1].shape, s));
  const TensorView* a = in.size() > 2 && in[2].present ? &in[2] : nullptr;
  const TensorView* b = in.size() > 3 && in[3].present ? &in[3] : nullptr;
  if ((a && a->dtype != in[0].dtype) || (b && b->dtype != in[1].dtype))
    return Status::invalidModel("zero points must have the dtype of their operand");
  OSPREY_RETURN_IF_ERROR(rowColParam(a, *s, true, "a_zero_point", azp));
  return rowColParam(b, *s, false, "b_zero_point", bzp);
}

Status matMulIntegerShape(const Node&, const TensorViews& in, TensorViews& out) {
  MatMulShape s;
  RowColParam azp, bzp;
  OSPREY_RETURN_IF_ERROR(matMulIntegerSetup(in, &s, &azp, &bzp));
  out[0] = {DataType::Int32, s.out};
  return Status::ok();
}

Status matMulIntegerKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  MatMulShape s;
  RowColParam azp, bzp;
  OSPREY_RETURN_IF_ERROR(matMulIntegerSetup(in, &s, &azp, &bzp));
  std::vector<int32_t> acc;
  integerMatMul(s, in[0], in[1], azp, bzp, &acc, pool);
  std::copy(acc.begin(), acc.end(), out[0].as<int32_t>());
  return Status::ok();
}

// ---- QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp ----

struct QMatMul {
  MatMulShape s;
  RowColParam azp, bzp, as, bs;
};

Status qlinearMatMulSetup(const TensorViews& in, QMatMul* q) {
  OSPREY_RETURN_IF_ERROR(requireByte(in[0], "a"));
  OSPREY_RETURN_IF_ERROR(requireByte(in[3], "b"));
  if (in[2].dtype != in[0].dtype || in[5].dtype != in[3].dtype || in[7].dtype != in[0].dtype)
    return Status::invalidModel("a_zero_point, b_zero_point and y_zero_point must have the dtypes of a, b and a");
  for (int i : {1, 4, 6})
    if (!isFloatType(in[i].dtype)) return Status::unsupported(dtypeError(in[i], "scale"));
  if (in[6].elements() != 1 || in[7].elements() != 1)
    return Status::invalidModel("y_scale and y_zero_point must hold one value (per-tensor)");
  OSPREY_RETURN_IF_ERROR(matMulShape(in[0].shape, in[3].shape, &q->s));
  OSPREY_RETURN_IF_ERROR(rowColParam(&in[2], q->s, true, "a_zero_point", &q->azp));
  OSPREY_RETURN_IF_ERROR(rowColParam(&in[5], q->s, false, "b_zero_point", &q->bzp));
  OSPREY_RETURN_IF_ERROR(rowColParam(&in[1], q->s, true, "a_scale", &q->as));
  return rowColParam(&in[4], q->s, false, "b_scale", &q->bs);
}

Status qlinearMatMulShape(const Node&, const TensorViews& in, TensorViews& out) {
  QMatMul q;
  OSPREY_RETURN_IF_ERROR(qlinearMatMulSetup(in, &q));
  out[0] = {in[7].dtype, q.s.out};
  return Status::ok();
}

Status qlinearMatMulKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  QMatMul q;
  OSPREY_RETURN_IF_ERROR(qlinearMatMulSetup(in, &q));
  std::vector<int32_t> acc;
  integerMatMul(q.s, in[0], in[3], q.azp, q.bzp, &acc, pool);
  const DataType st = in[1].dtype;
  const double ys = loadAsDouble(in[6].dtype, in[6].data, 0), yz = loadAsDouble(in[7].dtype, in[7].data, 0);
  const int64_t batches = shapeElements(q.s.batch);
  // requantize = "fixed_point" (TFLite's BATCH_MATMUL): TFLite's integer multiplier and rounding.
  if (node.getString("requantize", "") == "fixed_point") {
    const int32_t lowest = in[7].dtype == DataType::Int8 ? -128 : 0, highest = lowest + 255;
    // The multiplier changes only with the scales (once per tensor for TFLite's BATCH_MATMUL).
    float lastA = NAN, lastB = NAN;
    QuantizedMultiplier m{};
    for (int64_t b = 0; b < batches; ++b)
      for (int64_t r = 0; r < q.s.m; ++r)
        for (int64_t c = 0; c < q.s.n; ++c) {
          const float sa = static_cast<float>(q.as.at(b, r, 0)), sb = static_cast<float>(q.bs.at(b, 0, c));
          if (!(sa == lastA && sb == lastB)) m = productMultiplier(sa, sb, static_cast<float>(ys)), lastA = sa, lastB = sb;
          const int64_t i = (b * q.s.m + r) * q.s.n + c;
          const int32_t y = multiplyByQuantizedMultiplier(acc[i], m) + static_cast<int32_t>(yz);
          storeSaturated(in[7].dtype, out[0].data, i, std::clamp(y, lowest, highest));
        }
    return Status::ok();
  }
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t r = 0; r < q.s.m; ++r)
      for (int64_t c = 0; c < q.s.n; ++c) {
        const double mult = roundTo(st, roundTo(st, q.as.at(b, r, 0) * q.bs.at(b, 0, c)) / ys);
        const int64_t i = (b * q.s.m + r) * q.s.n + c;
        storeSaturated(in[7].dtype, out[0].data, i, static_cast<double>(acc[i]) * mult + yz);
      }
  return Status::ok();
}

// ---- ConvInteger and QLinearConv ----

struct IntConv {
  int64_t batch = 0, inC = 0, outC = 0, group = 1;
  Window w;
};

Status intConvSetup(const Node& node, const TensorView& x, const TensorView& w, IntConv* s) {
  OSPREY_RETURN_IF_ERROR(requireByte(x, "x"));
  OSPREY_RETURN_IF_ERROR(requireByte(w, "w"));
  if (x.rank() < 3 || w.rank() != x.rank())
    return Status::invalidModel("x " + shapeToString(x.shape) + " and w " + shapeToString(w.shape) +
                                " must have the same rank, 3 or more");
  s->group = node.getInt("group", 1);
  s->batch = x.shape[0], s->inC = x.shape[1], s->outC = w.shape[0];
  if (s->group < 1 || s->inC % s->group != 0 || s->outC % s->group != 0 || w.shape[1] * s->group != s->inC)
    return Status::invalidModel("group " + std::to_string(s->group) + " does not fit x " + shapeToString(x.shape) +
                                " and w " + shapeToString(w.shape));
  const Shape kernel(w.shape.begin() + 2, w.shape.end());
  if (const Attribute* k = node.attr("kernel_shape"); k && k->ints != kernel)
    return Status::invalidModel("kernel_shape " + shapeToString(k->ints) + " does not match w " + shapeToString(w.shape));
  OSPREY_RETURN_IF_ERROR(readWindow(node, Shape(x.shape.begin() + 2, x.shape.end()), kernel, &s->w));
  return resolveForwardWindow(false, &s->w);
}

Shape intConvOutShape(const IntConv& s) {
  Shape out{s.batch, s.outC};
  for (int64_t d : s.w.outShape()) out.push_back(d);
  return out;
}

// Per output channel zero points (or one for all) of W; x's zero point is per tensor.
Status intConvZeroPoints(const TensorView* xzp, const TensorView* wzp, const IntConv& s, int32_t* xz,
                         std::vector<int32_t>* wz) {
  *xz = 0;
  wz->assign(static_cast<size_t>(s.outC), 0);
  if (xzp && xzp->present) {
    if (xzp->elements() != 1) return Status::invalidModel("x_zero_point must hold one value (per-tensor)");
    *xz = static_cast<int32_t>(firstValue(*xzp));
  }
  if (wzp && wzp->present) {
    if (wzp->elements() != 1 && wzp->elements() != s.outC)
      return Status::invalidModel("w_zero_point " + shapeToString(wzp->shape) + " must hold 1 or " +
                                  std::to_string(s.outC) + " values");
    const std::vector<double> values = readAll(*wzp);
    for (int64_t m = 0; m < s.outC; ++m) (*wz)[m] = static_cast<int32_t>(values[values.size() == 1 ? 0 : m]);
  }
  return Status::ok();
}

void integerConv(const IntConv& s, const TensorView& x, const TensorView& w, int32_t xz, const std::vector<int32_t>& wz,
                 const int32_t* bias, std::vector<int32_t>* acc, ThreadPool* pool) {
  const Window& g = s.w;
  const int64_t inSize = g.inSize(), outSize = g.outSize(), taps = g.kernelSize();
  const int64_t cPerGroup = s.inC / s.group, mPerGroup = s.outC / s.group;
  acc->assign(static_cast<size_t>(s.batch * s.outC * outSize), 0);
  auto xAt = [&](int64_t i) {
    return x.dtype == DataType::Int8 ? static_cast<int32_t>(x.as<const int8_t>()[i])
                                     : static_cast<int32_t>(x.as<const uint8_t>()[i]);
  };
  auto wAt = [&](int64_t i) {
    return w.dtype == DataType::Int8 ? static_cast<int32_t>(w.as<const int8_t>()[i])
                                     : static_cast<int32_t>(w.as<const uint8_t>()[i]);
  };
  parallelFor(pool, s.batch * s.outC, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / s.outC, m = p % s.outC, grp = m / mPerGroup;
      int32_t* out = acc->data() + p * outSize;
      for (int64_t o = 0; o < outSize; ++o) {
        const int64_t pos[3] = {o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
        int32_t sum = bias ? bias[m] : 0;
        for (int64_t c = 0; c < cPerGroup; ++c) {
          const int64_t xBase = (n * s.inC + grp * cPerGroup + c) * inSize, wBase = (m * cPerGroup + c) * taps;
          for (int64_t t = 0; t < taps; ++t) {
            const int64_t k[3] = {t / (g.kernel[1] * g.kernel[2]), (t / g.kernel[2]) % g.kernel[1], t % g.kernel[2]};
            int64_t at = 0;
            bool inside = true;
            for (int sl = 0; sl < 3; ++sl) {
              const int64_t i = pos[sl] * g.stride[sl] - g.padBegin[sl] + k[sl] * g.dilation[sl];
              inside = inside && i >= 0 && i < g.in[sl];
              at = at * g.in[sl] + i;
            }
            if (inside) sum += (xAt(xBase + at) - xz) * (wAt(wBase + t) - wz[m]);
          }
        }
        out[o] = sum;
      }
    }
  });
}

Status convIntegerShape(const Node& node, const TensorViews& in, TensorViews& out) {
  IntConv s;
  OSPREY_RETURN_IF_ERROR(intConvSetup(node, in[0], in[1], &s));
  int32_t xz;
  std::vector<int32_t> wz;
  OSPREY_RETURN_IF_ERROR(intConvZeroPoints(in.size() > 2 ? &in[2] : nullptr, in.size() > 3 ? &in[3] : nullptr, s,
                                           &xz, &wz));
  out[0] = {DataType::Int32, intConvOutShape(s)};
  return Status::ok();
}

Status convIntegerKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  IntConv s;
  OSPREY_RETURN_IF_ERROR(intConvSetup(node, in[0], in[1], &s));
  int32_t xz;
  std::vector<int32_t> wz;
  OSPREY_RETURN_IF_ERROR(intConvZeroPoints(in.size() > 2 ? &in[2] : nullptr, in.size() > 3 ? &in[3] : nullptr, s,
                                           &xz, &wz));
  std::vector<int32_t> acc;
  integerConv(s, in[0], in[1], xz, wz, nullptr, &acc, pool);
  std::copy(acc.begin(), acc.end(), out[0].as<int32_t>());
  return Status::ok();
}

// QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, optional int32 B.
Status qlinearConvSetup(const Node& node, const TensorViews& in, IntConv* s) {
  OSPREY_RETURN_IF_ERROR(intConvSetup(node, in[0], in[3], s));
  for (int i : {1, 4, 6})
    if (!isFloatType(in[i].dtype)) return Status::unsupported(dtypeError(in[i], "scale"));
  if (in[1].elements() != 1 || in[6].elements() != 1 || in[7].elements() != 1)
    return Status::invalidModel("x_scale, y_scale and y_zero_point must hold one value (per-tensor)");
  if (in[4].elements() != 1 && in[4].elements() != s->outC)
    return Status::invalidModel("w_scale " + shapeToString(in[4].shape) + " must hold 1 or " + std::to_string(s->outC) +
                                " values");
  if (!isByteType(in[7].dtype)) return Status::unsupported(dtypeError(in[7], "y_zero_point"));
  if (in.size() > 8 && in[8].present && (in[8].dtype != DataType::Int32 || in[8].shape != Shape{s->outC}))
    return Status::invalidModel("B must be int32 of shape [" + std::to_string(s->outC) + "]");
  return Status::ok();
}

Status qlinearConvShape(const Node& node, const TensorViews& in, TensorViews& out) {
  IntConv s;
  OSPREY_RETURN_IF_ERROR(qlinearConvSetup(node, in, &s));
  int32_t xz;
  std::vector<int32_t> wz;
  OSPREY_RETURN_IF_ERROR(intConvZeroPoints(&in[2], &in[5], s, &xz, &wz));
  out[0] = {in[7].dtype, intConvOutShape(s)};
  return Status::ok();
}

Status qlinearConvKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  IntConv s;
  OSPREY_RETURN_IF_ERROR(qlinearConvSetup(node, in, &s));
  int32_t xz;
  std::vector<int32_t> wz;
  OSPREY_RETURN_IF_ERROR(intConvZeroPoints(&in[2], &in[5], s, &xz, &wz));
  const int32_t* bias = in.size() > 8 && in[8].present ? in[8].as<const int32_t>() : nullptr;
  std::vector<int32_t> acc;
  integerConv(s, in[0], in[3], xz, wz, bias, &acc, pool);
  const DataType st = in[1].dtype;
  const double xs = loadAsDouble(st, in[1].data, 0), ys = loadAsDouble(in[6].dtype, in[6].data, 0);
  const double yz = loadAsDouble(in[7].dtype, in[7].data, 0);
  const std::vector<double> ws = readAll(in[4]);
  const int64_t outSize = s.w.outSize();
  for (int64_t p = 0; p < s.batch * s.outC; ++p) {
    const int64_t m = p % s.outC;
    const double mult = roundTo(st, roundTo(st, xs * ws[ws.size() == 1 ? 0 : m]) / ys);
    for (int64_t o = 0; o < outSize; ++o)
      storeSaturated(in[7].dtype, out[0].data, p * outSize + o, static_cast<double>(acc[p * outSize + o]) * mult + yz);
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_MatMulInteger = {
    OpType::MatMulInteger, "MatMulInteger", 2, 4, 1, 1, matMulIntegerShape, matMulIntegerKernel, nullptr, 0, false};
const OpDef kOpDef_QLinearMatMul = {
    OpType::QLinearMatMul, "QLinearMatMul", 8, 8, 1, 1, qlinearMatMulShape, qlinearMatMulKernel, nullptr, 0, false};
const OpDef kOpDef_ConvInteger = {
    OpType::ConvInteger, "ConvInteger", 2, 4, 1, 1, convIntegerShape, convIntegerKernel, nullptr, 0, false};
const OpDef kOpDef_QLinearConv = {
    OpType::QLinearConv, "QLinearConv", 8, 9, 1, 1, qlinearConvShape, qlinearConvKernel, nullptr, 0, false};

}  // namespace osprey
