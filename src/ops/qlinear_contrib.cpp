// ONNX Runtime's com.microsoft quantized ops (what quantize_static's QOperator format emits):
// QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid,
// QLinearLeakyRelu, QLinearConcat and QLinearSoftmax (the matrix products QGemm,
// MatMulIntegerToFloat and DynamicQuantizeMatMul are in qmatmul_contrib.cpp). Tensors are uint8 or int8; scales are float32 and zero points have the data's
// dtype, one value each (per tensor; B's may be per column in the matrix products); an omitted
// zero point is 0. Each op's section below gives its formula.
//
// The results match ONNX Runtime's CPU kernels (MLAS, x86-64 with AVX2) bit for bit, so the
// float32 arithmetic is written out step by step as MLAS does it (docs/quantization.md):
//  - QLinearAdd:   v = fma(a, sA/sC, fma(b, sB/sC, zC - (sA/sC*zA + sB/sC*zB))); where one
//                  operand repeats along the innermost broadcast span it is folded into the
//                  constant first (fixed + x*ratio, then one fma), as ORT's scalar loops do.
//                  With requantize = "fixed_point" (TFLite models): LiteRT's integer form,
//                  ops/fixed_point_add.h.
//  - QLinearMul:   v = float((a-zA)(b-zB)) * (sA*sB/sC) + zC.
//  - Global pool:  v = float(sum - zX*n) * (sX / (sY*n)), clamped, + zY.
//  - AveragePool:  dequantize, sum in float, divide by the count, nearbyint(v/sY + zY).
//  - Lookup ops:   y = table[x], the table quantizing f(sX*(x-zX)) as MlasQuantizeLinear does:
//                  clamp(v/sY, lo-zY, hi-zY), round, + zY. Sigmoid is MLAS's rational
//                  approximation (Eigen's coefficients), evaluated with fused multiply-adds.
// Values round half to even (cvtps under the default rounding mode); NaN or out-of-int32
// values become INT32_MIN there, so they saturate to the type's minimum, as in MLAS.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "ops/fixed_point_add.h"
#include "ops/qlinear_lookup.h"
#include "ops/op_util.h"
#include "ops/quant_util.h"
#include "ops/window.h"

namespace osprey {

namespace {

using namespace quant;

// ---- QLinearAdd, QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp ----

Status binarySetup(const TensorViews& in, Shape* out) {
  OSPREY_RETURN_IF_ERROR(checkQuantized(in, 0, "A"));
  OSPREY_RETURN_IF_ERROR(checkQuantized(in, 3, "B"));
  if (in[3].dtype != in[0].dtype)
    return Status::invalidModel(std::string("B has dtype ") + dataTypeName(in[3].dtype) + " but A has " +
                                dataTypeName(in[0].dtype));
  OSPREY_RETURN_IF_ERROR(checkScale(in, 6, "C_scale"));
  OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 7, in[0].dtype, "C_zero_point", "A"));
  if (!broadcastShapes(in[0].shape, in[3].shape, out).isOk())
    return Status::invalidModel("A " + shapeToString(in[0].shape) + " and B " + shapeToString(in[3].shape) +
                                " do not broadcast");
  return Status::ok();
}

Status binaryShape(const Node&, const TensorViews& in, TensorViews& out) {
  Shape shape;
  OSPREY_RETURN_IF_ERROR(binarySetup(in, &shape));
  out[0] = {in[0].dtype, shape};
  return Status::ok();
}

// Which of ORT's broadcast loops covers the innermost span: both operands vary along it, or one
// of them repeats one value (dimensions where the output has size 1 do not count).
enum class Span { Both, ScalarA, ScalarB };

