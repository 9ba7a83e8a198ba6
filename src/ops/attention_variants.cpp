// Attention variants beyond Attention itself: LinearAttention (opset 27: recurrent linear,
// gated, delta and gated-delta state updates over packed [B, T, H*D] inputs, with GQA) and
// FlexAttention (ai.onnx.preview 1 / opset 26: softmax attention whose scores and
// probabilities pass through optional score_mod / prob_mod subgraphs). Both compute in float
// (double for float64 inputs) and store in the input dtype.
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "ops/compute_buffer.h"
#include "ops/op_util.h"
#include "osprey/interpreter.h"

namespace osprey {

namespace {

// ---- LinearAttention ----

enum class UpdateRule { Linear, Gated, Delta, GatedDelta };
enum LinearInput { kQuery, kKey, kValue, kPastState, kDecay, kBeta };

struct LinearSetup {
  int64_t batch = 0, steps = 0, qHeads = 0, kvHeads = 0, dk = 0, dv = 0;
  bool decayPerKey = false;  // decay holds one gate per key dimension, else one per head
  bool betaPerHead = false;  // beta holds one value per KV head, else one shared value
  double scale = 0;
  UpdateRule rule = UpdateRule::GatedDelta;
  DataType stateDtype = DataType::Undefined;
};

bool present(const TensorViews& in, int i) { return static_cast<int>(in.size()) > i && in[i].present; }

Status setupLinear(const Node& node, const TensorViews& in, LinearSetup* s) {
  const TensorView &q = in[kQuery], &k = in[kKey], &v = in[kValue];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(q, "query"));
  for (int i : {kKey, kValue, kDecay, kBeta})
    if (present(in, i) && in[i].dtype != q.dtype)
      return Status::invalidModel("input " + std::to_string(i) + " has dtype " + dataTypeName(in[i].dtype) +
                                  " but query has " + dataTypeName(q.dtype));
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3)
    return Status::invalidModel("query, key and value must be 3-D [B, T, H*D]");
  s->batch = q.shape[0];
  s->steps = q.shape[1];
  for (const TensorView* t : {&k, &v})
    if (t->shape[0] != s->batch || t->shape[1] != s->steps)
      return Status::invalidModel("key/value " + shapeToString(t->shape) + " do not match query " + shapeToString(q.shape) +
                                  " in batch and sequence length");
  s->qHeads = node.getInt("q_num_heads", 0);
  s->kvHeads = node.getInt("kv_num_heads", 0);
  if (s->qHeads <= 0 || s->kvHeads <= 0 || s->qHeads % s->kvHeads != 0)
    return Status::invalidModel("attributes q_num_heads " + std::to_string(s->qHeads) + " and kv_num_heads " +
                                std::to_string(s->kvHeads) + " must be positive, q_num_heads a multiple of kv_num_heads");
  if (q.shape[2] % s->qHeads != 0 || v.shape[2] % s->kvHeads != 0)
    return Status::invalidModel("query " + shapeToString(q.shape) + " / value " + shapeToString(v.shape) +
                                " last dimension is not a multiple of the head count");
  s->dk = q.shape[2] / s->qHeads;
  s->dv = v.shape[2] / s->kvHeads;
  if (k.shape[2] != s->kvHeads * s->dk)
    return Status::invalidModel("key " + shapeToString(k.shape) + " must have kv_num_heads * d_k = " +
                                std::to_string(s->kvHeads * s->dk) + " features");
  const std::string rule = node.getString("update_rule", "gated_delta");
  if (rule == "linear") s->rule = UpdateRule::Linear;
  else if (rule == "gated") s->rule = UpdateRule::Gated;
  else if (rule == "delta") s->rule = UpdateRule::Delta;
  else if (rule == "gated_delta") s->rule = UpdateRule::GatedDelta;
  else return Status::invalidModel("attribute update_rule is '" + rule + "'; expected linear, gated, delta or gated_delta");
  const bool gated = s->rule == UpdateRule::Gated || s->rule == UpdateRule::GatedDelta;
  const bool delta = s->rule == UpdateRule::Delta || s->rule == UpdateRule::GatedDelta;
  if (gated) {
    if (!present(in, kDecay)) return Status::invalidModel("update_rule '" + rule + "' needs the decay input");
    const Shape& d = in[kDecay].shape;
    const bool ok = d.size() == 3 && d[0] == s->batch && d[1] == s->steps && (d[2] == s->kvHeads * s->dk || d[2] == s->kvHeads);
    if (!ok) return Status::invalidModel("decay has shape " + shapeToString(d) + "; expected [B, T, kv_num_heads * d_k] or [B, T, kv_num_heads]");
    s->decayPerKey = d[2] == s->kvHeads * s->dk && s->dk != 1;
  }
  if (delta) {
    if (!present(in, kBeta)) return Status::invalidModel("update_rule '" + rule + "' needs the beta input");
    const Shape& b = in[kBeta].shape;
    const bool ok = b.size() == 3 && b[0] == s->batch && b[1] == s->steps && (b[2] == s->kvHeads || b[2] == 1);
    if (!ok) return Status::invalidModel("beta has shape " + shapeToString(b) + "; expected [B, T, kv_num_heads] or [B, T, 1]");
    s->betaPerHead = b[2] == s->kvHeads && s->kvHeads != 1;
  }
  s->stateDtype = q.dtype;
  if (present(in, kPastState)) {
    const TensorView& p = in[kPastState];
    OSPREY_RETURN_IF_ERROR(requireFloatDtype(p, "past_state"));
    const Shape want{s->batch, s->kvHeads, s->dk, s->dv};
    if (p.shape != want)
      return Status::invalidModel("past_state has shape " + shapeToString(p.shape) + "; expected " + shapeToString(want));
    s->stateDtype = p.dtype;
  }
  s->scale = node.hasAttr("scale") ? node.getFloat("scale", 0.f) : 1.0 / std::sqrt(static_cast<double>(s->dk));
  return Status::ok();
}

