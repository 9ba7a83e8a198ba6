// packedGemmToPlanes: the GEMM whose micro-kernel stores C transposed into channel planes
// (AVX2 and AVX-512; skipped where the function table has no such kernel), and the micro-kernels
// themselves: whole blocks and every row tail, stored as C or transposed.
#include <cmath>
#include <limits>

#include "backends/cpu/kernels/packed_gemm.h"
#include "core/thread_pool.h"
#include "ops/activation.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

using Kind = FusedActivation::Kind;

// y[j * ldy + i] = act(sum over k of a[k * M + i] * w[k][j] + bias[j] + z[j * ldy + i]), in double.
std::vector<double> planesExpectation(const float* a, const float* w, const float* bias, const float* z, int64_t M,
                                      int64_t N, int64_t K, int64_t ldy, const FusedActivation& act) {
  std::vector<double> expected(N * ldy, 0.0);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < M; ++i) {
      double s = bias ? bias[j] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(a[k * M + i]) * w[k * N + j];
      if (z) s += z[j * ldy + i];
      expected[j * ldy + i] = act.apply(static_cast<float>(s));
    }
  return expected;
}

TEST(CpuKernels, PackedGemmToPlanes) {
  const CpuFunctions& fn = cpuFunctions();
  if (!fn.gemmPlanes) GTEST_SKIP() << "the " << fn.isa << " function table has no transposing GEMM kernel";
  // Rows (output positions) ending in every tail size (1..7 rows of 8, 1..5 of 6) and whole blocks;
  // columns (channels) with a partial last panel of 32 or 16 (45, 40, 33, 17, 1000 % 32 = 8); K in
  // one block, and K past the 256-deep block (300, 600), which reloads the stored planes to accumulate.
  const int64_t shapes[][3] = {{1, 64, 30},    {2, 45, 17},    {3, 32, 300},   {5, 96, 64},   {7, 40, 600},
                               {9, 64, 256},   {13, 33, 100},  {49, 128, 257}, {196, 64, 80}, {169, 1000, 40},
                               {4, 17, 3},     {6, 16, 1},     {11, 48, 300},  {12, 31, 17},  {10, 15, 64}};
  const Kind kinds[] = {Kind::None, Kind::Relu, Kind::Clip, Kind::Sigmoid};
  uint32_t seed = 900;
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (const auto& shape : shapes) {
      const int64_t M = shape[0], N = shape[1], K = shape[2], ldy = M + 3;  // planes wider than the map
      Tensor a = randomTensor(DataType::Float32, {K, M}, seed++);
      Tensor w = randomTensor(DataType::Float32, {K, N}, seed++);
      Tensor bias = randomTensor(DataType::Float32, {N}, seed++);
      Tensor z = randomTensor(DataType::Float32, {N, ldy}, seed++, -2, 2);
      std::vector<float> packed(packedBSize(fn, K, N));
      packGemmB(fn, w.data<float>(), N, 1, K, N, packed.data());
      GemmA ga;
      ga.data = a.data<float>();
      ga.rowStride = 1;
      ga.colStride = M;
      GemmB gb;
      gb.data = packed.data();
      gb.packed = true;
      for (int variant = 0; variant < 4; ++variant) {
        FusedActivation act;
        act.kind = kinds[variant];
        act.a = -0.5f, act.b = 0.75f;  // Clip's bounds
        const bool withBias = variant != 1, withResidual = variant >= 1;
        const float* biasData = withBias ? bias.data<float>() : nullptr;
        const float* zData = withResidual ? z.data<float>() : nullptr;
        const float sentinel = 1234.5f;
        std::vector<float> y(N * ldy, sentinel);
        packedGemmToPlanes(threads > 1 ? &pool : nullptr, fn, M, N, K, ga, gb, biasData, zData, act, y.data(), ldy);
        const std::vector<double> expected =
            planesExpectation(a.data<float>(), w.data<float>(), biasData, zData, M, N, K, ldy, act);
        int failures = 0;
        for (int64_t j = 0; j < N && failures < 5; ++j)
          for (int64_t i = 0; i < ldy && failures < 5; ++i) {
            const float got = y[j * ldy + i];
            if (i >= M) {  // between the planes: never written
              EXPECT_EQ(got, sentinel) << "wrote past position " << M << " of plane " << j;
              failures += got != sentinel;
              continue;
            }
            const double want = expected[j * ldy + i];
            const double tol = 1e-5 * (1.0 + std::fabs(want)) * std::sqrt(double(K));
            if (std::fabs(got - want) > tol) {
              ADD_FAILURE() << "M=" << M << " N=" << N << " K=" << K << " threads=" << threads << " variant " << variant
                            << ": y[" << j << "][" << i << "] = " << got << ", expected " << want;
              ++failures;
            }
          }
      }
    }
  }
}

