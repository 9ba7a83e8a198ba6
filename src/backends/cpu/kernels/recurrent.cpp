// LSTM, GRU and RNN in float32, as ONNX Runtime and MNN run them: the input projection of every
// time step is one GEMM per direction against W packed once (the biases in its epilogue); each
// step then multiplies the previous hidden state by R, packed once gate by gate, and applies the
// gates (recurrent_cells.cpp). The reference kernel (src/ops/rnn.cpp) keeps non-default
// activations and weights that are not constants.
#include "backends/cpu/kernels/recurrent.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <string>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

enum Input { kX, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kP };

// Below this many multiply-adds a step's product gains too little from a second thread to pay
// for the barrier after every step. Forward LSTMs at two threads, batch 1, medians: hidden 128
// (65K) tied, hidden 256 (262K) 1.06 -> 0.80 ms.
constexpr int64_t kSplitStepMacs = 1 << 17;

RecurrentCell cellOf(OpType t) {
  return t == OpType::LSTM ? RecurrentCell::Lstm : t == OpType::GRU ? RecurrentCell::Gru : RecurrentCell::Rnn;
}
int64_t gateCount(RecurrentCell c) { return c == RecurrentCell::Lstm ? 4 : c == RecurrentCell::Gru ? 3 : 1; }

std::string lowered(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// Whether `activations` is absent or names the ONNX defaults (for every direction), the only
// functions the cells compute.
bool defaultActivations(const Node& node, RecurrentCell cell, int64_t directions) {
  const Attribute* a = node.attr("activations");
  if (!a) return true;
  using Names = std::vector<std::string>;
  const Names perDirection = cell == RecurrentCell::Lstm  ? Names{"sigmoid", "tanh", "tanh"}
                             : cell == RecurrentCell::Gru ? Names{"sigmoid", "tanh"}
                                                          : Names{"tanh"};
  const size_t n = a->strings.size();
  if (n != perDirection.size() && n != perDirection.size() * static_cast<size_t>(directions)) return false;
  for (size_t i = 0; i < n; ++i)
    if (lowered(a->strings[i]) != perDirection[i % perDirection.size()]) return false;
  return true;
}

bool isFloat32(const RuntimeTensor* t) { return t && t->dtype == DataType::Float32; }
bool present(const std::vector<RuntimeTensor*>& inputs, size_t i) { return inputs.size() > i && inputs[i]; }

// Everything the attributes and the input shapes fix.
struct RecurrentDims {
  RecurrentCell cell = RecurrentCell::Rnn;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1, gates = 1;
  bool reverseOnly = false, batchFirst = false, inputForget = false, linearBeforeReset = false;
  float clip = std::numeric_limits<float>::infinity();

  int64_t gateRows() const { return gates * hidden; }
  // X's row (and its projection's) of time step t, batch entry n.
  int64_t xRow(int64_t t, int64_t n) const { return batchFirst ? n * seq + t : t * batch + n; }
  int64_t yOffset(int64_t t, int64_t d, int64_t n) const {
    return (batchFirst ? (n * seq + t) * directions + d : (t * directions + d) * batch + n) * hidden;
  }
  int64_t stateOffset(int64_t d, int64_t n) const {
    return (batchFirst ? n * directions + d : d * batch + n) * hidden;
  }
};

// Reads the attributes; false for anything the reference must handle (or report as an error).
bool readDims(const Node& node, const RuntimeTensor& x, const RuntimeTensor& r, RecurrentDims* d) {
  d->cell = cellOf(node.type);
  d->gates = gateCount(d->cell);
  const std::string direction = node.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") return false;
  d->directions = direction == "bidirectional" ? 2 : 1;
  d->reverseOnly = direction == "reverse";
  const int64_t layout = node.getInt("layout", 0);
  if (layout != 0 && layout != 1) return false;
  d->batchFirst = layout == 1;
  if (x.shape.size() != 3 || r.shape.size() != 3) return false;
  d->seq = x.shape[d->batchFirst ? 1 : 0];
  d->batch = x.shape[d->batchFirst ? 0 : 1];
  d->input = x.shape[2];
  d->hidden = r.shape[2];
  if (d->hidden <= 0 || node.getInt("hidden_size", d->hidden) != d->hidden) return false;
  if (node.hasAttr("clip")) {
    d->clip = node.getFloat("clip", 0.f);
    if (!(d->clip > 0.f)) return false;
  }
  d->inputForget = d->cell == RecurrentCell::Lstm && node.getInt("input_forget", 0) != 0;
  d->linearBeforeReset = d->cell == RecurrentCell::Gru && node.getInt("linear_before_reset", 0) != 0;
  return defaultActivations(node, d->cell, d->directions);
}

class RecurrentExecution : public Execution {
 public:
  RecurrentExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    (void)outputs;
    if (!readDims(node_, *inputs[kX], *inputs[kR], &dims_))
      return Status::internal("recurrent execution of " + node_.describe() + " was given attributes it declined");
    const CpuFunctions& fn = cpuFunctions();
    nr_ = fn.gemmNr;
    gemv_ = recurrentGemv(fn);
    OSPREY_RETURN_IF_ERROR(packWeights(reinterpret_cast<const float*>(inputs[kW]->host()),
                                       reinterpret_cast<const float*>(inputs[kR]->host())));
    const int64_t S = dims_.seq, N = dims_.batch, D = dims_.directions, H = dims_.hidden, GH = dims_.gateRows();
    auto rounded = [](int64_t floats) { return (floats + 15) / 16 * 16; };  // 64-byte aligned sections
    gatesAt_ = rounded(S * N * D * GH);
    hiddenAt_ = gatesAt_ + rounded(D * N * GH);
    cellAt_ = hiddenAt_ + 2 * rounded(D * N * H);
    resetHiddenAt_ = cellAt_ + rounded(D * N * H);
    std::unique_ptr<MemObj> scratchMem;  // lives for this execution only
    OSPREY_RETURN_IF_ERROR(acquireConvScratch(backend(), {resetHiddenAt_ + rounded(D * N * H)}, "recurrent scratch",
                                              node_.name, &scratch_, &scratchMem));
    lens_.assign(static_cast<size_t>(N), S);
    projectionBias_.assign(static_cast<size_t>(D * GH), 0.f);
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    slices_ = recurrentSlicesPerDirection(pool ? pool->threads() : 1, D, N, dims_.gates, H, nr_);
    math_.fn = &fn;
    math_.hidden = H;
    math_.clipLo = -dims_.clip;
    math_.clipHi = dims_.clip;
    math_.inputForget = dims_.inputForget;
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RecurrentDims& dm = dims_;
    const int64_t S = dm.seq, N = dm.batch, D = dm.directions, H = dm.hidden;
    int64_t maxLen = 0;
    OSPREY_RETURN_IF_ERROR(readLengths(inputs, &maxLen));
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    float* scratch = reinterpret_cast<float*>(scratch_.host());
    x_ = reinterpret_cast<const float*>(inputs[kX]->host());
    bias_ = optionalFloats(inputs, kB);
    foldBiases();
    const float* h0 = optionalFloats(inputs, kInitialH);
    const float* c0 = optionalFloats(inputs, kInitialC);
    for (int64_t d = 0; d < D; ++d)
      for (int64_t n = 0; n < N; ++n) {
        float* h = hidden(0, d, n);
        float* c = scratch + cellAt_ + (d * N + n) * H;
        if (h0) std::memcpy(h, h0 + dm.stateOffset(d, n), sizeof(float) * H);
        else std::fill(h, h + H, 0.f);
        if (c0 && dm.cell == RecurrentCell::Lstm) std::memcpy(c, c0 + dm.stateOffset(d, n), sizeof(float) * H);
        else std::fill(c, c + H, 0.f);
      }
    y_ = outputs.empty() || !outputs[0] ? nullptr : reinterpret_cast<float*>(outputs[0]->host());
    // Steps past an entry's length are never written: they stay zero, as in the reference.
    if (y_ && std::any_of(lens_.begin(), lens_.end(), [&](int64_t l) { return l < S; }))
      std::fill(y_, y_ + S * D * N * H, 0.f);
    peepholes_ = dm.cell == RecurrentCell::Lstm ? optionalFloats(inputs, kP) : nullptr;
    if (D > 1 && pool && pool->threads() <= D) {
      // A thread a direction, from its projection to its last step: no barrier between the two.
      parallelFor(pool, D, [&](int64_t begin, int64_t end) {
        for (int64_t d = begin; d < end; ++d) {
          project(nullptr, d);
          runDirection(d, maxLen);
        }
      });
    } else {
      for (int64_t d = 0; d < D; ++d) project(pool, d);
      runSteps(pool, maxLen);
    }
    storeFinalStates(outputs, maxLen);
    return Status::ok();
  }

 private:
  // W as a B block of input x (gates * hidden) per direction, for the projection; R as B blocks
  // of hidden x hidden per direction and gate, so a run of hidden units in whole panels is a slice
  // of every gate's block. Constants, so both are packed once and shared through PackedWeights.
  Status packWeights(const float* w, const float* r) {
    const CpuFunctions& fn = cpuFunctions();
    const int64_t I = dims_.input, H = dims_.hidden, D = dims_.directions, G = dims_.gates, GH = dims_.gateRows();
    bool fresh = false;
    directionWFloats_ = static_cast<int64_t>(packedBSize(fn, I, GH));
    if (!packedWMem_ || packedWSource_ != w) {
      OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend(), D * directionWFloats_, node_.name,
                                                  packKey(w, nullptr, "recurrent-w", {I, D, GH, nr_}), &packedW_,
                                                  &packedWMem_, &fresh));
      float* dst = reinterpret_cast<float*>(packedW_.host());
      if (fresh)
        for (int64_t d = 0; d < D; ++d) packGemmB(fn, w + d * GH * I, 1, I, I, GH, dst + d * directionWFloats_);
      packedWSource_ = w;
    }
    gateBlockFloats_ = static_cast<int64_t>(packedBSize(fn, H, H));
    if (!packedRMem_ || packedRSource_ != r) {
      OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend(), D * G * gateBlockFloats_, node_.name,
                                                  packKey(r, nullptr, "recurrent-r", {H, D, G, nr_}), &packedR_,
                                                  &packedRMem_, &fresh));
      float* dst = reinterpret_cast<float*>(packedR_.host());
      if (fresh)
        for (int64_t block = 0; block < D * G; ++block)
          packGemmB(fn, r + block * H * H, 1, H, H, H, dst + block * gateBlockFloats_);
      packedRSource_ = r;
    }
    return Status::ok();
  }

  // Direction d's input projection: x_t . W_d^T + the folded biases, for every step at once.
  void project(ThreadPool* pool, int64_t d) const {
    const int64_t GH = dims_.gateRows(), D = dims_.directions;
    GemmA x;
    x.data = x_;
    x.rowStride = dims_.input;
    GemmB w;
    w.data = reinterpret_cast<const float*>(packedW_.host()) + d * directionWFloats_;
    w.packed = true;
    GemmEpilogue bias;
    bias.bias = bias_ ? projectionBias_.data() + d * GH : nullptr;
    bias.biasColStride = 1;
    float* out = reinterpret_cast<float*>(scratch_.host()) + d * GH;
    packedGemm(pool, cpuFunctions(), dims_.seq * dims_.batch, GH, dims_.input, x, w, out, D * GH, bias);
  }

  Status readLengths(const std::vector<RuntimeTensor*>& inputs, int64_t* maxLen) {
    const int64_t S = dims_.seq;
    if (present(inputs, kSeqLens)) {
      const RuntimeTensor& t = *inputs[kSeqLens];
      for (size_t n = 0; n < lens_.size(); ++n) {
        const int64_t l = t.dtype == DataType::Int32 ? reinterpret_cast<const int32_t*>(t.host())[n]
                                                     : reinterpret_cast<const int64_t*>(t.host())[n];
        if (l < 0 || l > S)
          return Status::invalidArgument(node_.describe() + ": sequence_lens holds " + std::to_string(l) +
                                         "; expected 0.." + std::to_string(S));
        lens_[n] = l;
      }
    }
    *maxLen = lens_.empty() ? 0 : *std::max_element(lens_.begin(), lens_.end());
    return Status::ok();
  }

  // Wb + Rb into the projection's bias, except GRU's candidate Rb with linear_before_reset = 1,
  // which the reset gate multiplies inside the cell.
  void foldBiases() {
    if (!bias_) return;
    const int64_t GH = dims_.gateRows(), H = dims_.hidden;
    for (int64_t d = 0; d < dims_.directions; ++d) {
      const float* wb = bias_ + d * 2 * GH;
      for (int64_t k = 0; k < GH; ++k)
        projectionBias_[d * GH + k] = wb[k] + (candidateBiasApart() && k >= 2 * H ? 0.f : wb[GH + k]);
    }
  }
  bool candidateBiasApart() const { return dims_.cell == RecurrentCell::Gru && dims_.linearBeforeReset; }
  // GRU with linear_before_reset = 0 multiplies r * h_prev by the candidate's R: a second
  // product, after the reset gate of every unit is known.
  bool twoPhases() const { return dims_.cell == RecurrentCell::Gru && !dims_.linearBeforeReset; }

  float* hidden(int64_t buffer, int64_t d, int64_t n) const {
    const int64_t N = dims_.batch, H = dims_.hidden;
    const int64_t bufferFloats = (dims_.directions * N * H + 15) / 16 * 16;
    return reinterpret_cast<float*>(scratch_.host()) + hiddenAt_ + buffer * bufferFloats + (d * N + n) * H;
  }

  // Units [u0, u1) of slice s of a direction's hidden units, in whole panels.
  void sliceUnits(int64_t s, int64_t* u0, int64_t* u1) const {
    const int64_t panels = (dims_.hidden + nr_ - 1) / nr_;
    *u0 = panels * s / slices_ * nr_;
    *u1 = std::min(dims_.hidden, panels * (s + 1) / slices_ * nr_);
  }

  // One direction per thread with no barrier between steps, or each step's units split over the
  // threads with one barrier per step (per phase); the hidden state is double-buffered, so a
  // slice may write h_next while the others still read h_prev.
  void runSteps(ThreadPool* pool, int64_t maxLen) {
    const int64_t D = dims_.directions, phases = twoPhases() ? 2 : 1;
    if (slices_ == 1) {
      parallelFor(D > 1 ? pool : nullptr, D, [&](int64_t begin, int64_t end) {
        for (int64_t d = begin; d < end; ++d) runDirection(d, maxLen);
      });
      return;
    }
    for (int64_t k = 0; k < maxLen; ++k)
      for (int64_t phase = 0; phase < phases; ++phase)
        parallelFor(pool, D * slices_, [&](int64_t begin, int64_t end) {
          for (int64_t task = begin; task < end; ++task) {
            int64_t u0, u1;
            sliceUnits(task % slices_, &u0, &u1);
            step(task / slices_, k, u0, u1, phase);
          }
        });
  }

  void runDirection(int64_t d, int64_t maxLen) const {
    const int64_t phases = twoPhases() ? 2 : 1;
    for (int64_t k = 0; k < maxLen; ++k)
      for (int64_t phase = 0; phase < phases; ++phase) step(d, k, 0, dims_.hidden, phase);
  }

  // Step k of direction d for hidden units [u0, u1) of every batch entry. Phase 1 (GRU with
  // linear_before_reset = 0 only) is the candidate's product and the update.
  void step(int64_t d, int64_t k, int64_t u0, int64_t u1, int64_t phase) const {
    const RecurrentDims& dm = dims_;
    const int64_t N = dm.batch, H = dm.hidden, GH = dm.gateRows(), D = dm.directions, units = u1 - u0;
    float* scratch = reinterpret_cast<float*>(scratch_.host());
    float* gates = scratch + gatesAt_ + d * N * GH;
    float* resetHidden = scratch + resetHiddenAt_ + d * N * H;
    const float* hPrev = hidden(k % 2, d, 0);
    float* hNext = hidden((k + 1) % 2, d, 0);
    const bool candidatePhase = phase == 1, lastPhase = phase + 1 == (twoPhases() ? 2 : 1);
    const int64_t firstGate = candidatePhase ? 2 : 0, endGate = twoPhases() && !candidatePhase ? 2 : dm.gates;
    GemmA a;
    a.data = candidatePhase ? resetHidden : hPrev;
    a.rowStride = H;
    for (int64_t g = firstGate; g < endGate; ++g) {
      // Panel p of a gate's block starts p * H * nr floats in; u0 is a whole number of panels.
      const float* block = reinterpret_cast<const float*>(packedR_.host()) + (d * dm.gates + g) * gateBlockFloats_;
      if (gemv_ && N < math_.fn->gemmMr) {
        for (int64_t n = 0; n < N; ++n)
          gemv_(H, a.data + n * H, block + u0 * H, nr_, units, gates + n * GH + g * H + u0);
        continue;
      }
      GemmB r;
      r.data = block + u0 * H;
      r.packed = true;
      packedGemm(nullptr, *math_.fn, N, units, H, a, r, gates + g * H + u0, GH, noEpilogue_);
    }
    const bool backward = dm.reverseOnly || d == 1;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t len = lens_[n];
      RecurrentCellRows rows;
      rows.hPrev = hPrev + n * H + u0;
      rows.hNext = hNext + n * H + u0;
      if (k >= len) {  // this entry's sequence has ended: its state carries over
        if (lastPhase) std::memcpy(rows.hNext, rows.hPrev, sizeof(float) * units);
        continue;
      }
      const int64_t t = backward ? len - 1 - k : k;
      rows.gates = gates + n * GH + u0;
      rows.projection = scratch + dm.xRow(t, n) * D * GH + d * GH + u0;
      rows.cell = scratch + cellAt_ + (d * N + n) * H + u0;
      rows.resetHidden = resetHidden + n * H + u0;
      rows.peepholes = peepholes_ ? peepholes_ + d * 3 * H + u0 : nullptr;
      rows.candidateBias = bias_ && candidateBiasApart() ? bias_ + d * 2 * GH + GH + 2 * H + u0 : nullptr;
      switch (dm.cell) {
        case RecurrentCell::Rnn: math_.rnn(rows, units); break;
        case RecurrentCell::Lstm: math_.lstm(rows, units); break;
        case RecurrentCell::Gru:
          if (candidatePhase) math_.gruCandidate(rows, units);
          else math_.gruGates(rows, units, dm.linearBeforeReset);
          break;
      }
      if (lastPhase && y_) std::memcpy(y_ + dm.yOffset(t, d, n) + u0, rows.hNext, sizeof(float) * units);
    }
  }

  // Y_h and Y_c: the last state of each entry, zero for an empty sequence (as the reference).
  void storeFinalStates(const std::vector<RuntimeTensor*>& outputs, int64_t maxLen) const {
    const RecurrentDims& dm = dims_;
    const int64_t H = dm.hidden;
    const float* cells = reinterpret_cast<const float*>(scratch_.host()) + cellAt_;
    for (size_t o = 1; o < outputs.size() && o < 3; ++o) {
      if (!outputs[o]) continue;
      float* dst = reinterpret_cast<float*>(outputs[o]->host());
      for (int64_t d = 0; d < dm.directions; ++d)
        for (int64_t n = 0; n < dm.batch; ++n) {
          float* state = dst + dm.stateOffset(d, n);
          const float* src = o == 1 ? hidden(maxLen % 2, d, n) : cells + (d * dm.batch + n) * H;
          if (lens_[n] > 0) std::memcpy(state, src, sizeof(float) * H);
          else std::fill(state, state + H, 0.f);
        }
    }
  }

  const Node& node_;
  RecurrentDims dims_;
  RecurrentCellMath math_;
  int64_t nr_ = 0, slices_ = 1, directionWFloats_ = 0, gateBlockFloats_ = 0;
  RecurrentGemv gemv_ = nullptr;
  RuntimeTensor packedW_, packedR_, scratch_;
  std::unique_ptr<MemObj> packedWMem_, packedRMem_;
  const float *packedWSource_ = nullptr, *packedRSource_ = nullptr;
  // Float offsets in scratch_ of the per-step buffers; the projection comes first.
  int64_t gatesAt_ = 0, hiddenAt_ = 0, cellAt_ = 0, resetHiddenAt_ = 0;
  std::vector<int64_t> lens_;
  std::vector<float> projectionBias_;
  GemmEpilogue noEpilogue_;
  // Set by onExecute for the steps.
  const float *x_ = nullptr, *bias_ = nullptr, *peepholes_ = nullptr;
  float* y_ = nullptr;
};

}  // namespace