Span innermostSpan(const Shape& a, const Shape& b, const Shape& out) {
  const size_t rank = out.size();
  for (size_t d = rank; d-- > 0;) {
    if (out[d] == 1) continue;
    const size_t ia = d + a.size(), ib = d + b.size();  // index + rank of operand - rank of output
    const int64_t da = ia >= rank ? a[ia - rank] : 1, db = ib >= rank ? b[ib - rank] : 1;
    if (da == 1) return Span::ScalarA;
    if (db == 1) return Span::ScalarB;
    return Span::Both;
  }
  return Span::Both;
}

template <bool kAdd>
Status binaryKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  Shape shape;
  OSPREY_RETURN_IF_ERROR(binarySetup(in, &shape));
  const DataType t = in[0].dtype;
  const float sA = scaleAt(in, 1), sB = scaleAt(in, 4), sC = scaleAt(in, 6);
  const int32_t zA = zeroPointAt(in, 2), zB = zeroPointAt(in, 5), zC = zeroPointAt(in, 7);
  const std::vector<int64_t> stA = broadcastStrides(in[0].shape, shape.size(), shape);
  const std::vector<int64_t> stB = broadcastStrides(in[3].shape, shape.size(), shape);
  const TensorView &a = in[0], &b = in[3], &y = out[0];
  if (!kAdd) {
    const float ratio = sA * sB / sC, zCf = static_cast<float>(zC);
    forEachBroadcast(shape, stA, stB, [&](int64_t o, int64_t ia, int64_t ib) {
      const int32_t product = (loadByte(a, ia) - zA) * (loadByte(b, ib) - zB);
      const float scaled = static_cast<float>(product) * ratio;
      storeByte(y, o, saturate(cvtps(scaled + zCf), t));
    });
    return Status::ok();
  }
  const FixedPointAdd fixedPoint = fixedPointAdd(sA, sB, sC, zA, zB);
  if (node.getString("requantize", "") == "fixed_point" && fixedPoint.valid) {
    forEachBroadcast(shape, stA, stB, [&](int64_t o, int64_t ia, int64_t ib) {
      storeByte(y, o, saturate(fixedPoint.apply(loadByte(a, ia), loadByte(b, ib)) + zC, t));
    });
    return Status::ok();
  }
  const float rA = sA / sC, rB = sB / sC;
  const Span span = innermostSpan(a.shape, b.shape, shape);
  // ORT passes a repeated A as the second operand: the constant sums its terms B first.
  const float partA = rA * static_cast<float>(zA), partB = rB * static_cast<float>(zB);
  const float fixed = static_cast<float>(zC) - (span == Span::ScalarA ? partB + partA : partA + partB);
  forEachBroadcast(shape, stA, stB, [&](int64_t o, int64_t ia, int64_t ib) {
    const float fa = static_cast<float>(loadByte(a, ia)), fb = static_cast<float>(loadByte(b, ib));
    float v;
    if (span == Span::ScalarB) {
      const float repeated = fixed + fb * rB;
      v = std::fmaf(fa, rA, repeated);
    } else if (span == Span::ScalarA) {
      const float repeated = fixed + fa * rA;
      v = std::fmaf(fb, rB, repeated);
    } else {
      v = std::fmaf(fa, rA, std::fmaf(fb, rB, fixed));
    }
    storeByte(y, o, saturate(cvtps(v), t));
  });
  return Status::ok();
}

// ---- QLinearGlobalAveragePool: X, x_scale, x_zp, y_scale, y_zp; channels_last ----

struct GlobalPoolShape {
  int64_t batch = 0, channels = 0, image = 1;
  bool channelsLast = false;
};

