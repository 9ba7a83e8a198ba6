// The CPU's byte executions of QLinearAdd, QLinearMul and MaxPool
// (src/backends/cpu/kernels/quantized_elementwise.h) against the reference kernels, byte for
// byte: sizes around the 32-byte vector step, every broadcast form (same shape, a scalar, a
// per-channel operand on either side, repeats in the outer dims), zero points at both ends of
// each type, scales that round on ties and that saturate, and pooling windows of every kind the
// reference takes. The vector loops are also compared with the scalar ones the "scalar" ISA
// limit runs.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/kernels/quantized_elementwise.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

const DataType kTypes[] = {DataType::UInt8, DataType::Int8};



// Runs node through a session (the CPU backend's execution) and its reference kernel, threads
// 1 and 2, and expects the same bytes.
void expectMatchesReference(const Node& node, const std::vector<OpInput>& inputs) {
  std::vector<Tensor> expected;
  Status st = referenceOp(node, inputs, 1, &expected);
  ASSERT_TRUE(st.isOk()) << st.message();
  for (int threads : {1, 2}) {
    std::vector<Tensor> actual;
    st = runOp(node, inputs, 1, &actual, threads);
    ASSERT_TRUE(st.isOk()) << st.message();
    SCOPED_TRACE("threads " + std::to_string(threads));
    expectEqualValues(actual[0], expected[0]);
  }
}

// ---- QLinearAdd, QLinearMul ----

struct Scales {
  float a, b, c;
  const char* what;
};

// Ordinary scales; ratios of powers of two (many exact ties, rounded half to even); scales that
// saturate the output; and a tiny output scale that takes values beyond int32 (cvtps gives
// INT32_MIN there, which saturates to the type's minimum).
const Scales kScales[] = {{0.0173f, 0.0291f, 0.0457f, "ordinary"},
                          {0.5f, 0.25f, 1.0f, "ties"},
                          {0.31f, 0.47f, 0.011f, "saturating"},
                          {0.9f, 0.8f, 1e-9f, "beyond int32"}};

void checkBinary(OpType type, DataType t, const Shape& sa, const Shape& sb, uint32_t seed, bool fixedPoint = false) {
  const bool signedType = t == DataType::Int8;
  const int ends[3][3] = {{0, 255, 128}, {255, 0, 0}, {131, 7, 255}};  // uint8 zA, zB, zC; int8 - 128
  for (const Scales& s : kScales)
    for (const auto& z : ends) {
      const int shift = signedType ? 128 : 0;
      const int zA = z[0] - shift, zB = z[1] - shift, zC = z[2] - shift;
      SCOPED_TRACE(std::string(type == OpType::QLinearAdd ? "QLinearAdd " : "QLinearMul ") + dataTypeName(t) + " " +
                   shapeToString(sa) + " " + shapeToString(sb) + " scales " + s.what + " zero points " +
                   std::to_string(zA) + " " + std::to_string(zB) + " " + std::to_string(zC));
      const Tensor a = randomBytes(t, sa, seed++), b = randomBytes(t, sb, seed++);
      Node node = makeNode(type);
      if (fixedPoint) node.setString("requantize", "fixed_point");
      expectMatchesReference(node, {in(a), constant(scalar(s.a)), constant(zeroPoint(t, zA)), in(b),
                                              constant(scalar(s.b)), constant(zeroPoint(t, zB)),
                                              constant(scalar(s.c)), constant(zeroPoint(t, zC))});
    }
}

TEST(CpuQuantizedElementwise, BinarySameShapeAtEverySize) {
  uint32_t seed = 1;
  for (OpType type : {OpType::QLinearAdd, OpType::QLinearMul})
    for (DataType t : kTypes)
      for (const Shape& shape : {Shape{1}, Shape{7}, Shape{31}, Shape{32}, Shape{33}, Shape{1037},
                                 Shape{2, 3, 5, 7}, Shape{1, 8, 67, 71}})
        checkBinary(type, t, shape, shape, seed += 16);
}

