// The CPU's integer kernels: every integer GEMM micro-kernel this CPU can run (scalar, AVX2,
// AVX-512 VNNI) against naive int32 loops with ONNX Runtime's requantisation, on shapes that hit
// each register-block tail, zero points at the ends of their types, per-column scales and the
// operands that overflow an int16 pair sum; then the quantized executions (QLinearConv,
// QLinearMatMul, QGemm, MatMulIntegerToFloat, DynamicQuantizeMatMul) against the reference kernels.
#include <cmath>
#include <cstring>
#include <random>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/qgemm.h"
#include "core/thread_pool.h"
#include "ops/op_def.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

std::vector<std::pair<const char*, QGemmFunctions>> kernelTables() {
  std::vector<std::pair<const char*, QGemmFunctions>> tables = {{"scalar", scalarCpuFunctions().qgemm}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2"))
    tables.push_back({"avx2", {QGemmFormat::Pairs16, 5, 16, qgemm_pairs16_5x16__avx2, qgemm_pack_pairs16_16__avx2}});
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    tables.push_back({"avx512vnni",
                      {QGemmFormat::Quads, 8, 32, qgemm_quads_8x32__avx512vnni, qgemm_pack_quads_32__avx512vnni}});
#endif
  return tables;
}

struct GemmCase {
  int64_t M, N, K;
  bool xSigned, wSigned;  // activations' and weights' types in the model
  int32_t xZero, wZeroFirst;  // weight zero point wZeroFirst for even channels, 0 for odd when perChannelZero
  bool perChannelZero, floatOut, signedOut;
  bool weightsAsRows = false;  // a convolution's roles: A the weights, B the activations
  float scaleFactor = 1.f;     // large: outputs beyond the type's range, and beyond int32's
  bool narrowRange = false;    // lo and hi inside the type (a fused Relu or Clip)
};

// Runs one case through table f and compares with the naive computation. The activations are
// `positions` x K, the weights K x `channels`; C is positions x channels for a MatMul and
// channels x positions for a convolution.
void checkGemm(const char* name, const QGemmFunctions& f, const GemmCase& c, uint32_t seed, bool extremes) {
  const int64_t positions = c.weightsAsRows ? c.N : c.M, channels = c.weightsAsRows ? c.M : c.N, K = c.K;
  SCOPED_TRACE(std::string(name) + (c.weightsAsRows ? " conv" : " matmul") + " M=" + std::to_string(c.M) +
               " N=" + std::to_string(c.N) + " K=" + std::to_string(K) + " xSigned=" + std::to_string(c.xSigned) +
               " wSigned=" + std::to_string(c.wSigned) + " zx=" + std::to_string(c.xZero) +
               " zw=" + std::to_string(c.wZeroFirst) + (c.floatOut ? " float" : " bytes"));
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  // x[p][k] (positions x K) and w[k][ch] (K x channels), as the model holds them.
  std::vector<uint8_t> x(static_cast<size_t>(positions * K)), w(static_cast<size_t>(K * channels));
  for (auto& v : x) v = static_cast<uint8_t>(extremes ? (c.xSigned ? (byte(gen) & 1 ? 127 : 0x80) : (byte(gen) & 1 ? 255 : 0)) : byte(gen));
  for (auto& v : w) v = static_cast<uint8_t>(extremes ? (c.wSigned ? (byte(gen) & 1 ? 127 : 0x80) : 255) : byte(gen));
  std::vector<int32_t> zw(static_cast<size_t>(channels));
  for (int64_t n = 0; n < channels; ++n) zw[n] = (!c.perChannelZero || n % 2 == 0) ? c.wZeroFirst : 0;
  auto xValue = [&](int64_t p, int64_t k) {
    const uint8_t v = x[p * K + k];
    return c.xSigned ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
  };
  auto wValue = [&](int64_t k, int64_t n) {
    const uint8_t v = w[k * channels + n];
    return c.wSigned ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
  };
  // The GEMM's types: activations uint8 (int8 flipped, zero point + 128), weights int8 (uint8
  // flipped, zero point - 128).
  const int32_t zx = c.xSigned ? c.xZero + 128 : c.xZero;
  const int64_t np = qgemmPaddedN(f, c.N);
  std::vector<int32_t> zwShifted(static_cast<size_t>(std::max(np, c.M)), 0);
  for (int64_t n = 0; n < channels; ++n) zwShifted[n] = c.wSigned ? zw[n] : zw[n] - 128;
  std::vector<float> scale(static_cast<size_t>(std::max(np, c.M)), 0.f), floatBias(static_cast<size_t>(np), 0.f);
  std::vector<int32_t> bias(static_cast<size_t>(channels));
  for (int64_t n = 0; n < channels; ++n) {
    scale[n] = 0.0007f * c.scaleFactor * static_cast<float>(1 + n % 5);
    bias[n] = static_cast<int32_t>(n * 37 % 200) - 100;
  }
  for (int64_t n = 0; n < c.N; ++n) floatBias[n] = 0.25f * static_cast<float>(n % 3) - 0.3f;
  QGemmOperandBytes xBytes, wBytes;
  xBytes.flip = c.xSigned;
  xBytes.zeroPoints = &zx;
  wBytes.isSigned = true;
  wBytes.flip = !c.wSigned;
  wBytes.zeroPoints = zwShifted.data();
  wBytes.zeroPointStride = 1;
  std::vector<int32_t> wSums(static_cast<size_t>(std::max(np, c.M))), xSums(static_cast<size_t>(std::max(np, c.M)));
  std::vector<int32_t> offsets(static_cast<size_t>(std::max(np, c.M)));
  std::vector<uint8_t> packedA(qgemmPackedARowBytes(f, K) * static_cast<size_t>(c.M)), packedB(qgemmPackedBBytes(f, K, c.N));
  QGemmOutputStage stage;
  const bool sumsNeeded = qgemmNeedsSums(f, zwShifted.data(), channels);
  if (!c.weightsAsRows) {
    qgemmPackA(f, x.data(), K, c.M, K, xBytes, packedA.data(), sumsNeeded ? xSums.data() : nullptr);
    qgemmPackB(f, w.data(), channels, 1, K, channels, wBytes, packedB.data());
    qgemmColumnSums(f, w.data(), channels, 1, K, channels, wBytes, wSums.data());
    qgemmZeroPointOffsets(f, K, channels, np, bias.data(), zx, wSums.data(), zwShifted.data(), offsets.data());
    stage.columnOffset = offsets.data();
    stage.columnZeroPoints = zwShifted.data();
    stage.rowSums = sumsNeeded ? xSums.data() : nullptr;
  } else {
    std::vector<uint8_t> wRows(static_cast<size_t>(channels * K)), xRows(static_cast<size_t>(K * positions));
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t n = 0; n < channels; ++n) wRows[n * K + k] = w[k * channels + n];
      for (int64_t p = 0; p < positions; ++p) xRows[k * positions + p] = x[p * K + k];
    }
    qgemmPackA(f, wRows.data(), K, channels, K, wBytes, packedA.data(), nullptr);
    qgemmColumnSums(f, wRows.data(), 1, K, K, channels, wBytes, wSums.data());
    qgemmPackBRows(f, xRows.data(), positions, K, positions, xBytes, packedB.data());
    qgemmColumnSums(f, xRows.data(), positions, 1, K, positions, xBytes, xSums.data());
    qgemmZeroPointOffsets(f, K, channels, channels, bias.data(), zx, wSums.data(), zwShifted.data(), offsets.data());
    stage.rowOffset = offsets.data();
    stage.rowZeroPoints = zwShifted.data();
    stage.columnSums = sumsNeeded ? xSums.data() : nullptr;
    stage.unsignedA = false;
    stage.scalePerRow = true;
  }
  stage.scale = scale.data();
  stage.floatOutput = c.floatOut;
  stage.floatBias = c.floatOut && !c.weightsAsRows ? floatBias.data() : nullptr;
  stage.signedOutput = c.signedOut;
  stage.lo = c.signedOut ? -128 : 0;
  stage.hi = c.signedOut ? 127 : 255;
  stage.zeroPoint = c.signedOut ? -3 : 7;
  if (c.narrowRange) stage.lo = stage.zeroPoint, stage.hi = stage.zeroPoint + 90;
  std::vector<float> yf(static_cast<size_t>(c.M * c.N), -1.f);
  std::vector<uint8_t> yb(static_cast<size_t>(c.M * c.N), 0xCD);
  ThreadPool pool(2);
  qgemm(&pool, f, c.M, c.N, K, packedA.data(), packedB.data(), stage,
        c.floatOut ? static_cast<void*>(yf.data()) : static_cast<void*>(yb.data()), c.N);
  int mismatches = 0;
  for (int64_t m = 0; m < c.M && mismatches < 5; ++m)
    for (int64_t n = 0; n < c.N && mismatches < 5; ++n) {
      const int64_t p = c.weightsAsRows ? n : m, ch = c.weightsAsRows ? m : n;
      int32_t acc = bias[ch];
      for (int64_t k = 0; k < K; ++k) acc += (xValue(p, k) - c.xZero) * (wValue(k, ch) - zw[ch]);
      const float v = static_cast<float>(acc) * scale[ch];
      if (c.floatOut) {
        const float want = stage.floatBias ? v + floatBias[n] : v;
        if (std::fabs(yf[m * c.N + n] - want) > 1e-6f * std::max(1.f, std::fabs(want))) {
          ADD_FAILURE() << "(" << m << ", " << n << "): " << yf[m * c.N + n] << " want " << want;
          ++mismatches;
        }
        continue;
      }
      const int32_t want = qgemmRequantize(v, stage);
      const int32_t got = c.signedOut ? static_cast<int8_t>(yb[m * c.N + n]) : yb[m * c.N + n];
      if (got != want) {
        ADD_FAILURE() << "(" << m << ", " << n << "): " << got << " want " << want << " (acc " << acc << ")";
        ++mismatches;
      }
    }
}

