// Recurrent ops RNN, GRU and LSTM (ONNX opset 22): forward/reverse/bidirectional, every
// activation the spec lists (with activation_alpha/beta), clip, layout 0/1, optional B,
// sequence_lens, initial_h, initial_c, P (peepholes), and optional outputs Y, Y_h, Y_c.
// Float dtypes; float16/bfloat16 compute in float, float64 in double.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/compute_buffer.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class CellKind { Rnn, Gru, Lstm };

CellKind cellOf(OpType t) { return t == OpType::LSTM ? CellKind::Lstm : (t == OpType::GRU ? CellKind::Gru : CellKind::Rnn); }
int64_t gateCount(CellKind c) { return c == CellKind::Lstm ? 4 : (c == CellKind::Gru ? 3 : 1); }
size_t activationsPerDirection(CellKind c) { return c == CellKind::Lstm ? 3 : (c == CellKind::Gru ? 2 : 1); }

enum Input { kX, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kP };

struct Activation {
  enum class Fn { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };
  Fn fn = Fn::Tanh;
  double alpha = 0, beta = 0;

  template <class C>
  C operator()(C x) const {
    const C a = static_cast<C>(alpha), b = static_cast<C>(beta);
    switch (fn) {
      case Fn::Relu: return x > 0 ? x : C(0);
      case Fn::Tanh: return std::tanh(x);
      case Fn::Sigmoid: return C(1) / (C(1) + std::exp(-x));
      case Fn::Affine: return a * x + b;
      case Fn::LeakyRelu: return x >= 0 ? x : a * x;
      case Fn::ThresholdedRelu: return x > a ? x : C(0);
      case Fn::ScaledTanh: return a * std::tanh(b * x);
      case Fn::HardSigmoid: return std::max(C(0), std::min(C(1), a * x + b));
      case Fn::Elu: return x >= 0 ? x : a * (std::exp(x) - C(1));
      case Fn::Softsign: return x / (C(1) + std::abs(x));
      case Fn::Softplus: return std::log1p(std::exp(x));
    }
    return x;
  }
};

struct ActivationSpec {
  const char* name;
  Activation::Fn fn;
  int params;  // how many of alpha, beta it takes from activation_alpha/activation_beta
  double alpha, beta;  // defaults when the lists are shorter
};

constexpr ActivationSpec kActivations[] = {
    {"relu", Activation::Fn::Relu, 0, 0, 0},
    {"tanh", Activation::Fn::Tanh, 0, 0, 0},
    {"sigmoid", Activation::Fn::Sigmoid, 0, 0, 0},
    {"affine", Activation::Fn::Affine, 2, 1.0, 0.0},
    {"leakyrelu", Activation::Fn::LeakyRelu, 1, 0.01, 0},
    {"thresholdedrelu", Activation::Fn::ThresholdedRelu, 1, 1.0, 0},
    {"scaledtanh", Activation::Fn::ScaledTanh, 2, 1.0, 1.0},
    {"hardsigmoid", Activation::Fn::HardSigmoid, 2, 0.2, 0.5},
    {"elu", Activation::Fn::Elu, 1, 1.0, 0},
    {"softsign", Activation::Fn::Softsign, 0, 0, 0},
    {"softplus", Activation::Fn::Softplus, 0, 0, 0},
};

struct RnnSetup {
  CellKind cell = CellKind::Rnn;
  int64_t seq = 0, batch = 0, inputSize = 0, hidden = 0, dirs = 1;
  bool reverseOnly = false;  // direction == "reverse"
  bool batchFirst = false;   // layout == 1
  bool hasClip = false;
  double clip = 0;
  bool inputForget = false, linearBeforeReset = false;
  std::vector<Activation> acts;  // activationsPerDirection(cell) per direction
};

