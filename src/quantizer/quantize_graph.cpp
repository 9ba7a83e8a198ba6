// The graph rewrite of static and dynamic quantization (quantizer.h).
//
// Static: a first walk decides which ops run on bytes. Conv, MatMul and Gemm with constant float
// weights always do (the anchors); Add, Mul, Concat, the average pools and the byte-level data
// movement (MaxPool, Reshape, Transpose ...) do when every input they take from the graph is
// already bytes. A second walk emits the new graph: QuantizeLinear where a float tensor enters
// the byte region, DequantizeLinear (under the float tensor's own name) where a byte tensor is
// read in float or is a model output. A MatMul or Gemm that no byte op reads writes float
// directly (MatMulIntegerToFloat, QGemm without y_scale).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "converter/passes/passes.h"
#include "ops/activation.h"
#include "ops/op_def.h"
#include "quantizer/graph_edit.h"
#include "quantizer/quantizer.h"

namespace osprey {

namespace {

// Absorbed: a Relu (or Clip from 0) after a byte op that only it reads; the op's output takes the
// Relu's range, whose zero point 0 makes the requantisation's clamp the Relu.
enum class Role { Float, Conv, MatMul, Gemm, Binary, GlobalAveragePool, AveragePool, Concat, PassThrough, Absorbed };

struct ByteParams {
  float scale = 1.f;
  uint8_t zeroPoint = 0;
};

bool isPassThrough(OpType t) {
  switch (t) {
    case OpType::MaxPool:
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Transpose:
    case OpType::Squeeze:
    case OpType::Unsqueeze: return true;
    default: return false;
  }
}

// Per-channel symmetric int8: channel c's elements at w[c * cStride + i * iStride], i < perChannel.
struct QuantizedWeights {
  std::vector<int8_t> values;  // same layout as the source
  std::vector<float> scales;   // one per channel (or one)
};

QuantizedWeights quantizeWeights(const float* w, int64_t channels, int64_t perChannel, int64_t cStride, int64_t iStride,
                                 bool byChannel) {
  QuantizedWeights q;
  q.values.resize(static_cast<size_t>(channels * perChannel));
  q.scales.assign(static_cast<size_t>(byChannel ? channels : 1), 0.f);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < perChannel; ++i) {
      float& s = q.scales[byChannel ? c : 0];
      s = std::max(s, std::fabs(w[c * cStride + i * iStride]));
    }
  for (float& s : q.scales) s = s > 0.f && std::isfinite(s) ? s / 127.f : 1.f;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < perChannel; ++i) {
      const int64_t at = c * cStride + i * iStride;
      const float v = std::nearbyint(w[at] / q.scales[byChannel ? c : 0]);
      q.values[at] = static_cast<int8_t>(std::min(127.f, std::max(-127.f, std::isnan(v) ? 0.f : v)));
    }
  return q;
}

class Rewriter {
 public:
  Rewriter(const Graph& in, const std::map<std::string, TensorRange>& ranges, const QuantizeOptions& options,
           QuantizeReport* report)
      : in_(in), ranges_(ranges), options_(options), report_(report) {}

  Status run(Graph* out) {
    g_ = in_;
    g_.nodes.clear();
    readers_.assign(in_.tensors.size(), {});
    for (size_t k = 0; k < in_.nodes.size(); ++k)
      for (int t : in_.nodes[k].inputs)
        if (t >= 0) readers_[t].push_back(static_cast<int>(k));
    isOutput_.assign(in_.tensors.size(), false);
    for (int t : in_.outputs) isOutput_[t] = true;
    options_.dynamic ? decideDynamic() : decideStatic();
    byteTensor_.assign(in_.tensors.size(), -1);
    params_.assign(in_.tensors.size(), ByteParams());
    for (size_t k = 0; k < in_.nodes.size(); ++k) OSPREY_RETURN_IF_ERROR(emit(static_cast<int>(k)));
    *out = std::move(g_);
    return Status::ok();
  }

 private:
  // ---- deciding ----