TEST(CpuQuantized, GemmKernelsMatchNaiveOnEveryTail) {
  uint32_t seed = 1;
  for (const auto& [name, f] : kernelTables())
    for (bool conv : {false, true})
      for (int64_t M : {1, 5, 6, 7, 8, 9, 13})
        for (int64_t N : {1, 15, 16, 17, 31, 33, 64})
          for (int64_t K : {1, 2, 3, 4, 5, 7, 64, 131}) {
            GemmCase c{M, N, K, (M + N) % 2 == 1, K % 2 == 0, 0, 0, false, false, false, conv};
            c.xZero = c.xSigned ? -5 : 131;
            c.wZeroFirst = c.wSigned ? 0 : 128;
            checkGemm(name, f, c, seed++, false);
          }
}

TEST(CpuQuantized, GemmZeroPointsAtTheEndsOfTheirTypes) {
  uint32_t seed = 100;
  for (const auto& [name, f] : kernelTables())
    for (bool conv : {false, true})
      for (bool xSigned : {false, true})
        for (bool wSigned : {false, true})
          for (int32_t zx : xSigned ? std::vector<int32_t>{-128, 127} : std::vector<int32_t>{0, 255})
            for (int32_t zw : wSigned ? std::vector<int32_t>{-128, 0, 127} : std::vector<int32_t>{0, 255})
              for (bool perChannel : {false, true})
                for (bool signedOut : {false, true})
                  checkGemm(name, f, {11, 37, 45, xSigned, wSigned, zx, zw, perChannel, false, signedOut, conv}, seed++,
                            false);
}

