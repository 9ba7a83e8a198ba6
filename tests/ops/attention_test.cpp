// Attention and RotaryEmbedding against naive double-precision loops written here. Q and K
// are drawn wide (|x| up to 3) so the softmax is far from uniform and a wrong key, head or
// mask position shows.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Element (b, h, s, c) of a 4-D (B, H, S, D) tensor or a 3-D (B, S, H*D) one.
double headAt(const Tensor& t, int64_t heads, int64_t b, int64_t h, int64_t s, int64_t c) {
  const Shape& sh = t.shape();
  if (sh.size() == 4) return at(t, ((b * sh[1] + h) * sh[2] + s) * sh[3] + c);
  const int64_t d = sh[2] / heads;
  return at(t, (b * sh[1] + s) * sh[2] + h * d + c);
}

struct AttnCase {
  int64_t qHeads = 0, kvHeads = 0;  // attributes, 0: absent (4-D)
  bool causal = false;
  double scale = 0;  // 0: default
  double softcap = 0;
  int64_t mode = 0;
};

struct AttnResult {
  Tensor y, presentK, presentV, qk;
};

// mask: float bias or bool (true = attend), broadcast to (B, Hq, Sq, L) with L <= T.
AttnResult naiveAttention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor* pastK,
                          const Tensor* pastV, const Tensor* nonpad, const AttnCase& c) {
  const bool three = q.shape().size() == 3;
  const int64_t B = q.shape()[0];
  const int64_t Hq = three ? c.qHeads : q.shape()[1], Hkv = three ? c.kvHeads : k.shape()[1];
  const int64_t Sq = three ? q.shape()[1] : q.shape()[2], Skv = three ? k.shape()[1] : k.shape()[2];
  const int64_t D = three ? q.shape()[2] / Hq : q.shape()[3], Dv = three ? v.shape()[2] / Hkv : v.shape()[3];
  const int64_t P = pastK ? pastK->shape()[2] : 0, T = P + Skv;
  const double scale = c.scale != 0 ? c.scale : 1 / std::sqrt(static_cast<double>(D));
  AttnResult r{Tensor(DataType::Float32, three ? Shape{B, Sq, Hq * Dv} : Shape{B, Hq, Sq, Dv}),
               Tensor(DataType::Float32, {B, Hkv, T, D}), Tensor(DataType::Float32, {B, Hkv, T, Dv}),
               Tensor(DataType::Float32, {B, Hq, Sq, T})};
  auto key = [&](int64_t b, int64_t h, int64_t j, int64_t d) {
    return j < P ? at(*pastK, ((b * Hkv + h) * P + j) * D + d) : headAt(k, Hkv, b, h, j - P, d);
  };
  auto value = [&](int64_t b, int64_t h, int64_t j, int64_t d) {
    return j < P ? at(*pastV, ((b * Hkv + h) * P + j) * Dv + d) : headAt(v, Hkv, b, h, j - P, d);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t j = 0; j < T; ++j) {
        for (int64_t d = 0; d < D; ++d) r.presentK.data<float>()[((b * Hkv + h) * T + j) * D + d] = key(b, h, j, d);
        for (int64_t d = 0; d < Dv; ++d) r.presentV.data<float>()[((b * Hkv + h) * T + j) * Dv + d] = value(b, h, j, d);
      }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / (Hq / Hkv);
      for (int64_t i = 0; i < Sq; ++i) {
        std::vector<double> s(T), capped(T);
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += headAt(q, Hq, b, h, i, d) * key(b, kh, j, d);
          dot *= scale;
          if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
          capped[j] = dot;
          double bias = 0;
          if (mask) {
            const Shape& ms = mask->shape();
            const int64_t L = ms.back();
            if (j >= L) {
              bias = kNegInf;
            } else {
              const int64_t full[4] = {b, h, i, j}, dims = static_cast<int64_t>(ms.size());
              int64_t off = 0;
              for (int64_t d = 0; d < dims; ++d) off = off * ms[d] + (ms[d] == 1 ? 0 : full[4 - dims + d]);
              bias = mask->dtype() == DataType::Bool ? (mask->data<bool>()[off] ? 0.0 : kNegInf) : at(*mask, off);
            }
          }
          const int64_t visible = nonpad ? nonpad->data<int64_t>()[b] : T;
          const int64_t offset = pastK ? P : nonpad ? visible - Sq : 0;
          if ((c.causal && j > i + offset) || j >= visible) bias = kNegInf;
          s[j] = dot + bias;
        }
        double mx = kNegInf, sum = 0;
        for (double x : s) mx = std::max(mx, x);
        std::vector<double> p(T, 0.0);
        if (mx != kNegInf) {
          for (int64_t j = 0; j < T; ++j) sum += std::exp(s[j] - mx);
          for (int64_t j = 0; j < T; ++j) p[j] = std::exp(s[j] - mx) / sum;
        }
        for (int64_t j = 0; j < T; ++j)
          r.qk.data<float>()[((b * Hq + h) * Sq + i) * T + j] =
              static_cast<float>(c.mode <= 1 ? capped[j] : c.mode == 2 ? s[j] : p[j]);
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += p[j] * value(b, kh, j, d);
          const int64_t at = three ? (b * Sq + i) * Hq * Dv + h * Dv + d : ((b * Hq + h) * Sq + i) * Dv + d;
          r.y.data<float>()[at] = static_cast<float>(acc);
        }
      }
    }
  return r;
}