Status linearAttentionShape(const Node& node, const TensorViews& in, TensorViews& out) {
  LinearSetup s;
  OSPREY_RETURN_IF_ERROR(setupLinear(node, in, &s));
  out[0].dtype = in[kQuery].dtype;
  out[0].shape = {s.batch, s.steps, s.qHeads * s.dv};
  if (out.size() > 1) {
    out[1].dtype = s.stateDtype;
    out[1].shape = {s.batch, s.kvHeads, s.dk, s.dv};
  }
  return Status::ok();
}

template <class C>
void runLinearAttention(const LinearSetup& s, const TensorViews& in, TensorViews& out) {
  const int64_t B = s.batch, T = s.steps, Hq = s.qHeads, Hkv = s.kvHeads, dk = s.dk, dv = s.dv;
  const int64_t group = Hq / Hkv;
  const std::vector<C> q = toComputeBuffer<C>(in[kQuery]), k = toComputeBuffer<C>(in[kKey]), v = toComputeBuffer<C>(in[kValue]);
  const bool gated = s.rule == UpdateRule::Gated || s.rule == UpdateRule::GatedDelta;
  const bool delta = s.rule == UpdateRule::Delta || s.rule == UpdateRule::GatedDelta;
  const std::vector<C> decay = gated ? toComputeBuffer<C>(in[kDecay]) : std::vector<C>();
  const std::vector<C> beta = delta ? toComputeBuffer<C>(in[kBeta]) : std::vector<C>();
  std::vector<C> state = present(in, kPastState) ? toComputeBuffer<C>(in[kPastState])
                                                 : std::vector<C>(static_cast<size_t>(B * Hkv * dk * dv), C(0));
  std::vector<C> y(static_cast<size_t>(B * T * Hq * dv)), diff(static_cast<size_t>(dv));
  const int64_t decayWidth = gated ? in[kDecay].shape[2] : 0, betaWidth = delta ? in[kBeta].shape[2] : 0;
  const C scale = static_cast<C>(s.scale);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hkv; ++h) {
      C* S = state.data() + (b * Hkv + h) * dk * dv;  // rows: key dims, columns: value dims
      for (int64_t t = 0; t < T; ++t) {
        const int64_t bt = b * T + t;
        const C* kt = k.data() + bt * Hkv * dk + h * dk;
        const C* vt = v.data() + bt * Hkv * dv + h * dv;
        if (gated) {
          const C* g = decay.data() + bt * decayWidth;
          for (int64_t i = 0; i < dk; ++i) {
            const C f = std::exp(s.decayPerKey ? g[h * dk + i] : g[h]);
            for (int64_t j = 0; j < dv; ++j) S[i * dv + j] *= f;
          }
        }
        if (delta) {
          const C bv = beta[bt * betaWidth + (s.betaPerHead ? h : 0)];
          for (int64_t j = 0; j < dv; ++j) {
            C retrieved = 0;
            for (int64_t i = 0; i < dk; ++i) retrieved += S[i * dv + j] * kt[i];
            diff[j] = bv * (vt[j] - retrieved);
          }
        } else {
          std::copy(vt, vt + dv, diff.begin());
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += kt[i] * diff[j];
        for (int64_t r = 0; r < group; ++r) {
          const int64_t hq = h * group + r;
          const C* qt = q.data() + bt * Hq * dk + hq * dk;
          C* yt = y.data() + bt * Hq * dv + hq * dv;
          for (int64_t j = 0; j < dv; ++j) yt[j] = 0;
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) yt[j] += qt[i] * S[i * dv + j];
          for (int64_t j = 0; j < dv; ++j) yt[j] *= scale;
        }
      }
    }
  }
  storeComputeBuffer(y.data(), out[0]);
  if (out.size() > 1) storeComputeBuffer(state.data(), out[1]);
}

