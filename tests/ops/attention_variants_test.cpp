// LinearAttention and FlexAttention against naive per-head versions written here.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

struct LinearCase {
  std::string rule = "gated_delta";
  int64_t B = 2, T = 5, Hq = 4, Hkv = 2, dk = 3, dv = 5;
  bool past = false, decayPerHead = false, betaShared = false;
  float scale = 0;  // 0: default 1/sqrt(dk)
};

void checkLinear(const LinearCase& c, uint32_t seed) {
  SCOPED_TRACE(c.rule + " Hq " + std::to_string(c.Hq) + " Hkv " + std::to_string(c.Hkv));
  const int64_t B = c.B, T = c.T, Hq = c.Hq, Hkv = c.Hkv, dk = c.dk, dv = c.dv;
  const bool gated = c.rule == "gated" || c.rule == "gated_delta", delta = c.rule == "delta" || c.rule == "gated_delta";
  const DataType f32 = DataType::Float32;
  Tensor q = randomTensor(f32, {B, T, Hq * dk}, seed), k = randomTensor(f32, {B, T, Hkv * dk}, seed + 1);
  Tensor v = randomTensor(f32, {B, T, Hkv * dv}, seed + 2), past = randomTensor(f32, {B, Hkv, dk, dv}, seed + 3);
  Tensor decay = randomTensor(f32, {B, T, c.decayPerHead ? Hkv : Hkv * dk}, seed + 4, -1, 0);
  Tensor beta = randomTensor(f32, {B, T, c.betaShared ? 1 : Hkv}, seed + 5, 0, 1);
  Node node;
  node.type = OpType::LinearAttention;
  node.setInt("q_num_heads", Hq);
  node.setInt("kv_num_heads", Hkv);
  node.setString("update_rule", c.rule);
  if (c.scale) node.setFloat("scale", c.scale);
  std::vector<Tensor> outs;
  Status st = runOp(node,
                    {in(q), in(k), in(v), c.past ? in(past) : absent(), gated ? in(decay) : absent(), delta ? in(beta) : absent()},
                    2, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  const double scale = c.scale ? c.scale : 1 / std::sqrt(double(dk));
  Tensor y(f32, {B, T, Hq * dv}), present(f32, {B, Hkv, dk, dv});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hkv; ++h) {
      std::vector<std::vector<double>> S(dk, std::vector<double>(dv, 0.0));
      if (c.past)
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) S[i][j] = at(past, ((b * Hkv + h) * dk + i) * dv + j);
      for (int64_t t = 0; t < T; ++t) {
        auto K = [&](int64_t i) { return at(k, (b * T + t) * Hkv * dk + h * dk + i); };
        auto V = [&](int64_t j) { return at(v, (b * T + t) * Hkv * dv + h * dv + j); };
        if (gated)
          for (int64_t i = 0; i < dk; ++i) {
            const double g = at(decay, (b * T + t) * decay.shape()[2] + (c.decayPerHead ? h : h * dk + i));
            for (double& s : S[i]) s *= std::exp(g);
          }
        const double bt = delta ? at(beta, (b * T + t) * beta.shape()[2] + (c.betaShared ? 0 : h)) : 1;
        std::vector<double> write(dv);
        for (int64_t j = 0; j < dv; ++j) {
          double old = 0;  // (S^T k)_j, the value the state recalls for k
          for (int64_t i = 0; i < dk; ++i) old += S[i][j] * K(i);
          write[j] = delta ? bt * (V(j) - old) : V(j);
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) S[i][j] += K(i) * write[j];
        for (int64_t hq = 0; hq < Hq; ++hq) {
          if (hq / (Hq / Hkv) != h) continue;
          for (int64_t j = 0; j < dv; ++j) {
            double o = 0;
            for (int64_t i = 0; i < dk; ++i) o += at(q, (b * T + t) * Hq * dk + hq * dk + i) * S[i][j];
            storeFromDouble(f32, y.data(), (b * T + t) * Hq * dv + hq * dv + j, scale * o);
          }
        }
      }
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) storeFromDouble(f32, present.data(), ((b * Hkv + h) * dk + i) * dv + j, S[i][j]);
    }
  expectNear(outs[0], y, 1e-5, 1e-4);
  expectNear(outs[1], present, 1e-5, 1e-4);
}

TEST(LinearAttentionTest, EveryUpdateRule) {
  uint32_t seed = 1;
  for (const char* rule : {"linear", "gated", "delta", "gated_delta"}) {
    LinearCase c;
    c.rule = rule;
    checkLinear(c, seed++);
    c.past = true;
    c.Hkv = 4;
    c.scale = 0.3f;
    checkLinear(c, seed++);
  }
}

TEST(LinearAttentionTest, PerHeadDecaySharedBetaAndMqa) {
  LinearCase c;
  c.decayPerHead = c.betaShared = c.past = true;
  checkLinear(c, 20);
  c.Hkv = 1;
  c.Hq = 3;
  c.T = 1;
  checkLinear(c, 21);
}