  bool excluded(const Node& n) const { return quantizer::excluded(options_.exclude, n); }
  bool calibrated(int t) const { return t >= 0 && ranges_.count(in_.tensors[t].name) > 0; }
  const TensorInfo* floatConstant(int t) const { return quantizer::floatConstant(in_, t); }
  bool noActivation(const Node& n) const { return !n.hasAttr("activation"); }
  // Relu and Clip from 0 become the requantisation's clamp: the output's range starts at 0, so
  // its zero point is 0, the bottom of uint8.
  bool clampActivation(const Node& n) const {
    FusedActivation fa;
    if (!FusedActivation::fromNode(n, &fa).isOk()) return false;
    return fa.kind == FusedActivation::Kind::None || fa.kind == FusedActivation::Kind::Relu ||
           (fa.kind == FusedActivation::Kind::Clip && fa.a == 0.f);
  }

  Role anchorRole(const Node& n) const {
    if (n.outputs.size() != 1 || !calibrated(n.outputs[0]) || n.inputs.empty() || !calibrated(n.inputs[0]))
      return Role::Float;
    if (n.type == OpType::Conv) {
      const TensorInfo* w = n.inputs.size() > 1 ? floatConstant(n.inputs[1]) : nullptr;
      const bool residual = n.inputs.size() > 3 && n.inputs[3] >= 0;
      const bool bias = n.inputs.size() > 2 && n.inputs[2] >= 0;
      if (!w || w->shape.size() < 3 || residual || (bias && !floatConstant(n.inputs[2])) || !clampActivation(n))
        return Role::Float;
      return Role::Conv;
    }
    if (n.type == OpType::MatMul) {
      const TensorInfo* b = n.inputs.size() > 1 ? floatConstant(n.inputs[1]) : nullptr;
      if (!b || b->shape.size() != 2 || n.inputs.size() > 2 || !noActivation(n)) return Role::Float;
      return Role::MatMul;
    }
    if (n.type == OpType::Gemm) {
      const TensorInfo* b = n.inputs.size() > 1 ? floatConstant(n.inputs[1]) : nullptr;
      const bool hasC = n.inputs.size() > 2 && n.inputs[2] >= 0;
      const TensorInfo* c = hasC ? floatConstant(n.inputs[2]) : nullptr;
      if (!b || b->shape.size() != 2 || n.getInt("transA", 0) != 0 || !noActivation(n)) return Role::Float;
      const int64_t N = b->shape[n.getInt("transB", 0) ? 0 : 1];
      if (hasC && (!c || shapeElements(c->shape) != N || c->shape.back() != N)) return Role::Float;
      return Role::Gemm;
    }
    return Role::Float;
  }

  bool absorbable(const Node& n, const std::vector<bool>& bytes) const {
    FusedActivation fa;
    const bool clamp = n.type == OpType::Relu ||
                       (n.type == OpType::Clip && FusedActivation::fromOp(n, &fa) && fa.kind == FusedActivation::Kind::Clip &&
                        fa.a == 0.f);
    if (!clamp || n.outputs.size() != 1 || !calibrated(n.outputs[0])) return false;
    const int x = n.inputs[0];
    if (x < 0 || !bytes[x] || isOutput_[x] || readers_[x].size() != 1) return false;
    const Role producer = role_[producer_[x]];
    return producer != Role::PassThrough && producer != Role::Absorbed && producer != Role::Float;
  }

  void decideStatic() {
    role_.assign(in_.nodes.size(), Role::Float);
    producer_.assign(in_.tensors.size(), 0);
    for (size_t k = 0; k < in_.nodes.size(); ++k)
      for (int t : in_.nodes[k].outputs) producer_[t] = static_cast<int>(k);
    std::vector<bool> bytes(in_.tensors.size(), false);
    auto allBytes = [&](const Node& n, size_t first, size_t count) {
      for (size_t i = first; i < first + count && i < n.inputs.size(); ++i)
        if (n.inputs[i] < 0 || !bytes[n.inputs[i]]) return false;
      return true;
    };
    for (size_t k = 0; k < in_.nodes.size(); ++k) {
      const Node& n = in_.nodes[k];
      if (excluded(n)) continue;
      Role r = anchorRole(n);
      const bool outputCalibrated = n.outputs.size() == 1 && calibrated(n.outputs[0]);
      if (r == Role::Float && outputCalibrated) {
        if ((n.type == OpType::Add || n.type == OpType::Mul) && n.inputs.size() == 2 && allBytes(n, 0, 2))
          r = Role::Binary;
        else if (n.type == OpType::GlobalAveragePool && allBytes(n, 0, 1))
          r = Role::GlobalAveragePool;
        else if (n.type == OpType::AveragePool && allBytes(n, 0, 1) && n.inputs.size() == 1 &&
                 in_.tensors[n.inputs[0]].shape.size() == 4)
          r = Role::AveragePool;
        else if (n.type == OpType::Concat && !n.inputs.empty() && allBytes(n, 0, n.inputs.size()))
          r = Role::Concat;
        else if (isPassThrough(n.type) && allBytes(n, 0, 1) && (n.type != OpType::MaxPool || n.outputs.size() == 1))
          r = Role::PassThrough;
      }
      if (r == Role::Float && absorbable(n, bytes)) {
        r = Role::Absorbed;
        rangeOf_[n.inputs[0]] = n.outputs[0];
      }
      role_[k] = r;
      if (r != Role::Float)
        for (int t : n.outputs) bytes[t] = true;
    }
    // A MatMul or Gemm that no byte op reads writes float itself.
    floatOut_.assign(in_.nodes.size(), false);
    for (size_t k = 0; k < in_.nodes.size(); ++k) {
      if (role_[k] != Role::MatMul && role_[k] != Role::Gemm) continue;
      bool byteReader = false;
      for (int r : readers_[in_.nodes[k].outputs[0]]) byteReader |= role_[r] != Role::Float;
      floatOut_[k] = !byteReader;
    }
  }