// Activations are matched case-insensitively (ONNX spells them "Sigmoid", runtimes vary);
// alpha/beta values are consumed in order by the activations that take them.
Status parseActivations(const Node& node, RnnSetup* s) {
  const size_t perDir = activationsPerDirection(s->cell);
  std::vector<std::string> names;
  if (const Attribute* a = node.attr("activations")) {
    names = a->strings;
  } else {
    if (s->cell == CellKind::Lstm) names = {"Sigmoid", "Tanh", "Tanh"};
    else if (s->cell == CellKind::Gru) names = {"Sigmoid", "Tanh"};
    else names = {"Tanh"};
  }
  if (names.size() == perDir && s->dirs == 2) {
    const std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != perDir * static_cast<size_t>(s->dirs))
    return Status::invalidModel("attribute activations has " + std::to_string(names.size()) + " entries; expected " +
                                std::to_string(perDir * s->dirs));
  const std::vector<float> alphas = node.getFloats("activation_alpha"), betas = node.getFloats("activation_beta");
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) {
    std::string lower;
    for (char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const ActivationSpec* spec = nullptr;
    for (const ActivationSpec& c : kActivations)
      if (lower == c.name) spec = &c;
    if (!spec) return Status::unsupported("activation '" + name + "' is not one RNN ops define");
    Activation act;
    act.fn = spec->fn;
    act.alpha = spec->alpha;
    act.beta = spec->beta;
    if (spec->params >= 1 && ai < alphas.size()) act.alpha = alphas[ai++];
    if (spec->params >= 2 && bi < betas.size()) act.beta = betas[bi++];
    s->acts.push_back(act);
  }
  return Status::ok();
}

Status expectShape(const TensorView& v, const Shape& want, const char* what) {
  if (v.shape != want)
    return Status::invalidModel(std::string(what) + " has shape " + shapeToString(v.shape) + "; expected " +
                                shapeToString(want));
  return Status::ok();
}

bool has(const TensorViews& in, int i) { return static_cast<int>(in.size()) > i && in[i].present; }

