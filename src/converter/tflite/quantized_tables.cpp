// Quantized ops that LiteRT computes in an arithmetic of its own, imported as a table of their
// exact results, computed at import and looked up on the codes: unary HARD_SWISH and RSQRT (a
// ByteLookup of 256 entries), SQUARED_DIFFERENCE (a Gather over every pair of codes) and MEAN
// (a Gather over every sum of the reduced codes). The float form (DequantizeLinear, op,
// QuantizeLinear) lands one step off for a few codes, and a network of such ops (MobileNetV3's
// HARD_SWISH, a transformer's LayerNormalization) compounds them.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "converter/tflite/op_importers.h"
#include "ops/fixed_point_requantize.h"

namespace osprey::tfl {

namespace {

// TFLite's fixed-point helpers (gemmlowp's), on int16 values.
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

int16_t roundingDivideByPowerOfTwo16(int16_t x, int exponent) {
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
  const QuantizedMultiplier output = quantizeMultiplier(static_cast<double>(hiresScale / outScale));
  const QuantizedMultiplier reluishM = quantizeMultiplier(static_cast<double>(hiresScale / reluishScale));
  const int32_t outputFixed = output.fixed, reluishFixed = reluishM.fixed;
  const int outputExponent = output.shift, reluishExponent = reluishM.shift;
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
    if (reluishExponent < 0) reluish = roundingDivideByPowerOfTwo16(reluish, -reluishExponent);
    reluish = static_cast<int16_t>((int32_t{reluish} + (1 << 15)) >> 1);
    const int16_t product = doublingHighMul(reluish, preshift);
    const int32_t out = roundingDivideByPowerOfTwo16(product, -outputExponent) + outZero;
    table->push_back(std::clamp(out, low, high));
  }
  return true;
}

// gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent.
int32_t saturatingShiftLeft(int32_t x, int exponent) {
  const int32_t threshold = static_cast<int32_t>((int64_t{1} << (31 - exponent)) - 1);
  if (x > threshold) return INT32_MAX;
  if (x < -threshold) return INT32_MIN;
  return static_cast<int32_t>(static_cast<uint32_t>(x) << exponent);
}

// TFLite's GetInvSqrtQuantizedMultiplierExp: 1 / sqrt(x) as a multiplier and a left shift, by
// five Newton-Raphson steps in fixed point with 3 integer bits.
QuantizedMultiplier inverseSqrtMultiplier(int32_t x) {
  if (x <= 1) return {INT32_MAX, 0};
  int shift = 11;
  while (x >= (1 << 29)) x /= 4, ++shift;
  int leadingZeros = 0;
  while (!(static_cast<uint32_t>(x) & (0x80000000u >> leadingZeros))) ++leadingZeros;
  const int pairs = (leadingZeros - 1) / 2 - 1;
  shift -= pairs;
  x <<= 2 * pairs;
  const int32_t halfInput = roundingDivideByPowerOfTwo(x >> 1, 1), halfThree = (1 << 28) + (1 << 27);
  int32_t estimate = 1 << 28;  // 1.0 with 3 integer bits
  for (int i = 0; i < 5; ++i) {
    const int32_t cube = saturatingShiftLeft(
        saturatingRoundingDoublingHighMul(saturatingRoundingDoublingHighMul(estimate, estimate), estimate), 6);
    const int64_t step = int64_t{saturatingRoundingDoublingHighMul(halfThree, estimate)} -
                         saturatingRoundingDoublingHighMul(halfInput, cube);
    estimate = saturatingShiftLeft(static_cast<int32_t>(static_cast<uint32_t>(step)), 3);
  }
  estimate = saturatingRoundingDoublingHighMul(estimate, 1518500250);  // x sqrt(2) / 2
  if (shift < 0) estimate = static_cast<int32_t>(static_cast<uint32_t>(estimate) << -shift), shift = 0;
  return {estimate, -shift};
}

// TFLite's int8 RSQRT kernel: 1 / sqrt(x - zero point) by the multiplier above, scaled by
// 2^20 to stay an integer, then requantized; x at the zero point gives the highest code.
bool rsqrtTable(float inScale, int32_t inZero, float outScale, int32_t outZero, int32_t low, int32_t high,
                std::vector<int32_t>* table) {
  constexpr int kIntegerShift = 20;
  const QuantizedMultiplier scale =
      quantizeMultiplier(static_cast<double>(1.0f / (std::sqrt(inScale) * outScale)));
  table->clear();
  for (int32_t code = low; code <= high; ++code) {
    const int32_t value = code - inZero;
    if (value == 0) {
      table->push_back(high);
      continue;
    }
    QuantizedMultiplier inverse = inverseSqrtMultiplier(value);
    inverse.shift += kIntegerShift;
    QuantizedMultiplier output = scale;
    output.shift -= kIntegerShift;
    const int32_t y = multiplyByQuantizedMultiplier(multiplyByQuantizedMultiplier(1, inverse), output) + outZero;
    table->push_back(std::clamp(y, low, high));
  }
  return true;
}

// TFLite's int8 SQUARED_DIFFERENCE kernel: both operands on a common finer scale (x 2^7,
// then each multiplied down to half the larger scale), the difference squared in int32 and
// requantized.
std::vector<int32_t> squaredDifferenceTable(const TfliteTensor& a, const TfliteTensor& b, const TfliteTensor& y,
                                            int32_t low, int32_t high) {
  constexpr int kLeftShift = 7;
  const double twiceLargerScale = 2.0 * static_cast<double>(std::max(a.scales[0], b.scales[0]));
  const QuantizedMultiplier ma = quantizeMultiplier(static_cast<double>(a.scales[0]) / twiceLargerScale);
  const QuantizedMultiplier mb = quantizeMultiplier(static_cast<double>(b.scales[0]) / twiceLargerScale);
  const QuantizedMultiplier my = quantizeMultiplier(twiceLargerScale * twiceLargerScale /
                                                    (static_cast<double>(1 << (2 * kLeftShift)) * y.scales[0]));
  const auto za = static_cast<int32_t>(a.zeroPoints[0]), zb = static_cast<int32_t>(b.zeroPoints[0]),
             zy = static_cast<int32_t>(y.zeroPoints[0]);
  std::vector<int32_t> table;
  table.reserve(256 * 256);
  for (int32_t ca = low; ca <= high; ++ca)
    for (int32_t cb = low; cb <= high; ++cb) {
      const int32_t difference = multiplyByQuantizedMultiplier((ca - za) * (1 << kLeftShift), ma) -
                                 multiplyByQuantizedMultiplier((cb - zb) * (1 << kLeftShift), mb);
      table.push_back(std::clamp(multiplyByQuantizedMultiplier(difference * difference, my) + zy, low, high));
    }
  return table;
}

// A float product rounded once, as a float multiply (never fused into an add).
float roundedProduct(float a, float b) { return static_cast<float>(static_cast<double>(a) * b); }

bool perTensorCodes(const TfliteTensor& t) {
  return (t.dtype == DataType::Int8 || t.dtype == DataType::UInt8) && t.scales.size() == 1 && t.zeroPoints.size() == 1;
}

}  // namespace

