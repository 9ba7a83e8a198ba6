// BitCast, Det, SwiGLU, TensorScatter and CausalConvWithState against naive versions here.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

TEST(MiscNewTest, BitCastReinterpretsBytes) {
  Tensor x = randomTensor(DataType::Float32, {3, 7}, 1, -100, 100);
  Node node;
  node.type = OpType::BitCast;
  node.setInt("to", static_cast<int64_t>(DataType::Int32));
  std::vector<Tensor> outs;
  ASSERT_TRUE(runOp(node, {in(x)}, 1, &outs).isOk());
  ASSERT_EQ(outs[0].dtype(), DataType::Int32);
  ASSERT_EQ(outs[0].shape(), x.shape());
  for (int64_t i = 0; i < x.elements(); ++i) {
    int32_t bits;
    std::memcpy(&bits, x.data<float>() + i, 4);
    EXPECT_EQ(outs[0].data<int32_t>()[i], bits);
  }
  Tensor h = randomTensor(DataType::Float16, {5}, 2);
  node.setInt("to", static_cast<int64_t>(DataType::Int16));
  ASSERT_TRUE(runOp(node, {constant(h)}, 1, &outs).isOk());
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(static_cast<uint16_t>(outs[0].data<int16_t>()[i]), h.data<uint16_t>()[i]);
  Tensor bytes = makeTensor<uint8_t>({3}, {0, 1, 7});
  node.setInt("to", static_cast<int64_t>(DataType::Bool));
  ASSERT_TRUE(runOp(node, {in(bytes)}, 1, &outs).isOk());
  EXPECT_EQ(outs[0].data<uint8_t>()[2], 1);
  node.setInt("to", static_cast<int64_t>(DataType::Int64));  // 8 bytes from 1: rejected
  EXPECT_FALSE(runOp(node, {in(bytes)}, 1, &outs).isOk());
  node.removeAttr("to");
  EXPECT_FALSE(runOp(node, {in(bytes)}, 1, &outs).isOk());
}

// Determinant by cofactor expansion along the first row.
double cofactorDet(const std::vector<double>& m, int64_t n) {
  if (n == 1) return m[0];
  double det = 0;
  for (int64_t c = 0; c < n; ++c) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t k = 0; k < n; ++k)
        if (k != c) minor.push_back(m[r * n + k]);
    det += (c % 2 ? -1 : 1) * m[c] * cofactorDet(minor, n - 1);
  }
  return det;
}

TEST(MiscNewTest, DetOfBatchedMatrices) {
  for (int64_t n : {1, 2, 3, 5}) {
    Tensor x = randomTensor(DataType::Float64, {2, 3, n, n}, static_cast<uint32_t>(n));
    if (n == 3)  // a singular matrix: two equal rows
      for (int64_t k = 0; k < n; ++k) x.data<double>()[n + k] = x.data<double>()[k];
    Node node;
    node.type = OpType::Det;
    std::vector<Tensor> outs;
    ASSERT_TRUE(runOp(node, {in(x)}, 1, &outs).isOk());
    Tensor want(DataType::Float64, {2, 3});
    for (int64_t b = 0; b < 6; ++b) {
      std::vector<double> m(x.data<double>() + b * n * n, x.data<double>() + (b + 1) * n * n);
      want.data<double>()[b] = cofactorDet(m, n);
    }
    expectNear(outs[0], want, 1e-12, 1e-10);
  }
  Node node;
  node.type = OpType::Det;
  std::vector<Tensor> outs;
  EXPECT_FALSE(runOp(node, {in(randomTensor(DataType::Float32, {3, 2}, 1))}, 1, &outs).isOk());
  EXPECT_FALSE(runOp(node, {in(randomTensor(DataType::Int32, {2, 2}, 1))}, 1, &outs).isOk());
}

TEST(MiscNewTest, SwiGLU) {
  for (float alpha : {1.f, 0.37f}) {
    Tensor a = randomTensor(DataType::Float32, {13, 7}, 1, -4, 4), b = randomTensor(DataType::Float32, {13, 7}, 2);
    Node node;
    node.type = OpType::SwiGLU;
    if (alpha != 1.f) node.setFloat("alpha", alpha);
    std::vector<Tensor> outs;
    ASSERT_TRUE(runOp(node, {in(a), in(b)}, 1, &outs).isOk());
    Tensor want(DataType::Float32, a.shape());
    for (int64_t i = 0; i < a.elements(); ++i)
      want.data<float>()[i] = static_cast<float>(at(a, i) / (1 + std::exp(-alpha * at(a, i))) * at(b, i));
    expectNear(outs[0], want, 1e-6, 1e-5);
  }
  Node node;
  node.type = OpType::SwiGLU;
  std::vector<Tensor> outs;
  EXPECT_FALSE(runOp(node, {in(randomTensor(DataType::Float32, {3, 2}, 1)), in(randomTensor(DataType::Float32, {1, 2}, 1))}, 1, &outs).isOk());
}