Status setupRnn(const Node& node, const TensorViews& in, RnnSetup* s) {
  s->cell = cellOf(node.type);
  const TensorView &x = in[kX], &w = in[kW], &r = in[kR];
  switch (x.dtype) {
    case DataType::Float32:
    case DataType::Float64:
    case DataType::Float16:
    case DataType::BFloat16:
      break;
    default:
      return Status::unsupported(dtypeError(x, "input X"));
  }
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, kX, kB));
  if (has(in, kInitialH) && in[kInitialH].dtype != x.dtype) return Status::invalidModel("initial_h dtype differs from X");
  if (s->cell == CellKind::Lstm) {
    if (has(in, kInitialC) && in[kInitialC].dtype != x.dtype) return Status::invalidModel("initial_c dtype differs from X");
    if (has(in, kP) && in[kP].dtype != x.dtype) return Status::invalidModel("P dtype differs from X");
  }
  const int64_t layout = node.getInt("layout", 0);
  if (layout != 0 && layout != 1) return Status::invalidModel("attribute layout is " + std::to_string(layout) + "; expected 0 or 1");
  s->batchFirst = layout == 1;
  const std::string direction = node.getString("direction", "forward");
  if (direction == "forward" || direction == "reverse") {
    s->dirs = 1;
    s->reverseOnly = direction == "reverse";
  } else if (direction == "bidirectional") {
    s->dirs = 2;
  } else {
    return Status::invalidModel("attribute direction is '" + direction + "'; expected forward, reverse or bidirectional");
  }
  if (x.rank() != 3) return Status::invalidModel("X has shape " + shapeToString(x.shape) + "; expected rank 3");
  s->seq = s->batchFirst ? x.shape[1] : x.shape[0];
  s->batch = s->batchFirst ? x.shape[0] : x.shape[1];
  s->inputSize = x.shape[2];
  if (r.rank() != 3) return Status::invalidModel("R has shape " + shapeToString(r.shape) + "; expected rank 3");
  s->hidden = node.getInt("hidden_size", r.shape[2]);
  if (s->hidden <= 0) return Status::invalidModel("attribute hidden_size is " + std::to_string(s->hidden) + "; expected > 0");
  // R is [directions, gates * hidden, hidden]: checked first, so the products below are of real
  // dimensions (a hidden_size of 2^63 / 3 would overflow them).
  if (s->hidden != r.shape[2])
    return Status::invalidModel("attribute hidden_size is " + std::to_string(s->hidden) + " but R has shape " +
                                shapeToString(r.shape) + "; expected its last dimension to equal it");
  const int64_t G = gateCount(s->cell), H = s->hidden;
  OSPREY_RETURN_IF_ERROR(expectShape(w, {s->dirs, G * H, s->inputSize}, "W"));
  OSPREY_RETURN_IF_ERROR(expectShape(r, {s->dirs, G * H, H}, "R"));
  if (has(in, kB)) OSPREY_RETURN_IF_ERROR(expectShape(in[kB], {s->dirs, 2 * G * H}, "B"));
  if (has(in, kSeqLens)) {
    const TensorView& sl = in[kSeqLens];
    if (sl.dtype != DataType::Int32 && sl.dtype != DataType::Int64)
      return Status::invalidModel(dtypeError(sl, "sequence_lens"));
    OSPREY_RETURN_IF_ERROR(expectShape(sl, {s->batch}, "sequence_lens"));
  }
  const Shape stateShape = s->batchFirst ? Shape{s->batch, s->dirs, H} : Shape{s->dirs, s->batch, H};
  if (has(in, kInitialH)) OSPREY_RETURN_IF_ERROR(expectShape(in[kInitialH], stateShape, "initial_h"));
  if (s->cell == CellKind::Lstm) {
    if (has(in, kInitialC)) OSPREY_RETURN_IF_ERROR(expectShape(in[kInitialC], stateShape, "initial_c"));
    if (has(in, kP)) OSPREY_RETURN_IF_ERROR(expectShape(in[kP], {s->dirs, 3 * H}, "P"));
    s->inputForget = node.getInt("input_forget", 0) != 0;
  }
  if (s->cell == CellKind::Gru) s->linearBeforeReset = node.getInt("linear_before_reset", 0) != 0;
  if (node.hasAttr("clip")) {
    s->hasClip = true;
    s->clip = node.getFloat("clip", 0.f);
    if (!(s->clip > 0)) return Status::invalidModel("attribute clip is " + std::to_string(s->clip) + "; expected > 0");
  }
  return parseActivations(node, s);
}

Status rnnShape(const Node& node, const TensorViews& in, TensorViews& out) {
  RnnSetup s;
  OSPREY_RETURN_IF_ERROR(setupRnn(node, in, &s));
  const Shape y = s.batchFirst ? Shape{s.batch, s.seq, s.dirs, s.hidden} : Shape{s.seq, s.dirs, s.batch, s.hidden};
  const Shape state = s.batchFirst ? Shape{s.batch, s.dirs, s.hidden} : Shape{s.dirs, s.batch, s.hidden};
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].dtype = in[kX].dtype;
    out[i].shape = i == 0 ? y : state;
  }
  return Status::ok();
}

// The cell of one direction. `xw` holds the input projection x . W^T + Wb of the current step
// (computed for all steps up front); step() adds the recurrent part and updates h and c.
template <class C>
struct CellStep {
  const RnnSetup& s;
  const C *r, *rb, *p;    // this direction's R, Rb and peepholes; rb/p null when absent
  const Activation* act;  // this direction's activations

  C clipped(C v) const {
    if (!s.hasClip) return v;
    const C c = static_cast<C>(s.clip);
    return std::min(c, std::max(-c, v));
  }

  // gates[k] = xw[k] + h . R[k] + Rb[k] for rows k in [first, first + count).
  void recurrent(const C* xw, const C* h, int64_t first, int64_t count, C* gates) const {
    const int64_t H = s.hidden;
    for (int64_t k = first; k < first + count; ++k) {
      C acc = xw[k] + (rb ? rb[k] : C(0));
      const C* rr = r + k * H;
      for (int64_t j = 0; j < H; ++j) acc += h[j] * rr[j];
      gates[k - first] = acc;
    }
  }

