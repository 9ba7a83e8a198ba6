// Attention (opset 24) and RotaryEmbedding (opset 23).
//
// Attention: Q (B, Hq, Sq, D), K (B, Hkv, Skv, D), V (B, Hkv, Skv, Dv), or the 3-D forms
// (B, S, H*D) with q_num_heads / kv_num_heads. past_key / past_value (B, Hkv, P, .) are
// prepended to K / V (giving present_key / present_value, T = P + Skv keys). Query head h reads
// key/value head h / (Hq / Hkv) (grouped-query attention). For each query row the scores
// scale * q.k are soft-capped (softcap * tanh(s / softcap), before any mask so that -inf stays
// -inf), then the bias is added: attn_mask (bool: false -> -inf; float: added; broadcast to
// (B, Hq, Sq, T), a short last dimension padded with -inf), the causal mask (key j is visible
// to query i when j <= i + offset, offset = P with a past, nonpad_kv_seqlen[b] - Sq with only
// nonpad_kv_seqlen, else 0) and nonpad_kv_seqlen (keys j >= nonpad_kv_seqlen[b] hidden).
// Softmax runs in float (double for double inputs) with the maximum subtracted; a row whose
// keys are all masked gets zero probabilities, so its output row is zero rather than NaN.
// qk_matmul_output holds the scores after the soft-cap (modes 0 and 1), after the bias (2) or
// the probabilities (3): what the ONNX reference computes and its test data expect, although
// the spec's wording orders mode 1 (mask added) before mode 2 (soft-capped).
//
// RotaryEmbedding: X (B, H, S, D) or (B, S, H*D) with num_heads; the first
// rotary_embedding_dim (default D) values of each head are rotated pairwise, pairs being
// (k, k + rd/2) or, with interleaved, (2k, 2k + 1). cos/sin come from the caches indexed by
// position_ids (B, S), or are the caches themselves when they have shape (B, S, rd/2).
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// Element strides of a (batch, head, sequence, channel) view over a 3-D or 4-D tensor.
struct HeadLayout {
  int64_t batch = 0, heads = 0, seq = 0, dim = 0;
  int64_t sb = 0, sh = 0, ss = 0;  // channel stride is 1
  int64_t at(int64_t b, int64_t h, int64_t s) const { return b * sb + h * sh + s * ss; }
};

Status headLayout(const TensorView& t, int64_t heads, const char* what, HeadLayout* l) {
  if (t.rank() == 4) {
    *l = {t.shape[0], t.shape[1], t.shape[2], t.shape[3], 0, 0, 0};
    l->ss = l->dim;
    l->sh = l->seq * l->dim;
    l->sb = l->heads * l->sh;
    return Status::ok();
  }
  if (heads < 1)
    return Status::invalidModel(std::string(what) + " " + shapeToString(t.shape) +
                                " is 3-D, which needs the q_num_heads and kv_num_heads attributes");
  if (t.shape[2] % heads != 0)
    return Status::invalidModel(std::string(what) + " " + shapeToString(t.shape) + " has a hidden size not divisible by " +
                                std::to_string(heads) + " heads");
  *l = {t.shape[0], heads, t.shape[1], t.shape[2] / heads, 0, 0, 0};
  l->sh = l->dim;
  l->ss = heads * l->dim;
  l->sb = l->seq * l->ss;
  return Status::ok();
}

struct AttentionSetup {
  HeadLayout q, k, v;
  int64_t past = 0, total = 0;
  bool causal = false;
  float scale = 0, softcap = 0;
  int64_t mode = 0;
  Shape maskShape;  // empty: no mask
  std::vector<int64_t> maskStrides;
  int64_t maskLength = 0;
};

