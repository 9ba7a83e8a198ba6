// ONNX Runtime's com.microsoft quantized matrix products: QGemm, MatMulIntegerToFloat and
// DynamicQuantizeMatMul (qlinear_contrib.cpp has the elementwise, pooling, concat and softmax
// ops). Operands are uint8 or int8 with zero points of their dtype; B's scale and zero point may
// be per column. Products accumulate exactly in int32; each op's section gives how the result is
// scaled, written as ONNX Runtime's MLAS kernels compute it (docs/quantization.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"
#include "ops/quant_util.h"

namespace osprey {

namespace {

using namespace quant;
// ---- QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C (int32), y_scale, y_zp; transA, transB, alpha ----
// acc = sum_k (A - a_zp)(B - b_zp[n]) + C exactly in int32; scale[n] = alpha * a_scale *
// b_scale[n] (/ y_scale) in float32; y = acc * scale as float32, or requantised as
// MlasRequantizeOutput does: clamp(acc * scale, lo - y_zp, hi - y_zp) rounded, + y_zp.
// With neither y_scale nor y_zero_point the output is float32. beta is ignored, as in ORT.

struct QGemmSetup {
  int64_t m = 0, k = 0, n = 0;
  bool transA = false, transB = false, quantizedOut = false;
  int64_t cRows = 0, cCols = 0;  // C's broadcast: 0 absent, 1 repeated, else M or N
};

Status qgemmSetup(const Node& node, const TensorViews& in, QGemmSetup* s) {
  OSPREY_RETURN_IF_ERROR(requireByteTensor(in[0], "A"));
  OSPREY_RETURN_IF_ERROR(requireByteTensor(in[3], "B"));
  if (in[0].dtype == DataType::Int8 && in[3].dtype != DataType::Int8)
    return Status::unsupported("QGemm with int8 A and uint8 B (ONNX Runtime takes int8 B with int8 A)");
  OSPREY_RETURN_IF_ERROR(checkScale(in, 1, "a_scale"));
  if (in.size() <= 2 || !in[2].present) return Status::invalidModel("a_zero_point is required");
  OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 2, in[0].dtype, "a_zero_point", "A"));
  if (in[0].rank() != 2 || in[3].rank() != 2)
    return Status::invalidModel("A " + shapeToString(in[0].shape) + " and B " + shapeToString(in[3].shape) +
                                " must be matrices");
  s->transA = node.getInt("transA", 0) != 0;
  s->transB = node.getInt("transB", 0) != 0;
  s->m = in[0].shape[s->transA ? 1 : 0];
  s->k = in[0].shape[s->transA ? 0 : 1];
  s->n = in[3].shape[s->transB ? 0 : 1];
  const int64_t kb = in[3].shape[s->transB ? 1 : 0];
  if (kb != s->k)
    return Status::invalidModel("A " + shapeToString(in[0].shape) + " and B " + shapeToString(in[3].shape) +
                                " have different inner dimensions (transA " + std::to_string(s->transA) + ", transB " +
                                std::to_string(s->transB) + ")");
  // b_scale and b_zero_point: one value, or one per column of the product.
  if (in.size() <= 5 || !in[5].present) return Status::invalidModel("b_zero_point is required");
  const TensorView &bs = in[4], &bz = in[5];
  if (bs.dtype != DataType::Float32)
    return Status::unsupported(std::string("b_scale has dtype ") + dataTypeName(bs.dtype) + "; expected float32");
  if (bz.dtype != in[3].dtype)
    return Status::invalidModel(std::string("b_zero_point has dtype ") + dataTypeName(bz.dtype) + " but B has " +
                                dataTypeName(in[3].dtype));
  for (const TensorView* p : {&bs, &bz})
    if (p->rank() > 1 || (p->elements() != 1 && p->elements() != s->n))
      return Status::invalidModel(std::string(p == &bs ? "b_scale " : "b_zero_point ") + shapeToString(p->shape) +
                                  " must be a scalar or 1-D of size 1 or N (" + std::to_string(s->n) + ")");
  if (bs.elements() != bz.elements())
    return Status::invalidModel("b_scale " + shapeToString(bs.shape) + " and b_zero_point " + shapeToString(bz.shape) +
                                " must have the same size");
  s->cRows = s->cCols = 0;
  if (in.size() > 6 && in[6].present) {
    const TensorView& c = in[6];
    if (c.dtype != DataType::Int32)
      return Status::invalidModel(std::string("C has dtype ") + dataTypeName(c.dtype) + "; QGemm's bias is int32");
    const Shape& cs = c.shape;
    if (c.elements() == 1) {
      s->cRows = s->cCols = 1;
    } else if (cs.size() == 1 && cs[0] == s->n) {
      s->cRows = 1, s->cCols = s->n;
    } else if (cs.size() == 2 && (cs[0] == 1 || cs[0] == s->m) && (cs[1] == 1 || cs[1] == s->n)) {
      s->cRows = cs[0], s->cCols = cs[1];
    } else {
      return Status::invalidModel("C " + shapeToString(cs) + " does not broadcast to the output [" +
                                  std::to_string(s->m) + ", " + std::to_string(s->n) + "]");
    }
  }
  const bool hasYScale = in.size() > 7 && in[7].present, hasYZero = in.size() > 8 && in[8].present;
  if (hasYScale != hasYZero)
    return Status::invalidModel("y_scale and y_zero_point must be given together (or neither, for a float output)");
  s->quantizedOut = hasYScale;
  if (hasYScale) {
    OSPREY_RETURN_IF_ERROR(checkScale(in, 7, "y_scale"));
    OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 8, in[0].dtype, "y_zero_point", "A"));
  }
  return Status::ok();
}

