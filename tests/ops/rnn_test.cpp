// RNN, GRU and LSTM against the ONNX equations written out naively here, per batch entry and
// time step, on odd sizes; every attribute and optional input is exercised.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

using Fn = std::function<double(double)>;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct RnnCase {
  OpType type = OpType::LSTM;
  int64_t seq = 5, batch = 3, input = 4, hidden = 6;
  std::string direction = "forward";
  int layout = 0;
  bool bias = true, seqLens = false, initial = false, peepholes = false;
  bool inputForget = false, linearBeforeReset = false;
  double clip = 0;                       // 0: no clip
  std::vector<std::string> activations;  // empty: defaults
  std::vector<float> alphas, betas;
};

int64_t gates(OpType t) { return t == OpType::LSTM ? 4 : (t == OpType::GRU ? 3 : 1); }

Fn activation(const std::string& name, double alpha, double beta) {
  if (name == "Sigmoid") return sigmoid;
  if (name == "Tanh") return [](double x) { return std::tanh(x); };
  if (name == "Relu") return [](double x) { return std::max(0.0, x); };
  if (name == "LeakyRelu") return [alpha](double x) { return x < 0 ? alpha * x : x; };
  if (name == "HardSigmoid") return [alpha, beta](double x) { return std::min(1.0, std::max(0.0, alpha * x + beta)); };
  if (name == "ScaledTanh") return [alpha, beta](double x) { return alpha * std::tanh(beta * x); };
  ADD_FAILURE() << "no naive activation " << name;
  return sigmoid;
}