Status setupAttention(const Node& node, const TensorViews& in, AttentionSetup* s) {
  const TensorView &q = in[0], &k = in[1], &v = in[2];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(q, "Q"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 2));
  if ((q.rank() != 3 && q.rank() != 4) || k.rank() != q.rank() || v.rank() != q.rank())
    return Status::invalidModel("Q " + shapeToString(q.shape) + ", K " + shapeToString(k.shape) + " and V " +
                                shapeToString(v.shape) + " must all be 3-D or all 4-D");
  const int64_t qHeads = node.getInt("q_num_heads", 0), kvHeads = node.getInt("kv_num_heads", 0);
  OSPREY_RETURN_IF_ERROR(headLayout(q, qHeads, "Q", &s->q));
  OSPREY_RETURN_IF_ERROR(headLayout(k, kvHeads, "K", &s->k));
  OSPREY_RETURN_IF_ERROR(headLayout(v, kvHeads, "V", &s->v));
  if (q.rank() == 4 && ((qHeads && qHeads != s->q.heads) || (kvHeads && kvHeads != s->k.heads)))
    return Status::invalidModel("q_num_heads " + std::to_string(qHeads) + " / kv_num_heads " +
                                std::to_string(kvHeads) + " disagree with Q " + shapeToString(q.shape) + " and K " +
                                shapeToString(k.shape));
  if (s->k.batch != s->q.batch || s->v.batch != s->q.batch || s->k.dim != s->q.dim || s->v.heads != s->k.heads ||
      s->v.seq != s->k.seq || s->k.heads < 1 || s->q.heads % s->k.heads != 0)
    return Status::invalidModel("Q " + shapeToString(q.shape) + ", K " + shapeToString(k.shape) + " and V " +
                                shapeToString(v.shape) +
                                " disagree (batch, head size of Q and K, K/V heads and lengths, or query heads not a "
                                "multiple of key/value heads)");
  const bool hasPastKey = in.size() > 4 && in[4].present, hasPastValue = in.size() > 5 && in[5].present;
  if (hasPastKey != hasPastValue) return Status::invalidModel("past_key and past_value must be given together");
  if (hasPastKey) {
    OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 5));
    const TensorView &pk = in[4], &pv = in[5];
    const Shape wantK{s->q.batch, s->k.heads, pk.rank() == 4 ? pk.shape[2] : -1, s->k.dim};
    const Shape wantV{s->q.batch, s->k.heads, wantK[2], s->v.dim};
    if (pk.shape != wantK || pv.shape != wantV)
      return Status::invalidModel("past_key " + shapeToString(pk.shape) + " / past_value " + shapeToString(pv.shape) +
                                  " must be (batch, kv heads, past length, head size) matching K and V");
    s->past = pk.shape[2];
  }
  s->total = s->past + s->k.seq;
  const int64_t causal = node.getInt("is_causal", 0);
  if (causal != 0 && causal != 1) return Status::invalidModel("is_causal must be 0 or 1, got " + std::to_string(causal));
  s->causal = causal == 1;
  s->scale = node.hasAttr("scale") ? node.getFloat("scale", 1.f) : 1.f / std::sqrt(static_cast<float>(s->q.dim));
  s->softcap = node.getFloat("softcap", 0.f);
  if (!(s->softcap >= 0.f)) return Status::invalidModel("softcap must be >= 0, got " + std::to_string(s->softcap));
  s->mode = node.getInt("qk_matmul_output_mode", 0);
  if (s->mode < 0 || s->mode > 3)
    return Status::invalidModel("qk_matmul_output_mode " + std::to_string(s->mode) + " must be 0, 1, 2 or 3");
  const int64_t precision = node.getInt("softmax_precision", 1);
  if (precision != 1 && precision != 10 && precision != 11 && precision != 16)
    return Status::invalidModel("softmax_precision " + std::to_string(precision) + " is not a float dtype");
  if (in.size() > 3 && in[3].present) {
    const TensorView& m = in[3];
    if (m.dtype != DataType::Bool && m.dtype != q.dtype)
      return Status::invalidModel("attn_mask has dtype " + std::string(dataTypeName(m.dtype)) + "; expected bool or " +
                                  dataTypeName(q.dtype));
    if (m.rank() < 1 || m.rank() > 4 || m.shape.back() > s->total)
      return Status::invalidModel("attn_mask " + shapeToString(m.shape) + " must have rank 1 to 4 and at most " +
                                  std::to_string(s->total) + " keys");
    s->maskLength = m.shape.back();
    const Shape target{s->q.batch, s->q.heads, s->q.seq, s->maskLength};
    Shape b;
    if (!broadcastShapes(target, m.shape, &b).isOk() || b != target)
      return Status::invalidModel("attn_mask " + shapeToString(m.shape) + " does not broadcast to " +
                                  shapeToString(target) + " (batch, q heads, q length, keys)");
    s->maskShape = m.shape;
    s->maskStrides = broadcastStrides(m.shape, 4, target);
  }
  if (in.size() > 6 && in[6].present) {
    if (in[6].dtype != DataType::Int64 || in[6].shape != Shape{s->q.batch})
      return Status::invalidModel("nonpad_kv_seqlen must be int64 of shape [" + std::to_string(s->q.batch) + "], got " +
                                  dataTypeName(in[6].dtype) + " " + shapeToString(in[6].shape));
  }
  return Status::ok();
}