Status linearAttentionReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  LinearSetup s;
  OSPREY_RETURN_IF_ERROR(setupLinear(node, in, &s));
  dispatchComputeFloat(in[kQuery].dtype, [&](auto tag) { runLinearAttention<typename decltype(tag)::type>(s, in, out); });
  return Status::ok();
}

// ---- FlexAttention ----

struct FlexSetup {
  int64_t batch = 0, qHeads = 0, kvHeads = 0, qLen = 0, kvLen = 0, e = 0, ev = 0;
  double scale = 0;
};

Status setupFlex(const Node& node, const TensorViews& in, FlexSetup* s) {
  const TensorView &q = in[0], &k = in[1], &v = in[2];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(q, "Q"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 2));
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return Status::invalidModel("Q, K and V must be 4-D [batch, heads, sequence, head_size]");
  s->batch = q.shape[0];
  s->qHeads = q.shape[1];
  s->qLen = q.shape[2];
  s->e = q.shape[3];
  s->kvHeads = k.shape[1];
  s->kvLen = k.shape[2];
  s->ev = v.shape[3];
  if (k.shape[0] != s->batch || v.shape[0] != s->batch || k.shape[3] != s->e || v.shape[1] != s->kvHeads ||
      v.shape[2] != s->kvLen)
    return Status::invalidModel("Q " + shapeToString(q.shape) + ", K " + shapeToString(k.shape) + " and V " +
                                shapeToString(v.shape) + " do not fit together");
  if (s->kvHeads <= 0 || s->qHeads % s->kvHeads != 0)
    return Status::invalidModel("the query head count " + std::to_string(s->qHeads) + " is not a multiple of the key/value head count " +
                                std::to_string(s->kvHeads));
  for (const char* name : {"score_mod", "prob_mod"}) {
    const Attribute* a = node.attr(name);
    if (a && !a->graph) return Status::invalidModel(std::string("attribute ") + name + " must be a graph");
    if (a && (a->graph->inputs.size() != 1 || a->graph->outputs.size() != 1))
      return Status::unsupported(std::string("attribute ") + name + " must be a graph of one input and one output");
  }
  s->scale = node.hasAttr("scale") ? node.getFloat("scale", 0.f) : 1.0 / std::sqrt(static_cast<double>(s->e));
  return Status::ok();
}