int quantizedTableLookup(ImportContext& ctx, const std::string& name, DataType dtype, const std::vector<int32_t>& values,
                         int floatIndex, int output) {
  std::vector<uint8_t> bytes;
  bytes.reserve(values.size());
  for (int32_t v : values) bytes.push_back(static_cast<uint8_t>(v));
  const int table = ctx.addConstant(name + "_table", dtype, {static_cast<int64_t>(bytes.size())}, bytes.data(), bytes.size());
  const int index = ctx.temp(name + "_index");
  ctx.addNode(OpType::Cast, name + "_index", {floatIndex}, {index}).setInt("to", static_cast<int64_t>(DataType::Int32));
  ctx.addNode(OpType::Gather, name, {table, index}, {output}).setInt("axis", 0);
  return table;
}

int codesAsFloat(ImportContext& ctx, const std::string& name, int codes) {
  const int wide = ctx.temp(name);
  ctx.addNode(OpType::Cast, name, {codes}, {wide}).setInt("to", static_cast<int64_t>(DataType::Float32));
  return wide;
}

Status importQuantizedSquaredDifference(ImportContext& ctx, const OpView& op, bool* done) {
  *done = false;
  OSPREY_RETURN_IF_ERROR(requireInputs(op, 2));
  const int a = op.input(0), b = op.input(1), y = op.outputs[0];
  if (!ctx.readsQuantized(a) || !ctx.readsQuantized(b) || !ctx.writesQuantized(y)) return Status::ok();
  const TfliteTensor &ta = ctx.tensor(a), &tb = ctx.tensor(b), &ty = ctx.tensor(y);
  // LiteRT has no uint8 kernel to match.
  if (!perTensorCodes(ta) || !perTensorCodes(tb) || !perTensorCodes(ty) || ty.dtype != DataType::Int8 ||
      ta.dtype != ty.dtype || tb.dtype != ty.dtype)
    return Status::ok();
  constexpr int32_t low = -128;
  // The table holds every pair: index = (a - low) * 256 + (b - low), computed exactly in float.
  int codesA, codesB;
  OSPREY_RETURN_IF_ERROR(ctx.codesAsTflite(a, &codesA));
  OSPREY_RETURN_IF_ERROR(ctx.codesAsTflite(b, &codesB));
  const int rows = ctx.temp(op.name + "_rows"), pair = ctx.temp(op.name + "_pair"), index = ctx.temp(op.name + "_pair_index");
  ctx.addNode(OpType::Mul, op.name + "_rows", {codesAsFloat(ctx, op.name + "_a", codesA), ctx.addFloatConstant(op.name + "_256", {256.f}, true)},
              {rows});
  ctx.addNode(OpType::Add, op.name + "_pair", {rows, codesAsFloat(ctx, op.name + "_b", codesB)}, {pair});
  ctx.addNode(OpType::Add, op.name + "_pair_index", {pair, ctx.addFloatConstant(op.name + "_offset", {-257.f * low}, true)},
              {index});
  quantizedTableLookup(ctx, op.name, ty.dtype, squaredDifferenceTable(ta, tb, ty, low, low + 255), index,
                       ctx.defineCodes(y, Held::AsTflite));
  *done = true;
  return Status::ok();
}

