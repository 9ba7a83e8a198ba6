// The CPU backend's LSTM, GRU and RNN (src/backends/cpu/kernels/recurrent.cpp) against the
// reference kernel on seeded random data: odd hidden and input sizes (tails of every register
// block and packed panel), one step and several, batch 1 and 3, every direction, per-entry
// lengths (one of them 0), initial states, peepholes, clip, input_forget, both GRU reset modes,
// both layouts, and the thread splits of the steps. Each case also checks that the CPU execution
// ran (no reference op in the session's stats), so a fallback cannot pass for the kernel.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/recurrent.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

struct RecurrentCase {
  OpType type = OpType::LSTM;
  int64_t seq = 7, batch = 3, input = 13, hidden = 17;
  std::string direction = "forward";
  int layout = 0;
  bool bias = true, lengths = false, initial = false, peepholes = false;
  bool inputForget = false, linearBeforeReset = false;
  float clip = 0.f;  // 0: none
  int threads = 1;
  std::vector<std::string> activations;  // empty: the defaults
  bool constantWeights = true;
};

int64_t gatesOf(OpType t) { return t == OpType::LSTM ? 4 : t == OpType::GRU ? 3 : 1; }
int64_t directionsOf(const RecurrentCase& c) { return c.direction == "bidirectional" ? 2 : 1; }

std::string describe(const RecurrentCase& c) {
  return std::string(c.type == OpType::LSTM ? "LSTM" : c.type == OpType::GRU ? "GRU" : "RNN") + " " + c.direction +
         " seq " + std::to_string(c.seq) + " batch " + std::to_string(c.batch) + " input " + std::to_string(c.input) +
         " hidden " + std::to_string(c.hidden) + " layout " + std::to_string(c.layout) + " threads " +
         std::to_string(c.threads);
}

Node recurrentNode(const RecurrentCase& c) {
  Node node;
  node.type = c.type;
  node.setInt("hidden_size", c.hidden);
  node.setString("direction", c.direction);
  if (c.layout) node.setInt("layout", 1);
  if (c.inputForget) node.setInt("input_forget", 1);
  if (c.linearBeforeReset) node.setInt("linear_before_reset", 1);
  if (c.clip > 0.f) node.setFloat("clip", c.clip);
  if (!c.activations.empty()) {
    Attribute a;
    a.name = "activations";
    a.kind = Attribute::Kind::Strings;
    a.strings = c.activations;
    node.setAttr(a);
  }
  return node;
}

std::vector<OpInput> recurrentInputs(const RecurrentCase& c, uint32_t seed) {
  const DataType f32 = DataType::Float32;
  const int64_t D = directionsOf(c), GH = gatesOf(c.type) * c.hidden, S = c.seq, N = c.batch, H = c.hidden;
  const Shape stateShape = c.layout ? Shape{N, D, H} : Shape{D, N, H};
  Tensor lens(DataType::Int64, {N});
  // Shorter by an odd count (its last state is in the other of the two hidden buffers), empty, whole.
  const int64_t pattern[3] = {std::max<int64_t>(S - 3, 1), 0, S};
  for (int64_t n = 0; n < N; ++n) lens.data<int64_t>()[n] = c.lengths ? pattern[n % 3] : S;
  Tensor w = randomTensor(f32, {D, GH, c.input}, seed + 1, -0.5, 0.5);
  // R scaled as trained models have it (by 1 / sqrt(hidden)): larger, the recurrence is chaotic
  // and multiplies rounding differences (a different order of sums) by several times per step.
  const double recurrentScale = 1.5 / std::sqrt(static_cast<double>(H));
  const Shape xShape = c.layout ? Shape{N, S, c.input} : Shape{S, N, c.input};
  std::vector<OpInput> inputs{in(randomTensor(f32, xShape, seed, -1, 1)),
                              c.constantWeights ? constant(w) : in(w),
                              constant(randomTensor(f32, {D, GH, H}, seed + 2, -recurrentScale, recurrentScale)),
                              c.bias ? constant(randomTensor(f32, {D, 2 * GH}, seed + 3, -0.5, 0.5)) : absent(),
                              c.lengths ? in(lens) : absent(),
                              c.initial ? in(randomTensor(f32, stateShape, seed + 4, -1, 1)) : absent()};
  if (c.type == OpType::LSTM) {
    inputs.push_back(c.initial ? in(randomTensor(f32, stateShape, seed + 5, -1, 1)) : absent());
    inputs.push_back(c.peepholes ? constant(randomTensor(f32, {D, 3 * H}, seed + 6, -0.5, 0.5)) : absent());
  }
  return inputs;
}