Status attentionShape(const Node& node, const TensorViews& in, TensorViews& out) {
  AttentionSetup s;
  OSPREY_RETURN_IF_ERROR(setupAttention(node, in, &s));
  const DataType t = in[0].dtype;
  out[0].dtype = t;
  if (in[0].rank() == 4)
    out[0].shape = {s.q.batch, s.q.heads, s.q.seq, s.v.dim};
  else
    out[0].shape = {s.q.batch, s.q.seq, s.q.heads * s.v.dim};
  if (out.size() > 1) out[1] = {t, {s.q.batch, s.k.heads, s.total, s.k.dim}};
  if (out.size() > 2) out[2] = {t, {s.q.batch, s.k.heads, s.total, s.v.dim}};
  if (out.size() > 3) out[3] = {t, {s.q.batch, s.q.heads, s.q.seq, s.total}};
  return Status::ok();
}

// Writes past ++ new along the sequence into a contiguous (B, Hkv, T, dim) buffer.
template <class T>
void concatCache(const T* past, int64_t pastLen, const T* cur, const HeadLayout& l, T* dst) {
  const int64_t total = pastLen + l.seq;
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t h = 0; h < l.heads; ++h) {
      T* d = dst + (b * l.heads + h) * total * l.dim;
      for (int64_t s = 0; s < pastLen; ++s)
        for (int64_t c = 0; c < l.dim; ++c) d[s * l.dim + c] = past[((b * l.heads + h) * pastLen + s) * l.dim + c];
      for (int64_t s = 0; s < l.seq; ++s)
        for (int64_t c = 0; c < l.dim; ++c) d[(pastLen + s) * l.dim + c] = cur[l.at(b, h, s) + c];
    }
}

