// QuantizeLinear and DequantizeLinear (opset 25) and DynamicQuantizeLinear (opset 11).
//
// Scale and zero point are per tensor (one element), per axis (1-D, one per index of `axis`)
// or blocked (block_size > 0: X's rank and shape except ceil(X[axis] / block_size) along axis).
// Quantize: y = saturate(rint(x / scale) + zero_point), ties to even; the quotient is computed
// as the ONNX reference computes it (in the 16-bit type when x and scale share it, in double
// for int32 x), so ties land on the same side. The output type is the zero point's, else
// output_dtype, else uint8. Dequantize: y = (x - zero_point) * scale in the scale's type (or
// output_dtype). The integer types are uint8/int8/uint16/int16 (and int32 input to
// Dequantize); the 4- and 2-bit integers, float8 and float4 types, held one element per byte,
// go through the low-precision conversions.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/low_precision.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

bool isFloatType(DataType t) {
  return t == DataType::Float32 || t == DataType::Float64 || t == DataType::Float16 || t == DataType::BFloat16;
}

// Range of an integer quantized type; false for the float8/float4 types.
bool integerRange(DataType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case DataType::UInt8: *lo = 0, *hi = 255; return true;
    case DataType::Int8: *lo = -128, *hi = 127; return true;
    case DataType::UInt16: *lo = 0, *hi = 65535; return true;
    case DataType::Int16: *lo = -32768, *hi = 32767; return true;
    case DataType::Int32: *lo = std::numeric_limits<int32_t>::min(), *hi = std::numeric_limits<int32_t>::max(); return true;
    case DataType::UInt4: *lo = 0, *hi = 15; return true;
    case DataType::Int4: *lo = -8, *hi = 7; return true;
    case DataType::UInt2: *lo = 0, *hi = 3; return true;
    case DataType::Int2: *lo = -2, *hi = 1; return true;
    default: return false;
  }
}

bool isFloat8(DataType t) {
  return t == DataType::Float8E4M3FN || t == DataType::Float8E4M3FNUZ || t == DataType::Float8E5M2 ||
         t == DataType::Float8E5M2FNUZ;
}

bool isQuantizedType(DataType t) {
  int64_t lo, hi;
  return (integerRange(t, &lo, &hi) && t != DataType::Int32) || isFloat8(t) || t == DataType::Float4E2M1;
}

// Where the scale / zero point of each element lives.
struct QuantLayout {
  int64_t outer = 1, axisLen = 1, inner = 1;
  int64_t blockSize = 0;   // > 0: blocked
  bool perTensor = true;
  int64_t blocks = 1;      // scale entries along the axis when blocked
  int64_t paramIndex(int64_t o, int64_t a, int64_t i) const {
    if (perTensor) return 0;
    if (blockSize <= 0) return a;
    return (o * blocks + a / blockSize) * inner + i;
  }
};

Status quantLayout(const Node& node, const TensorView& x, const TensorView& scale, const TensorView* zeroPoint,
                   QuantLayout* l) {
  *l = QuantLayout();
  l->blockSize = node.getInt("block_size", 0);
  if (l->blockSize < 0)
    return Status::invalidModel("block_size " + std::to_string(l->blockSize) + " must not be negative");
  if (zeroPoint && zeroPoint->shape != scale.shape && !(zeroPoint->elements() == 1 && scale.elements() == 1))
    return Status::invalidModel("zero point " + shapeToString(zeroPoint->shape) + " must have the scale's shape " +
                                shapeToString(scale.shape));
  if (scale.elements() == 1 && l->blockSize == 0 && scale.rank() <= 1) {
    l->outer = x.elements();
    return Status::ok();
  }
  int64_t axis;
  Status st = normalizeAxis(node.getInt("axis", 1), x.rank(), &axis);
  if (!st.isOk()) return Status::invalidModel("attribute " + st.message() + " (input " + shapeToString(x.shape) + ")");
  l->perTensor = false;
  l->outer = 1, l->inner = 1, l->axisLen = x.shape[axis];
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) l->outer *= x.shape[d];
    if (d > axis) l->inner *= x.shape[d];
  }
  if (l->blockSize == 0) {
    if (scale.shape != Shape{x.shape[axis]})
      return Status::invalidModel("scale " + shapeToString(scale.shape) + " must be a scalar or have shape [" +
                                  std::to_string(x.shape[axis]) + "] (axis " + std::to_string(axis) + " of input " +
                                  shapeToString(x.shape) + ")");
    return Status::ok();
  }
  l->blocks = (l->axisLen + l->blockSize - 1) / l->blockSize;
  Shape want = x.shape;
  want[axis] = l->blocks;
  if (scale.shape != want)
    return Status::invalidModel("blocked scale " + shapeToString(scale.shape) + " must have shape " +
                                shapeToString(want) + " for input " + shapeToString(x.shape) + ", axis " +
                                std::to_string(axis) + " and block_size " + std::to_string(l->blockSize));
  return Status::ok();
}