Status globalPoolSetup(const Node& node, const TensorViews& in, GlobalPoolShape* g, Shape* outShape) {
  OSPREY_RETURN_IF_ERROR(checkQuantized(in, 0, "X"));
  OSPREY_RETURN_IF_ERROR(checkScale(in, 3, "y_scale"));
  OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 4, in[0].dtype, "y_zero_point", "X"));
  const TensorView& x = in[0];
  if (x.rank() < 3)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 3 or more (N, C, spatial...)");
  const int64_t cl = node.getInt("channels_last", 0);
  if (cl != 0 && cl != 1) return Status::invalidModel("channels_last must be 0 or 1, got " + std::to_string(cl));
  g->channelsLast = cl == 1;
  g->batch = x.shape[0];
  g->channels = g->channelsLast ? x.shape.back() : x.shape[1];
  const size_t first = g->channelsLast ? 1 : 2;
  g->image = 1;
  *outShape = x.shape;
  for (size_t d = first; d < first + x.shape.size() - 2; ++d) {
    g->image *= x.shape[d];
    (*outShape)[d] = 1;
  }
  if (g->image >= (int64_t{1} << 24))
    return Status::unsupported("QLinearGlobalAveragePool over " + std::to_string(g->image) +
                               " positions (ONNX Runtime's limit is 2^24)");
  return Status::ok();
}

Status globalPoolShape(const Node& node, const TensorViews& in, TensorViews& out) {
  GlobalPoolShape g;
  Shape shape;
  OSPREY_RETURN_IF_ERROR(globalPoolSetup(node, in, &g, &shape));
  out[0] = {in[0].dtype, shape};
  return Status::ok();
}

// MlasQLinearGlobalAveragePool: over `image` positions per (n, c), channels last or not.
void globalAverage(const TensorViews& in, const TensorView& y, int64_t batch, int64_t channels, int64_t image,
                   bool channelsLast) {
  const DataType t = in[0].dtype;
  const float sX = scaleAt(in, 1), sY = scaleAt(in, 3);
  const int32_t zX = zeroPointAt(in, 2), zY = zeroPointAt(in, 4);
  const float scale = sX / (sY * static_cast<float>(image));
  const int32_t bias = -zX * static_cast<int32_t>(image);
  const float lo = static_cast<float>(lowOf(t) - zY), hi = static_cast<float>(highOf(t) - zY);
  const int64_t step = channelsLast ? channels : 1;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t base = channelsLast ? n * image * channels + c : (n * channels + c) * image;
      int32_t acc = bias;
      for (int64_t i = 0; i < image; ++i) acc += loadByte(in[0], base + i * step);
      float v = static_cast<float>(acc) * scale;
      v = v > lo ? v : lo;
      v = v < hi ? v : hi;
      storeByte(y, n * channels + c, saturate(cvtps(v) + zY, t));
    }
}

Status globalPoolKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  GlobalPoolShape g;
  Shape shape;
  OSPREY_RETURN_IF_ERROR(globalPoolSetup(node, in, &g, &shape));
  globalAverage(in, out[0], g.batch, g.channels, g.image, g.channelsLast);
  return Status::ok();
}

// ---- QLinearAveragePool: X, x_scale, x_zp, y_scale, y_zp; AveragePool attributes, channels_last ----

struct AvgPoolSetup {
  int64_t batch = 0, channels = 0;
  bool channelsLast = false, countIncludePad = false;
  Window w;
};

Status avgPoolSetup(const Node& node, const TensorViews& in, AvgPoolSetup* s, Shape* outShape) {
  OSPREY_RETURN_IF_ERROR(checkQuantized(in, 0, "X"));
  OSPREY_RETURN_IF_ERROR(checkScale(in, 3, "y_scale"));
  OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 4, in[0].dtype, "y_zero_point", "X"));
  const TensorView& x = in[0];
  if (x.rank() < 3)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 3 or more (N, C, spatial...)");
  if (!node.hasAttr("kernel_shape")) return Status::invalidModel("kernel_shape is required");
  for (const char* flag : {"channels_last", "count_include_pad", "ceil_mode"}) {
    const int64_t v = node.getInt(flag, 0);
    if (v != 0 && v != 1) return Status::invalidModel(std::string(flag) + " must be 0 or 1, got " + std::to_string(v));
  }
  for (int64_t d : node.getInts("dilations"))
    if (d != 1) return Status::unsupported("QLinearAveragePool with dilations other than 1");
  s->channelsLast = node.getInt("channels_last", 0) == 1;
  s->countIncludePad = node.getInt("count_include_pad", 0) == 1;
  s->batch = x.shape[0];
  s->channels = s->channelsLast ? x.shape.back() : x.shape[1];
  const Shape spatial =
      s->channelsLast ? Shape(x.shape.begin() + 1, x.shape.end() - 1) : Shape(x.shape.begin() + 2, x.shape.end());
  OSPREY_RETURN_IF_ERROR(readWindow(node, spatial, node.getInts("kernel_shape"), &s->w));
  OSPREY_RETURN_IF_ERROR(resolveForwardWindow(node.getInt("ceil_mode", 0) == 1, &s->w));
  const Shape o = s->w.outShape();
  *outShape = {s->batch};
  if (!s->channelsLast) outShape->push_back(s->channels);
  outShape->insert(outShape->end(), o.begin(), o.end());
  if (s->channelsLast) outShape->push_back(s->channels);
  return Status::ok();
}