template <class T>
Status attentionFor(const AttentionSetup& s, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const A negInf = -std::numeric_limits<A>::infinity();
  const HeadLayout &ql = s.q, &kl = s.k, &vl = s.v;
  const int64_t total = s.total, groups = ql.heads / kl.heads;
  // Keys and values with the past prepended, in the present outputs when those are requested.
  std::vector<T> kScratch, vScratch;
  T* keys = out.size() > 1 && out[1].present ? out[1].as<T>() : nullptr;
  T* values = out.size() > 2 && out[2].present ? out[2].as<T>() : nullptr;
  if (!keys) {
    kScratch.resize(static_cast<size_t>(kl.batch * kl.heads * total * kl.dim));
    keys = kScratch.data();
  }
  if (!values) {
    vScratch.resize(static_cast<size_t>(vl.batch * vl.heads * total * vl.dim));
    values = vScratch.data();
  }
  const bool hasPast = in.size() > 4 && in[4].present;
  concatCache(hasPast ? in[4].as<const T>() : nullptr, s.past, in[1].as<const T>(), kl, keys);
  concatCache(hasPast ? in[5].as<const T>() : nullptr, s.past, in[2].as<const T>(), vl, values);

  const TensorView* mask = in.size() > 3 && in[3].present ? &in[3] : nullptr;
  const int64_t* nonpad = in.size() > 6 && in[6].present ? in[6].as<const int64_t>() : nullptr;
  const T* q = in[0].as<const T>();
  T* y = out[0].as<T>();
  T* qkOut = out.size() > 3 && out[3].present ? out[3].as<T>() : nullptr;
  // Y is (B, Hq, Sq, Dv) or (B, Sq, Hq*Dv): the same head layout as Q with Dv channels.
  HeadLayout yl = ql;
  yl.dim = vl.dim;
  if (in[0].rank() == 4) {
    yl.ss = yl.dim, yl.sh = yl.seq * yl.dim, yl.sb = yl.heads * yl.sh;
  } else {
    yl.sh = yl.dim, yl.ss = yl.heads * yl.dim, yl.sb = yl.seq * yl.ss;
  }
  parallelFor(pool, ql.batch * ql.heads, [&](int64_t p0, int64_t p1) {
    std::vector<A> scores(static_cast<size_t>(total)), acc(static_cast<size_t>(vl.dim));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = p / ql.heads, h = p % ql.heads, kvh = h / groups;
      const T* kh = keys + (b * kl.heads + kvh) * total * kl.dim;
      const T* vh = values + (b * kl.heads + kvh) * total * vl.dim;
      int64_t visibleKeys = total, causalOffset = 0;
      if (nonpad) visibleKeys = std::min(total, nonpad[b]);
      if (hasPast)
        causalOffset = s.past;
      else if (nonpad)
        causalOffset = nonpad[b] - ql.seq;
      for (int64_t i = 0; i < ql.seq; ++i) {
        const T* qi = q + ql.at(b, h, i);
        A mx = negInf;
        for (int64_t j = 0; j < total; ++j) {
          A dot = 0;
          for (int64_t c = 0; c < ql.dim; ++c) dot += A(qi[c]) * A(kh[j * kl.dim + c]);
          A v = dot * A(s.scale);
          if (s.softcap > 0) v = A(s.softcap) * std::tanh(v / A(s.softcap));
          if (qkOut && s.mode <= 1) qkOut[(p * ql.seq + i) * total + j] = T(v);
          A bias = 0;
          if (mask) {
            if (j >= s.maskLength) {
              bias = negInf;
            } else {
              const int64_t at = b * s.maskStrides[0] + h * s.maskStrides[1] + i * s.maskStrides[2] +
                                 j * s.maskStrides[3];
              if (mask->dtype == DataType::Bool)
                bias = mask->as<const bool>()[at] ? A(0) : negInf;
              else
                bias = A(mask->as<const T>()[at]);
            }
          }
          if ((s.causal && j > i + causalOffset) || j >= visibleKeys) bias = negInf;
          v += bias;
          if (qkOut && s.mode == 2) qkOut[(p * ql.seq + i) * total + j] = T(v);
          scores[j] = v;
          if (v > mx) mx = v;
        }
        std::fill(acc.begin(), acc.end(), A(0));
        if (mx != negInf) {
          A sum = 0;
          for (int64_t j = 0; j < total; ++j) {
            scores[j] = std::exp(scores[j] - mx);
            sum += scores[j];
          }
          for (int64_t j = 0; j < total; ++j) {
            scores[j] /= sum;
            const T* vj = vh + j * vl.dim;
            for (int64_t c = 0; c < vl.dim; ++c) acc[c] += scores[j] * A(vj[c]);
          }
        } else {
          std::fill(scores.begin(), scores.end(), A(0));  // every key masked: no attention at all
        }
        if (qkOut && s.mode == 3)
          for (int64_t j = 0; j < total; ++j) qkOut[(p * ql.seq + i) * total + j] = T(scores[j]);
        T* yi = y + yl.at(b, h, i);
        for (int64_t c = 0; c < vl.dim; ++c) yi[c] = T(acc[c]);
      }
    }
  });
  return Status::ok();
}

Status attentionKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  AttentionSetup s;
  OSPREY_RETURN_IF_ERROR(setupAttention(node, in, &s));
  Status st;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) { st = attentionFor<typename decltype(tag)::type>(s, in, out, pool); });
  if (!ok) return Status::unsupported(dtypeError(in[0], "Q"));
  return st;
}

// ---- RotaryEmbedding ----

struct RotarySetup {
  HeadLayout x;
  int64_t rotaryDim = 0;
  bool interleaved = false, positions = false;
};