TEST(CpuQuantizedElementwise, BinaryBroadcastForms) {
  const std::vector<std::pair<Shape, Shape>> forms = {
      {{1037}, {}},                      // B a scalar: folded into the constant
      {{1}, {33}},                       // A a one-element tensor that repeats
      {{1, 1, 1, 1}, {1, 3, 5, 7}},      // A repeats, rank padded
      {{1, 13, 9, 11}, {13, 1, 1}},      // per-channel B
      {{13, 1, 1}, {1, 13, 9, 11}},      // per-channel A (its value folded, ORT's swapped operands)
      {{2, 5, 67, 71}, {1, 5, 1, 1}},    // per-channel over a batch, runs long enough to split
      {{3, 4}, {3, 1}},                  // repeats along the innermost span only
      {{5, 1}, {1, 6}},                  // each repeats in one dim: A along the inner span
      {{4, 1, 5}, {1, 3, 1}},            // repeats alternating over three dims
      {{1, 5, 7, 3}, {3}},               // channels last: both vary inside, B repeats outside
      {{1}, {1}},                        // one element
  };
  uint32_t seed = 1000;
  for (OpType type : {OpType::QLinearAdd, OpType::QLinearMul})
    for (DataType t : kTypes)
      for (const auto& [sa, sb] : forms) checkBinary(type, t, sa, sb, seed += 16);
}

// LiteRT's integer Add (requantize = "fixed_point", ops/fixed_point_add.h) in every broadcast
// form and at every size around the vector step; scales outside its range fall back to float.
TEST(CpuQuantizedElementwise, FixedPointAddMatchesReference) {
  const std::vector<std::pair<Shape, Shape>> forms = {{{1037}, {1037}}, {{33}, {33}}, {{1037}, {}},
                                                      {{1}, {33}},     {{1, 13, 9, 11}, {13, 1, 1}},
                                                      {{13, 1, 1}, {1, 13, 9, 11}}, {{5, 1}, {1, 6}}};
  uint32_t seed = 5000;
  for (DataType t : kTypes)
    for (const auto& [sa, sb] : forms) checkBinary(OpType::QLinearAdd, t, sa, sb, seed += 16, true);
}

// QLinearSigmoid and QLinearLeakyRelu through the CPU's cached table: every code, sizes around
// the parallel split, zero points at both ends, and a second run with other scales (the table
// must be rebuilt).
TEST(CpuQuantizedElementwise, LookupOpsMatchReference) {
  uint32_t seed = 7000;
  for (OpType type : {OpType::QLinearSigmoid, OpType::QLinearLeakyRelu})
    for (DataType t : kTypes) {
      const int low = static_cast<int>(byteLow(t));
      for (const Shape& shape : {Shape{256}, Shape{1, 3, 7, 13}, Shape{2, 96, 17, 23}})
        for (const auto& [sX, zX, sY, zY] : {std::tuple<float, int, float, int>{0.031f, 3, 0.0039f, 0},
                                             {0.5f, 255, 0.01f, 255}, {0.0071f, 128, 0.2f, 17}}) {
          SCOPED_TRACE(std::string(type == OpType::QLinearSigmoid ? "QLinearSigmoid " : "QLinearLeakyRelu ") +
                       dataTypeName(t) + " " + shapeToString(shape));
          Node node = makeNode(type);
          if (type == OpType::QLinearLeakyRelu) node.setFloat("alpha", 0.13f);
          expectMatchesReference(node, {in(randomBytes(t, shape, seed++)), constant(scalar(sX)),
                                        constant(zeroPoint(t, low + zX)), constant(scalar(sY)),
                                        constant(zeroPoint(t, low + zY))});
        }
    }
}