  void decideDynamic() {
    role_.assign(in_.nodes.size(), Role::Float);
    floatOut_.assign(in_.nodes.size(), true);
    for (size_t k = 0; k < in_.nodes.size(); ++k) {
      const Node& n = in_.nodes[k];
      if (excluded(n) || n.outputs.size() != 1) continue;
      const TensorInfo* b = n.inputs.size() > 1 ? floatConstant(n.inputs[1]) : nullptr;
      if (!b || b->shape.size() != 2 || !noActivation(n)) continue;
      if (n.type == OpType::MatMul && (n.inputs.size() < 3 || floatConstant(n.inputs[2]))) role_[k] = Role::MatMul;
      if (n.type == OpType::Gemm && n.getInt("transA", 0) == 0 && n.getFloat("alpha", 1.f) == 1.f &&
          n.getFloat("beta", 1.f) == 1.f) {
        const bool hasC = n.inputs.size() > 2 && n.inputs[2] >= 0;
        const int64_t N = b->shape[n.getInt("transB", 0) ? 0 : 1];
        if (!hasC || (floatConstant(n.inputs[2]) && shapeElements(in_.tensors[n.inputs[2]].shape) == N))
          role_[k] = Role::Gemm;
      }
    }
  }

  // ---- emitting ----

  int addConstant(const std::string& name, DataType dtype, const Shape& shape, const void* data, size_t bytes) {
    return quantizer::addConstant(g_, name, dtype, shape, data, bytes);
  }
  int floatScalar(const std::string& name, float v) { return addConstant(name, DataType::Float32, {}, &v, 4); }
  int byteScalar(const std::string& name, uint8_t v) { return addConstant(name, DataType::UInt8, {}, &v, 1); }
  int addTensor(const std::string& name, DataType dtype, const Shape& shape, bool hasShape) {
    TensorInfo t;
    t.name = name;
    t.dtype = dtype;
    t.shape = shape;
    t.hasShape = hasShape;
    return g_.addTensor(t);
  }

  int scaleOf(int t) {
    auto it = scaleConstant_.find(t);
    if (it != scaleConstant_.end()) return it->second;
    return scaleConstant_[t] = floatScalar(in_.tensors[t].name + "_scale", params_[t].scale);
  }
  int zeroOf(int t) {
    auto it = zeroConstant_.find(t);
    if (it != zeroConstant_.end()) return it->second;
    return zeroConstant_[t] = byteScalar(in_.tensors[t].name + "_zero_point", params_[t].zeroPoint);
  }

  // The byte tensor standing for float tensor t with its own (calibrated) parameters.
  int newByteTensor(int t) {
    const TensorInfo& f = in_.tensors[t];
    byteTensor_[t] = addTensor(f.name + "_quantized", DataType::UInt8, f.shape, f.hasShape);
    auto alias = rangeOf_.find(t);
    const std::string& source = in_.tensors[alias != rangeOf_.end() ? alias->second : t].name;
    auto it = ranges_.find(source);
    if (it != ranges_.end()) activationParameters(it->second, &params_[t].scale, &params_[t].zeroPoint);
    if (report_) report_->mapping.push_back({g_.tensors[byteTensor_[t]].name, source, params_[t].scale,
                                             params_[t].zeroPoint});
    return byteTensor_[t];
  }