void runCase(const RnnCase& c, uint32_t seed) {
  SCOPED_TRACE(std::string(c.type == OpType::LSTM ? "LSTM" : c.type == OpType::GRU ? "GRU" : "RNN") + " " + c.direction +
               " layout " + std::to_string(c.layout));
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, G = gates(c.type), H = c.hidden, S = c.seq, N = c.batch,
                I = c.input;
  const DataType f32 = DataType::Float32;
  Tensor x = randomTensor(f32, c.layout ? Shape{N, S, I} : Shape{S, N, I}, seed);
  Tensor w = randomTensor(f32, {D, G * H, I}, seed + 1, -0.6, 0.6);
  Tensor r = randomTensor(f32, {D, G * H, H}, seed + 2, -0.6, 0.6);
  Tensor b = randomTensor(f32, {D, 2 * G * H}, seed + 3);
  const Shape stateShape = c.layout ? Shape{N, D, H} : Shape{D, N, H};
  Tensor h0 = randomTensor(f32, stateShape, seed + 4), c0 = randomTensor(f32, stateShape, seed + 5);
  Tensor p = randomTensor(f32, {D, 3 * H}, seed + 6);
  Tensor lens(DataType::Int32, {N});
  for (int64_t n = 0; n < N; ++n) lens.data<int32_t>()[n] = static_cast<int32_t>(c.seqLens ? (n * 2 + 1) % (S + 1) : S);

  Node node;
  node.type = c.type;
  node.setInt("hidden_size", H);
  node.setString("direction", c.direction);
  if (c.layout) node.setInt("layout", 1);
  if (c.inputForget) node.setInt("input_forget", 1);
  if (c.linearBeforeReset) node.setInt("linear_before_reset", 1);
  if (c.clip > 0) node.setFloat("clip", static_cast<float>(c.clip));
  if (!c.activations.empty()) {
    Attribute a;
    a.name = "activations";
    a.kind = Attribute::Kind::Strings;
    a.strings = c.activations;
    node.setAttr(a);
  }
  if (!c.alphas.empty()) node.setFloats("activation_alpha", c.alphas);
  if (!c.betas.empty()) node.setFloats("activation_beta", c.betas);
  std::vector<OpInput> inputs{in(x), constant(w), constant(r), c.bias ? constant(b) : absent(),
                              c.seqLens ? in(lens) : absent(), c.initial ? in(h0) : absent()};
  if (c.type == OpType::LSTM) {
    inputs.push_back(c.initial ? in(c0) : absent());
    inputs.push_back(c.peepholes ? constant(p) : absent());
  }
  const int outs = c.type == OpType::LSTM ? 3 : 2;
  std::vector<Tensor> got;
  Status st = runOp(node, inputs, outs, &got);
  ASSERT_TRUE(st.isOk()) << st.message();

  // Activations per direction, defaults from the spec.
  std::vector<std::string> names = c.activations;
  if (names.empty()) {
    names = c.type == OpType::LSTM ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                   : c.type == OpType::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                           : std::vector<std::string>{"Tanh"};
    const std::vector<std::string> one = names;
    if (D == 2) names.insert(names.end(), one.begin(), one.end());
  }
  // activation_alpha/beta are consumed, in order, by the activations that take them.
  std::vector<Fn> fns;
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) {
    const bool takesAlpha = name == "LeakyRelu" || name == "HardSigmoid" || name == "ScaledTanh";
    const bool takesBeta = name == "HardSigmoid" || name == "ScaledTanh";
    const double alpha = takesAlpha && ai < c.alphas.size() ? c.alphas[ai++] : 0;
    const double beta = takesBeta && bi < c.betas.size() ? c.betas[bi++] : 0;
    fns.push_back(activation(name, alpha, beta));
  }
  const size_t perDir = names.size() / static_cast<size_t>(D);

  Tensor yWant(f32, c.layout ? Shape{N, S, D, H} : Shape{S, D, N, H}), hWant(f32, stateShape), cWant(f32, stateShape);
  auto clip = [&](double v) { return c.clip > 0 ? std::max(-c.clip, std::min(c.clip, v)) : v; };
  auto X = [&](int64_t t, int64_t n, int64_t i) { return at(x, c.layout ? (n * S + t) * I + i : (t * N + n) * I + i); };
  auto stateIdx = [&](int64_t d, int64_t n, int64_t j) { return c.layout ? (n * D + d) * H + j : (d * N + n) * H + j; };
  for (int64_t d = 0; d < D; ++d) {
    const Fn& f = fns[d * perDir];
    const Fn& g = fns[d * perDir + (perDir > 1 ? 1 : 0)];
    const Fn& hAct = fns[d * perDir + (perDir > 2 ? 2 : 0)];
    // Row `row` of W x + R h + Wb + Rb, with R applied to `hIn`.
    auto gate = [&](int64_t row, int64_t t, int64_t n, const std::vector<double>& hIn, bool withR, bool withRb) {
      double v = c.bias ? at(b, d * 2 * G * H + row) : 0;
      if (c.bias && withRb) v += at(b, d * 2 * G * H + G * H + row);
      for (int64_t i = 0; i < I; ++i) v += X(t, n, i) * at(w, (d * G * H + row) * I + i);
      if (withR)
        for (int64_t j = 0; j < H; ++j) v += hIn[j] * at(r, (d * G * H + row) * H + j);
      return v;
    };
    for (int64_t n = 0; n < N; ++n) {
      std::vector<double> h(H), cell(H);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = c.initial ? at(h0, stateIdx(d, n, j)) : 0;
        cell[j] = c.initial ? at(c0, stateIdx(d, n, j)) : 0;
      }
      const int64_t len = lens.data<int32_t>()[n];
      const bool back = c.direction == "reverse" || d == 1;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = back ? len - 1 - step : step;
        std::vector<double> hn(H), cn(H);
        for (int64_t j = 0; j < H; ++j) {
          if (c.type == OpType::RNN) {
            hn[j] = f(clip(gate(j, t, n, h, true, true)));
          } else if (c.type == OpType::GRU) {
            const double z = f(clip(gate(j, t, n, h, true, true)));
            std::vector<double> rh(H);
            for (int64_t m = 0; m < H; ++m) rh[m] = f(clip(gate(H + m, t, n, h, true, true))) * h[m];
            double pre;
            if (c.linearBeforeReset) {
              const double rj = f(clip(gate(H + j, t, n, h, true, true)));
              const double rec = gate(2 * H + j, t, n, h, true, true) - gate(2 * H + j, t, n, h, false, false);
              pre = gate(2 * H + j, t, n, h, false, false) + rj * rec;
            } else {
              pre = gate(2 * H + j, t, n, rh, true, true);
            }
            hn[j] = (1 - z) * g(clip(pre)) + z * h[j];
          } else {
            const double pi = c.peepholes ? at(p, d * 3 * H + j) : 0, po = c.peepholes ? at(p, d * 3 * H + H + j) : 0,
                         pf = c.peepholes ? at(p, d * 3 * H + 2 * H + j) : 0;
            const double i = f(clip(gate(j, t, n, h, true, true) + pi * cell[j]));
            const double fg = c.inputForget ? 1 - i : f(clip(gate(2 * H + j, t, n, h, true, true) + pf * cell[j]));
            cn[j] = fg * cell[j] + i * g(clip(gate(3 * H + j, t, n, h, true, true)));
            const double o = f(clip(gate(H + j, t, n, h, true, true) + po * cn[j]));
            hn[j] = o * hAct(cn[j]);
          }
        }
        h = hn;
        if (c.type == OpType::LSTM) cell = cn;
        for (int64_t j = 0; j < H; ++j)
          storeFromDouble(f32, yWant.data(), c.layout ? ((n * S + t) * D + d) * H + j : ((t * D + d) * N + n) * H + j, h[j]);
      }
      for (int64_t j = 0; j < H; ++j) {
        storeFromDouble(f32, hWant.data(), stateIdx(d, n, j), len ? h[j] : 0);
        storeFromDouble(f32, cWant.data(), stateIdx(d, n, j), len ? cell[j] : 0);
      }
    }
  }
  expectNear(got[0], yWant, 1e-5, 1e-4);
  expectNear(got[1], hWant, 1e-5, 1e-4);
  if (c.type == OpType::LSTM) expectNear(got[2], cWant, 1e-5, 1e-4);
}