Status avgPoolShape(const Node& node, const TensorViews& in, TensorViews& out) {
  AvgPoolSetup s;
  Shape shape;
  OSPREY_RETURN_IF_ERROR(avgPoolSetup(node, in, &s, &shape));
  out[0] = {in[0].dtype, shape};
  return Status::ok();
}

// As ORT: the window is clipped to the input (not to the padded input), and with
// count_include_pad the divisor is the whole kernel.
Status avgPoolKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  AvgPoolSetup s;
  Shape shape;
  OSPREY_RETURN_IF_ERROR(avgPoolSetup(node, in, &s, &shape));
  const DataType t = in[0].dtype;
  const float sX = scaleAt(in, 1), sY = scaleAt(in, 3);
  const int32_t zX = zeroPointAt(in, 2), zY = zeroPointAt(in, 4);
  const Window& g = s.w;
  const int64_t inSize = g.inSize(), outSize = g.outSize(), C = s.channels;
  // A window covering the whole unpadded input is ORT's global average pool (integer sums).
  bool global = true;
  for (int sl = 0; sl < 3; ++sl)
    global = global && g.kernel[sl] == g.in[sl] && g.padBegin[sl] == 0 && g.padEnd[sl] == 0;
  if (global) {
    globalAverage(in, out[0], s.batch, C, inSize, s.channelsLast);
    return Status::ok();
  }
  parallelFor(pool, s.batch * C, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / C, c = p % C;
      for (int64_t o = 0; o < outSize; ++o) {
        const int64_t pos[3] = {o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
        int64_t lo[3], hi[3];
        for (int sl = 0; sl < 3; ++sl) {
          const int64_t start = pos[sl] * g.stride[sl] - g.padBegin[sl];
          hi[sl] = std::min(start + g.kernel[sl], g.in[sl]);
          lo[sl] = std::max<int64_t>(start, 0);
        }
        float sum = 0.f;
        for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
          for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1)
            for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) {
              const int64_t at = (i0 * g.in[1] + i1) * g.in[2] + i2;
              const int64_t e = s.channelsLast ? (n * inSize + at) * C + c : p * inSize + at;
              sum += sX * static_cast<float>(loadByte(in[0], e) - zX);
            }
        int64_t count = 1;
        for (int sl = 0; sl < 3; ++sl)
          count *= s.countIncludePad ? g.kernel[sl] : std::max<int64_t>(hi[sl] - lo[sl], 0);
        const float avg = sum / static_cast<float>(count);
        const float q = std::nearbyint(avg / sY + static_cast<float>(zY));
        const int32_t v = std::isnan(q) ? lowOf(t) : static_cast<int32_t>(std::max(-1e9f, std::min(1e9f, q)));
        const int64_t at = s.channelsLast ? (n * outSize + o) * C + c : p * outSize + o;
        storeByte(out[0], at, saturate(v, t));
      }
    }
  });
  return Status::ok();
}

// ---- Lookup-table ops: X, X_scale, X_zp, Y_scale, Y_zp ----