TEST(LinearAttentionTest, RejectsBadHeadsAndMissingGates) {
  Tensor q = randomTensor(DataType::Float32, {1, 2, 8}, 1);
  Node node;
  node.type = OpType::LinearAttention;
  node.setInt("q_num_heads", 2);
  node.setInt("kv_num_heads", 3);
  node.setString("update_rule", "linear");
  std::vector<Tensor> outs;
  EXPECT_FALSE(runOp(node, {in(q), in(q), in(q)}, 2, &outs).isOk());
  node.setInt("kv_num_heads", 2);
  EXPECT_TRUE(runOp(node, {in(q), in(q), in(q)}, 2, &outs).isOk());
  node.setString("update_rule", "gated");
  EXPECT_FALSE(runOp(node, {in(q), in(q), in(q)}, 2, &outs).isOk()) << "gated needs decay";
  node.setString("update_rule", "fast");
  EXPECT_FALSE(runOp(node, {in(q), in(q), in(q)}, 2, &outs).isOk());
}

// A one-node subgraph y = x (op) c for a scalar float constant c.
std::shared_ptr<Graph> scalarOpGraph(OpType op, float c) {
  auto g = std::make_shared<Graph>();
  TensorInfo x;
  x.name = "x";
  x.dtype = DataType::Float32;
  x.hasShape = false;
  TensorInfo k;
  k.name = "c";
  k.dtype = DataType::Float32;
  k.isConstant = true;
  k.data = ConstantData::copyOf(&c, 4);
  TensorInfo y;
  y.name = "y";
  const int xi = g->addTensor(x), ki = g->addTensor(k), yi = g->addTensor(y);
  Node n;
  n.type = op;
  n.name = "mod";
  n.inputs = {xi, ki};
  n.outputs = {yi};
  g->nodes.push_back(n);
  g->inputs = {xi};
  g->outputs = {yi};
  return g;
}

void checkFlex(int64_t Hq, int64_t Hkv, float scale, float scoreAdd, float probMul, uint32_t seed) {
  const int64_t B = 2, L = 5, S = 7, E = 3, Ev = 4;
  const DataType f32 = DataType::Float32;
  Tensor q = randomTensor(f32, {B, Hq, L, E}, seed), k = randomTensor(f32, {B, Hkv, S, E}, seed + 1),
         v = randomTensor(f32, {B, Hkv, S, Ev}, seed + 2);
  Node node;
  node.type = OpType::FlexAttention;
  if (scale) node.setFloat("scale", scale);
  auto graphAttr = [&](const char* name, std::shared_ptr<Graph> g) {
    Attribute a;
    a.name = name;
    a.kind = Attribute::Kind::Graph;
    a.graph = std::move(g);
    node.setAttr(a);
  };
  if (scoreAdd) graphAttr("score_mod", scalarOpGraph(OpType::Add, scoreAdd));
  if (probMul) graphAttr("prob_mod", scalarOpGraph(OpType::Mul, probMul));
  std::vector<Tensor> outs;
  Status st = runOp(node, {in(q), in(k), in(v)}, 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  const double sc = scale ? scale : 1 / std::sqrt(double(E));
  Tensor want(f32, {B, Hq, L, Ev});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const int64_t kh = h * Hkv / Hq;
        std::vector<double> score(S);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (int64_t e = 0; e < E; ++e) d += at(q, ((b * Hq + h) * L + i) * E + e) * at(k, ((b * Hkv + kh) * S + j) * E + e);
          score[j] = d * sc + scoreAdd;
          mx = std::max(mx, score[j]);
        }
        for (double& s : score) sum += (s = std::exp(s - mx));
        for (int64_t e = 0; e < Ev; ++e) {
          double o = 0;
          for (int64_t j = 0; j < S; ++j) o += score[j] / sum * (probMul ? probMul : 1) * at(v, ((b * Hkv + kh) * S + j) * Ev + e);
          storeFromDouble(f32, want.data(), ((b * Hq + h) * L + i) * Ev + e, o);
        }
      }
  expectNear(outs[0], want, 1e-5, 1e-4);
}

TEST(FlexAttentionTest, PlainScaledAndGrouped) {
  checkFlex(3, 3, 0, 0, 0, 1);
  checkFlex(6, 2, 0.2f, 0, 0, 2);
}

TEST(FlexAttentionTest, ScoreAndProbModifiers) {
  checkFlex(2, 2, 0, 0.75f, 0, 3);
  checkFlex(4, 1, 0, 0, 1.5f, 4);
  checkFlex(2, 1, 0.5f, -0.25f, 0.5f, 5);
}

TEST(FlexAttentionTest, RejectsMismatchedHeads) {
  Tensor q = randomTensor(DataType::Float32, {1, 3, 2, 4}, 1), kv = randomTensor(DataType::Float32, {1, 2, 2, 4}, 2);
  Node node;
  node.type = OpType::FlexAttention;
  std::vector<Tensor> outs;
  EXPECT_FALSE(runOp(node, {in(q), in(kv), in(kv)}, 1, &outs).isOk());
  EXPECT_FALSE(runOp(node, {in(q), in(randomTensor(DataType::Float32, {1, 3, 2, 5}, 2)), in(q)}, 1, &outs).isOk());
}

}  // namespace
}  // namespace osprey::test