Node attentionNode(const AttnCase& c) {
  Node n;
  n.type = OpType::Attention;
  if (c.qHeads) n.setInt("q_num_heads", c.qHeads);
  if (c.kvHeads) n.setInt("kv_num_heads", c.kvHeads);
  if (c.causal) n.setInt("is_causal", 1);
  if (c.scale != 0) n.setFloat("scale", static_cast<float>(c.scale));
  if (c.softcap != 0) n.setFloat("softcap", static_cast<float>(c.softcap));
  if (c.mode) n.setInt("qk_matmul_output_mode", c.mode);
  return n;
}

Tensor wide(const Shape& s, uint32_t seed) { return randomTensor(DataType::Float32, s, seed, -3, 3); }

TEST(AttentionOp, FourDimensionalMha) {
  Tensor q = wide({2, 3, 5, 4}, 1), k = wide({2, 3, 7, 4}, 2), v = wide({2, 3, 7, 6}, 3);
  for (AttnCase c : {AttnCase{}, AttnCase{0, 0, true}, AttnCase{0, 0, false, 0.3, 1.5}}) {
    std::vector<Tensor> out;
    Status st = runOp(attentionNode(c), {in(q), in(k), in(v)}, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    expectNear(out[0], naiveAttention(q, k, v, nullptr, nullptr, nullptr, nullptr, c).y, 1e-5, 1e-4);
  }
}

TEST(AttentionOp, GqaWithPastAndQkOutputModes) {
  Tensor q = wide({2, 6, 3, 5}, 10), k = wide({2, 2, 3, 5}, 11), v = wide({2, 2, 3, 4}, 12);
  Tensor pk = wide({2, 2, 4, 5}, 13), pv = wide({2, 2, 4, 4}, 14);
  Tensor mask = randomTensor(DataType::Float32, {3, 7}, 15, -2, 2);
  for (int64_t mode = 0; mode < 4; ++mode) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    AttnCase c;
    c.causal = true;
    c.mode = mode;
    c.softcap = mode == 1 ? 2.0 : 0.0;
    std::vector<Tensor> out;
    Status st = runOp(attentionNode(c), {in(q), in(k), in(v), in(mask), in(pk), in(pv)}, 4, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    AttnResult e = naiveAttention(q, k, v, &mask, &pk, &pv, nullptr, c);
    expectNear(out[0], e.y, 1e-5, 1e-4);
    expectNear(out[1], e.presentK, 0, 0);
    expectNear(out[2], e.presentV, 0, 0);
    // Masked scores are -inf in both (expectNear cannot subtract infinities).
    ASSERT_EQ(out[3].shape(), e.qk.shape());
    for (int64_t i = 0; i < e.qk.elements(); ++i) {
      if (std::isinf(at(e.qk, i))) {
        ASSERT_EQ(at(out[3], i), at(e.qk, i)) << i;
        continue;
      }
      ASSERT_NEAR(at(out[3], i), at(e.qk, i), 1e-5 + 1e-4 * std::fabs(at(e.qk, i))) << i;
    }
  }
}

TEST(AttentionOp, ThreeDimensionalWithShortMask) {
  AttnCase c{4, 2};
  c.scale = 0.4;
  Tensor q = wide({2, 5, 4 * 3}, 20), k = wide({2, 6, 2 * 3}, 21), v = wide({2, 6, 2 * 5}, 22);
  Tensor mask = randomTensor(DataType::Float32, {2, 1, 5, 4}, 23, -1, 1);  // 4 of 6 keys: the rest is -inf
  std::vector<Tensor> out;
  Status st = runOp(attentionNode(c), {in(q), in(k), in(v), in(mask)}, 1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(out[0], naiveAttention(q, k, v, &mask, nullptr, nullptr, nullptr, c).y, 1e-5, 1e-4);
}

TEST(AttentionOp, BoolMaskFullyMaskedRowAndNonpad) {
  Tensor q = wide({2, 2, 3, 4}, 30), k = wide({2, 2, 5, 4}, 31), v = wide({2, 2, 5, 3}, 32);
  Tensor mask(DataType::Bool, {2, 1, 3, 5});
  for (int64_t i = 0; i < mask.elements(); ++i) mask.data<bool>()[i] = (i * 7) % 3 != 0;
  for (int64_t j = 0; j < 5; ++j) mask.data<bool>()[5 + j] = false;  // batch 0, query 1 sees nothing
  std::vector<Tensor> out;
  AttnCase c;
  Status st = runOp(attentionNode(c), {in(q), in(k), in(v), in(mask)}, 1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(out[0], naiveAttention(q, k, v, &mask, nullptr, nullptr, nullptr, c).y, 1e-5, 1e-4);
  EXPECT_EQ(at(out[0], 3), 0.0);  // (0, 0, 1, 0): fully masked row is zero, not NaN

  Tensor nonpad = makeTensor<int64_t>({2}, {4, 5});
  c.causal = true;
  st = runOp(attentionNode(c), {in(q), in(k), in(v), absent(), absent(), absent(), in(nonpad)}, 1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(out[0], naiveAttention(q, k, v, nullptr, nullptr, nullptr, &nonpad, c).y, 1e-5, 1e-4);
}

TEST(AttentionOp, Float16) {
  Tensor q = randomTensor(DataType::Float16, {1, 2, 5, 8}, 40, -2, 2), k = randomTensor(DataType::Float16, {1, 2, 7, 8}, 41, -2, 2);
  Tensor v = randomTensor(DataType::Float16, {1, 2, 7, 8}, 42, -2, 2);
  std::vector<Tensor> out;
  ASSERT_TRUE(runOp(attentionNode({}), {in(q), in(k), in(v)}, 1, &out).isOk());
  Tensor expected = naiveAttention(q, k, v, nullptr, nullptr, nullptr, nullptr, {}).y;
  for (int64_t i = 0; i < expected.elements(); ++i) EXPECT_NEAR(at(out[0], i), at(expected, i), 5e-3);
}

TEST(AttentionOp, Errors) {
  std::vector<Tensor> out;
  Tensor q = wide({1, 3, 2, 4}, 50), k = wide({1, 2, 2, 4}, 51);
  EXPECT_FALSE(runOp(attentionNode({}), {in(q), in(k), in(k)}, 1, &out).isOk());  // 3 q heads over 2 kv heads
  Tensor q3 = wide({1, 2, 8}, 52);
  EXPECT_FALSE(runOp(attentionNode({}), {in(q3), in(q3), in(q3)}, 1, &out).isOk());  // 3-D without head counts
  Tensor mask = makeTensor<int32_t>({2, 2}, {1, 0, 1, 1});
  Tensor q4 = wide({1, 1, 2, 4}, 53);
  EXPECT_FALSE(runOp(attentionNode({}), {in(q4), in(q4), in(q4), in(mask)}, 1, &out).isOk());  // int mask
  AttnCase bad;
  bad.mode = 5;
  EXPECT_FALSE(runOp(attentionNode(bad), {in(q4), in(q4), in(q4)}, 1, &out).isOk());
}

// ---- RotaryEmbedding ----

Tensor naiveRotary(const Tensor& x, const Tensor& cosC, const Tensor& sinC, const Tensor* pos, int64_t heads,
                   int64_t rotaryDim, bool interleaved) {
  const bool three = x.shape().size() == 3;
  const int64_t B = x.shape()[0], H = three ? heads : x.shape()[1], S = three ? x.shape()[1] : x.shape()[2];
  const int64_t D = three ? x.shape()[2] / heads : x.shape()[3], rd = rotaryDim ? rotaryDim : D, half = rd / 2;
  Tensor y(x.dtype(), x.shape());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t row = pos ? pos->data<int64_t>()[b * S + s] : b * S + s;
        auto idx = [&](int64_t c) { return three ? (b * S + s) * H * D + h * D + c : ((b * H + h) * S + s) * D + c; };
        for (int64_t c = 0; c < D; ++c) storeFromDouble(x.dtype(), y.data(), idx(c), at(x, idx(c)));
        for (int64_t kk = 0; kk < half; ++kk) {
          const int64_t i1 = interleaved ? 2 * kk : kk, i2 = interleaved ? 2 * kk + 1 : kk + half;
          const double co = at(cosC, row * half + kk), si = at(sinC, row * half + kk);
          const double x1 = at(x, idx(i1)), x2 = at(x, idx(i2));
          storeFromDouble(x.dtype(), y.data(), idx(i1), co * x1 - si * x2);
          storeFromDouble(x.dtype(), y.data(), idx(i2), si * x1 + co * x2);
        }
      }
  return y;
}

TEST(RotaryEmbeddingOp, LayoutsPositionsAndPartialRotation) {
  struct Case {
    Shape x;
    int64_t heads, rotaryDim;
    bool interleaved, positions;
  };
  const std::vector<Case> cases = {{{2, 3, 5, 8}, 0, 0, false, true},  {{2, 3, 5, 8}, 0, 0, true, false},
                                   {{2, 5, 3 * 6}, 3, 4, false, true}, {{2, 5, 3 * 6}, 3, 2, true, false},
                                   {{1, 2, 7, 10}, 0, 6, true, true}};
  uint32_t seed = 60;
  for (const Case& c : cases) {
    SCOPED_TRACE(shapeToString(c.x) + " rd " + std::to_string(c.rotaryDim) + (c.interleaved ? " interleaved" : ""));
    Tensor x = randomTensor(DataType::Float32, c.x, seed++, -2, 2);
    const bool three = c.x.size() == 3;
    const int64_t B = c.x[0], S = three ? c.x[1] : c.x[2], D = three ? c.x[2] / c.heads : c.x[3];
    const int64_t half = (c.rotaryDim ? c.rotaryDim : D) / 2;
    Tensor pos = randomTensor(DataType::Int64, {B, S}, seed++, 0, 11);
    const Shape cacheShape = c.positions ? Shape{11, half} : Shape{B, S, half};
    Tensor cosC = randomTensor(DataType::Float32, cacheShape, seed++), sinC = randomTensor(DataType::Float32, cacheShape, seed++);
    Node node;
    node.type = OpType::RotaryEmbedding;
    if (c.heads) node.setInt("num_heads", c.heads);
    if (c.rotaryDim) node.setInt("rotary_embedding_dim", c.rotaryDim);
    if (c.interleaved) node.setInt("interleaved", 1);
    std::vector<OpInput> ins{in(x), in(cosC), in(sinC)};
    if (c.positions) ins.push_back(in(pos));
    std::vector<Tensor> out;
    Status st = runOp(node, ins, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    expectNear(out[0], naiveRotary(x, cosC, sinC, c.positions ? &pos : nullptr, c.heads, c.rotaryDim, c.interleaved),
               1e-6, 1e-5);
  }
}

TEST(RotaryEmbeddingOp, Errors) {
  std::vector<Tensor> out;
  Tensor x = randomTensor(DataType::Float32, {1, 2, 3, 8}, 70);
  Tensor cache = randomTensor(DataType::Float32, {4, 4}, 71);
  Node node;
  node.type = OpType::RotaryEmbedding;
  EXPECT_FALSE(runOp(node, {in(x), in(cache), in(cache), in(makeTensor<int64_t>({1, 3}, {0, 1, 9}))}, 1, &out).isOk());
  Node odd = node;
  odd.setInt("rotary_embedding_dim", 3);
  EXPECT_FALSE(runOp(odd, {in(x), in(cache), in(cache), in(makeTensor<int64_t>({1, 3}, {0, 1, 2}))}, 1, &out).isOk());
  Tensor x3 = randomTensor(DataType::Float32, {1, 3, 8}, 72);
  EXPECT_FALSE(runOp(node, {in(x3), in(cache), in(cache)}, 1, &out).isOk());  // 3-D without num_heads
}

}  // namespace
}  // namespace osprey::test