std::vector<double> readAll(const TensorView& t) {
  std::vector<double> v(static_cast<size_t>(t.elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = loadAsDouble(t.dtype, t.data, static_cast<int64_t>(i));
  return v;
}

// Rounds v to what dtype t can hold (for emulating arithmetic done in that type).
double roundTo(DataType t, double v) {
  switch (t) {
    case DataType::Float32: return static_cast<float>(v);
    case DataType::Float16: return static_cast<float>(float16_t(static_cast<float>(v)));
    case DataType::BFloat16: return static_cast<float>(bfloat16_t(static_cast<float>(v)));
    default: return v;
  }
}

// ---- QuantizeLinear ----

Status quantizeOutputType(const Node& node, const TensorViews& in, DataType* out) {
  const int64_t attr = node.getInt("output_dtype", 0);
  const bool hasZero = in.size() > 2 && in[2].present;
  if (hasZero && attr != 0 && attr != static_cast<int64_t>(in[2].dtype))
    return Status::invalidModel("output_dtype " + std::to_string(attr) + " disagrees with the zero point's dtype " +
                                dataTypeName(in[2].dtype));
  *out = hasZero ? in[2].dtype : attr != 0 ? static_cast<DataType>(attr) : DataType::UInt8;
  if (!isKnownDataType(static_cast<int32_t>(*out)) || !isQuantizedType(*out))
    return Status::unsupported("QuantizeLinear to dtype " + std::string(dataTypeName(*out)) + " (" +
                               std::to_string(static_cast<int>(*out)) +
                               "); supported: uint8, int8, uint16, int16, (u)int4, (u)int2, float8, float4e2m1");
  return Status::ok();
}

Status quantizeShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const TensorView& x = in[0];
  if (!isFloatType(x.dtype) && x.dtype != DataType::Int32) return Status::unsupported(dtypeError(x, "x"));
  if (!isFloatType(in[1].dtype)) return Status::unsupported(dtypeError(in[1], "y_scale"));
  const TensorView* zp = in.size() > 2 && in[2].present ? &in[2] : nullptr;
  QuantLayout l;
  OSPREY_RETURN_IF_ERROR(quantLayout(node, x, in[1], zp, &l));
  OSPREY_RETURN_IF_ERROR(quantizeOutputType(node, in, &out[0].dtype));
  const int64_t precision = node.getInt("precision", 0);
  if (precision != 0 && !isFloatType(static_cast<DataType>(precision)))
    return Status::invalidModel("precision " + std::to_string(precision) + " is not a float dtype");
  out[0].shape = x.shape;
  return Status::ok();
}

Status quantizeKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const TensorView& x = in[0];
  const TensorView* zpView = in.size() > 2 && in[2].present ? &in[2] : nullptr;
  QuantLayout l;
  OSPREY_RETURN_IF_ERROR(quantLayout(node, x, in[1], zpView, &l));
  DataType outType;
  OSPREY_RETURN_IF_ERROR(quantizeOutputType(node, in, &outType));
  const std::vector<double> scale = readAll(in[1]);
  const std::vector<double> zero = zpView ? readAll(*zpView) : std::vector<double>(scale.size(), 0.0);
  // The type the reference divides in, and whether the quotient is rounded to a 16-bit type.
  const DataType precision = static_cast<DataType>(node.getInt("precision", 0));
  DataType divType = DataType::Float32;
  if (precision != DataType::Undefined)
    divType = precision;
  else if (x.dtype == DataType::Float64 || in[1].dtype == DataType::Float64 || x.dtype == DataType::Int32)
    divType = DataType::Float64;
  else if (x.dtype == in[1].dtype)
    divType = x.dtype;
  const bool saturate = node.getInt("saturate", 1) != 0;
  int64_t lo = 0, hi = 0;
  const bool integer = integerRange(outType, &lo, &hi);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t a = 0; a < l.axisLen; ++a)
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t e = (o * l.axisLen + a) * l.inner + i, p = l.paramIndex(o, a, i);
        double xv = roundTo(divType, loadAsDouble(x.dtype, x.data, e));
        double q = divType == DataType::Float64 ? xv / roundTo(divType, scale[p])
                                                 : static_cast<float>(xv) / static_cast<float>(roundTo(divType, scale[p]));
        q = roundTo(divType, q);
        if (integer) {
          double r = std::nearbyint(q) + zero[p];
          r = std::isnan(r) ? 0.0 : std::min(static_cast<double>(hi), std::max(static_cast<double>(lo), r));
          storeFromDouble(outType, out[0].data, e, r);
        } else if (isFloat8(outType)) {
          // Float8 zero points are zero by definition; the reference does not add them.
          static_cast<uint8_t*>(out[0].data)[e] = encodeLowPrecision(outType, static_cast<float>(q), saturate);
        } else {
          static_cast<uint8_t*>(out[0].data)[e] = encodeLowPrecision(outType, static_cast<float>(q + zero[p]), saturate);
        }
      }
  return Status::ok();
}

// ---- DequantizeLinear ----