  // Float tensor t as bytes, quantizing it where it is first needed.
  int bytesOf(int t) {
    if (byteTensor_[t] >= 0) return byteTensor_[t];
    const int q = newByteTensor(t);
    Node n;
    n.type = OpType::QuantizeLinear;
    n.name = in_.tensors[t].name + "_quantize";
    n.inputs = {t, scaleOf(t), zeroOf(t)};
    n.outputs = {q};
    g_.nodes.push_back(std::move(n));
    return q;
  }

  void dequantizeIfRead(int t) {
    bool floatReader = isOutput_[t];
    for (int r : readers_[t]) floatReader |= role_[r] == Role::Float;
    if (!floatReader) return;
    Node n;
    n.type = OpType::DequantizeLinear;
    n.name = in_.tensors[t].name + "_dequantize";
    n.inputs = {byteTensor_[t], scaleOf(t), zeroOf(t)};
    n.outputs = {t};
    g_.nodes.push_back(std::move(n));
  }

  // Weights of `channels` output channels, int8 constant in the source's shape, and their scales
  // (one or per channel) and zero points (int8 zeros), as inputs of the integer op.
  struct WeightInputs {
    int values = -1, scales = -1, zeros = -1;
    std::vector<float> scaleValues;
  };
  WeightInputs weightInputs(const TensorInfo& w, int64_t channels, int64_t perChannel, int64_t cStride, int64_t iStride,
                            const Shape& shape) {
    const QuantizedWeights q = quantizeWeights(reinterpret_cast<const float*>(w.data.bytes.get()), channels, perChannel,
                                               cStride, iStride, options_.perChannel);
    WeightInputs in;
    in.scaleValues = q.scales;
    in.values = addConstant(w.name + "_quantized", DataType::Int8, shape, q.values.data(), q.values.size());
    const Shape scaleShape = q.scales.size() == 1 ? Shape{} : Shape{static_cast<int64_t>(q.scales.size())};
    in.scales = addConstant(w.name + "_scale", DataType::Float32, scaleShape, q.scales.data(), q.scales.size() * 4);
    const std::vector<int8_t> zeros(q.scales.size(), 0);
    in.zeros = addConstant(w.name + "_zero_point", DataType::Int8, scaleShape, zeros.data(), zeros.size());
    return in;
  }

  // round(bias[c] * factor / (inputScale * weightScale[c])) as an int32 constant.
  int quantizedBias(const TensorInfo& b, int64_t count, float inputScale, const std::vector<float>& weightScales,
                    float factor) {
    const float* v = reinterpret_cast<const float*>(b.data.bytes.get());
    std::vector<int32_t> q(static_cast<size_t>(count));
    for (int64_t c = 0; c < count; ++c) {
      const double s = static_cast<double>(inputScale) * weightScales[weightScales.size() == 1 ? 0 : c];
      const double r = std::nearbyint(static_cast<double>(v[c]) * factor / s);
      q[c] = static_cast<int32_t>(std::min(2147483647.0, std::max(-2147483648.0, std::isnan(r) ? 0.0 : r)));
    }
    return addConstant(b.name + "_quantized", DataType::Int32, {count}, q.data(), q.size() * 4);
  }

  Status emit(int k) {
    const Node& n = in_.nodes[k];
    switch (role_[k]) {
      case Role::Float:
        g_.nodes.push_back(n);
        if (report_) ++report_->floatOps;
        return Status::ok();
      case Role::Conv: emitConv(n); break;
      case Role::MatMul:
      case Role::Gemm: options_.dynamic ? emitDynamic(n) : emitMatMul(n, role_[k] == Role::Gemm, floatOut_[k]); break;
      case Role::Binary: emitBinary(n); break;
      case Role::GlobalAveragePool:
      case Role::AveragePool: emitPool(n, role_[k] == Role::GlobalAveragePool); break;
      case Role::Concat: emitConcat(n); break;
      case Role::PassThrough: emitPassThrough(n); break;
      case Role::Absorbed:
        byteTensor_[n.outputs[0]] = byteTensor_[n.inputs[0]];
        params_[n.outputs[0]] = params_[n.inputs[0]];
        scaleConstant_[n.outputs[0]] = scaleOf(n.inputs[0]);
        zeroConstant_[n.outputs[0]] = zeroOf(n.inputs[0]);
        break;
    }
    if (report_) {
      ++report_->quantizedOps;
      ++report_->quantizedByType[opTypeName(n.type)];
    }
    if (!(options_.dynamic || floatOut_[k]))
      for (int t : n.outputs) dequantizeIfRead(t);
    return Status::ok();
  }