  void step(const C* xw, C* h, C* c, std::vector<C>& g, std::vector<C>& tmp) const {
    const int64_t H = s.hidden;
    if (s.cell == CellKind::Rnn) {
      recurrent(xw, h, 0, H, g.data());
      for (int64_t j = 0; j < H; ++j) h[j] = act[0](clipped(g[j]));
    } else if (s.cell == CellKind::Gru) {
      recurrent(xw, h, 0, 2 * H, g.data());  // z, r
      for (int64_t j = 0; j < 2 * H; ++j) g[j] = act[0](clipped(g[j]));
      const C* z = g.data();
      const C* rg = g.data() + H;
      const C* rh = r + 2 * H * H;
      for (int64_t j = 0; j < H; ++j) {
        const C rbh = rb ? rb[2 * H + j] : C(0);
        C rec = 0;
        if (s.linearBeforeReset) {
          for (int64_t m = 0; m < H; ++m) rec += h[m] * rh[j * H + m];
          rec = rg[j] * (rec + rbh);
        } else {
          for (int64_t m = 0; m < H; ++m) rec += rg[m] * h[m] * rh[j * H + m];
          rec += rbh;
        }
        const C cand = act[1](clipped(xw[2 * H + j] + rec));
        tmp[j] = (C(1) - z[j]) * cand + z[j] * h[j];
      }
      std::copy(tmp.begin(), tmp.begin() + H, h);
    } else {
      recurrent(xw, h, 0, 4 * H, g.data());  // i, o, f, c
      const C *gi = g.data(), *go = g.data() + H, *gf = g.data() + 2 * H, *gc = g.data() + 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        const C pi = p ? p[j] : C(0), po = p ? p[H + j] : C(0), pf = p ? p[2 * H + j] : C(0);
        const C i = act[0](clipped(gi[j] + pi * c[j]));
        const C f = s.inputForget ? C(1) - i : act[0](clipped(gf[j] + pf * c[j]));
        const C cNew = f * c[j] + i * act[1](clipped(gc[j]));
        const C o = act[0](clipped(go[j] + po * cNew));
        c[j] = cNew;
        h[j] = o * act[2](cNew);
      }
    }
  }
};

