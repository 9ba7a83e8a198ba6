// Assorted newer ONNX ops: BitCast (opset 26), Det, SwiGLU (opset 28), TensorScatter (opset 24
// KV-cache update) and CausalConvWithState (opset 27 stateful causal depthwise conv1d).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/compute_buffer.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// ---- BitCast: the same bits read as another dtype of the same width ----

// Width in bits of one element as ONNX stores it (sub-byte types are packed there).
int bitWidth(DataType t) {
  switch (t) {
    case DataType::Int4:
    case DataType::UInt4:
    case DataType::Float4E2M1: return 4;
    case DataType::Int2:
    case DataType::UInt2: return 2;
    default: return static_cast<int>(8 * dataTypeSize(t));
  }
}

bool isSignedSubByte(DataType t) { return t == DataType::Int4 || t == DataType::Int2; }

Status bitcastTarget(const Node& node, const TensorView& x, DataType* to) {
  if (!node.hasAttr("to")) return Status::invalidModel("attribute 'to' is missing");
  const int64_t v = node.getInt("to", 0);
  if (v <= 0 || v > 64 || !isKnownDataType(static_cast<int32_t>(v)))
    return Status::invalidModel("attribute 'to' is " + std::to_string(v) + ", which is not a dtype");
  *to = static_cast<DataType>(v);
  if (*to == DataType::String || x.dtype == DataType::String)
    return Status::unsupported("BitCast from or to string is not defined");
  if (bitWidth(*to) != bitWidth(x.dtype) || bitWidth(*to) == 0)
    return Status::invalidModel(std::string("BitCast from ") + dataTypeName(x.dtype) + " to " + dataTypeName(*to) +
                                " changes the element width");
  return Status::ok();
}

Status bitcastShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(bitcastTarget(node, in[0], &out[0].dtype));
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status bitcastReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  DataType to;
  OSPREY_RETURN_IF_ERROR(bitcastTarget(node, in[0], &to));
  const int64_t n = in[0].elements();
  const int bits = bitWidth(to);
  const auto* src = static_cast<const uint8_t*>(in[0].data);
  auto* dst = static_cast<uint8_t*>(out[0].data);
  if (bits < 8) {
    // Osprey keeps one sub-byte element per byte: signed integers sign-extended, the rest as
    // their bit pattern, so the pattern is the low bits.
    const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1u);
    for (int64_t i = 0; i < n; ++i) {
      uint8_t pattern = src[i] & mask;
      if (isSignedSubByte(to) && (pattern >> (bits - 1)) != 0) pattern |= static_cast<uint8_t>(~mask);
      dst[i] = pattern;
    }
  } else if (to == DataType::Bool) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != 0;  // a C++ bool may only hold 0 or 1
  } else {
    std::memcpy(dst, src, in[0].bytes());
  }
  return Status::ok();
}

// ---- Det: determinant of the trailing square matrices, by LU with partial pivoting ----

Status detShape(const Node&, const TensorViews& in, TensorViews& out) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "input X"));
  if (x.rank() < 2 || x.shape[x.rank() - 1] != x.shape[x.rank() - 2])
    return Status::invalidModel("X has shape " + shapeToString(x.shape) + "; expected [..., M, M]");
  out[0].dtype = x.dtype;
  out[0].shape.assign(x.shape.begin(), x.shape.end() - 2);
  return Status::ok();
}

Status detReference(const Node&, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const TensorView& x = in[0];
  const int64_t m = x.shape[x.rank() - 1];
  const int64_t count = out[0].elements();
  const std::vector<double> all = toComputeBuffer<double>(x);
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < count; ++b) {
    std::copy(all.begin() + b * m * m, all.begin() + (b + 1) * m * m, a.begin());
    double det = 1.0;
    for (int64_t col = 0; col < m && det != 0.0; ++col) {
      int64_t pivot = col;
      for (int64_t r = col + 1; r < m; ++r)
        if (std::abs(a[r * m + col]) > std::abs(a[pivot * m + col])) pivot = r;
      if (a[pivot * m + col] == 0.0) {
        det = 0.0;
        break;
      }
      if (pivot != col) {
        for (int64_t c = 0; c < m; ++c) std::swap(a[pivot * m + c], a[col * m + c]);
        det = -det;
      }
      const double p = a[col * m + col];
      det *= p;
      for (int64_t r = col + 1; r < m; ++r) {
        const double f = a[r * m + col] / p;
        if (f == 0.0) continue;
        for (int64_t c = col; c < m; ++c) a[r * m + c] -= f * a[col * m + c];
      }
    }
    storeFromDouble(out[0].dtype, out[0].data, b, det);
  }
  return Status::ok();
}

// ---- SwiGLU: Y = A * sigmoid(alpha * A) * B, A and B of one shape ----