Status flexAttentionShape(const Node& node, const TensorViews& in, TensorViews& out) {
  FlexSetup s;
  OSPREY_RETURN_IF_ERROR(setupFlex(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = {s.batch, s.qHeads, s.qLen, s.ev};
  return Status::ok();
}

// Runs a one-input, one-output subgraph over `values` (shape `shape`) in a nested session,
// replacing them with its output, which must keep the shape.
template <class C>
Status applyModifier(const Node& node, const char* name, const Shape& shape, std::vector<C>& values) {
  const Attribute* a = node.attr(name);
  if (!a) return Status::ok();
  auto model = std::make_shared<Model>();
  model->graph = *a->graph;
  std::shared_ptr<Interpreter> interp;
  OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(model, &interp).withContext(name));
  std::unique_ptr<Session> session;
  OSPREY_RETURN_IF_ERROR(interp->createSession(ScheduleConfig(), BackendConfig(), &session).withContext(name));
  std::map<std::string, Tensor> feeds;
  feeds[interp->inputs()[0].name] = Tensor::wrap(dataTypeOf<C>(), shape, values.data());
  std::vector<Tensor> results;
  OSPREY_RETURN_IF_ERROR(session->run(feeds, &results).withContext(name));
  if (results.size() != 1 || results[0].shape() != shape)
    return Status::invalidModel(std::string(name) + " must return one tensor of shape " + shapeToString(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<C>(loadAsDouble(results[0].dtype(), results[0].data(), static_cast<int64_t>(i)));
  return Status::ok();
}

template <class C>
Status runFlexAttention(const Node& node, const FlexSetup& s, const TensorViews& in, TensorViews& out) {
  const int64_t B = s.batch, Hq = s.qHeads, L = s.qLen, S = s.kvLen, E = s.e, Ev = s.ev;
  const int64_t group = Hq / s.kvHeads;
  const std::vector<C> q = toComputeBuffer<C>(in[0]), k = toComputeBuffer<C>(in[1]), v = toComputeBuffer<C>(in[2]);
  const Shape scoreShape{B, Hq, L, S};
  std::vector<C> p(static_cast<size_t>(B * Hq * L * S));
  const C scale = static_cast<C>(s.scale);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = b * s.kvHeads + h / group;
      for (int64_t i = 0; i < L; ++i) {
        const C* qi = q.data() + ((b * Hq + h) * L + i) * E;
        C* row = p.data() + ((b * Hq + h) * L + i) * S;
        for (int64_t j = 0; j < S; ++j) {
          const C* kj = k.data() + (kvh * S + j) * E;
          C acc = 0;
          for (int64_t e = 0; e < E; ++e) acc += qi[e] * kj[e];
          row[j] = acc * scale;
        }
      }
    }
  OSPREY_RETURN_IF_ERROR(applyModifier(node, "score_mod", scoreShape, p));
  for (int64_t r = 0; r < B * Hq * L; ++r) {
    C* row = p.data() + r * S;
    C mx = -std::numeric_limits<C>::infinity();
    for (int64_t j = 0; j < S; ++j) mx = std::max(mx, row[j]);
    C sum = 0;
    for (int64_t j = 0; j < S; ++j) sum += (row[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < S; ++j) row[j] /= sum;
  }
  OSPREY_RETURN_IF_ERROR(applyModifier(node, "prob_mod", scoreShape, p));
  std::vector<C> y(static_cast<size_t>(B * Hq * L * Ev), C(0));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = b * s.kvHeads + h / group;
      for (int64_t i = 0; i < L; ++i) {
        const C* row = p.data() + ((b * Hq + h) * L + i) * S;
        C* yi = y.data() + ((b * Hq + h) * L + i) * Ev;
        for (int64_t j = 0; j < S; ++j) {
          const C* vj = v.data() + (kvh * S + j) * Ev;
          for (int64_t e = 0; e < Ev; ++e) yi[e] += row[j] * vj[e];
        }
      }
    }
  storeComputeBuffer(y.data(), out[0]);
  return Status::ok();
}

Status flexAttentionReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  FlexSetup s;
  OSPREY_RETURN_IF_ERROR(setupFlex(node, in, &s));
  Status st;
  dispatchComputeFloat(in[0].dtype, [&](auto tag) { st = runFlexAttention<typename decltype(tag)::type>(node, s, in, out); });
  return st;
}

}  // namespace

const OpDef kOpDef_LinearAttention = {OpType::LinearAttention, "LinearAttention", 3, 6, 1, 2, linearAttentionShape,
                                      linearAttentionReference, nullptr, 0, false};
const OpDef kOpDef_FlexAttention = {OpType::FlexAttention, "FlexAttention", 3, 3, 1, 1, flexAttentionShape,
                                    flexAttentionReference, nullptr, 0, false};

}  // namespace osprey