Status dequantizeOutputType(const Node& node, const TensorViews& in, DataType* out) {
  const int64_t attr = node.getInt("output_dtype", 0);
  *out = attr != 0 ? static_cast<DataType>(attr) : in[1].dtype;
  if (!isFloatType(*out))
    return Status::invalidModel("DequantizeLinear output dtype " + std::to_string(static_cast<int>(*out)) +
                                " is not a float type");
  return Status::ok();
}

Status dequantizeShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const TensorView& x = in[0];
  if (!isQuantizedType(x.dtype) && x.dtype != DataType::Int32)
    return Status::unsupported("DequantizeLinear of dtype " + std::string(dataTypeName(x.dtype)) +
                               "; supported: uint8, int8, uint16, int16, int32, (u)int4, (u)int2, float8, float4e2m1");
  if (!isFloatType(in[1].dtype)) return Status::unsupported(dtypeError(in[1], "x_scale"));
  const TensorView* zp = in.size() > 2 && in[2].present ? &in[2] : nullptr;
  if (zp && zp->dtype != x.dtype)
    return Status::invalidModel("x_zero_point has dtype " + std::string(dataTypeName(zp->dtype)) + " but x has " +
                                dataTypeName(x.dtype));
  QuantLayout l;
  OSPREY_RETURN_IF_ERROR(quantLayout(node, x, in[1], zp, &l));
  OSPREY_RETURN_IF_ERROR(dequantizeOutputType(node, in, &out[0].dtype));
  out[0].shape = x.shape;
  return Status::ok();
}

Status dequantizeKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const TensorView& x = in[0];
  const TensorView* zpView = in.size() > 2 && in[2].present ? &in[2] : nullptr;
  QuantLayout l;
  OSPREY_RETURN_IF_ERROR(quantLayout(node, x, in[1], zpView, &l));
  DataType outType;
  OSPREY_RETURN_IF_ERROR(dequantizeOutputType(node, in, &outType));
  const std::vector<double> scale = readAll(in[1]);
  std::vector<double> zero = zpView ? readAll(*zpView) : std::vector<double>(scale.size(), 0.0);
  if (isFloat8(x.dtype) || x.dtype == DataType::Float4E2M1) std::fill(zero.begin(), zero.end(), 0.0);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t a = 0; a < l.axisLen; ++a)
      for (int64_t i = 0; i < l.inner; ++i) {
        const int64_t e = (o * l.axisLen + a) * l.inner + i, p = l.paramIndex(o, a, i);
        // As the reference: x goes to float32 first, then the difference and product.
        const double dx = static_cast<double>(static_cast<float>(loadAsDouble(x.dtype, x.data, e))) - zero[p];
        storeFromDouble(outType, out[0].data, e, static_cast<float>(dx * scale[p]));
      }
  return Status::ok();
}

// ---- DynamicQuantizeLinear ----

Status dynamicQuantizeShape(const Node&, const TensorViews& in, TensorViews& out) {
  if (in[0].dtype != DataType::Float32) return Status::unsupported(dtypeError(in[0], "x") + " (expected float32)");
  out[0] = {DataType::UInt8, in[0].shape};
  if (out.size() > 1) out[1] = {DataType::Float32, {}};
  if (out.size() > 2) out[2] = {DataType::UInt8, {}};
  return Status::ok();
}

// The reference's float32 arithmetic: range widened to include 0, scale = range / 255,
// zero point = rint(clip(-min / scale, 0, 255)).
Status dynamicQuantizeKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const float* x = in[0].as<const float>();
  const int64_t n = in[0].elements();
  float mn = 0.f, mx = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  const float scale = (mx - mn) / 255.f;
  float zero = 0.f;
  if (scale != 0.f) zero = std::nearbyint(std::min(255.f, std::max(0.f, 0.f - mn / scale)));
  uint8_t* y = out[0].as<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const float q = scale != 0.f ? std::nearbyint(x[i] / scale) + zero : zero;
    y[i] = static_cast<uint8_t>(std::min(255.f, std::max(0.f, q)));
  }
  if (out.size() > 1 && out[1].present) out[1].as<float>()[0] = scale;
  if (out.size() > 2 && out[2].present) out[2].as<uint8_t>()[0] = static_cast<uint8_t>(zero);
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_QuantizeLinear = {
    OpType::QuantizeLinear, "QuantizeLinear", 2, 3, 1, 1, quantizeShape, quantizeKernel, nullptr, 0, false};
const OpDef kOpDef_DequantizeLinear = {
    OpType::DequantizeLinear, "DequantizeLinear", 2, 3, 1, 1, dequantizeShape, dequantizeKernel, nullptr, 0, false};
const OpDef kOpDef_DynamicQuantizeLinear = {OpType::DynamicQuantizeLinear,
                                            "DynamicQuantizeLinear",
                                            1,
                                            1,
                                            1,
                                            3,
                                            dynamicQuantizeShape,
                                            dynamicQuantizeKernel,
                                            nullptr,
                                            0,
                                            false};

}  // namespace osprey