Status swigluShape(const Node&, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "input A"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 1));
  if (in[0].shape != in[1].shape)
    return Status::invalidModel("A " + shapeToString(in[0].shape) + " and B " + shapeToString(in[1].shape) +
                                " must have the same shape (SwiGLU does not broadcast)");
  out[0].dtype = in[0].dtype;
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status swigluReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  const float alpha = node.getFloat("alpha", 1.f);
  const int64_t n = out[0].elements();
  dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* a = in[0].as<const T>();
    const T* b = in[1].as<const T>();
    T* y = out[0].as<T>();
    for (int64_t i = 0; i < n; ++i) {
      const C av = static_cast<C>(a[i]);
      y[i] = static_cast<T>(av / (C(1) + std::exp(-static_cast<C>(alpha) * av)) * static_cast<C>(b[i]));
    }
  });
  return Status::ok();
}

// ---- TensorScatter: writes `update` into a copy of `past_cache` along the sequence axis ----

struct ScatterSetup {
  int64_t axis = 0, prefix = 1, maxSeq = 0, seq = 0, inner = 1, batch = 0;
  bool circular = false;
};

Status setupTensorScatter(const Node& node, const TensorViews& in, ScatterSetup* s) {
  const TensorView &past = in[0], &update = in[1];
  if (update.dtype != past.dtype) return Status::invalidModel("update dtype differs from past_cache");
  if (past.rank() < 2 || update.rank() != past.rank())
    return Status::invalidModel("past_cache " + shapeToString(past.shape) + " and update " + shapeToString(update.shape) +
                                " must have one rank >= 2");
  OSPREY_RETURN_IF_ERROR(normalizeAxis(node.getInt("axis", -2), past.rank(), &s->axis));
  if (s->axis == 0) return Status::invalidModel("attribute axis must not be the batch dimension 0");
  const std::string mode = node.getString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return Status::invalidModel("attribute mode is '" + mode + "'; expected 'linear' or 'circular'");
  s->circular = mode == "circular";
  for (int64_t d = 0; d < past.rank(); ++d)
    if (d != s->axis && past.shape[d] != update.shape[d])
      return Status::invalidModel("update " + shapeToString(update.shape) + " must match past_cache " +
                                  shapeToString(past.shape) + " outside axis " + std::to_string(s->axis));
  s->maxSeq = past.shape[s->axis];
  s->seq = update.shape[s->axis];
  if (s->seq > s->maxSeq)
    return Status::invalidModel("update " + shapeToString(update.shape) + " is longer than past_cache " +
                                shapeToString(past.shape) + " along axis " + std::to_string(s->axis));
  s->batch = past.shape[0];
  for (int64_t d = 0; d < s->axis; ++d) s->prefix *= past.shape[d];
  for (int64_t d = s->axis + 1; d < past.rank(); ++d) s->inner *= past.shape[d];
  if (in.size() > 2 && in[2].present) {
    const TensorView& wi = in[2];
    if (wi.dtype != DataType::Int64 && wi.dtype != DataType::Int32) return Status::invalidModel(dtypeError(wi, "write_indices"));
    if (wi.shape != Shape{s->batch})
      return Status::invalidModel("write_indices has shape " + shapeToString(wi.shape) + "; expected [" +
                                  std::to_string(s->batch) + "]");
  }
  return Status::ok();
}