TEST(CpuQuantized, GemmOutputsClampedAndSaturated) {
  uint32_t seed = 200;
  for (const auto& [name, f] : kernelTables())
    for (bool conv : {false, true})
      for (bool signedOut : {false, true})
        for (bool narrow : {false, true})
          for (float factor : {30.f, 1e9f}) {
            GemmCase c{13, 37, 45, true, true, -5, 0, false, false, signedOut, conv};
            c.scaleFactor = factor, c.narrowRange = narrow;
            checkGemm(name, f, c, seed++, false);
          }
}

TEST(CpuQuantized, GemmFloatOutput) {
  uint32_t seed = 300;
  for (const auto& [name, f] : kernelTables())
    for (int64_t N : {3, 16, 40})
      checkGemm(name, f, {9, N, 77, false, true, 3, 0, false, true, false}, seed++, false);
}

TEST(CpuQuantized, GemmOperandsThatOverflowAnInt16PairSum) {
  // 255 * 127 + 255 * 127 > 32767: a saturating int16 pair sum (vpmaddubsw) gets these wrong.
  uint32_t seed = 400;
  for (const auto& [name, f] : kernelTables())
    for (bool conv : {false, true}) {
      checkGemm(name, f, {7, 19, 64, false, true, 0, 0, false, true, false, conv}, seed++, true);
      checkGemm(name, f, {7, 19, 64, false, false, 0, 0, false, true, false, conv}, seed++, true);
      checkGemm(name, f, {7, 19, 64, true, true, -128, 0, false, true, false, conv}, seed++, true);
    }
}

