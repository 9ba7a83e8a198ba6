// packedGemmToPlanes: the GEMM whose micro-kernel stores C transposed into channel planes
// (AVX-512 only; skipped where the function table has no such kernel).
#include <cmath>

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
  // Rows (output positions) ending in every tail size 1..7 and whole blocks; columns (channels)
  // with a partial last panel of 32 (45, 40, 1000 % 32 = 8); K in one block, and K past the
  // 256-deep block (300, 600), which reloads the stored planes to accumulate.
  const int64_t shapes[][3] = {{1, 64, 30},  {2, 45, 17},   {3, 32, 300},  {5, 96, 64},  {7, 40, 600},
                               {9, 64, 256}, {13, 33, 100}, {49, 128, 257}, {196, 64, 80}, {169, 1000, 40}};
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

}  // namespace
}  // namespace osprey::test
