// MatMulNBits (ONNX Runtime's com.microsoft weight-only quantized MatMul): the reference kernel
// against dequantize-then-matmul in double (4 and 8 bits, block sizes 16 / 32 / 128, K not a
// multiple of the block, odd N, with and without zero points and bias, batch dimensions on A);
// the CPU execution against the reference (GEMV rows 1-4, GEMM rows with partial register
// blocks, one and two threads); every kernel table this CPU runs (scalar, AVX2, AVX-512) on
// shapes that cross the K-slice and leave partial panels; bad inputs as errors naming the tensor.
#include <cmath>
#include <random>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/matmul_nbits.h"
#include "backends/cpu/kernels/matmul_nbits_int8.h"
#include "core/thread_pool.h"
#include "ops/activation.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

// One quantized weight as MatMulNBitsQuantizer writes it, and W [K][N] dequantized from it.
struct Quantized {
  int64_t K, N, bits, bs, kBlocks;
  Tensor b, scales, zeros;  // zeros unused without hasZeros: the default 2^(bits - 1)
  bool hasZeros;
  std::vector<double> w;    // W[k * N + n]
};

Quantized quantized(int64_t K, int64_t N, int64_t bits, int64_t bs, bool withZeros, uint32_t seed,
                    bool scales2d = false) {
  Quantized q{K, N, bits, bs, (K + bs - 1) / bs, {}, {}, {}, withZeros, {}};
  std::mt19937 gen(seed);
  const int64_t blob = bs * bits / 8, zeroRow = bits == 8 ? q.kBlocks : (q.kBlocks + 1) / 2;
  const int maxCode = (1 << bits) - 1;
  std::uniform_int_distribution<int> code(0, maxCode);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  q.b = Tensor(DataType::UInt8, {N, q.kBlocks, blob});
  q.scales = scales2d ? Tensor(DataType::Float32, {N, q.kBlocks}) : Tensor(DataType::Float32, {N * q.kBlocks});
  for (int64_t i = 0; i < q.b.elements(); ++i) q.b.data<uint8_t>()[i] = static_cast<uint8_t>(code(gen));
  for (int64_t i = 0; i < q.scales.elements(); ++i) q.scales.data<float>()[i] = scale(gen);
  if (withZeros) {
    q.zeros = Tensor(DataType::UInt8, {N * zeroRow});
    std::uniform_int_distribution<int> byte(0, 255);  // 4 bits: two zero points a byte
    for (int64_t i = 0; i < q.zeros.elements(); ++i) q.zeros.data<uint8_t>()[i] = static_cast<uint8_t>(byte(gen));
  }
  q.w.assign(static_cast<size_t>(K * N), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t blk = k / bs, i = k % bs;
      const uint8_t byte = q.b.data<uint8_t>()[(n * q.kBlocks + blk) * blob + (bits == 8 ? i : i / 2)];
      const int c = bits == 8 ? byte : (i % 2 ? byte >> 4 : byte & 15);
      int z = 1 << (bits - 1);
      if (withZeros) {
        const uint8_t zb = q.zeros.data<uint8_t>()[n * zeroRow + (bits == 8 ? blk : blk / 2)];
        z = bits == 8 ? zb : (blk % 2 ? zb >> 4 : zb & 15);
      }
      q.w[k * N + n] = static_cast<double>(static_cast<float>(c - z) * q.scales.data<float>()[n * q.kBlocks + blk]);
    }
  return q;
}

Node nbitsNode(const Quantized& q, int64_t accuracyLevel = 0) {
  Node node = makeNode(OpType::MatMulNBits);
  node.setInt("K", q.K);
  node.setInt("N", q.N);
  node.setInt("bits", q.bits);
  node.setInt("block_size", q.bs);
  if (accuracyLevel) node.setInt("accuracy_level", accuracyLevel);
  return node;
}