// ---- the executions, through a session, against the reference kernels ----


// Outputs equal, except that a byte may differ by one where the reference multiplies in double
// and the kernels (as ONNX Runtime's) in float: a value within float rounding of a .5 boundary.
void expectWithinOneStep(const Tensor& got, const Tensor& want, int64_t maxOffByOne) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  int64_t offByOne = 0;
  for (int64_t i = 0; i < got.elements(); ++i) {
    const double d = std::fabs(at(got, i) - at(want, i));
    ASSERT_LE(d, 1.0) << "element " << i << ": " << at(got, i) << " vs " << at(want, i);
    offByOne += d > 0;
  }
  EXPECT_LE(offByOne, maxOffByOne) << "of " << got.elements();
}

struct QConvCase {
  int64_t n, c, h, w, m, k, group, stride, pad, dilation;
  DataType xType, wType;
  bool perChannel, bias;
  int32_t xZero, wZeroValue;
  bool constantWeights = true;  // else the weights, scales, zero points and bias are plain inputs
};

void checkQConv(const QConvCase& k, uint32_t seed) {
  SCOPED_TRACE("QLinearConv c=" + std::to_string(k.c) + " m=" + std::to_string(k.m) + " " + std::to_string(k.h) + "x" +
               std::to_string(k.w) + " k=" + std::to_string(k.k) + " group=" + std::to_string(k.group) +
               " stride=" + std::to_string(k.stride) + " pad=" + std::to_string(k.pad) +
               " x " + dataTypeName(k.xType) + " w " + dataTypeName(k.wType));
  Node node = makeNode(OpType::QLinearConv);
  node.setInts("kernel_shape", k.h == 1 ? std::vector<int64_t>{k.k} : std::vector<int64_t>{k.k, k.k});
  node.setInts("strides", k.h == 1 ? std::vector<int64_t>{k.stride} : std::vector<int64_t>{k.stride, k.stride});
  node.setInts("dilations", k.h == 1 ? std::vector<int64_t>{k.dilation} : std::vector<int64_t>{k.dilation, k.dilation});
  node.setInts("pads", k.h == 1 ? std::vector<int64_t>{k.pad, k.pad} : std::vector<int64_t>{k.pad, k.pad, k.pad, k.pad});
  node.setInt("group", k.group);
  const Shape xShape = k.h == 1 ? Shape{k.n, k.c, k.w} : Shape{k.n, k.c, k.h, k.w};
  const Shape wShape = k.h == 1 ? Shape{k.m, k.c / k.group, k.k} : Shape{k.m, k.c / k.group, k.k, k.k};
  const int64_t scales = k.perChannel ? k.m : 1;
  Tensor wScale = randomTensor(DataType::Float32, scales == 1 ? Shape{} : Shape{scales}, seed + 1, 0.002, 0.02);
  Tensor wZero(k.wType, scales == 1 ? Shape{} : Shape{scales});
  for (int64_t i = 0; i < scales; ++i) storeFromDouble(k.wType, wZero.data(), i, i % 2 ? k.wZeroValue : 0);
  const DataType yType = k.xType;
  auto param = [&](Tensor t) { return k.constantWeights ? constant(std::move(t)) : in(std::move(t)); };
  std::vector<OpInput> inputs = {in(randomBytes(k.xType, xShape, seed)), param(scalar(0.05f)),
                                 param(zeroPoint(k.xType, k.xZero)), param(randomBytes(k.wType, wShape, seed + 2)),
                                 param(wScale), param(wZero), param(scalar(0.4f)),
                                 param(zeroPoint(yType, yType == DataType::Int8 ? 3 : 120))};
  if (k.bias) inputs.push_back(param(randomTensor(DataType::Int32, {k.m}, seed + 3, -3000, 3000)));
  std::vector<Tensor> got, want;
  Status st = referenceOp(node, inputs, 1, &want);
  ASSERT_TRUE(st) << st.message();
  // Both layouts of the bytes: NCHW planes, and channels-last wherever the execution takes it
  // (2-D, and weights that are constants or read alike in both layouts).
  const bool channelsLast = k.h > 1 && (k.constantWeights || (k.k == 1 || k.c / k.group == 1));
  for (const auto layout : {CpuOptions::QuantizedLayout::NCHW, CpuOptions::QuantizedLayout::NHWC}) {
    const bool nhwc = layout == CpuOptions::QuantizedLayout::NHWC;
    SCOPED_TRACE(nhwc ? "nhwc" : "nchw");
    BackendConfig config;
    config.cpu.quantizedLayout = layout;
    int relaid = -1;
    st = runOpWith(node, inputs, 1, &got, 2, config, &relaid);
    ASSERT_TRUE(st) << st.message();
    EXPECT_EQ(relaid > 0, nhwc && channelsLast);
    expectWithinOneStep(got[0], want[0], 1 + got[0].elements() / 500);
  }
  // ConvInteger: the same sums, exactly, as int32 (no scales, no bias).
  Node integer = makeNode(OpType::ConvInteger);
  integer.attrs = node.attrs;
  const std::vector<OpInput> intInputs = {inputs[0], inputs[3], inputs[2], inputs[5]};
  st = runOp(integer, intInputs, 1, &got, 2);
  ASSERT_TRUE(st) << st.message();
  st = referenceOp(integer, intInputs, 1, &want);
  ASSERT_TRUE(st) << st.message();
  expectEqualValues(got[0], want[0]);
}