Status lookupShape(const Node&, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(checkQuantized(in, 0, "X"));
  OSPREY_RETURN_IF_ERROR(checkScale(in, 3, "Y_scale"));
  OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 4, in[0].dtype, "Y_zero_point", "X"));
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

// MLAS's logistic (Eigen's rational approximation) as its FMA3 kernel evaluates it.
float mlasLogistic(float x) {
  float v = x < -18.0f ? -18.0f : x;
  v = v > 18.0f ? 18.0f : v;
  const float v2 = v * v;
  float p = std::fmaf(v2, 4.37031012579801e-11f, 1.15627324459942e-07f);
  p = std::fmaf(p, v2, 6.08574864600143e-05f);
  p = std::fmaf(p, v2, 8.51377133304701e-03f);
  p = std::fmaf(p, v2, 2.48287947061529e-01f);
  p = p * v;
  float q = std::fmaf(v2, 6.10247389755681e-13f, 5.76102136993427e-09f);
  q = std::fmaf(q, v2, 6.29106785017040e-06f);
  q = std::fmaf(q, v2, 1.70198817374094e-03f);
  q = std::fmaf(q, v2, 1.16817656904453e-01f);
  q = std::fmaf(q, v2, 9.93151921023180e-01f);
  const float r = p / q + 0.5f;
  return r < 0.f ? 0.f : (r > 1.f ? 1.f : r);
}

}  // namespace

bool qlinearLookupTable(const Node& node, DataType t, float sX, int32_t zX, float sY, int32_t zY, int32_t table[256]) {
  const float alpha = node.getFloat("alpha", 0.01f);
  const bool sigmoid = node.type == OpType::QLinearSigmoid;
  if (!sigmoid && node.type != OpType::QLinearLeakyRelu) return false;
  for (int i = 0; i < 256; ++i) {
    const int32_t x = t == DataType::Int8 ? static_cast<int8_t>(static_cast<uint8_t>(i)) : i;
    const float dq = sX * static_cast<float>(x - zX);
    const float v = sigmoid ? mlasLogistic(dq) : (dq >= 0.0f ? dq : alpha * dq);
    table[i] = saturate(quantizeMlas(v, sY, zY, t), t);
  }
  return true;
}

namespace {

Status lookupKernel(const Node& node, const TensorViews& in, TensorViews& out) {
  int32_t table[256];
  qlinearLookupTable(node, in[0].dtype, scaleAt(in, 1), zeroPointAt(in, 2), scaleAt(in, 3), zeroPointAt(in, 4), table);
  const uint8_t* x = static_cast<const uint8_t*>(in[0].data);
  const int64_t n = in[0].elements();
  for (int64_t i = 0; i < n; ++i) storeByte(out[0], i, table[x[i]]);
  return Status::ok();
}

Status sigmoidKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  TensorViews shapes = out;
  OSPREY_RETURN_IF_ERROR(lookupShape(node, in, shapes));
  return lookupKernel(node, in, out);
}

Status leakyReluKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  TensorViews shapes = out;
  OSPREY_RETURN_IF_ERROR(lookupShape(node, in, shapes));
  return lookupKernel(node, in, out);
}

// ---- QLinearConcat: Y_scale, Y_zp, then (X, X_scale, X_zp) per input; axis ----