Status tensorScatterShape(const Node& node, const TensorViews& in, TensorViews& out) {
  ScatterSetup s;
  OSPREY_RETURN_IF_ERROR(setupTensorScatter(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = in[0].shape;
  return Status::ok();
}

Status tensorScatterReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  ScatterSetup s;
  OSPREY_RETURN_IF_ERROR(setupTensorScatter(node, in, &s));
  std::vector<int64_t> writeAt(static_cast<size_t>(s.batch), 0);
  if (in.size() > 2 && in[2].present) OSPREY_RETURN_IF_ERROR(in[2].readInts(&writeAt, "write_indices"));
  for (int64_t w : writeAt) {
    if (w < 0 || (!s.circular && w > s.maxSeq - s.seq))  // not w + seq: INT64_MAX would wrap
      return Status::invalidArgument("write index " + std::to_string(w) + " with " + std::to_string(s.seq) +
                                     " updates does not fit a cache of " + std::to_string(s.maxSeq));
  }
  const size_t elem = dataTypeSize(in[0].dtype), row = static_cast<size_t>(s.inner) * elem;
  std::memcpy(out[0].data, in[0].data, in[0].bytes());
  auto* dst = static_cast<uint8_t*>(out[0].data);
  const auto* src = static_cast<const uint8_t*>(in[1].data);
  const int64_t perBatch = s.prefix / std::max<int64_t>(s.batch, 1);
  for (int64_t p = 0; p < s.prefix; ++p) {
    const int64_t start = writeAt[static_cast<size_t>(p / perBatch)];
    for (int64_t t = 0; t < s.seq; ++t) {
      const int64_t pos = s.circular ? (start % s.maxSeq + t) % s.maxSeq : start + t;
      std::memcpy(dst + (p * s.maxSeq + pos) * row, src + (p * s.seq + t) * row, row);
    }
  }
  return Status::ok();
}

// ---- CausalConvWithState: y = act(bias + depthwise conv over [past_state | input]) ----

struct CausalConvSetup {
  int64_t batch = 0, channels = 0, length = 0, kernel = 0;
  bool silu = false;
};

Status setupCausalConv(const Node& node, const TensorViews& in, CausalConvSetup* s) {
  const TensorView &x = in[0], &w = in[1];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "input"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(in, 0, 3));
  if (x.rank() != 3) return Status::invalidModel("input has shape " + shapeToString(x.shape) + "; expected [batch, channels, length]");
  s->batch = x.shape[0];
  s->channels = x.shape[1];
  s->length = x.shape[2];
  if (w.rank() != 3 || w.shape[0] != s->channels || w.shape[1] != 1 || w.shape[2] < 1)
    return Status::invalidModel("weight has shape " + shapeToString(w.shape) + "; expected [" + std::to_string(s->channels) + ", 1, k]");
  s->kernel = w.shape[2];
  if (in.size() > 2 && in[2].present && in[2].shape != Shape{s->channels})
    return Status::invalidModel("bias has shape " + shapeToString(in[2].shape) + "; expected [" + std::to_string(s->channels) + "]");
  const Shape state{s->batch, s->channels, s->kernel - 1};
  if (in.size() > 3 && in[3].present && in[3].shape != state)
    return Status::invalidModel("past_state has shape " + shapeToString(in[3].shape) + "; expected " + shapeToString(state));
  const std::string act = node.getString("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    return Status::invalidModel("attribute activation is '" + act + "'; expected 'none', 'silu' or 'swish'");
  s->silu = act != "none";
  return Status::ok();
}

Status causalConvShape(const Node& node, const TensorViews& in, TensorViews& out) {
  CausalConvSetup s;
  OSPREY_RETURN_IF_ERROR(setupCausalConv(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = in[0].shape;
  if (out.size() > 1) {
    out[1].dtype = in[0].dtype;
    out[1].shape = {s.batch, s.channels, s.kernel - 1};
  }
  return Status::ok();
}

template <class C>
void runCausalConv(const CausalConvSetup& s, const TensorViews& in, TensorViews& out) {
  const int64_t L = s.length, K = s.kernel, P = K - 1;
  const std::vector<C> x = toComputeBuffer<C>(in[0]), w = toComputeBuffer<C>(in[1]);
  const std::vector<C> bias = in.size() > 2 && in[2].present ? toComputeBuffer<C>(in[2]) : std::vector<C>();
  const std::vector<C> past = in.size() > 3 && in[3].present ? toComputeBuffer<C>(in[3]) : std::vector<C>();
  std::vector<C> y(x.size()), present(static_cast<size_t>(s.batch * s.channels * P)), seq(static_cast<size_t>(P + L));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t c = 0; c < s.channels; ++c) {
      const int64_t row = b * s.channels + c;
      for (int64_t j = 0; j < P; ++j) seq[j] = past.empty() ? C(0) : past[row * P + j];
      for (int64_t t = 0; t < L; ++t) seq[P + t] = x[row * L + t];
      const C* wc = w.data() + c * K;
      for (int64_t t = 0; t < L; ++t) {
        C acc = bias.empty() ? C(0) : bias[c];
        for (int64_t k = 0; k < K; ++k) acc += wc[k] * seq[t + k];
        y[row * L + t] = s.silu ? acc / (C(1) + std::exp(-acc)) : acc;
      }
      for (int64_t j = 0; j < P; ++j) present[row * P + j] = seq[L + j];
    }
  }
  storeComputeBuffer(y.data(), out[0]);
  if (out.size() > 1) storeComputeBuffer(present.data(), out[1]);
}

Status causalConvReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  CausalConvSetup s;
  OSPREY_RETURN_IF_ERROR(setupCausalConv(node, in, &s));
  dispatchComputeFloat(in[0].dtype, [&](auto tag) { runCausalConv<typename decltype(tag)::type>(s, in, out); });
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_BitCast = {OpType::BitCast, "BitCast", 1, 1, 1, 1, bitcastShape, bitcastReference, nullptr, 0, false};
const OpDef kOpDef_Det = {OpType::Det, "Det", 1, 1, 1, 1, detShape, detReference, nullptr, 0, false};
const OpDef kOpDef_SwiGLU = {OpType::SwiGLU, "SwiGLU", 2, 2, 1, 1, swigluShape, swigluReference, nullptr, 0, false};
const OpDef kOpDef_TensorScatter = {OpType::TensorScatter, "TensorScatter", 2, 3, 1, 1, tensorScatterShape,
                                    tensorScatterReference, nullptr, 0, false};
const OpDef kOpDef_CausalConvWithState = {OpType::CausalConvWithState, "CausalConvWithState", 2, 4, 1, 2,
                                          causalConvShape, causalConvReference, nullptr, 0, false};

}  // namespace osprey