Status qgemmShape(const Node& node, const TensorViews& in, TensorViews& out) {
  QGemmSetup s;
  OSPREY_RETURN_IF_ERROR(qgemmSetup(node, in, &s));
  out[0] = {s.quantizedOut ? in[8].dtype : DataType::Float32, {s.m, s.n}};
  return Status::ok();
}

Status qgemmKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  QGemmSetup s;
  OSPREY_RETURN_IF_ERROR(qgemmSetup(node, in, &s));
  const TensorView &a = in[0], &b = in[3];
  const int32_t za = zeroPointAt(in, 2);
  const int64_t perColumn = in[4].elements() == 1 ? 0 : 1;
  const float alpha = node.getFloat("alpha", 1.0f), as = scaleAt(in, 1);
  std::vector<float> scale(static_cast<size_t>(perColumn ? s.n : 1));
  for (size_t j = 0; j < scale.size(); ++j) {
    scale[j] = alpha * as * in[4].as<const float>()[j];
    if (s.quantizedOut) scale[j] /= scaleAt(in, 7);
  }
  const int32_t zy = s.quantizedOut ? zeroPointAt(in, 8) : 0;
  const DataType yt = out[0].dtype;
  const int32_t* c = s.cRows ? in[6].as<const int32_t>() : nullptr;
  parallelFor(pool, s.m, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        const int32_t zb = loadByte(in[5], perColumn * j);
        int32_t acc = c ? c[(s.cRows == 1 ? 0 : i) * s.cCols + (s.cCols == 1 ? 0 : j)] : 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const int32_t av = loadByte(a, s.transA ? k * s.m + i : i * s.k + k);
          const int32_t bv = loadByte(b, s.transB ? j * s.k + k : k * s.n + j);
          acc += (av - za) * (bv - zb);
        }
        const float v = static_cast<float>(acc) * scale[static_cast<size_t>(perColumn * j)];
        if (!s.quantizedOut) {
          out[0].as<float>()[i * s.n + j] = v;
          continue;
        }
        const float lo = static_cast<float>(lowOf(yt) - zy), hi = static_cast<float>(highOf(yt) - zy);
        float q = v > lo ? v : lo;
        q = q < hi ? q : hi;
        storeByte(out[0], i * s.n + j, saturate(cvtps(q) + zy, yt));
      }
  });
  return Status::ok();
}

// ---- MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zp, b_zp, bias) and DynamicQuantizeMatMul
// (A float, B, b_scale, b_zp, bias) ----
// y = float(sum_k (A - a_zp)(B - b_zp[n])) * (a_scale * b_scale[n]) + bias[n], float32, with
// MatMul's broadcasting of the batch dimensions. DynamicQuantizeMatMul first quantises A to
// uint8 as ORT does: range [min(x, 0), max(x, 0)], scale = range / 255 (1 for an empty range),
// zero point = round(clamp(-min / scale, 0, 255)), then MlasQuantizeLinear.

struct IntMatMul {
  int64_t m = 1, k = 1, n = 1;
  Shape out;
  std::vector<int64_t> aOff, bOff;  // element offset of each output matrix's operands
  bool perColumn = false;
};