// Runs the case through a CPU session and the reference kernel; every output must agree. The
// number of reference ops the session ran is returned (0: the CPU execution ran).
int runAndCompare(const RecurrentCase& c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  const int outputs = c.type == OpType::LSTM ? 3 : 2;
  const std::vector<OpInput> inputs = recurrentInputs(c, seed);
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(recurrentNode(c), inputs, outputs, &feeds);
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  if (!interp) return -1;
  ScheduleConfig schedule;
  schedule.threads = c.threads;
  std::unique_ptr<Session> session;
  Status st = interp->createSession(schedule, BackendConfig(), &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  if (!session) return -1;
  std::vector<Tensor> want;
  st = referenceOp(recurrentNode(c), inputs, outputs, &want);
  EXPECT_TRUE(st.isOk()) << st.message();
  // Twice: the second run must start again from the initial states.
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> got;
    st = session->run(feeds, &got);
    EXPECT_TRUE(st.isOk()) << st.message();
    if (got.size() != want.size()) {
      ADD_FAILURE() << got.size() << " outputs against the reference's " << want.size();
      return -1;
    }
    for (size_t o = 0; o < got.size(); ++o) {
      SCOPED_TRACE("run " + std::to_string(run) + ", output " + std::to_string(o));
      expectNear(got[o], want[o], 1e-5, 1e-5);
    }
  }
  int referenceOps = 0;
  for (const auto& [op, count] : session->stats().referenceOps) referenceOps += count;
  return referenceOps;
}

void expectCpuKernelMatches(const RecurrentCase& c, uint32_t seed) {
  EXPECT_EQ(runAndCompare(c, seed), 0) << describe(c) << " ran the reference kernel";
}

TEST(CpuRecurrent, LstmMatchesTheReference) {
  RecurrentCase c;
  c.direction = "bidirectional";
  c.lengths = c.initial = c.peepholes = true;
  expectCpuKernelMatches(c, 1);

  c = RecurrentCase();
  c.seq = 1, c.batch = 1, c.input = 3, c.hidden = 1;
  expectCpuKernelMatches(c, 2);

  c = RecurrentCase();
  c.direction = "reverse";
  c.layout = 1;
  c.input = 3, c.hidden = 33;
  c.lengths = c.initial = c.inputForget = true;
  c.clip = 0.9f;
  c.bias = false;
  expectCpuKernelMatches(c, 3);

  c = RecurrentCase();
  c.direction = "bidirectional";
  c.batch = 1, c.hidden = 5;
  c.peepholes = true;
  c.clip = 0.4f;
  c.threads = 2;
  expectCpuKernelMatches(c, 4);
}

TEST(CpuRecurrent, GruMatchesTheReferenceInBothResetModes) {
  for (int lbr = 0; lbr < 2; ++lbr) {
    RecurrentCase c;
    c.type = OpType::GRU;
    c.linearBeforeReset = lbr;
    c.direction = "bidirectional";
    c.lengths = c.initial = true;
    expectCpuKernelMatches(c, 10 + lbr);

    c = RecurrentCase();
    c.type = OpType::GRU;
    c.linearBeforeReset = lbr;
    c.direction = "reverse";
    c.seq = 1, c.batch = 1, c.input = 3, c.hidden = 1;
    c.bias = false;
    expectCpuKernelMatches(c, 12 + lbr);

    c = RecurrentCase();
    c.type = OpType::GRU;
    c.linearBeforeReset = lbr;
    c.layout = 1;
    c.input = 3, c.hidden = 33;
    c.lengths = c.initial = true;
    c.clip = 0.5f;
    c.threads = 2;
    expectCpuKernelMatches(c, 14 + lbr);
  }
}