Status concatSetup(const Node& node, const TensorViews& in, Shape* outShape, int64_t* axisOut) {
  if (in.size() < 5 || (in.size() - 2) % 3 != 0)
    return Status::invalidModel(
        "QLinearConcat takes Y_scale, Y_zero_point and then (X, X_scale, X_zero_point) "
        "triples; got " +
        std::to_string(in.size()) + " inputs");
  OSPREY_RETURN_IF_ERROR(checkScale(in, 0, "Y_scale"));
  if (!in[1].present) return Status::invalidModel("Y_zero_point is required");
  const DataType t = in[1].dtype;
  OSPREY_RETURN_IF_ERROR(requireByteTensor(in[1], "Y_zero_point"));
  if (in[1].elements() != 1)
    return Status::invalidModel("Y_zero_point " + shapeToString(in[1].shape) + " must be a scalar or hold one value");
  const TensorView& first = in[2];
  int64_t axis = 0;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", 0), first.rank(), &axis));
  *outShape = first.shape;
  (*outShape)[axis] = 0;
  for (size_t i = 2; i < in.size(); i += 3) {
    const std::string name = "input " + std::to_string((i - 2) / 3);
    if (!in[i].present) return Status::invalidModel(name + " is missing");
    if (in[i].dtype != t)
      return Status::invalidModel(name + " has dtype " + dataTypeName(in[i].dtype) + " but Y_zero_point has " +
                                  dataTypeName(t));
    OSPREY_RETURN_IF_ERROR(checkScale(in, i + 1, name + "'s scale"));
    if (!in[i + 2].present) return Status::invalidModel(name + "'s zero point is required");
    OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, i + 2, t, name + "'s zero point", name));
    const Shape& s = in[i].shape;
    bool ok = s.size() == first.shape.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int64_t>(d) == axis || s[d] == first.shape[d];
    if (!ok)
      return Status::invalidModel(name + " " + shapeToString(s) + " does not match input 0 " +
                                  shapeToString(first.shape) + " outside axis " + std::to_string(axis));
    (*outShape)[axis] += s[axis];
  }
  *axisOut = axis;
  return Status::ok();
}

Status concatShape(const Node& node, const TensorViews& in, TensorViews& out) {
  Shape shape;
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(concatSetup(node, in, &shape, &axis));
  out[0] = {in[1].dtype, shape};
  return Status::ok();
}

// Inputs already in Y's scale and zero point are copied; others go through a table as
// ORT's does (dequantize, MlasQuantizeLinear).
Status concatKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  Shape shape;
  int64_t axis;
  OSPREY_RETURN_IF_ERROR(concatSetup(node, in, &shape, &axis));
  const DataType t = in[1].dtype;
  const float sY = scaleAt(in, 0);
  const int32_t zY = loadByte(in[1], 0);
  const AxisSplit os = splitAt(shape, axis);
  int64_t offset = 0;
  for (size_t i = 2; i < in.size(); i += 3) {
    const TensorView& x = in[i];
    const float sX = scaleAt(in, i + 1);
    const int32_t zX = loadByte(in[i + 2], 0);
    int32_t table[256];
    const bool same = sX == sY && zX == zY;
    for (int k = 0; k < 256; ++k) {
      const int32_t v = t == DataType::Int8 ? static_cast<int8_t>(static_cast<uint8_t>(k)) : k;
      table[k] = same ? v : saturate(quantizeMlas(sX * static_cast<float>(v - zX), sY, zY, t), t);
    }
    const AxisSplit xs = splitAt(x.shape, axis);
    const uint8_t* src = static_cast<const uint8_t*>(x.data);
    for (int64_t o = 0; o < xs.outer; ++o)
      for (int64_t a = 0; a < xs.n; ++a)
        for (int64_t j = 0; j < xs.inner; ++j)
          storeByte(out[0], (o * os.n + offset + a) * os.inner + j, table[src[(o * xs.n + a) * xs.inner + j]]);
    offset += xs.n;
  }
  return Status::ok();
}

// ---- QLinearSoftmax: X, X_scale, X_zp, Y_scale, Y_zp; axis, opset (required) ----
// ORT's algorithm (X's zero point cancels out): a float table of exp((i - 255 + shift) * X_scale)
// with shift = max(0, ln(FLT_MAX / D) - 5) / X_scale, indexed so the row's maximum lands on the
// last entry; y = nearbyint(e * floor(1 / Y_scale) / sum(e)) + Y_zp in float32. Opset < 13
// reduces over the flattened dimensions from axis on (default axis 1), opset 13 over axis only
// (default -1). Results above the type's maximum saturate (ORT 1.32; older releases wrapped int8).