Status setupRotary(const Node& node, const TensorViews& in, RotarySetup* s) {
  const TensorView &x = in[0], &cosCache = in[1], &sinCache = in[2];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "X"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 2));
  if (x.rank() != 3 && x.rank() != 4)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must be (B, H, S, D) or (B, S, H*D)");
  if (x.rank() == 4) {
    // (B, H, S, D): the same addressing as Attention's 4-D form.
    OSPREY_RETURN_IF_ERROR(headLayout(x, 0, "X", &s->x));
  } else {
    const int64_t heads = node.getInt("num_heads", 0);
    if (heads < 1) return Status::invalidModel("X " + shapeToString(x.shape) + " is 3-D, which needs num_heads");
    OSPREY_RETURN_IF_ERROR(headLayout(x, heads, "X", &s->x));
  }
  const int64_t interleaved = node.getInt("interleaved", 0);
  if (interleaved != 0 && interleaved != 1)
    return Status::invalidModel("interleaved must be 0 or 1, got " + std::to_string(interleaved));
  s->interleaved = interleaved == 1;
  s->rotaryDim = node.getInt("rotary_embedding_dim", 0);
  if (s->rotaryDim == 0) s->rotaryDim = s->x.dim;
  if (s->rotaryDim < 0 || s->rotaryDim > s->x.dim || s->rotaryDim % 2 != 0)
    return Status::invalidModel("rotary_embedding_dim " + std::to_string(s->rotaryDim) +
                                " must be even and at most the head size " + std::to_string(s->x.dim));
  const int64_t half = s->rotaryDim / 2;
  s->positions = in.size() > 3 && in[3].present;
  if (s->positions) {
    const TensorView& pos = in[3];
    if (pos.dtype != DataType::Int64 || pos.shape != Shape{s->x.batch, s->x.seq})
      return Status::invalidModel("position_ids must be int64 of shape [" + std::to_string(s->x.batch) + ", " +
                                  std::to_string(s->x.seq) + "], got " + dataTypeName(pos.dtype) + " " +
                                  shapeToString(pos.shape));
    if (cosCache.rank() != 2 || cosCache.shape[1] != half || sinCache.shape != cosCache.shape)
      return Status::invalidModel("cos_cache " + shapeToString(cosCache.shape) + " and sin_cache " +
                                  shapeToString(sinCache.shape) + " must be (max positions, " + std::to_string(half) +
                                  ") with position_ids");
  } else {
    const Shape want{s->x.batch, s->x.seq, half};
    if (cosCache.shape != want || sinCache.shape != want)
      return Status::invalidModel("cos_cache " + shapeToString(cosCache.shape) + " and sin_cache " +
                                  shapeToString(sinCache.shape) + " must be " + shapeToString(want) +
                                  " without position_ids");
  }
  return Status::ok();
}

Status rotaryShape(const Node& node, const TensorViews& in, TensorViews& out) {
  RotarySetup s;
  OSPREY_RETURN_IF_ERROR(setupRotary(node, in, &s));
  return sameAsFirstInput(node, in, out);
}

template <class T>
Status rotaryFor(const RotarySetup& s, const TensorViews& in, TensorViews& out) {
  using C = ComputeType<T>;
  const HeadLayout& l = s.x;
  const int64_t half = s.rotaryDim / 2;
  const T* x = in[0].as<const T>();
  const T* cosCache = in[1].as<const T>();
  const T* sinCache = in[2].as<const T>();
  const int64_t maxPos = s.positions ? in[1].shape[0] : 0;
  T* y = out[0].as<T>();
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t t = 0; t < l.seq; ++t) {
      int64_t row = b * l.seq + t;
      if (s.positions) {
        row = in[3].as<const int64_t>()[b * l.seq + t];
        if (row < 0 || row >= maxPos)
          return Status::invalidArgument("position_ids value " + std::to_string(row) + " is outside the caches' " +
                                         std::to_string(maxPos) + " positions");
      }
      const T* cr = cosCache + row * half;
      const T* sr = sinCache + row * half;
      for (int64_t h = 0; h < l.heads; ++h) {
        const T* xi = x + l.at(b, h, t);
        T* yi = y + l.at(b, h, t);
        for (int64_t k = 0; k < half; ++k) {
          const int64_t i1 = s.interleaved ? 2 * k : k, i2 = s.interleaved ? 2 * k + 1 : k + half;
          const C c = C(cr[k]), sn = C(sr[k]), x1 = C(xi[i1]), x2 = C(xi[i2]);
          yi[i1] = T(c * x1 - sn * x2);
          yi[i2] = T(sn * x1 + c * x2);
        }
        for (int64_t k = s.rotaryDim; k < l.dim; ++k) yi[k] = xi[k];
      }
    }
  return Status::ok();
}

Status rotaryKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  RotarySetup s;
  OSPREY_RETURN_IF_ERROR(setupRotary(node, in, &s));
  Status st;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) { st = rotaryFor<typename decltype(tag)::type>(s, in, out); });
  if (!ok) return Status::unsupported(dtypeError(in[0], "X"));
  return st;
}

}  // namespace

const OpDef kOpDef_Attention = {
    OpType::Attention, "Attention", 3, 7, 1, 4, attentionShape, attentionKernel, nullptr, 0, false};
const OpDef kOpDef_RotaryEmbedding = {
    OpType::RotaryEmbedding, "RotaryEmbedding", 3, 4, 1, 1, rotaryShape, rotaryKernel, nullptr, 0, false};

}  // namespace osprey