TEST(CpuQuantized, QLinearConvMatchesReference) {
  const DataType u8 = DataType::UInt8, s8 = DataType::Int8;
  uint32_t seed = 1000;
  const std::vector<QConvCase> cases = {
      {1, 7, 5, 6, 13, 1, 1, 1, 0, 1, u8, s8, false, true, 128, 0},   // pointwise
      {2, 16, 9, 9, 33, 3, 1, 1, 1, 1, u8, s8, true, true, 0, 0},     // 3x3, two images
      {1, 3, 17, 15, 16, 3, 1, 2, 1, 1, s8, s8, true, true, -7, 0},   // stem, stride 2, int8 X
      {1, 12, 8, 8, 12, 3, 12, 1, 1, 1, u8, s8, true, true, 3, 0},    // depthwise
      {1, 10, 9, 7, 10, 5, 10, 2, 2, 1, s8, u8, false, false, 127, 0},  // depthwise 5x5 s2, uint8 W
      {1, 8, 7, 7, 12, 3, 2, 1, 2, 2, u8, u8, true, true, 255, 255},  // grouped, dilated, W zero points
      {1, 6, 1, 19, 5, 3, 1, 1, 1, 1, u8, s8, false, true, 9, 0},     // 1-D
      {1, 5, 6, 6, 7, 2, 1, 1, 0, 1, u8, s8, true, false, 0, -128},   // even kernel, W zero -128
      // Depthwise: rows wider than a vector, stride 2 with dilation, 7x7 with uint8 weights and
      // zero points, 1-D stride 2, extreme X zero points.
      {1, 5, 13, 37, 5, 3, 5, 1, 1, 1, u8, s8, true, true, 255, 0},
      {1, 6, 11, 29, 6, 3, 6, 2, 1, 2, s8, s8, true, true, -128, 0},
      {1, 4, 10, 10, 4, 7, 4, 1, 3, 1, u8, u8, true, false, 0, 200},
      {1, 3, 1, 40, 3, 5, 3, 2, 2, 1, u8, s8, true, true, 17, 0},
      {2, 3, 9, 33, 3, 3, 3, 2, 0, 1, s8, s8, false, true, 127, 0},
  };
  for (QConvCase k : cases) {
    checkQConv(k, seed++);
    k.constantWeights = false;  // packed at each run
    checkQConv(k, seed++);
  }
}