struct SoftmaxSetup {
  int64_t outer = 1, d = 1, inner = 1;  // rows are (outer, inner) pairs of d elements, inner apart
};

Status softmaxSetup(const Node& node, const TensorViews& in, SoftmaxSetup* s) {
  OSPREY_RETURN_IF_ERROR(checkQuantized(in, 0, "X"));
  OSPREY_RETURN_IF_ERROR(checkScale(in, 3, "y_scale"));
  OSPREY_RETURN_IF_ERROR(checkZeroPoint(in, 4, in[0].dtype, "y_zero_point", "X"));
  if (!node.hasAttr("opset")) return Status::invalidModel("QLinearSoftmax needs its 'opset' attribute");
  const int64_t opset = node.getInt("opset", 13);
  const TensorView& x = in[0];
  if (x.rank() < 1) return Status::invalidModel("X must have rank 1 or more");
  int64_t axis = 0;
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", opset < 13 ? 1 : -1), x.rank(), &axis));
  s->outer = s->d = s->inner = 1;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i < axis)
      s->outer *= x.shape[i];
    else if (i == axis || opset < 13)
      s->d *= x.shape[i];
    else
      s->inner *= x.shape[i];
  }
  return Status::ok();
}

Status softmaxShape(const Node& node, const TensorViews& in, TensorViews& out) {
  SoftmaxSetup s;
  OSPREY_RETURN_IF_ERROR(softmaxSetup(node, in, &s));
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

// nearbyint for v >= 0 (in the default rounding mode, adding and taking away 2^23 rounds half to
// even); larger values, inf and NaN are their own. Inline, where std::nearbyint is a libm call.
inline float roundNonNegative(float v) {
  constexpr float kTwo23 = 8388608.f;
  return v < kTwo23 ? (v + kTwo23) - kTwo23 : v;
}

template <class T>
T softmaxValue(float e, float yScale, float sum, int32_t zy) {
  if (sum == 0.f) return static_cast<T>(zy);
  const float q = roundNonNegative(e * yScale / sum);
  if constexpr (std::is_same_v<T, int8_t>) {
    return static_cast<T>(std::min(127, static_cast<int32_t>(q) + zy));
  } else {
    const uint32_t v = static_cast<uint32_t>(q) + static_cast<uint32_t>(zy);
    return static_cast<T>(v > 255 ? 255 : v);
  }
}

// `Rows` rows of d values, `stride` apart, rows `pitch` apart: x to y through the table (see
// above). Each row's sum runs in order, as ORT's loop does, so that the float rounding is the same;
// several rows at once keep as many sums in flight (one row's is a chain of dependent adds).
template <class T, int Rows>
void softmaxRows(const T* x, T* y, int64_t d, int64_t stride, int64_t pitch, const float* table, float yScale,
                 int32_t zy) {
  constexpr bool sgn = std::is_same_v<T, int8_t>;
  int32_t offset[Rows];
  float sum[Rows];
  for (int r = 0; r < Rows; ++r) {
    int32_t xmax = std::numeric_limits<int32_t>::min();
    for (int64_t k = 0; k < d; ++k) xmax = std::max(xmax, static_cast<int32_t>(x[r * pitch + k * stride]));
    // The table entry of each value: uint8 reads table[255 - max + x], int8 table[uint8(127 - max + x)].
    offset[r] = sgn ? 127 - xmax : 255 - xmax;
    sum[r] = 0.f;
  }
  for (int64_t k = 0; k < d; ++k)
    for (int r = 0; r < Rows; ++r) sum[r] += table[static_cast<uint8_t>(offset[r] + x[r * pitch + k * stride])];
  for (int r = 0; r < Rows; ++r)
    for (int64_t k = 0; k < d; ++k) {
      const int64_t at = r * pitch + k * stride;
      y[at] = softmaxValue<T>(table[static_cast<uint8_t>(offset[r] + x[at])], yScale, sum[r], zy);
    }
}

template <class T>
void softmaxRowRange(const SoftmaxSetup& s, const T* x, T* y, int64_t r0, int64_t r1, const float* table,
                     float yScale, int32_t zy) {
  auto base = [&](int64_t r) { return (r / s.inner) * s.d * s.inner + r % s.inner; };
  int64_t r = r0;
  if (s.inner == 1)  // rows are contiguous, d apart
    for (; r + 4 <= r1; r += 4) softmaxRows<T, 4>(x + base(r), y + base(r), s.d, 1, s.d, table, yScale, zy);
  for (; r < r1; ++r) softmaxRows<T, 1>(x + base(r), y + base(r), s.d, s.inner, 0, table, yScale, zy);
}

Status softmaxKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  SoftmaxSetup s;
  OSPREY_RETURN_IF_ERROR(softmaxSetup(node, in, &s));
  if (in[0].elements() == 0) return Status::ok();
  const bool sgn = in[0].dtype == DataType::Int8;
  const float xs = scaleAt(in, 1), yScale = std::floor(1.0f / scaleAt(in, 3));
  const int32_t zy = zeroPointAt(in, 4);
  double shift = std::log(static_cast<double>(std::numeric_limits<float>::max() / static_cast<float>(s.d)));
  shift = std::max(0.0, shift - 5.0) / xs;
  float table[256];
  for (int i = 0; i < 256; ++i) {
    const double e = std::exp((static_cast<double>(i) - 255 + shift) * static_cast<double>(xs));
    table[static_cast<uint8_t>(sgn ? i - 128 : i)] = static_cast<float>(e);
  }
  parallelFor(pool, s.outer * s.inner, [&](int64_t r0, int64_t r1) {
    if (sgn)
      softmaxRowRange(s, in[0].as<const int8_t>(), out[0].as<int8_t>(), r0, r1, table, yScale, zy);
    else
      softmaxRowRange(s, in[0].as<const uint8_t>(), out[0].as<uint8_t>(), r0, r1, table, yScale, zy);
  });
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_QLinearAdd = {OpType::QLinearAdd, "QLinearAdd",       2,       8, 1,    1,
                                 binaryShape,        binaryKernel<true>, nullptr, 0, false};
const OpDef kOpDef_QLinearMul = {OpType::QLinearMul, "QLinearMul",        2,       8, 1,    1,
                                 binaryShape,        binaryKernel<false>, nullptr, 0, false};
const OpDef kOpDef_QLinearGlobalAveragePool = {OpType::QLinearGlobalAveragePool,
                                               "QLinearGlobalAveragePool",
                                               2,
                                               5,
                                               1,
                                               1,
                                               globalPoolShape,
                                               globalPoolKernel,
                                               nullptr,
                                               0,
                                               false};
const OpDef kOpDef_QLinearAveragePool = {
    OpType::QLinearAveragePool, "QLinearAveragePool", 2, 5, 1, 1, avgPoolShape, avgPoolKernel, nullptr, 0, false};
const OpDef kOpDef_QLinearSigmoid = {OpType::QLinearSigmoid, "QLinearSigmoid", 2, 5,    1, 1, lookupShape,
                                     sigmoidKernel,          nullptr,          0, false};
const OpDef kOpDef_QLinearLeakyRelu = {
    OpType::QLinearLeakyRelu, "QLinearLeakyRelu", 2, 5, 1, 1, lookupShape, leakyReluKernel, nullptr, 0, false};
const OpDef kOpDef_QLinearConcat = {OpType::QLinearConcat, "QLinearConcat", 5,       -1, 1,    1,
                                    concatShape,           concatKernel,    nullptr, 0,  false};

const OpDef kOpDef_QLinearSoftmax = {OpType::QLinearSoftmax, "QLinearSoftmax", 2,       5, 1,    1,
                                     softmaxShape,           softmaxKernel,    nullptr, 0, false};

}  // namespace osprey
