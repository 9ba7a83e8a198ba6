// Int8 / uint8 unary ops that TFLite computes in fixed point, imported as a 256-entry table of
// their exact results: y = table[x - lowest code], a Gather on the codes. The float form
// (DequantizeLinear, op, QuantizeLinear) lands one step off for a few codes, and a network
// of such activations (MobileNetV3's HARD_SWISH) compounds them.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "converter/tflite/op_importers.h"

namespace osprey::tfl {

namespace {

// TFLite's fixed-point helpers (its quantization_util and gemmlowp), on int16 values.
void quantizeMultiplier(double m, int32_t* fixed, int* shift) {
  if (m == 0) {
    *fixed = 0, *shift = 0;
    return;
  }
  const double q = std::frexp(m, shift);
  int64_t f = static_cast<int64_t>(std::round(q * (int64_t{1} << 31)));
  if (f == (int64_t{1} << 31)) f /= 2, ++*shift;
  if (*shift < -31) f = 0, *shift = 0;
  *fixed = static_cast<int32_t>(f);
}

int16_t downscaleToInt16(int32_t m) {
  constexpr int32_t kRounding = 1 << 15;
  if (m >= INT32_MAX - kRounding) return INT16_MAX;
  return static_cast<int16_t>((m + kRounding) >> 16);
}

int16_t saturate16(int64_t v) { return static_cast<int16_t>(std::clamp<int64_t>(v, INT16_MIN, INT16_MAX)); }

int16_t roundingDoublingHighMul(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  const int32_t ab = int32_t{a} * b;
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));  // C division: toward zero
}

int16_t doublingHighMul(int16_t a, int16_t b) {
  if (a == INT16_MIN && b == INT16_MIN) return INT16_MAX;
  return static_cast<int16_t>((int32_t{a} * b) / (1 << 15));
}

int16_t roundingDivideByPowerOfTwo(int16_t x, int exponent) {
  const int32_t mask = (1 << exponent) - 1, remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<int16_t>((x >> exponent) + (remainder > threshold ? 1 : 0));
}

// TFLite's int8/uint8 HARD_SWISH kernel: x on a finer input scale (x 128), the ReLU6-like factor
// in [0, 1] as a 16-bit fraction, their product rounded down to the output scale.
bool hardSwishTable(float inScale, int32_t inZero, float outScale, int32_t outZero, int32_t low, int32_t high,
                    std::vector<int32_t>* table) {
  const float hiresScale = (1.0f / 128.0f) * inScale;
  const float reluishScale = 3.0f / 32768.0f;
  int32_t outputFixed, reluishFixed;
  int outputExponent, reluishExponent;
  quantizeMultiplier(static_cast<double>(hiresScale / outScale), &outputFixed, &outputExponent);
  quantizeMultiplier(static_cast<double>(hiresScale / reluishScale), &reluishFixed, &reluishExponent);
  if (outputExponent > 0 || outputExponent < -15 || reluishExponent < -15 || reluishExponent > 15) return false;
  const int16_t outputMultiplier = downscaleToInt16(outputFixed), reluishMultiplier = downscaleToInt16(reluishFixed);
  table->clear();
  for (int32_t code = low; code <= high; ++code) {
    const int16_t hires = saturate16(int64_t{code - inZero} * 128);
    const int16_t preshift = roundingDoublingHighMul(hires, outputMultiplier);
    int16_t reluish = hires;
    if (reluishExponent > 0) reluish = saturate16(int64_t{reluish} * (1 << (reluishExponent - 1)));
    reluish = roundingDoublingHighMul(reluish, reluishMultiplier);
    if (reluishExponent > 0) reluish = saturate16(int64_t{reluish} * 2);
    if (reluishExponent < 0) reluish = roundingDivideByPowerOfTwo(reluish, -reluishExponent);
    reluish = static_cast<int16_t>((int32_t{reluish} + (1 << 15)) >> 1);
    const int16_t product = doublingHighMul(reluish, preshift);
    const int32_t out = roundingDivideByPowerOfTwo(product, -outputExponent) + outZero;
    table->push_back(std::clamp(out, low, high));
  }
  return true;
}

}  // namespace

Status importQuantizedTable(ImportContext& ctx, const OpView& op, bool* done) {
  *done = false;
  if (op.code != tflite::BuiltinOperator_HARD_SWISH || op.inputs.empty() || op.outputs.empty()) return Status::ok();
  const int in = op.input(0), outT = op.outputs[0];
  if (!ctx.readsQuantized(in) || !ctx.writesQuantized(outT)) return Status::ok();
  const TfliteTensor &x = ctx.tensor(in), &y = ctx.tensor(outT);
  if (x.dtype != y.dtype || x.scales.size() != 1 || y.scales.size() != 1) return Status::ok();
  const bool isSigned = x.dtype == DataType::Int8;
  const int32_t low = isSigned ? -128 : 0, high = isSigned ? 127 : 255;
  std::vector<int32_t> values;
  if (!hardSwishTable(x.scales[0], static_cast<int32_t>(x.zeroPoints[0]), y.scales[0],
                      static_cast<int32_t>(y.zeroPoints[0]), low, high, &values))
    return Status::ok();
  std::vector<uint8_t> bytes;
  for (int32_t v : values) bytes.push_back(static_cast<uint8_t>(v));
  const int table = ctx.addConstant(op.name + "_table", x.dtype, {static_cast<int64_t>(bytes.size())}, bytes.data(), bytes.size());
  int codes;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.codes(in, &codes, &held));
  const int wide = ctx.temp(op.name + "_index"), index = isSigned ? ctx.temp(op.name + "_offset") : wide;
  ctx.addNode(OpType::Cast, op.name + "_index", {codes}, {wide}).setInt("to", static_cast<int64_t>(DataType::Int32));
  if (isSigned) {
    const int32_t offset = 128;
    ctx.addNode(OpType::Add, op.name + "_offset", {wide, ctx.addConstant(op.name + "_128", DataType::Int32, {}, &offset, 4)},
                {index});
  }
  ctx.addNode(OpType::Gather, op.name, {table, index}, {ctx.defineCodes(outT, held)}).setInt("axis", 0);
  *done = true;
  return Status::ok();
}

}  // namespace osprey::tfl