void checkMatMulOp(OpType type, std::vector<OpInput> inputs, bool exact, const std::string& what) {
  SCOPED_TRACE(what);
  Node node = makeNode(type);
  if (type == OpType::QGemm) node.setFloat("alpha", 0.75f);
  std::vector<Tensor> got, want;
  Status st = runOp(node, inputs, 1, &got, 2);
  ASSERT_TRUE(st) << st.message();
  st = referenceOp(node, inputs, 1, &want);
  ASSERT_TRUE(st) << st.message();
  if (got[0].dtype() == DataType::Float32)
    expectNear(got[0], want[0], 1e-5, 1e-5);
  else if (exact)
    expectEqualValues(got[0], want[0]);
  else
    expectWithinOneStep(got[0], want[0], 1 + got[0].elements() / 500);
}

TEST(CpuQuantized, QuantizedMatMulsMatchReference) {
  uint32_t seed = 2000;
  for (DataType at : {DataType::UInt8, DataType::Int8})
    for (DataType bt : {DataType::UInt8, DataType::Int8})
      for (int64_t N : {5, 33}) {
        const std::string what = std::string(dataTypeName(at)) + " x " + dataTypeName(bt) + " N=" + std::to_string(N);
        const int64_t M = 7, K = 19;
        Tensor bScale = randomTensor(DataType::Float32, {N}, seed++, 0.001, 0.01);
        Tensor bZero(bt, {N});
        for (int64_t n = 0; n < N; ++n) storeFromDouble(bt, bZero.data(), n, bt == DataType::UInt8 ? 128 + n % 3 : n % 3 - 1);
        const int32_t za = at == DataType::UInt8 ? 100 : -20;
        checkMatMulOp(OpType::QLinearMatMul,
                      {in(randomBytes(at, {2, M, K}, seed++)), constant(scalar(0.03f)), constant(zeroPoint(at, za)),
                       constant(randomBytes(bt, {K, N}, seed++)), constant(bScale), constant(bZero),
                       constant(scalar(0.2f)), constant(zeroPoint(at, at == DataType::UInt8 ? 128 : 0))},
                      false, "QLinearMatMul " + what);
        checkMatMulOp(OpType::QLinearMatMul,  // one B per batch, packed at each run
                      {in(randomBytes(at, {3, M, K}, seed++)), in(scalar(0.03f)), in(zeroPoint(at, za)),
                       in(randomBytes(bt, {3, K, N}, seed++)), in(bScale), in(bZero), in(scalar(0.2f)),
                       in(zeroPoint(at, at == DataType::UInt8 ? 128 : 0))},
                      false, "QLinearMatMul batched " + what);
        for (bool constantB : {true, false}) {
          Tensor b = randomBytes(bt, {K, N}, seed++);
          const std::vector<OpInput> mi = {in(randomBytes(at, {M, K}, seed++)), constantB ? constant(b) : in(b),
                                           in(zeroPoint(at, za)), constantB ? constant(bZero) : in(bZero)};
          checkMatMulOp(OpType::MatMulInteger, mi, true, "MatMulInteger " + what);
        }
        if (at == DataType::Int8 && bt == DataType::UInt8) continue;  // ONNX Runtime's contrib ops have no such pair
        checkMatMulOp(OpType::MatMulIntegerToFloat,
                      {in(randomBytes(at, {3, M, K}, seed++)), constant(randomBytes(bt, {K, N}, seed++)), in(scalar(0.03f)),
                       constant(bScale), in(zeroPoint(at, za)), constant(bZero),
                       constant(randomTensor(DataType::Float32, {N}, seed++))},
                      true, "MatMulIntegerToFloat " + what);
        if (at == DataType::UInt8)
          checkMatMulOp(OpType::DynamicQuantizeMatMul,
                        {in(randomTensor(DataType::Float32, {M, K}, seed++, -2.0, 3.0)), constant(randomBytes(bt, {K, N}, seed++)),
                         constant(bScale), constant(bZero), constant(randomTensor(DataType::Float32, {N}, seed++))},
                        true, "DynamicQuantizeMatMul " + what);
        if (at == DataType::Int8 && bt != DataType::Int8) continue;
        Tensor bT = randomBytes(bt, {N, K}, seed++);
        Node gemm = makeNode(OpType::QGemm);
        for (bool quantizedOut : {false, true}) {
          std::vector<OpInput> q = {in(randomBytes(at, {M, K}, seed++)), constant(scalar(0.03f)), constant(zeroPoint(at, za)),
                                    constant(bT), constant(bScale), constant(bZero),
                                    constant(randomTensor(DataType::Int32, {N}, seed++, -500, 500))};
          if (quantizedOut) {
            q.push_back(constant(scalar(0.1f)));
            q.push_back(constant(zeroPoint(at, 5)));
          }
          Node node = makeNode(OpType::QGemm);
          node.setInt("transB", 1);
          node.setFloat("alpha", 0.75f);
          std::vector<Tensor> got, want;
          Status st = runOp(node, q, 1, &got, 2);
          ASSERT_TRUE(st) << st.message();
          st = referenceOp(node, q, 1, &want);
          ASSERT_TRUE(st) << st.message();
          SCOPED_TRACE("QGemm " + what);
          if (quantizedOut)
            expectEqualValues(got[0], want[0]);
          else
            expectNear(got[0], want[0], 1e-5, 1e-5);
        }
      }
}