std::vector<OpInput> nbitsInputs(const Quantized& q, const Tensor& a, const Tensor* bias) {
  std::vector<OpInput> ins = {in(a), constant(q.b), constant(q.scales)};
  if (q.hasZeros || bias) ins.push_back(q.hasZeros ? constant(q.zeros) : absent());
  if (bias) {
    ins.push_back(absent());  // g_idx
    ins.push_back(constant(*bias));
  }
  return ins;
}

// Expects |y - A x W - bias| within 1e-5 of sum |a w| (float sums in any order) for every output.
void expectMatches(const Quantized& q, const float* a, int64_t M, const float* bias, const float* y) {
  int bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t n = 0; n < q.N; ++n) {
      double sum = bias ? bias[n] : 0.0, magnitude = bias ? std::fabs(bias[n]) : 0.0;
      for (int64_t k = 0; k < q.K; ++k) {
        sum += a[i * q.K + k] * q.w[k * q.N + n];
        magnitude += std::fabs(a[i * q.K + k] * q.w[k * q.N + n]);
      }
      const double got = y[i * q.N + n];
      if (!(std::fabs(got - sum) <= 1e-5 * magnitude + 1e-7) && bad++ < 5)
        ADD_FAILURE() << "y[" << i << "][" << n << "] = " << got << ", expected " << sum << " (sum |a w| " << magnitude
                      << ")";
    }
}

struct Case {
  int64_t bits, bs, K, N;
  bool zeros, bias;
  Shape batch;  // A is batch + [K]
};

std::vector<Case> cases() {
  std::vector<Case> all;
  for (int64_t bits : {4, 8})
    for (int64_t bs : {16, 32, 128})
      for (bool zeros : {false, true}) {
        const bool bias = (bs == 32) != zeros;
        all.push_back({bits, bs, bs == 128 ? 200 : 77, bs == 16 ? 13 : 37, zeros, bias, {2, 3}});
      }
  all.push_back({4, 32, 64, 1, true, true, {5}});  // one column, K a multiple of the block
  all.push_back({8, 16, 16, 7, false, false, {}});  // A 1-D: y [N]
  return all;
}