TEST(CpuRecurrent, RnnMatchesTheReference) {
  RecurrentCase c;
  c.type = OpType::RNN;
  c.direction = "bidirectional";
  c.hidden = 5;
  c.lengths = c.initial = true;
  expectCpuKernelMatches(c, 20);

  c = RecurrentCase();
  c.type = OpType::RNN;
  c.seq = 1, c.batch = 1, c.input = 3, c.hidden = 1;
  c.clip = 0.3f;
  expectCpuKernelMatches(c, 21);

  c = RecurrentCase();
  c.type = OpType::RNN;
  c.direction = "reverse";
  c.layout = 1;
  c.input = 3, c.hidden = 33;
  c.bias = false;
  c.lengths = true;
  expectCpuKernelMatches(c, 22);
}

// Steps large enough to be split over the threads by hidden units (a barrier per step, and two
// for GRU with linear_before_reset = 0), with a partial last panel of units.
TEST(CpuRecurrent, StepsSplitOverThreadsMatchTheReference) {
  const int64_t nr = cpuFunctions().gemmNr;
  std::vector<RecurrentCase> cases(5);
  cases[0].hidden = 130, cases[0].lengths = cases[0].initial = cases[0].peepholes = true, cases[0].threads = 2;
  cases[1].direction = "bidirectional", cases[1].layout = 1, cases[1].seq = 5, cases[1].input = 3;
  cases[1].hidden = 130, cases[1].lengths = true, cases[1].threads = 4;
  for (int lbr = 0; lbr < 2; ++lbr) {
    RecurrentCase& c = cases[2 + lbr];
    c.type = OpType::GRU, c.linearBeforeReset = lbr, c.hidden = 130, c.lengths = c.initial = true, c.threads = 2;
  }
  cases[4].type = OpType::RNN, cases[4].hidden = 230, cases[4].lengths = cases[4].initial = true, cases[4].threads = 2;
  for (size_t i = 0; i < cases.size(); ++i) {
    const RecurrentCase& c = cases[i];
    ASSERT_GT(recurrentSlicesPerDirection(c.threads, directionsOf(c), c.batch, gatesOf(c.type), c.hidden, nr), 1)
        << describe(c) << " no longer splits its steps; pick a larger case";
    expectCpuKernelMatches(c, 30 + static_cast<uint32_t>(i));
  }
}

TEST(CpuRecurrent, SmallStepsKeepADirectionToAThread) {
  EXPECT_EQ(recurrentSlicesPerDirection(2, 2, 1, 4, 256, 32), 1);  // a direction per thread already
  EXPECT_EQ(recurrentSlicesPerDirection(2, 1, 1, 1, 128, 32), 1);  // RNN 128: below the barrier's cost
  EXPECT_EQ(recurrentSlicesPerDirection(1, 1, 8, 4, 512, 32), 1);
  EXPECT_EQ(recurrentSlicesPerDirection(8, 1, 32, 4, 40, 32), 2);  // no more slices than panels
}

// What the cells do not compute goes to the reference kernel, which must still be right.
TEST(CpuRecurrent, UnusualOpsRunTheReference) {
  RecurrentCase c;
  c.type = OpType::RNN;
  c.activations = {"Relu"};
  EXPECT_GT(runAndCompare(c, 40), 0);
  c = RecurrentCase();
  c.activations = {"Sigmoid", "Tanh", "Relu"};
  EXPECT_GT(runAndCompare(c, 41), 0);
  c = RecurrentCase();
  c.type = OpType::GRU;
  c.constantWeights = false;
  EXPECT_GT(runAndCompare(c, 42), 0);
  // The default activations spelled out (any case, once or per direction) are the defaults.
  c = RecurrentCase();
  c.direction = "bidirectional";
  c.activations = {"sigmoid", "TANH", "Tanh", "Sigmoid", "Tanh", "Tanh"};
  expectCpuKernelMatches(c, 43);
}

}  // namespace
}  // namespace osprey::test