TEST(MiscNewTest, TensorScatterLinearAndCircular) {
  const int64_t B = 3, H = 2, maxSeq = 7, seq = 3, D = 5;
  for (int circular = 0; circular < 2; ++circular) {
    Tensor past = randomTensor(DataType::Float32, {B, H, maxSeq, D}, 1), update = randomTensor(DataType::Float32, {B, H, seq, D}, 2);
    Tensor idx = makeTensor<int64_t>({B}, {0, 4, circular ? 6 : 2});
    Node node;
    node.type = OpType::TensorScatter;
    node.setString("mode", circular ? "circular" : "linear");
    std::vector<Tensor> outs;
    Status st = runOp(node, {in(past), in(update), in(idx)}, 1, &outs);
    ASSERT_TRUE(st.isOk()) << st.message();
    Tensor want = randomTensor(DataType::Float32, past.shape(), 1);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < seq; ++s)
          for (int64_t d = 0; d < D; ++d) {
            const int64_t pos = (idx.data<int64_t>()[b] + s) % maxSeq;
            want.data<float>()[((b * H + h) * maxSeq + pos) * D + d] = update.data<float>()[((b * H + h) * seq + s) * D + d];
          }
    expectNear(outs[0], want, 0, 0);
  }
  // axis 1 of a 3-D cache, no write_indices: written from the start.
  Tensor past = randomTensor(DataType::Int32, {2, 6, 3}, 3, -50, 50), update = randomTensor(DataType::Int32, {2, 2, 3}, 4, -50, 50);
  Node node;
  node.type = OpType::TensorScatter;
  node.setInt("axis", 1);
  std::vector<Tensor> outs;
  ASSERT_TRUE(runOp(node, {in(past), in(update)}, 1, &outs).isOk());
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < 6; ++s)
      for (int64_t d = 0; d < 3; ++d)
        EXPECT_EQ(outs[0].data<int32_t>()[(b * 6 + s) * 3 + d],
                  s < 2 ? update.data<int32_t>()[(b * 2 + s) * 3 + d] : past.data<int32_t>()[(b * 6 + s) * 3 + d]);
  // A linear write past the end, a bad mode, a too-long update.
  EXPECT_FALSE(runOp(node, {in(past), in(update), in(makeTensor<int64_t>({2}, {5, 0}))}, 1, &outs).isOk());
  node.setString("mode", "wrap");
  EXPECT_FALSE(runOp(node, {in(past), in(update)}, 1, &outs).isOk());
  node.setString("mode", "linear");
  EXPECT_FALSE(runOp(node, {in(update), in(past)}, 1, &outs).isOk());
}

TEST(MiscNewTest, CausalConvWithState) {
  const int64_t B = 2, C = 5, L = 7;
  for (int64_t K : {1, 4, 9})
    for (int variant = 0; variant < 4; ++variant) {  // bit 0: bias and past state; bit 1: silu
      SCOPED_TRACE("K " + std::to_string(K) + " variant " + std::to_string(variant));
      const bool full = variant & 1, silu = variant & 2;
      Tensor x = randomTensor(DataType::Float32, {B, C, L}, 1), w = randomTensor(DataType::Float32, {C, 1, K}, 2);
      Tensor bias = randomTensor(DataType::Float32, {C}, 3), past = randomTensor(DataType::Float32, {B, C, K - 1}, 4);
      Node node;
      node.type = OpType::CausalConvWithState;
      if (silu) node.setString("activation", variant == 2 ? "silu" : "swish");
      std::vector<Tensor> outs;
      Status st = runOp(node, {in(x), constant(w), full ? constant(bias) : absent(), full ? in(past) : absent()}, 2, &outs);
      ASSERT_TRUE(st.isOk()) << st.message();
      Tensor want(DataType::Float32, {B, C, L}), wantState(DataType::Float32, {B, C, K - 1});
      for (int64_t b = 0; b < B; ++b)
        for (int64_t c = 0; c < C; ++c) {
          // Input position p (may be negative: the past state, or zeros).
          auto value = [&](int64_t p) {
            if (p >= 0) return at(x, (b * C + c) * L + p);
            return full ? at(past, (b * C + c) * (K - 1) + (K - 1 + p)) : 0.0;
          };
          for (int64_t t = 0; t < L; ++t) {
            double acc = full ? at(bias, c) : 0;
            for (int64_t k = 0; k < K; ++k) acc += at(w, c * K + k) * value(t - (K - 1) + k);
            storeFromDouble(DataType::Float32, want.data(), (b * C + c) * L + t, silu ? acc / (1 + std::exp(-acc)) : acc);
          }
          for (int64_t j = 0; j < K - 1; ++j)
            storeFromDouble(DataType::Float32, wantState.data(), (b * C + c) * (K - 1) + j, value(L - (K - 1) + j));
        }
      expectNear(outs[0], want, 1e-5, 1e-5);
      expectNear(outs[1], wantState, 0, 0);
    }
  Node node;
  node.type = OpType::CausalConvWithState;
  node.setString("activation", "gelu");
  std::vector<Tensor> outs;
  Tensor x = randomTensor(DataType::Float32, {1, 2, 3}, 1), w = randomTensor(DataType::Float32, {2, 1, 2}, 2);
  EXPECT_FALSE(runOp(node, {in(x), in(w)}, 2, &outs).isOk());
  node.removeAttr("activation");
  EXPECT_FALSE(runOp(node, {in(x), in(randomTensor(DataType::Float32, {3, 1, 2}, 2))}, 2, &outs).isOk());
}

}  // namespace
}  // namespace osprey::test