// One micro-kernel call against its contract (cpu_functions.h), in double: kRows x nr of
// (accumulate ? C : 0) + A B, then the stage's bias (per row, or per column when transposed),
// residual (laid out as C) and clamp; C stored as it is or transposed. Nothing written outside
// the block's rows and columns.
void checkMicroKernel(const char* isa, GemmMicroKernel kernel, bool transposed, int64_t rows, int64_t nr, int64_t K,
                      bool positionsLayout, int64_t ldb, bool accumulate, int stageVariant, uint32_t seed) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kSentinel = 1234.5f;
  // A with the rows' values of one k contiguous (positions as rows, packed A) or a row at a time.
  const int64_t aRowStride = positionsLayout ? 1 : K + 5, aColStride = positionsLayout ? rows + 3 : 1;
  Tensor aT = randomTensor(DataType::Float32, {(K + 5) * (rows + 5)}, seed);
  Tensor bT = randomTensor(DataType::Float32, {K * ldb}, seed + 1);
  const int64_t ldc = transposed ? rows + 3 : nr + 5, ldz = transposed ? rows + 7 : nr + 2;
  const int64_t lines = transposed ? nr + 1 : rows + 1;  // one line past the block: must stay untouched
  Tensor cT = randomTensor(DataType::Float32, {lines * ldc}, seed + 2, -2, 2);
  Tensor zT = randomTensor(DataType::Float32, {lines * ldz}, seed + 3, -2, 2);
  Tensor biasT = randomTensor(DataType::Float32, {std::max(rows, nr)}, seed + 4);
  auto at = [&](int64_t i, int64_t j) { return transposed ? j * ldc + i : i * ldc + j; };
  std::vector<float> c(lines * ldc, kSentinel);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < nr; ++j) c[at(i, j)] = cT.data<float>()[at(i, j)];
  const std::vector<float> before = c;
  GemmOutputStage stage;
  const bool withStage = stageVariant > 0, withBias = stageVariant == 1 || stageVariant == 3;
  const bool withResidual = stageVariant == 1 || stageVariant == 2;
  if (withBias) (transposed ? stage.columnBias : stage.rowBias) = biasT.data<float>();
  if (withResidual) stage.residual = zT.data<float>(), stage.residualStride = ldz;
  stage.lo = stageVariant == 1 ? -0.5f : stageVariant == 3 ? 0.f : -kInf;
  stage.hi = stageVariant == 1 ? 0.75f : kInf;
  kernel(K, aT.data<float>(), aRowStride, aColStride, bT.data<float>(), ldb, c.data(), ldc, accumulate,
         withStage ? &stage : nullptr);
  SCOPED_TRACE(::testing::Message() << isa << (transposed ? " transposed" : "") << " rows " << rows << " K " << K
                                    << (positionsLayout ? " positions" : " row-major") << " ldb " << ldb
                                    << (accumulate ? " accumulating" : "") << " stage " << stageVariant);
  int failures = 0;
  for (int64_t line = 0; line < lines && failures < 5; ++line)
    for (int64_t e = 0; e < ldc && failures < 5; ++e) {
      const int64_t i = transposed ? e : line, j = transposed ? line : e;
      const float got = c[line * ldc + e];
      if (i >= rows || j >= nr) {
        EXPECT_EQ(got, before[line * ldc + e]) << "wrote outside the block at (" << i << ", " << j << ")";
        failures += got != before[line * ldc + e];
        continue;
      }
      double want = accumulate ? before[at(i, j)] : 0.0;
      for (int64_t k = 0; k < K; ++k)
        want += double(aT.data<float>()[i * aRowStride + k * aColStride]) * bT.data<float>()[k * ldb + j];
      if (withBias) want += biasT.data<float>()[transposed ? j : i];
      if (withResidual) want += zT.data<float>()[transposed ? j * ldz + i : i * ldz + j];
      if (withStage) want = std::min<double>(stage.hi, std::max<double>(stage.lo, want));
      const double tol = 1e-5 * (1.0 + std::fabs(want)) * std::sqrt(double(K));
      const bool near = std::fabs(got - want) <= tol;
      EXPECT_TRUE(near) << "(" << i << ", " << j << ") = " << got << ", expected " << want;
      failures += !near;
    }
}

// Every micro-kernel of the selected table (the whole block, gemmTail, gemmPlanes and
// gemmPlanesTail where it has them) and the scalar one: every row count, K of 1, 3, 17 and 300, A
// laid out with positions as rows or row by row, packed B and B in place, accumulating or not,
// no stage and stages with and without bias, residual and clamp bounds.
TEST(CpuKernels, GemmMicroKernelsAgree) {
  uint32_t seed = 1700;
  for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
    const int64_t mr = fn->gemmMr, nr = fn->gemmNr;
    for (bool transposed : {false, true})
      for (int64_t rows = 1; rows <= mr; ++rows) {
        GemmMicroKernel kernel = nullptr;
        if (transposed)
          kernel = !fn->gemmPlanes ? nullptr : rows == mr ? fn->gemmPlanes : fn->gemmPlanesTail[rows];
        else
          kernel = rows == mr ? fn->gemm : fn->gemmTail ? fn->gemmTail[rows] : nullptr;
        if (!kernel) continue;
        for (int64_t K : {1, 3, 17, 300})
          for (bool positionsLayout : {true, false})
            for (int64_t ldb : {nr, nr + 7})
              for (bool accumulate : {false, true})
                for (int stageVariant = 0; stageVariant < 4; ++stageVariant)
                  checkMicroKernel(fn->isa, kernel, transposed, rows, nr, K, positionsLayout, ldb, accumulate,
                                   stageVariant, seed++);
      }
  }
}

}  // namespace
}  // namespace osprey::test