TEST(RnnTest, LstmAllInputsBidirectional) {
  RnnCase c;
  c.direction = "bidirectional";
  c.seq = 7;
  c.input = 5;
  c.seqLens = c.initial = c.peepholes = true;
  runCase(c, 1);
}

TEST(RnnTest, LstmBatchFirstReverseClipInputForget) {
  RnnCase c;
  c.direction = "reverse";
  c.layout = 1;
  c.clip = 0.7;
  c.inputForget = true;
  c.initial = true;
  c.bias = false;
  runCase(c, 2);
}

TEST(RnnTest, LstmCustomActivations) {
  RnnCase c;
  c.activations = {"HardSigmoid", "ScaledTanh", "LeakyRelu"};
  c.alphas = {0.3f, 0.9f, 0.05f};
  c.betas = {0.4f, 1.3f};
  runCase(c, 3);
}

TEST(RnnTest, GruBothResetModes) {
  for (int lbr = 0; lbr < 2; ++lbr) {
    RnnCase c;
    c.type = OpType::GRU;
    c.direction = "bidirectional";
    c.linearBeforeReset = lbr;
    c.seqLens = c.initial = true;
    c.hidden = 7;
    runCase(c, 10 + lbr);
  }
}

TEST(RnnTest, GruBatchFirstClipNoBias) {
  RnnCase c;
  c.type = OpType::GRU;
  c.layout = 1;
  c.clip = 0.5;
  c.bias = false;
  runCase(c, 12);
}

TEST(RnnTest, SimpleRnnActivationsAndLayouts) {
  for (int layout = 0; layout < 2; ++layout) {
    RnnCase c;
    c.type = OpType::RNN;
    c.layout = layout;
    c.direction = "bidirectional";
    c.activations = {"Relu", "LeakyRelu"};
    c.alphas = {0.2f};
    c.seqLens = c.initial = true;
    c.seq = 13;
    runCase(c, 20 + layout);
  }
}

TEST(RnnTest, RejectsBadModels) {
  const DataType f32 = DataType::Float32;
  Tensor x = randomTensor(f32, {3, 2, 4}, 1), w = randomTensor(f32, {1, 12, 4}, 2), r = randomTensor(f32, {1, 12, 3}, 3);
  std::vector<Tensor> outs;
  Node node;
  node.type = OpType::GRU;
  node.setInt("hidden_size", 3);
  node.setString("direction", "sideways");
  EXPECT_FALSE(runOp(node, {in(x), constant(w), constant(r)}, 2, &outs).isOk());
  node.setString("direction", "forward");
  node.setInt("hidden_size", 4);  // W fits a GRU of hidden 4, R does not
  EXPECT_FALSE(runOp(node, {in(x), constant(w), constant(r)}, 2, &outs).isOk());
  node.setInt("hidden_size", 3);
  EXPECT_FALSE(runOp(node, {in(x), constant(w), constant(r)}, 2, &outs).isOk()) << "W has 12 rows, GRU needs 9";
  node.type = OpType::LSTM;
  Attribute a;
  a.name = "activations";
  a.kind = Attribute::Kind::Strings;
  a.strings = {"Sigmoid", "Tanh", "Cube"};
  node.setAttr(a);
  EXPECT_FALSE(runOp(node, {in(x), constant(w), constant(r)}, 2, &outs).isOk());
  node.removeAttr("activations");
  EXPECT_TRUE(runOp(node, {in(x), constant(w), constant(r)}, 2, &outs).isOk());
  Tensor lens = makeTensor<int32_t>({2}, {4, 1});  // longer than the 3 steps of X
  EXPECT_FALSE(runOp(node, {in(x), constant(w), constant(r), absent(), in(lens)}, 2, &outs).isOk());
  node.setInt("layout", 2);
  EXPECT_FALSE(runOp(node, {in(x), constant(w), constant(r)}, 2, &outs).isOk());
}

TEST(RnnTest, LargerBatchRunsInParallel) {
  RnnCase c;
  c.direction = "bidirectional";
  c.seq = 17;
  c.batch = 13;
  c.input = 11;
  c.hidden = 9;
  c.seqLens = c.initial = c.peepholes = true;
  runCase(c, 30);
}

}  // namespace
}  // namespace osprey::test