  void emitConv(const Node& n) {
    const int x = n.inputs[0], y = n.outputs[0];
    const int xq = bytesOf(x);
    const TensorInfo& w = in_.tensors[n.inputs[1]];
    const int64_t channels = w.shape[0], perChannel = shapeElements(w.shape) / channels;
    const WeightInputs wq = weightInputs(w, channels, perChannel, perChannel, 1, w.shape);
    Node q;
    q.type = OpType::QLinearConv;
    q.name = n.name;
    for (const Attribute& a : n.attrs)
      if (a.name != "activation" && a.name != "activation_params") q.attrs.push_back(a);
    const int yq = newByteTensor(y);
    q.inputs = {xq, scaleOf(x), zeroOf(x), wq.values, wq.scales, wq.zeros, scaleOf(y), zeroOf(y)};
    if (n.inputs.size() > 2 && n.inputs[2] >= 0)
      q.inputs.push_back(quantizedBias(in_.tensors[n.inputs[2]], channels, params_[x].scale, wq.scaleValues, 1.f));
    q.outputs = {yq};
    g_.nodes.push_back(std::move(q));
  }

  void emitMatMul(const Node& n, bool gemm, bool floatOut) {
    const int a = n.inputs[0], y = n.outputs[0];
    const int aq = bytesOf(a);
    const TensorInfo& b = in_.tensors[n.inputs[1]];
    const bool transB = gemm && n.getInt("transB", 0) != 0;
    const int64_t K = b.shape[transB ? 1 : 0], N = b.shape[transB ? 0 : 1];
    // Column n's K weights: at b[k * N + n] (stride N) or, transposed, at b[n * K + k].
    const WeightInputs wq = weightInputs(b, N, K, transB ? K : 1, transB ? 1 : N, b.shape);
    Node q;
    q.name = n.name;
    if (!gemm) {
      q.type = floatOut ? OpType::MatMulIntegerToFloat : OpType::QLinearMatMul;
      q.inputs = floatOut ? std::vector<int>{aq, wq.values, scaleOf(a), wq.scales, zeroOf(a), wq.zeros}
                          : std::vector<int>{aq, scaleOf(a), zeroOf(a), wq.values, wq.scales, wq.zeros};
      if (!floatOut) {
        const int yq = newByteTensor(y);
        q.inputs.push_back(scaleOf(y));
        q.inputs.push_back(zeroOf(y));
        q.outputs = {yq};
      }
    } else {
      q.type = OpType::QGemm;
      q.setFloat("alpha", n.getFloat("alpha", 1.f));
      q.setInt("transB", transB ? 1 : 0);
      const float alpha = n.getFloat("alpha", 1.f), beta = n.getFloat("beta", 1.f);
      const int c = n.inputs.size() > 2 ? n.inputs[2] : -1;
      q.inputs = {aq, scaleOf(a), zeroOf(a), wq.values, wq.scales, wq.zeros,
                  c >= 0 ? quantizedBias(in_.tensors[c], N, params_[a].scale * alpha, wq.scaleValues, beta) : -1};
      if (floatOut && c < 0) q.inputs.pop_back();
      if (!floatOut) {
        const int yq = newByteTensor(y);
        q.inputs.push_back(scaleOf(y));
        q.inputs.push_back(zeroOf(y));
        q.outputs = {yq};
      }
    }
    if (floatOut) q.outputs = {y};
    g_.nodes.push_back(std::move(q));
  }