// Every pair of byte values, in each of the three loops (both vary; B repeats; A repeats). The
// scales put many results next to a rounding tie (A's or B's ratio to C exactly one half; a
// product ratio one float above one half), where one rounding more or fewer than the
// reference's (an FMA for a multiply and an add, or the reverse) changes the byte; random data
// and ordinary scales meet such a case once in tens of thousands of elements.
TEST(CpuQuantizedElementwise, BinaryEveryPairOfBytes) {
  const Scales scales[] = {{0.0509644896f, 0.485338748f, 0.101928979f, "A's ratio one half"},
                           {0.485338748f, 0.0509644896f, 0.101928979f, "B's ratio one half"},
                           {0.0490262806f, 0.485119879f, 0.0475672409f, "product ratio above one half"},
                           {0.0173f, 0.0291f, 0.0457f, "ordinary"}};
  for (DataType t : kTypes) {
    const double low = byteLow(t);
    Tensor rows(t, {256, 1}), columns(t, {1, 256}), rowOfPair(t, {256, 256}), columnOfPair(t, {256, 256});
    for (int64_t i = 0; i < 256; ++i) {
      storeFromDouble(t, rows.data(), i, low + i);
      storeFromDouble(t, columns.data(), i, low + i);
    }
    for (int64_t i = 0; i < 256 * 256; ++i) {
      storeFromDouble(t, rowOfPair.data(), i, low + i / 256);
      storeFromDouble(t, columnOfPair.data(), i, low + i % 256);
    }
    const std::pair<Tensor, Tensor> operands[] = {{columnOfPair, rowOfPair}, {columnOfPair, rows}, {rows, columns}};
    for (OpType type : {OpType::QLinearAdd, OpType::QLinearMul})
      for (const Scales& s : scales)
        for (const auto& [a, b] : operands) {
          SCOPED_TRACE(std::string(type == OpType::QLinearAdd ? "QLinearAdd " : "QLinearMul ") + dataTypeName(t) +
                       " " + shapeToString(a.shape()) + " " + shapeToString(b.shape()) + " scales " + s.what);
          const int zA = static_cast<int>(low) + 3, zB = static_cast<int>(low) + 250, zC = static_cast<int>(low) + 120;
          expectMatchesReference(makeNode(type), {in(a), constant(scalar(s.a)), constant(zeroPoint(t, zA)), in(b),
                                                  constant(scalar(s.b)), constant(zeroPoint(t, zB)),
                                                  constant(scalar(s.c)), constant(zeroPoint(t, zC))});
        }
  }
}

TEST(CpuQuantizedElementwise, BinaryOmittedZeroPoints) {
  const Tensor a = randomBytes(DataType::UInt8, {3, 37}, 7), b = randomBytes(DataType::UInt8, {3, 1}, 8);
  for (OpType type : {OpType::QLinearAdd, OpType::QLinearMul})
    expectMatchesReference(makeNode(type), {in(a), constant(scalar(0.1f)), absent(), in(b), constant(scalar(0.2f)),
                                            absent(), constant(scalar(0.4f))});
}

// The vector loops against the scalar ones, on values where the two could part: ties, results
// beyond the type and beyond int32, NaN ratios.
TEST(CpuQuantizedElementwise, VectorLoopsMatchScalarLoops) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2+FMA";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float ratios[][3] = {{0.37f, 0.61f, 3.5f}, {0.5f, 0.25f, 0.5f}, {7.3f, 9.1f, -200.f}, {3e7f, 2e7f, 1e9f},
                             {nan, 0.5f, 1.f}};
  std::mt19937 gen(42);
  for (bool isSigned : {false, true}) {
    const QuantizedBinaryLoops scalarLoops = quantizedBinaryLoopsScalar(isSigned);
    const QuantizedBinaryLoops vectorLoops = quantizedBinaryLoopsAvx2(isSigned);
    for (int64_t n : {0, 1, 7, 31, 32, 33, 63, 1000, 1037}) {
      std::vector<uint8_t> a(n), b(n), want(n), got(n);
      for (auto& v : a) v = static_cast<uint8_t>(gen());
      for (auto& v : b) v = static_cast<uint8_t>(gen());
      for (const auto& r : ratios) {
        SCOPED_TRACE(std::string(isSigned ? "int8" : "uint8") + " n " + std::to_string(n) + " ratios " +
                     std::to_string(r[0]) + " " + std::to_string(r[1]) + " " + std::to_string(r[2]));
        const int32_t zero = isSigned ? -128 : 255;
        scalarLoops.add(a.data(), b.data(), n, r[0], r[1], r[2], want.data());
        vectorLoops.add(a.data(), b.data(), n, r[0], r[1], r[2], got.data());
        EXPECT_EQ(got, want) << "add";
        scalarLoops.addRepeated(a.data(), n, r[0], r[2], want.data());
        vectorLoops.addRepeated(a.data(), n, r[0], r[2], got.data());
        EXPECT_EQ(got, want) << "addRepeated";
        scalarLoops.mul(a.data(), b.data(), n, zero, 3, r[0] * 1e-3f, r[2], want.data());
        vectorLoops.mul(a.data(), b.data(), n, zero, 3, r[0] * 1e-3f, r[2], got.data());
        EXPECT_EQ(got, want) << "mul";
        scalarLoops.mulRepeated(a.data(), n, zero, -77, r[1] * 1e-2f, r[2], want.data());
        vectorLoops.mulRepeated(a.data(), n, zero, -77, r[1] * 1e-2f, r[2], got.data());
        EXPECT_EQ(got, want) << "mulRepeated";
      }
    }
  }
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