Status intMatMulSetup(const TensorView& a, const TensorView& b, const TensorView& bScale, const TensorView* bZero,
                      IntMatMul* s) {
  if (a.rank() < 1 || b.rank() < 2)
    return Status::invalidModel("A " + shapeToString(a.shape) + " must have rank 1 or more and B " +
                                shapeToString(b.shape) + " rank 2 or more");
  const Shape a2 = a.rank() == 1 ? Shape{1, a.shape[0]} : a.shape;
  s->m = a2[a2.size() - 2], s->k = a2.back(), s->n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != s->k)
    return Status::invalidModel("A " + shapeToString(a.shape) + " and B " + shapeToString(b.shape) +
                                " have different inner dimensions");
  const Shape ab(a2.begin(), a2.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch;
  if (!broadcastShapes(ab, bb, &batch).isOk())
    return Status::invalidModel("batch dimensions of A " + shapeToString(a.shape) + " and B " + shapeToString(b.shape) +
                                " do not broadcast");
  s->out = batch;
  if (a.rank() > 1) s->out.push_back(s->m);
  s->out.push_back(s->n);
  const std::vector<int64_t> sa = broadcastStrides(ab, batch.size(), batch),
                             sb = broadcastStrides(bb, batch.size(), batch);
  const int64_t batches = shapeElements(batch);
  s->aOff.assign(static_cast<size_t>(batches), 0);
  s->bOff.assign(static_cast<size_t>(batches), 0);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t i = 0; i < batches; ++i) {
    for (size_t d = 0; d < batch.size(); ++d) {
      s->aOff[i] += idx[d] * sa[d] * s->m * s->k;
      s->bOff[i] += idx[d] * sb[d] * s->k * s->n;
    }
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  for (const TensorView* p : {&bScale, bZero}) {
    if (!p) continue;
    if (p->rank() > 1 || (p->elements() != 1 && p->elements() != s->n))
      return Status::invalidModel(std::string(p == &bScale ? "b_scale " : "b_zero_point ") + shapeToString(p->shape) +
                                  " must be a scalar or 1-D with one value per column of B (" + std::to_string(s->n) +
                                  ")");
  }
  s->perColumn = bScale.elements() != 1 || (bZero && bZero->elements() != 1);
  return Status::ok();
}

// A and B as uint8/int8 data with zero points; `scale[n]` the product's multiplier per column.
void intMatMulToFloat(const IntMatMul& s, const uint8_t* a, bool aSigned, int32_t za, const TensorView& b,
                      const TensorView* bZero, const std::vector<float>& scale, const float* bias, float* y,
                      ThreadPool* pool) {
  const int64_t batches = static_cast<int64_t>(s.aOff.size());
  parallelFor(pool, batches * s.m, [&](int64_t r0, int64_t r1) {
    for (int64_t br = r0; br < r1; ++br) {
      const int64_t bi = br / s.m, i = br % s.m;
      for (int64_t j = 0; j < s.n; ++j) {
        const int32_t zb = bZero ? loadByte(*bZero, bZero->elements() == 1 ? 0 : j) : 0;
        int32_t acc = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const int64_t ai = s.aOff[bi] + i * s.k + k;
          const int32_t av = aSigned ? static_cast<int8_t>(a[ai]) : a[ai];
          acc += (av - za) * (loadByte(b, s.bOff[bi] + k * s.n + j) - zb);
        }
        float v = static_cast<float>(acc) * scale[scale.size() == 1 ? 0 : j];
        if (bias) v += bias[j];
        y[br * s.n + j] = v;
      }
    }
  });
}

Status checkBias(const TensorViews& in, size_t i, int64_t n) {
  if (i >= in.size() || !in[i].present) return Status::ok();
  if (in[i].dtype != DataType::Float32)
    return Status::invalidModel(std::string("bias has dtype ") + dataTypeName(in[i].dtype) + "; expected float32");
  if (in[i].shape != Shape{n})
    return Status::invalidModel("bias " + shapeToString(in[i].shape) + " must have shape [" + std::to_string(n) + "]");
  return Status::ok();
}

Status checkBScale(const TensorViews& in, size_t i) {
  if (in[i].dtype != DataType::Float32)
    return Status::unsupported(std::string("b_scale has dtype ") + dataTypeName(in[i].dtype) + "; expected float32");
  return Status::ok();
}

Status checkBZeroPointType(const TensorView* bz, const TensorView& b) {
  if (!bz || bz->dtype == b.dtype) return Status::ok();
  return Status::invalidModel(std::string("b_zero_point has dtype ") + dataTypeName(bz->dtype) + " but B has " +
                              dataTypeName(b.dtype));
}