// XNNPACK's int8/uint8 MEAN (LiteRT's default for it), found by matching LiteRT on sums near
// rounding ties: scale = (in_scale / out_scale) * (1 / count) and the zero points folded into a
// float bias, y = round_half_even(sum * scale + (zy - count * zx * scale)), each step rounded to
// float; a table over every possible sum.
bool quantizedMeanTable(const TfliteTensor& x, const TfliteTensor& y, int64_t count, std::vector<int32_t>* table) {
  if (!perTensorCodes(x) || !perTensorCodes(y) || x.dtype != y.dtype || count <= 0 || count * 255 + 1 > (1 << 18))
    return false;
  const int32_t low = y.dtype == DataType::Int8 ? -128 : 0, high = low + 255;
  const float scale = roundedProduct(x.scales[0] / y.scales[0], 1.0f / static_cast<float>(count));
  const float bias = static_cast<float>(y.zeroPoints[0]) - roundedProduct(static_cast<float>(count * x.zeroPoints[0]), scale);
  table->clear();
  for (int64_t sum = count * low; sum <= count * high; ++sum) {
    const float value = roundedProduct(static_cast<float>(sum), scale) + bias;
    table->push_back(static_cast<int32_t>(std::clamp<int64_t>(std::lrint(value), low, high)));
  }
  return true;
}

Status importQuantizedTable(ImportContext& ctx, const OpView& op, bool* done) {
  *done = false;
  const bool hardSwish = op.code == tflite::BuiltinOperator_HARD_SWISH, rsqrt = op.code == tflite::BuiltinOperator_RSQRT;
  if (!(hardSwish || rsqrt) || op.inputs.empty() || op.outputs.empty()) return Status::ok();
  const int in = op.input(0), outT = op.outputs[0];
  if (!ctx.readsQuantized(in) || !ctx.writesQuantized(outT)) return Status::ok();
  const TfliteTensor &x = ctx.tensor(in), &y = ctx.tensor(outT);
  if (x.dtype != y.dtype || x.scales.size() != 1 || y.scales.size() != 1) return Status::ok();
  if (rsqrt && x.dtype != DataType::Int8) return Status::ok();  // LiteRT has no uint8 RSQRT to match
  const bool isSigned = x.dtype == DataType::Int8;
  const int32_t low = isSigned ? -128 : 0, high = isSigned ? 127 : 255;
  std::vector<int32_t> values;
  const auto tableOf = hardSwish ? hardSwishTable : rsqrtTable;
  if (!tableOf(x.scales[0], static_cast<int32_t>(x.zeroPoints[0]), y.scales[0], static_cast<int32_t>(y.zeroPoints[0]),
               low, high, &values))
    return Status::ok();
  int codes;
  Held held;
  OSPREY_RETURN_IF_ERROR(ctx.codes(in, &codes, &held));
  // ByteLookup indexes by the code's byte: an int8 code c sits at c & 255, values[c - low] holds it.
  std::vector<uint8_t> byByte(256);
  for (int32_t c = low; c <= high; ++c) byByte[static_cast<uint8_t>(c)] = static_cast<uint8_t>(values[c - low]);
  const int table = ctx.addConstant(op.name + "_table", x.dtype, {256}, byByte.data(), byByte.size());
  ctx.addNode(OpType::ByteLookup, op.name, {codes, table}, {ctx.defineCodes(outT, held)});
  *done = true;
  return Status::ok();
}

}  // namespace osprey::tfl