TEST(MatMulNBits, ReferenceMatchesDequantizeThenMatMul) {
  uint32_t seed = 10;
  for (const Case& c : cases()) {
    SCOPED_TRACE("bits " + std::to_string(c.bits) + " block " + std::to_string(c.bs) + " K " + std::to_string(c.K) +
                 " N " + std::to_string(c.N) + (c.zeros ? " zero points" : "") + (c.bias ? " bias" : ""));
    const bool scales2d = seed % 2 == 0;
    const Quantized q = quantized(c.K, c.N, c.bits, c.bs, c.zeros, seed++, scales2d);
    Shape aShape = c.batch;
    aShape.push_back(c.K);
    const Tensor a = randomTensor(DataType::Float32, aShape, seed++);
    const Tensor bias = randomTensor(DataType::Float32, {c.N}, seed++);
    std::vector<Tensor> out;
    const Status st = referenceOp(nbitsNode(q), nbitsInputs(q, a, c.bias ? &bias : nullptr), 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    Shape yShape = c.batch;
    yShape.push_back(c.N);
    ASSERT_EQ(out[0].shape(), yShape);
    expectMatches(q, a.data<float>(), a.elements() / c.K, c.bias ? bias.data<float>() : nullptr, out[0].data<float>());
  }
}

TEST(MatMulNBits, CpuMatchesReference) {
  uint32_t seed = 100;
  for (const Case& c : cases())
    for (int64_t rows : {1, 2, 3, 4, 5, 13, 70})
      for (int threads : {1, 2}) {
        if (threads == 2 && rows % 2 == 0) continue;
        SCOPED_TRACE("bits " + std::to_string(c.bits) + " block " + std::to_string(c.bs) + " K " +
                     std::to_string(c.K) + " N " + std::to_string(c.N) + " rows " + std::to_string(rows) +
                     " threads " + std::to_string(threads) + (c.zeros ? " zero points" : "") + (c.bias ? " bias" : ""));
        const Quantized q = quantized(c.K, c.N, c.bits, c.bs, c.zeros, seed++);
        const Tensor a = randomTensor(DataType::Float32, {rows, c.K}, seed++, -2.0, 2.0);
        const Tensor bias = randomTensor(DataType::Float32, {c.N}, seed++);
        const std::vector<OpInput> ins = nbitsInputs(q, a, c.bias ? &bias : nullptr);
        std::vector<Tensor> y, e;
        ASSERT_TRUE(runOp(nbitsNode(q), ins, 1, &y, threads).isOk());
        ASSERT_TRUE(referenceOp(nbitsNode(q), ins, 1, &e).isOk());
        expectMatches(q, a.data<float>(), rows, c.bias ? bias.data<float>() : nullptr, y[0].data<float>());
        expectNear(y[0], e[0], 1e-4, 1e-4);
      }
}

// The fused activation (what the weight-only quantizer keeps of a MatMul's) after the bias, on
// the GEMV rows and the tiled ones, against the reference kernel.
TEST(MatMulNBits, FusedActivationMatchesReference) {
  uint32_t seed = 300;
  const Quantized q = quantized(96, 37, 4, 32, true, seed++);
  const Tensor bias = randomTensor(DataType::Float32, {37}, seed++);
  for (const char* act : {"Gelu", "Relu", "Sigmoid"})
    for (int64_t rows : {1, 3, 13}) {
      SCOPED_TRACE(std::string(act) + " rows " + std::to_string(rows));
      Node node = nbitsNode(q);
      node.setString("activation", act);
      const Tensor a = randomTensor(DataType::Float32, {rows, 96}, seed++, -2.0, 2.0);
      const std::vector<OpInput> ins = nbitsInputs(q, a, &bias);
      std::vector<Tensor> y, e, plain;
      ASSERT_TRUE(runOp(node, ins, 1, &y, 2).isOk());
      ASSERT_TRUE(referenceOp(node, ins, 1, &e).isOk());
      ASSERT_TRUE(referenceOp(nbitsNode(q), ins, 1, &plain).isOk());
      expectNear(y[0], e[0], 1e-4, 1e-4);
      FusedActivation f;
      ASSERT_TRUE(FusedActivation::fromNode(node, &f).isOk());
      for (int64_t i = 0; i < plain[0].elements(); ++i)
        EXPECT_NEAR(e[0].data<float>()[i], f.apply(plain[0].data<float>()[i]), 1e-6) << i;
    }
}

// Every kernel table this CPU can run, with the f32 GEMM table whose panels it fills.
struct Table {
  const char* name;
  CpuFunctions fn;
  NBitsKernels kernels;
};

std::vector<Table> tables() {
  std::vector<Table> all = {{"scalar", scalarCpuFunctions(), nbitsScalarKernels(16)},
                            {"selected", cpuFunctions(), nbitsKernels()}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    CpuFunctions fn = scalarCpuFunctions();
    fn.gemm = f32_gemm_6x16__avx2_fma;
    all.push_back({"avx2", fn,
                   {"avx2_fma", 16, nbits_dequant4_16__avx2, nbits_dequant8_16__avx2, nbits_gemv4_16__avx2,
                    nbits_gemv8_16__avx2}});
  }
  if (__builtin_cpu_supports("avx512f")) {
    CpuFunctions fn = scalarCpuFunctions();
    fn.gemm = f32_gemm_8x32__avx512f;
    fn.gemmMr = 8, fn.gemmNr = 32;
    fn.gemmTail = kAvx512TailKernels;
    all.push_back({"avx512f", fn,
                   {"avx512f", 32, nbits_dequant4_32__avx512f, nbits_dequant8_32__avx512f, nbits_gemv4_32__avx512f,
                    nbits_gemv8_32__avx512f}});
    CpuFunctions scalar32 = fn;  // the portable kernels on 32-column panels
    all.push_back({"scalar32", scalar32, nbitsScalarKernels(32)});
  }
#endif
  return all;
}

TEST(MatMulNBits, EveryKernelTableMatchesDequantizeThenMatMul) {
  ThreadPool pool(2);
  uint32_t seed = 1000;
  for (const Table& t : tables())
    for (int64_t bits : {4, 8})
      for (int64_t bs : {16, 32, 128})
        for (int64_t rows : {1, 3, 4, 9, 17}) {
          // K 300 crosses the 256-row K-slice inside a block; N leaves a partial panel, and with 9
          // rows spans more than one group of 256 columns.
          const int64_t K = 300, N = (rows == 9 ? 17 : 2) * t.kernels.nr + 5;
          const bool withBias = bits == 8 || rows == 9;
          SCOPED_TRACE(std::string(t.name) + " bits " + std::to_string(bits) + " block " + std::to_string(bs) +
                       " rows " + std::to_string(rows));
          const Quantized q = quantized(K, N, bits, bs, rows % 2 == 1, seed++);
          const Tensor a = randomTensor(DataType::Float32, {rows, K}, seed++);
          const Tensor bias = randomTensor(DataType::Float32, {N}, seed++);
          NBitsWeights w;
          w.K = K, w.N = N, w.bits = bits, w.blockSize = bs, w.kBlocks = q.kBlocks, w.nr = t.kernels.nr;
          std::vector<uint8_t> packed(nbitsPackedBytes(w) + 64);
          uint8_t* aligned = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
          nbitsPack(w, q.b.data<uint8_t>(), q.scales.data<float>(),
                    q.hasZeros ? q.zeros.data<uint8_t>() : nullptr, aligned);
          w.data = aligned;
          std::vector<float> y(static_cast<size_t>(rows * N), -7.f);
          nbitsMatMul(rows % 3 == 0 ? nullptr : &pool, t.fn, t.kernels, w, rows, a.data<float>(),
                      withBias ? bias.data<float>() : nullptr, y.data());
          expectMatches(q, a.data<float>(), rows, withBias ? bias.data<float>() : nullptr, y.data());
        }
}

// The CPU execution runs (not the reference) and holds its weights at 4 bits: the session's
// STATIC memory is the repacked codes, scales and zero points, well under a byte a weight.
TEST(MatMulNBits, CpuKeepsTheWeightsQuantized) {
  const int64_t K = 768, N = 96;
  const Quantized q = quantized(K, N, 4, 32, true, 9);
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(nbitsNode(q), {in(randomTensor(DataType::Float32, {5, K}, 10)), constant(q.b),
                                           constant(q.scales), constant(q.zeros)},
                            1, &feeds);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  std::vector<Tensor> y;
  ASSERT_TRUE(session->run(feeds, &y).isOk());
  const SessionStats& stats = session->stats();
  EXPECT_TRUE(stats.referenceOps.empty());
  EXPECT_EQ(stats.weightsPacked, 1);
  EXPECT_GT(stats.staticBytes, static_cast<size_t>(K * N / 2));
  EXPECT_LT(stats.staticBytes, static_cast<size_t>(K * N * 3 / 4)) << "4-bit codes plus block scales";
}

TEST(MatMulNBits, TrivialGroupIndexIsAccepted) {
  const Quantized q = quantized(40, 9, 4, 16, true, 7);
  const Tensor a = randomTensor(DataType::Float32, {3, 40}, 8);
  Tensor g(DataType::Int32, {40});
  for (int k = 0; k < 40; ++k) g.data<int32_t>()[k] = k / 16;
  std::vector<Tensor> y;
  ASSERT_TRUE(runOp(nbitsNode(q), {in(a), constant(q.b), constant(q.scales), constant(q.zeros), constant(g)}, 1, &y)
                  .isOk());
  expectMatches(q, a.data<float>(), 3, nullptr, y[0].data<float>());
}

// Runs the op with one thing changed and expects an error whose message has `needle`.
void expectError(const Node& node, const std::vector<OpInput>& ins, const std::string& needle) {
  std::vector<Tensor> out;
  const Status st = runOp(node, ins, 1, &out);
  ASSERT_FALSE(st.isOk()) << needle;
  EXPECT_NE(st.message().find("MatMulNBits"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
}

TEST(MatMulNBits, BadInputsAreErrorsNamingTheTensor) {
  const Quantized q = quantized(40, 9, 4, 16, true, 3);
  const Tensor a = randomTensor(DataType::Float32, {3, 40}, 4);
  const Node node = nbitsNode(q);
  auto with = [&](const char* name, int64_t v) {
    Node n = node;
    n.setInt(name, v);
    return n;
  };
  const std::vector<OpInput> good = {in(a), constant(q.b), constant(q.scales), constant(q.zeros)};
  expectError(with("bits", 3), good, "bits 3");
  expectError(with("bits", 2), good, "bits 2");
  expectError(with("block_size", 24), good, "block_size 24");
  expectError(with("block_size", 8), good, "block_size 8");
  expectError(with("K", 41), good, "A [3, 40]");
  expectError(with("N", 10), good, "B [9, 3, 8]");
  expectError(with("K", -5), good, "K -5");
  expectError(with("N", 0), good, "N 0");
  expectError(with("K", int64_t{1} << 62), good, "A [3, 40]");
  expectError(with("weight_prepacked", 1), good, "weight_prepacked");
  Node noK = makeNode(OpType::MatMulNBits);
  noK.setInt("N", 9);
  noK.setInt("block_size", 16);
  expectError(noK, good, "attribute K");
  // B of the wrong size or type; scales, zero points, g_idx and bias of the wrong shape or type.
  expectError(node, {in(a), constant(randomTensor(DataType::UInt8, {9, 3, 7}, 1, 0, 255)), constant(q.scales)},
              "B [9, 3, 7]");
  expectError(node, {in(a), constant(randomTensor(DataType::UInt8, {9, 24}, 1, 0, 255)), constant(q.scales)},
              "B [9, 24]");
  expectError(node, {in(a), constant(randomTensor(DataType::Int8, {9, 3, 8}, 1, 0, 100)), constant(q.scales)},
              "B has dtype int8");
  expectError(node, {in(a), constant(q.b), constant(randomTensor(DataType::Float32, {26}, 1))}, "scales [26]");
  expectError(node, {in(a), constant(q.b), constant(randomTensor(DataType::Float16, {27}, 1))}, "scales has dtype");
  expectError(node,
              {in(a), constant(q.b), constant(q.scales), constant(randomTensor(DataType::UInt8, {9, 3}, 1, 0, 9))},
              "zero_points [9, 3]");
  expectError(node, {in(a), constant(q.b), constant(q.scales), constant(randomTensor(DataType::Float32, {9, 3}, 1))},
              "zero_points of dtype float32");
  Tensor g(DataType::Int32, {40});
  for (int k = 0; k < 40; ++k) g.data<int32_t>()[k] = (39 - k) / 16;
  expectError(node, {in(a), constant(q.b), constant(q.scales), constant(q.zeros), constant(g)}, "g_idx");
  expectError(node, {in(a), constant(q.b), constant(q.scales), constant(q.zeros), in(g)}, "g_idx");
  expectError(node,
              {in(a), constant(q.b), constant(q.scales), absent(), absent(),
               constant(randomTensor(DataType::Float32, {8}, 1))},
              "bias float32 [8]");
  expectError(node, {in(randomTensor(DataType::Float16, {3, 40}, 1)), constant(q.b), constant(q.scales)},
              "A has dtype float16");
  // Weights as graph inputs instead of constants run the reference, which checks them as well.
  expectError(node, {in(a), in(randomTensor(DataType::UInt8, {9, 3, 7}, 1, 0, 255)), in(q.scales)}, "B [9, 3, 7]");
}


// accuracy_level 4 on 4-bit weights, written out in double from the rule in ops/matmul_nbits.h
// with a quantizer of its own: y = sum over blocks of scale_a * scale_w * (sum q * (code - zp)).
std::vector<double> int8Expected(const Quantized& q, const float* a, int64_t M, const float* bias) {
  std::vector<double> y(static_cast<size_t>(M * q.N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t blk = 0; blk < q.kBlocks; ++blk) {
      const int64_t k0 = blk * q.bs, k1 = std::min(q.K, k0 + q.bs);
      float amax = 0.f;
      for (int64_t k = k0; k < k1; ++k)
        if (std::fabs(a[i * q.K + k]) > amax) amax = std::fabs(a[i * q.K + k]);
      const float inverse = amax > 0.f ? 127.f / amax : 0.f;
      std::vector<int> codes;
      for (int64_t k = k0; k < k1; ++k) {
        const float v = a[i * q.K + k] * inverse;
        codes.push_back(std::isnan(v) ? -127 : static_cast<int>(std::nearbyint(std::max(-127.f, std::min(127.f, v)))));
      }
      for (int64_t n = 0; n < q.N; ++n) {
        // q.w holds (code - zp) * scale_w exactly in float; the product below is exact in double.
        double sum = 0.0;
        for (int64_t k = k0; k < k1; ++k) sum += codes[k - k0] * q.w[k * q.N + n];
        y[i * q.N + n] += sum * (amax / 127.f);
      }
    }
  if (bias)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t n = 0; n < q.N; ++n) y[i * q.N + n] += bias[n];
  return y;
}

// The reference at accuracy_level 4 follows the rule (within float rounding of the block sums),
// and stays near the float product: the activations lose what 8 bits per block lose.
TEST(MatMulNBits, Int8ActivationsReferenceFollowsTheRule) {
  uint32_t seed = 500;
  for (const Case& c : cases()) {
    if (c.bits != 4) continue;
    SCOPED_TRACE("block " + std::to_string(c.bs) + " K " + std::to_string(c.K) + " N " + std::to_string(c.N));
    const Quantized q = quantized(c.K, c.N, 4, c.bs, c.zeros, seed++);
    Shape aShape = c.batch;
    aShape.push_back(c.K);
    const Tensor a = randomTensor(DataType::Float32, aShape, seed++, -2.0, 2.0);
    const Tensor bias = randomTensor(DataType::Float32, {c.N}, seed++);
    const float* biasData = c.bias ? bias.data<float>() : nullptr;
    std::vector<Tensor> out;
    ASSERT_TRUE(referenceOp(nbitsNode(q, 4), nbitsInputs(q, a, c.bias ? &bias : nullptr), 1, &out).isOk());
    const int64_t M = a.elements() / c.K;
    const std::vector<double> want = int8Expected(q, a.data<float>(), M, biasData);
    double worst = 0.0;  // largest distance from the float product, relative to sum |a w|
    for (int64_t i = 0; i < M; ++i)
      for (int64_t n = 0; n < c.N; ++n) {
        double exact = biasData ? biasData[n] : 0.0, magnitude = 0.0;
        for (int64_t k = 0; k < c.K; ++k) {
          exact += a.data<float>()[i * c.K + k] * q.w[k * c.N + n];
          magnitude += std::fabs(a.data<float>()[i * c.K + k] * q.w[k * c.N + n]);
        }
        const double got = out[0].data<float>()[i * c.N + n];
        EXPECT_NEAR(got, want[i * c.N + n], 1e-5 * magnitude + 1e-6) << i << ", " << n;
        worst = std::max(worst, std::fabs(got - exact) / magnitude);
      }
    EXPECT_LT(worst, 0.02);
    EXPECT_GT(worst, 0.0);  // the activations were quantized
  }
}

// Every int8 kernel table this CPU runs gives the reference's bits: odd K (a partial last block),
// panels cut short, row counts around each kernel's register block, one and two threads, a row of
// zeros and a NaN (quantized to -127 by both).
TEST(MatMulNBits, Int8ActivationKernelsMatchTheReferenceExactly) {
  std::vector<std::pair<const char*, Int4Kernels>> tables = {{"scalar8", int4ScalarKernels(8)},
                                                             {"scalar16", int4ScalarKernels(16)},
                                                             {"selected", int4Kernels()}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    tables.push_back({"avx2", {"avx2", 8, 4, int4_gemm_4x8__avx2, int8_quantize_rows__avx2}});
  if (cpuSupportsAvx512Vnni())
    tables.push_back({"vnni", {"avx512_vnni", 16, 8, int4_gemm_8x16__vnni_avx512, int8_quantize_rows__vnni_avx512}});
#endif
  ThreadPool pool(2);
  uint32_t seed = 700;
  for (const auto& [name, kernels] : tables)
    for (int64_t bs : {16, 32, 128})
      for (int64_t rows : {1, 3, 4, 8, 9, 17}) {
        const int64_t K = bs == 128 ? 300 : 200, N = 3 * kernels.width + 5;
        const bool zeros = rows % 2 == 1, withBias = rows > 4;
        SCOPED_TRACE(std::string(name) + " block " + std::to_string(bs) + " rows " + std::to_string(rows));
        const Quantized q = quantized(K, N, 4, bs, zeros, seed++);
        Tensor a = randomTensor(DataType::Float32, {rows, K}, seed++, -3.0, 3.0);
        if (rows > 3) {
          std::fill(a.data<float>() + K, a.data<float>() + 2 * K, 0.f);
          a.data<float>()[2 * K + 5] = std::nanf("");
        }
        const Tensor bias = randomTensor(DataType::Float32, {N}, seed++);
        std::vector<Tensor> e;
        ASSERT_TRUE(referenceOp(nbitsNode(q, 4), nbitsInputs(q, a, withBias ? &bias : nullptr), 1, &e).isOk());
        Int4Weights w;
        w.K = K, w.N = N, w.blockSize = bs, w.kBlocks = q.kBlocks, w.width = kernels.width;
        std::vector<uint8_t> packed(int4PackedBytes(w) + 64), scratch(int4ScratchBytes(w, rows) + 64);
        uint8_t* aligned = packed.data() + (64 - reinterpret_cast<uintptr_t>(packed.data()) % 64) % 64;
        int4Pack(w, q.b.data<uint8_t>(), q.scales.data<float>(), zeros ? q.zeros.data<uint8_t>() : nullptr, aligned);
        w.data = aligned;
        std::vector<float> y(static_cast<size_t>(rows * N), -7.f);
        int4MatMul(rows % 3 == 0 ? nullptr : &pool, scalarCpuFunctions(), kernels, w, rows, a.data<float>(),
                   withBias ? bias.data<float>() : nullptr, y.data(), {}, scratch.data() + 64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64);
        int bad = 0;
        for (int64_t i = 0; i < rows * N; ++i)
          if (!(y[i] == e[0].data<float>()[i]) && bad++ < 5)
            ADD_FAILURE() << "y[" << i / N << "][" << i % N << "] = " << y[i] << ", reference " << e[0].data<float>()[i];
      }
}

// The CPU execution takes the int8 path at accuracy_level 4 (its result is the reference's, not
// the float product's) and keeps the float path otherwise.
TEST(MatMulNBits, CpuExecutionFollowsTheAccuracyLevel) {
  const Quantized q = quantized(96, 37, 4, 32, true, 900);
  const Tensor a = randomTensor(DataType::Float32, {13, 96}, 901, -2.0, 2.0);
  const Tensor bias = randomTensor(DataType::Float32, {37}, 902);
  for (int64_t level : {0, 4}) {
    SCOPED_TRACE("accuracy_level " + std::to_string(level));
    Node node = nbitsNode(q, level);
    node.setString("activation", "Relu");
    const std::vector<OpInput> ins = nbitsInputs(q, a, &bias);
    std::vector<Tensor> y, e;
    ASSERT_TRUE(runOp(node, ins, 1, &y, 2).isOk());
    ASSERT_TRUE(referenceOp(node, ins, 1, &e).isOk());
    if (level == 4)
      for (int64_t i = 0; i < y[0].elements(); ++i) ASSERT_EQ(y[0].data<float>()[i], e[0].data<float>()[i]) << i;
    else
      expectNear(y[0], e[0], 1e-4, 1e-4);
  }
}

}  // namespace
}  // namespace osprey::test