Status matMulToFloatSetup(const TensorViews& in, IntMatMul* s) {
  OSPREY_RETURN_IF_ERROR(requireByteTensor(in[0], "A"));
  OSPREY_RETURN_IF_ERROR(requireByteTensor(in[1], "B"));
  OSPREY_RETURN_IF_ERROR(checkScale(in, 2, "a_scale"));
  OSPREY_RETURN_IF_ERROR(checkBScale(in, 3));
  OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 4, in[0].dtype, "a_zero_point", "A"));
  const TensorView* bz = optional(in, 5);
  OSPREY_RETURN_IF_ERROR(checkBZeroPointType(bz, in[1]));
  OSPREY_RETURN_IF_ERROR(intMatMulSetup(in[0], in[1], in[3], bz, s));
  return checkBias(in, 6, s->n);
}

Status matMulToFloatShape(const Node&, const TensorViews& in, TensorViews& out) {
  IntMatMul s;
  OSPREY_RETURN_IF_ERROR(matMulToFloatSetup(in, &s));
  out[0] = {DataType::Float32, s.out};
  return Status::ok();
}

std::vector<float> columnScales(float aScale, const TensorView& bScale) {
  std::vector<float> scale(static_cast<size_t>(bScale.elements()));
  for (size_t j = 0; j < scale.size(); ++j) scale[j] = aScale * bScale.as<const float>()[j];
  return scale;
}

Status matMulToFloatKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  IntMatMul s;
  OSPREY_RETURN_IF_ERROR(matMulToFloatSetup(in, &s));
  const TensorView* bias = optional(in, 6);
  intMatMulToFloat(s, static_cast<const uint8_t*>(in[0].data), in[0].dtype == DataType::Int8, zeroPointAt(in, 4), in[1],
                   optional(in, 5), columnScales(scaleAt(in, 2), in[3]), bias ? bias->as<const float>() : nullptr,
                   out[0].as<float>(), pool);
  return Status::ok();
}

Status dynamicMatMulSetup(const TensorViews& in, IntMatMul* s) {
  if (in[0].dtype != DataType::Float32)
    return Status::unsupported(std::string("A has dtype ") + dataTypeName(in[0].dtype) + "; expected float32");
  OSPREY_RETURN_IF_ERROR(requireByteTensor(in[1], "B"));
  OSPREY_RETURN_IF_ERROR(checkBScale(in, 2));
  const TensorView* bz = optional(in, 3);
  OSPREY_RETURN_IF_ERROR(checkBZeroPointType(bz, in[1]));
  OSPREY_RETURN_IF_ERROR(intMatMulSetup(in[0], in[1], in[2], bz, s));
  return checkBias(in, 4, s->n);
}

Status dynamicMatMulShape(const Node&, const TensorViews& in, TensorViews& out) {
  IntMatMul s;
  OSPREY_RETURN_IF_ERROR(dynamicMatMulSetup(in, &s));
  out[0] = {DataType::Float32, s.out};
  return Status::ok();
}

Status dynamicMatMulKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  IntMatMul s;
  OSPREY_RETURN_IF_ERROR(dynamicMatMulSetup(in, &s));
  const float* x = in[0].as<const float>();
  const int64_t count = in[0].elements();
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < count; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float initial = 0.0f - lo / scale;
  const int32_t za = static_cast<int32_t>(std::nearbyint(std::max(0.0f, std::min(255.0f, initial))));
  std::vector<uint8_t> a(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    a[i] = static_cast<uint8_t>(saturate(quantizeMlas(x[i], scale, za, DataType::UInt8), DataType::UInt8));
  const TensorView* bias = optional(in, 4);
  intMatMulToFloat(s, a.data(), false, za, in[1], optional(in, 3), columnScales(scale, in[2]),
                   bias ? bias->as<const float>() : nullptr, out[0].as<float>(), pool);
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_QGemm = {OpType::QGemm, "QGemm", 6, 9, 1, 1, qgemmShape, qgemmKernel, nullptr, 0, false};
const OpDef kOpDef_MatMulIntegerToFloat = {OpType::MatMulIntegerToFloat, "MatMulIntegerToFloat", 4,       7, 1,    1,
                                           matMulToFloatShape,           matMulToFloatKernel,    nullptr, 0, false};
const OpDef kOpDef_DynamicQuantizeMatMul = {OpType::DynamicQuantizeMatMul,
                                            "DynamicQuantizeMatMul",
                                            3,
                                            5,
                                            1,
                                            1,
                                            dynamicMatMulShape,
                                            dynamicMatMulKernel,
                                            nullptr,
                                            0,
                                            false};

}  // namespace osprey