// ---- MaxPool on bytes ----

struct MaxPoolCase {
  Shape x, kernel;
  std::vector<int64_t> strides, pads, dilations;
  bool ceilMode = false;
};

TEST(CpuQuantizedElementwise, MaxPoolMatchesReference) {
  const std::vector<MaxPoolCase> cases = {
      {{1, 4, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},     // ResNet's stem pool
      {{1, 3, 13, 17}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}},       // odd sizes
      {{2, 3, 16, 18}, {2, 2}, {2, 2}, {}, {}},                 // VGG's
      {{1, 2, 15, 15}, {2, 2}, {2, 2}, {}, {}, true},           // ceil mode: a last window half outside
      {{1, 3, 11, 9}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}},        // stride 1 "same"
      {{1, 2, 19, 23}, {5, 5}, {3, 3}, {2, 2, 2, 2}, {}},       // stride 3
      {{1, 2, 17, 21}, {3, 3}, {2, 2}, {2, 2, 2, 2}, {2, 2}},   // dilated
      {{1, 2, 10, 13}, {2, 3}, {1, 2}, {0, 1, 1, 0}, {}},       // asymmetric kernel, strides, pads
      {{1, 1, 2, 2}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}},         // kernel larger than the input
      {{1, 2, 9, 9}, {1, 1}, {2, 2}, {}, {}},                   // a 1x1 subsampling
      {{1, 2, 1, 45}, {1, 3}, {1, 2}, {0, 1, 0, 1}, {}},        // one row
      {{1, 1, 2, 4099}, {2, 3}, {1, 2}, {0, 1, 0, 1}, {}},      // wider than the row scratch: the reference's
  };
  uint32_t seed = 5000;
  for (DataType t : kTypes)
    for (const MaxPoolCase& c : cases) {
      SCOPED_TRACE(std::string(dataTypeName(t)) + " x " + shapeToString(c.x) + " kernel " + shapeToString(c.kernel) +
                   " strides " + shapeToString(c.strides) + " pads " + shapeToString(c.pads));
      Node node = makeNode(OpType::MaxPool);
      node.setInts("kernel_shape", c.kernel);
      if (!c.strides.empty()) node.setInts("strides", c.strides);
      if (!c.pads.empty()) node.setInts("pads", c.pads);
      if (!c.dilations.empty()) node.setInts("dilations", c.dilations);
      if (c.ceilMode) node.setInt("ceil_mode", 1);
      expectMatchesReference(node, {in(randomBytes(t, c.x, seed++))});
      // Mostly the type's extremes: ties and a maximum at the minimum.
      Tensor extremes = randomBytes(t, c.x, seed++);
      for (int64_t i = 0; i < extremes.elements(); ++i)
        storeFromDouble(t, extremes.data(), i, at(extremes, i) < 0.75 * byteHigh(t) ? byteLow(t) : byteHigh(t));
      expectMatchesReference(node, {in(extremes)});
    }
}

}  // namespace
}  // namespace osprey::test