  void emitDynamic(const Node& n) {
    const TensorInfo& b = in_.tensors[n.inputs[1]];
    const bool transB = n.type == OpType::Gemm && n.getInt("transB", 0) != 0;
    const int64_t K = b.shape[transB ? 1 : 0], N = b.shape[transB ? 0 : 1];
    // DynamicQuantizeMatMul has no transB: a transposed B is stored as [K, N].
    std::vector<float> kn(static_cast<size_t>(K * N));
    const float* src = reinterpret_cast<const float*>(b.data.bytes.get());
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < N; ++c) kn[k * N + c] = transB ? src[c * K + k] : src[k * N + c];
    TensorInfo knInfo = b;
    knInfo.shape = {K, N};
    knInfo.data = ConstantData::copyOf(kn.data(), kn.size() * 4);
    const WeightInputs wq = weightInputs(knInfo, N, K, 1, N, {K, N});
    Node q;
    q.type = OpType::DynamicQuantizeMatMul;
    q.name = n.name;
    q.inputs = {n.inputs[0], wq.values, wq.scales, wq.zeros};
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) q.inputs.push_back(n.inputs[2]);
    q.outputs = n.outputs;
    g_.nodes.push_back(std::move(q));
  }

  void emitBinary(const Node& n) {
    const int a = n.inputs[0], b = n.inputs[1], y = n.outputs[0];
    Node q;
    q.type = n.type == OpType::Add ? OpType::QLinearAdd : OpType::QLinearMul;
    q.name = n.name;
    const int aq = bytesOf(a), bq = bytesOf(b), yq = newByteTensor(y);
    q.inputs = {aq, scaleOf(a), zeroOf(a), bq, scaleOf(b), zeroOf(b), scaleOf(y), zeroOf(y)};
    q.outputs = {yq};
    g_.nodes.push_back(std::move(q));
  }

  void emitPool(const Node& n, bool global) {
    const int x = n.inputs[0], y = n.outputs[0];
    Node q;
    q.type = global ? OpType::QLinearGlobalAveragePool : OpType::QLinearAveragePool;
    q.name = n.name;
    if (!global) q.attrs = n.attrs;
    q.setInt("channels_last", 0);
    const int xq = bytesOf(x), yq = newByteTensor(y);
    q.inputs = {xq, scaleOf(x), zeroOf(x), scaleOf(y), zeroOf(y)};
    q.outputs = {yq};
    g_.nodes.push_back(std::move(q));
  }

  void emitConcat(const Node& n) {
    const int y = n.outputs[0];
    Node q;
    q.type = OpType::QLinearConcat;
    q.name = n.name;
    q.attrs = n.attrs;
    std::vector<int> parts;
    for (int x : n.inputs) {
      const int xq = bytesOf(x);
      parts.insert(parts.end(), {xq, scaleOf(x), zeroOf(x)});
    }
    const int yq = newByteTensor(y);
    q.inputs = {scaleOf(y), zeroOf(y)};
    q.inputs.insert(q.inputs.end(), parts.begin(), parts.end());
    q.outputs = {yq};
    g_.nodes.push_back(std::move(q));
  }

  // The op on the bytes themselves; the output keeps the input's scale and zero point.
  void emitPassThrough(const Node& n) {
    const int x = n.inputs[0], y = n.outputs[0];
    Node q = n;
    q.inputs[0] = bytesOf(x);
    const TensorInfo& f = in_.tensors[y];
    byteTensor_[y] = addTensor(f.name + "_quantized", DataType::UInt8, f.shape, f.hasShape);
    params_[y] = params_[x];
    if (report_) report_->mapping.push_back({g_.tensors[byteTensor_[y]].name, f.name, params_[y].scale, params_[y].zeroPoint});
    q.outputs[0] = byteTensor_[y];
    g_.nodes.push_back(std::move(q));
  }

  const Graph& in_;
  const std::map<std::string, TensorRange>& ranges_;
  QuantizeOptions options_;
  QuantizeReport* report_;
  Graph g_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> isOutput_;
  std::vector<Role> role_;
  std::vector<int> producer_;
  std::map<int, int> rangeOf_;  // a byte op's output -> the absorbed Relu's output, whose range it takes
  std::vector<bool> floatOut_;
  std::vector<int> byteTensor_;
  std::vector<ByteParams> params_;
  std::map<int, int> scaleConstant_, zeroConstant_;
};

}  // namespace

Status quantizeGraph(const Graph& in, const std::map<std::string, TensorRange>& ranges, const QuantizeOptions& options,
                     Graph* out, QuantizeReport* report) {
  Rewriter rewriter(in, ranges, options, report);
  OSPREY_RETURN_IF_ERROR(rewriter.run(out));
  // What stayed float gets its float fusions back (the quantizer's input was converted without
  // the residual and bias fusions, which its integer ops do not take).
  passes::fuseConvResidual(*out);
  passes::fuseMatMulBias(*out);
  passes::fuseActivations(*out);
  passes::removeDeadCode(*out);
  passes::compactTensors(*out);
  OSPREY_RETURN_IF_ERROR(out->validate());
  return checkOpArity(*out);
}

}  // namespace osprey