// QuantizeLinear / DequantizeLinear executions against the reference, with ties, NaN, infinities
// and values far outside the type, per tensor and per axis, sizes off the vector width.
TEST(CpuQuantized, QuantizeAndDequantizeMatchReference) {
  uint32_t seed = 3000;
  for (DataType t : {DataType::UInt8, DataType::Int8})
    for (bool perAxis : {false, true})
      for (const Shape& shape : {Shape{1, 3, 5, 7}, Shape{2, 5, 33}, Shape{1, 4, 1000}}) {
        SCOPED_TRACE(std::string(dataTypeName(t)) + (perAxis ? " per axis " : " per tensor ") + shapeToString(shape));
        const int64_t channels = shape[1];
        Tensor scale = perAxis ? randomTensor(DataType::Float32, {channels}, seed++, 0.01, 0.1) : scalar(0.05f);
        Tensor zero(t, perAxis ? Shape{channels} : Shape{});
        for (int64_t c = 0; c < zero.elements(); ++c) storeFromDouble(t, zero.data(), c, t == DataType::Int8 ? c % 5 - 2 : 120 + c % 7);
        Tensor x = randomTensor(DataType::Float32, shape, seed++, -9.0, 9.0);
        float* xv = x.data<float>();
        const float special[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.025f, -0.025f, 0.075f, 0.125f};
        for (int64_t i = 0; i < 9 && i < x.elements(); ++i) xv[i * 7 % x.elements()] = special[i];
        for (int64_t i = 100; i < x.elements(); i += 37) xv[i] = 0.05f * (static_cast<float>(i % 11) + 0.5f);  // ties
        Node q = makeNode(OpType::QuantizeLinear), dq = makeNode(OpType::DequantizeLinear);
        q.setInt("axis", 1);
        dq.setInt("axis", 1);
        std::vector<OpInput> qIn = {in(x), constant(scale), constant(zero)};
        std::vector<Tensor> got, want;
        ASSERT_TRUE(runOp(q, qIn, 1, &got, 2));
        ASSERT_TRUE(referenceOp(q, qIn, 1, &want));
        expectEqualValues(got[0], want[0]);
        std::vector<OpInput> dqIn = {in(randomBytes(t, shape, seed++)), constant(scale), constant(zero)};
        ASSERT_TRUE(runOp(dq, dqIn, 1, &got, 2));
        ASSERT_TRUE(referenceOp(dq, dqIn, 1, &want));
        expectEqualValues(got[0], want[0]);
      }
}