int64_t recurrentSlicesPerDirection(int threads, int64_t directions, int64_t batch, int64_t gates, int64_t hidden,
                                    int64_t nr) {
  const int64_t perDirection = threads / std::max<int64_t>(directions, 1);
  const int64_t panels = (hidden + nr - 1) / nr;
  if (perDirection < 2 || panels < 2 || batch * gates * hidden * hidden < kSplitStepMacs) return 1;
  return std::min(perDirection, panels);
}

RecurrentGemv recurrentGemv(const CpuFunctions& fn) {
#if defined(__x86_64__) || defined(_M_X64)
  const bool avx2 = std::strcmp(fn.isa, "avx2_fma") == 0 || std::strcmp(fn.isa, "avx512f") == 0;
  if (avx2 && (fn.gemmNr == 16 || fn.gemmNr == 32)) return f32_recurrent_gemv__avx2_fma;
#endif
  (void)fn;
  return nullptr;
}

std::unique_ptr<Execution> createRecurrentExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 3 || !isFloat32(inputs[kX]) || !isFloat32(inputs[kW]) || !isFloat32(inputs[kR]))
    return nullptr;
  // Weights that change between runs would need packing at every run: the reference takes them.
  if (!inputs[kW]->constData || !inputs[kR]->constData) return nullptr;
  for (size_t i : {kB, kInitialH, kInitialC, kP})
    if (present(inputs, i) && !isFloat32(inputs[i])) return nullptr;
  if (present(inputs, kSeqLens) && inputs[kSeqLens]->dtype != DataType::Int32 &&
      inputs[kSeqLens]->dtype != DataType::Int64)
    return nullptr;
  if (inputs[kX]->layout != Layout::NCHW) return nullptr;
  for (const RuntimeTensor* t : outputs)
    if (t && (t->dtype != DataType::Float32 || t->layout != Layout::NCHW)) return nullptr;
  RecurrentDims dims;
  if (!readDims(*op.node, *inputs[kX], *inputs[kR], &dims)) return nullptr;
  const int64_t GH = dims.gateRows(), D = dims.directions, H = dims.hidden;
  const Shape w{D, GH, dims.input}, r{D, GH, H};
  if (inputs[kW]->shape != w || inputs[kR]->shape != r) return nullptr;
  if (present(inputs, kB) && inputs[kB]->shape != Shape{D, 2 * GH}) return nullptr;
  if (present(inputs, kP) && inputs[kP]->shape != Shape{D, 3 * H}) return nullptr;
  return std::make_unique<RecurrentExecution>(backend, op);
}

}  // namespace osprey