template <class C>
Status runRnn(const RnnSetup& s, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  const int64_t S = s.seq, N = s.batch, I = s.inputSize, H = s.hidden, D = s.dirs, G = gateCount(s.cell);
  const std::vector<C> x = toComputeBuffer<C>(in[kX]), w = toComputeBuffer<C>(in[kW]), r = toComputeBuffer<C>(in[kR]);
  const std::vector<C> b = has(in, kB) ? toComputeBuffer<C>(in[kB]) : std::vector<C>();
  const std::vector<C> h0 = has(in, kInitialH) ? toComputeBuffer<C>(in[kInitialH]) : std::vector<C>();
  const bool lstm = s.cell == CellKind::Lstm;
  const std::vector<C> c0 = lstm && has(in, kInitialC) ? toComputeBuffer<C>(in[kInitialC]) : std::vector<C>();
  const std::vector<C> p = lstm && has(in, kP) ? toComputeBuffer<C>(in[kP]) : std::vector<C>();
  std::vector<int64_t> lens(static_cast<size_t>(N), S);
  if (has(in, kSeqLens)) {
    OSPREY_RETURN_IF_ERROR(in[kSeqLens].readInts(&lens, "sequence_lens"));
    for (int64_t l : lens)
      if (l < 0 || l > S)
        return Status::invalidArgument("sequence_lens holds " + std::to_string(l) + "; expected 0.." + std::to_string(S));
  }
  auto xAt = [&](int64_t t, int64_t n) { return s.batchFirst ? (n * S + t) * I : (t * N + n) * I; };
  auto yAt = [&](int64_t t, int64_t d, int64_t n) { return s.batchFirst ? ((n * S + t) * D + d) * H : ((t * D + d) * N + n) * H; };
  auto stateAt = [&](int64_t d, int64_t n) { return s.batchFirst ? (n * D + d) * H : (d * N + n) * H; };

  // Input projections of every step, row (d, t, n): x[t, n] . W_d^T + Wb_d.
  const int64_t GH = G * H;
  std::vector<C> xw(static_cast<size_t>(D * S * N * GH));
  parallelFor(pool, D * S * N, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t d = row / (S * N), t = row / N % S, n = row % N;
      const C* xr = x.data() + xAt(t, n);
      const C* wd = w.data() + d * GH * I;
      const C* wb = b.empty() ? nullptr : b.data() + d * 2 * GH;
      C* dst = xw.data() + row * GH;
      for (int64_t k = 0; k < GH; ++k) {
        C acc = wb ? wb[k] : C(0);
        for (int64_t i = 0; i < I; ++i) acc += xr[i] * wd[k * I + i];
        dst[k] = acc;
      }
    }
  });

  std::vector<C> y(static_cast<size_t>(S * D * N * H), C(0)), yh(static_cast<size_t>(D * N * H), C(0));
  std::vector<C> yc(yh.size(), C(0));
  const size_t perDir = activationsPerDirection(s.cell);
  // Each (direction, batch entry) recurrence is independent.
  parallelFor(pool, D * N, [&](int64_t begin, int64_t end) {
    std::vector<C> gates(static_cast<size_t>(GH)), tmp(static_cast<size_t>(H)), h(tmp.size()), c(tmp.size());
    for (int64_t task = begin; task < end; ++task) {
      const int64_t d = task / N, n = task % N;
      const bool backward = s.reverseOnly || d == 1;
      const CellStep<C> cell{s, r.data() + d * GH * H, b.empty() ? nullptr : b.data() + d * 2 * GH + GH,
                          p.empty() ? nullptr : p.data() + d * 3 * H, s.acts.data() + d * perDir};
      const int64_t len = lens[static_cast<size_t>(n)];
      const int64_t st = stateAt(d, n);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0.empty() ? C(0) : h0[st + j];
        c[j] = c0.empty() ? C(0) : c0[st + j];
      }
      for (int64_t k = 0; k < len; ++k) {
        const int64_t t = backward ? len - 1 - k : k;
        cell.step(xw.data() + ((d * S + t) * N + n) * GH, h.data(), c.data(), gates, tmp);
        std::copy(h.begin(), h.end(), y.begin() + yAt(t, d, n));
      }
      // An empty sequence yields zero states, as ONNX Runtime does.
      if (len == 0) {
        std::fill(h.begin(), h.end(), C(0));
        std::fill(c.begin(), c.end(), C(0));
      }
      std::copy(h.begin(), h.end(), yh.begin() + st);
      std::copy(c.begin(), c.end(), yc.begin() + st);
    }
  });
  if (out.size() > 0) storeComputeBuffer(y.data(), out[0]);
  if (out.size() > 1) storeComputeBuffer(yh.data(), out[1]);
  if (out.size() > 2) storeComputeBuffer(yc.data(), out[2]);
  return Status::ok();
}

Status rnnReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  RnnSetup s;
  OSPREY_RETURN_IF_ERROR(setupRnn(node, in, &s));
  Status st;
  dispatchComputeFloat(in[kX].dtype, [&](auto tag) { st = runRnn<typename decltype(tag)::type>(s, in, out, pool); });
  return st;
}

}  // namespace

const OpDef kOpDef_RNN = {OpType::RNN, "RNN", 3, 6, 0, 2, rnnShape, rnnReference, nullptr, 0, false};
const OpDef kOpDef_GRU = {OpType::GRU, "GRU", 3, 6, 0, 2, rnnShape, rnnReference, nullptr, 0, false};
const OpDef kOpDef_LSTM = {OpType::LSTM, "LSTM", 3, 8, 0, 3, rnnShape, rnnReference, nullptr, 0, false};

}  // namespace osprey