TEST(CpuQuantized, DynamicQuantizeLinearMatchesReference) {
  uint32_t seed = 3500;
  for (const Shape& shape : {Shape{1}, Shape{3, 5}, Shape{2, 40000}, Shape{7}}) {
    SCOPED_TRACE(shapeToString(shape));
    Tensor x = randomTensor(DataType::Float32, shape, seed++, -3.0, 5.0);
    if (x.elements() > 3) x.data<float>()[2] = NAN, x.data<float>()[3] = 0.0625f;
    if (shape == Shape{7})
      for (int64_t i = 0; i < 7; ++i) x.data<float>()[i] = 0.f;  // a zero range: scale 0
    Node node = makeNode(OpType::DynamicQuantizeLinear);
    std::vector<Tensor> got, want;
    ASSERT_TRUE(runOp(node, {in(x)}, 3, &got, 2));
    ASSERT_TRUE(referenceOp(node, {in(x)}, 3, &want));
    for (int i = 0; i < 3; ++i) expectEqualValues(got[i], want[i]);
  }
}

TEST(CpuQuantized, QuantizeRowKernelsAgree) {
  const CpuFunctions& scalar = scalarCpuFunctions();
  const CpuFunctions& fast = cpuFunctions();
  std::vector<float> x(1031);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-20.f, 20.f);
  for (auto& v : x) v = dist(gen);
  x[3] = NAN, x[4] = INFINITY, x[5] = -INFINITY, x[6] = 0.5f, x[7] = 1.5f, x[8] = -2.5f;
  for (bool signedBytes : {false, true}) {
    std::vector<uint8_t> a(x.size()), b(x.size());
    scalar.quantizeRow(x.data(), static_cast<int64_t>(x.size()), 0.5f, signedBytes ? -3 : 130, signedBytes, a.data());
    fast.quantizeRow(x.data(), static_cast<int64_t>(x.size()), 0.5f, signedBytes ? -3 : 130, signedBytes, b.data());
    EXPECT_EQ(a, b);
    std::vector<float> fa(x.size()), fb(x.size());
    scalar.dequantizeRow(a.data(), static_cast<int64_t>(a.size()), signedBytes, 7, 0.37f, fa.data());
    fast.dequantizeRow(a.data(), static_cast<int64_t>(a.size()), signedBytes, 7, 0.37f, fb.data());
    EXPECT_EQ(fa, fb);
  }
}

}  // namespace
}  // namespace osprey::test
