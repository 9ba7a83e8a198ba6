// Weight-only quantization (`osprey quantize --weights-only int8|int4`): each MatMul / Gemm with a
// constant 2-D float weight becomes com.microsoft.MatMulNBits (ONNX Runtime's layout, which the
// CPU kernel dequantizes inside its GEMM micro-kernel): activations stay float, the weight is
// stored block by block along K with a float scale and a uint8 zero point per block. A bias Add
// that only the MatMul feeds moves into the op's bias input.
#include <algorithm>
#include <cmath>

#include "converter/passes/passes.h"
#include "ops/activation.h"
#include "ops/op_def.h"
#include "quantizer/graph_edit.h"
#include "quantizer/quantizer.h"

namespace osprey {

namespace {

// ONNX Runtime's MatMulNBits form of a [K, N] weight (element (k, n) at w[k * kStride + n * nStride]).
struct NBitsWeights {
  std::vector<uint8_t> codes;  // [N, kBlocks, blockSize * bits / 8]
  std::vector<float> scales;   // [N * kBlocks]
  std::vector<uint8_t> zeros;  // [N, ceil(kBlocks * bits / 8)]
  int64_t kBlocks = 0;
  QuantizedTensorReport report;
};

// Asymmetric per block: the block's [min, max] widened to hold 0 onto [0, 2^bits - 1].
NBitsWeights quantizeBlocks(const float* w, int64_t K, int64_t N, int64_t kStride, int64_t nStride, int bits,
                            int64_t blockSize) {
  NBitsWeights q;
  const int maxCode = (1 << bits) - 1;
  q.kBlocks = (K + blockSize - 1) / blockSize;
  const int64_t blob = blockSize * bits / 8, zeroRow = bits == 8 ? q.kBlocks : (q.kBlocks + 1) / 2;
  q.codes.assign(static_cast<size_t>(N * q.kBlocks * blob), 0);
  q.scales.assign(static_cast<size_t>(N * q.kBlocks), 1.f);
  q.zeros.assign(static_cast<size_t>(N * zeroRow), 0);
  double dot = 0, ww = 0, qq = 0, worst = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t blk = 0; blk < q.kBlocks; ++blk) {
      const int64_t k0 = blk * blockSize, k1 = std::min(K, k0 + blockSize);
      float lo = 0.f, hi = 0.f;
      for (int64_t k = k0; k < k1; ++k) {
        const float v = w[k * kStride + n * nStride];
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      }
      const float scale = hi > lo ? (hi - lo) / static_cast<float>(maxCode) : 1.f;
      const int zero = static_cast<int>(std::clamp(std::nearbyint(-lo / scale), 0.f, static_cast<float>(maxCode)));
      q.scales[n * q.kBlocks + blk] = scale;
      uint8_t& zeroByte = q.zeros[n * zeroRow + (bits == 8 ? blk : blk / 2)];
      zeroByte |= static_cast<uint8_t>(bits == 8 || blk % 2 == 0 ? zero : zero << 4);
      uint8_t* blockCodes = &q.codes[(n * q.kBlocks + blk) * blob];
      for (int64_t k = k0; k < k0 + blockSize; ++k) {
        int code = zero;  // K's tail pads with zero weights
        if (k < k1) {
          const float v = w[k * kStride + n * nStride];
          const float r = std::nearbyint(v / scale) + zero;
          code = std::isnan(r) ? zero : static_cast<int>(std::clamp(r, 0.f, static_cast<float>(maxCode)));
          const double dq = static_cast<double>(code - zero) * scale;
          dot += dq * v, ww += static_cast<double>(v) * v, qq += dq * dq;
          worst = std::max(worst, std::fabs(dq - v));
        }
        const int64_t i = k - k0;
        if (bits == 8) blockCodes[i] = static_cast<uint8_t>(code);
        else blockCodes[i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? code : code << 4);
      }
    }
  q.report.cosine = ww > 0 && qq > 0 ? dot / std::sqrt(ww * qq) : (ww == qq ? 1.0 : 0.0);
  q.report.maxError = worst;
  return q;
}

class WeightRewriter {
 public:
  WeightRewriter(const Graph& in, const QuantizeOptions& options, QuantizeReport* report)
      : in_(in), options_(options), report_(report) {}

  Status run(Graph* out) {
    g_ = in_;
    g_.nodes.clear();
    readers_.assign(in_.tensors.size(), {});
    for (size_t k = 0; k < in_.nodes.size(); ++k)
      for (int t : in_.nodes[k].inputs)
        if (t >= 0) readers_[t].push_back(static_cast<int>(k));
    isOutput_.assign(in_.tensors.size(), false);
    for (int t : in_.outputs) isOutput_[t] = true;
    absorbed_.assign(in_.nodes.size(), false);
    for (size_t k = 0; k < in_.nodes.size(); ++k) {
      if (absorbed_[k]) continue;
      const Node& n = in_.nodes[k];
      Weight w;
      if (excluded(n) || !quantizable(n, &w)) {
        g_.nodes.push_back(n);
        if (report_) ++report_->floatOps;
        continue;
      }
      emit(n, w);
      if (report_) {
        ++report_->quantizedOps;
        ++report_->quantizedByType[opTypeName(n.type)];
      }
    }
    *out = std::move(g_);
    return Status::ok();
  }

 private:
  // A weight [K, N] with element (k, n) at data[k * kStride + n * nStride], output scaled by alpha.
  struct Weight {
    const TensorInfo* tensor = nullptr;
    int64_t K = 0, N = 0, kStride = 0, nStride = 0;
    float alpha = 1.f;
    const TensorInfo* bias = nullptr;  // float [N] (times beta), or null
    float beta = 1.f;
    int biasAdd = -1;  // the absorbed Add node
    FusedActivation act;
  };

  bool excluded(const Node& n) const { return quantizer::excluded(options_.exclude, n); }
  const TensorInfo* floatConstant(int t) const { return quantizer::floatConstant(in_, t); }
  const TensorInfo* biasOf(int t, int64_t N) const {
    const TensorInfo* b = floatConstant(t);
    if (!b || b->shape.empty() || b->shape.back() != N || shapeElements(b->shape) != N) return nullptr;
    return b;
  }

  bool quantizable(const Node& n, Weight* w) {
    if (n.outputs.size() != 1 || n.inputs.size() < 2) return false;
    // A fused activation (the converter's) moves into MatMulNBits, which applies it after the bias.
    if (!FusedActivation::fromNode(n, &w->act).isOk()) return false;
    const TensorInfo* b = floatConstant(n.inputs[1]);
    if (!b || b->shape.size() != 2 || b->shape[0] < 1 || b->shape[1] < 1) return false;
    w->tensor = b;
    if (n.type == OpType::MatMul) {
      w->K = b->shape[0], w->N = b->shape[1], w->kStride = w->N, w->nStride = 1;
      if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !(w->bias = biasOf(n.inputs[2], w->N))) return false;
    } else if (n.type == OpType::Gemm) {
      if (n.getInt("transA", 0) != 0) return false;
      const bool transB = n.getInt("transB", 0) != 0;
      w->K = b->shape[transB ? 1 : 0], w->N = b->shape[transB ? 0 : 1];
      w->kStride = transB ? 1 : w->N, w->nStride = transB ? w->K : 1;
      w->alpha = n.getFloat("alpha", 1.f), w->beta = n.getFloat("beta", 1.f);
      if (n.inputs.size() > 2 && n.inputs[2] >= 0 && !(w->bias = biasOf(n.inputs[2], w->N))) return false;
    } else {
      return false;
    }
    // A following bias Add (the float model keeps MatMul + Add apart) moves into the op.
    const int y = n.outputs[0];
    const TensorInfo& yInfo = in_.tensors[y];
    if (!w->bias && w->act.kind == FusedActivation::Kind::None && !isOutput_[y] && readers_[y].size() == 1) {
      const int a = readers_[y][0];
      const Node& add = in_.nodes[a];
      if (add.type == OpType::Add && add.inputs.size() == 2 && !excluded(add)) {
        const int other = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
        const TensorInfo* bias = other != y ? biasOf(other, w->N) : nullptr;
        // A bias of higher rank than the product would broadcast it to more dimensions.
        if (bias && (bias->shape.size() == 1 || (yInfo.hasShape && bias->shape.size() <= yInfo.shape.size()))) {
          w->bias = bias;
          w->biasAdd = a;
          absorbed_[a] = true;
        }
      }
    }
    return true;
  }

  int addConstant(const std::string& name, DataType dtype, const Shape& shape, const void* data, size_t bytes) {
    return quantizer::addConstant(g_, name, dtype, shape, data, bytes);
  }

  void emit(const Node& n, const Weight& w) {
    const int bits = options_.weightBits;
    const int64_t block = options_.blockSize;
    NBitsWeights q = quantizeBlocks(reinterpret_cast<const float*>(w.tensor->data.bytes.get()), w.K, w.N, w.kStride,
                                    w.nStride, bits, block);
    for (float& s : q.scales) s *= w.alpha;
    const int64_t blob = block * bits / 8, zeroRow = static_cast<int64_t>(q.zeros.size()) / w.N;
    Node m;
    m.type = OpType::MatMulNBits;
    m.name = n.name;
    m.setInt("K", w.K);
    m.setInt("N", w.N);
    m.setInt("bits", bits);
    m.setInt("block_size", block);
    if (options_.accuracyLevel) m.setInt("accuracy_level", options_.accuracyLevel);
    const std::string& base = w.tensor->name;
    m.inputs = {n.inputs[0], addConstant(base + "_nbits", DataType::UInt8, {w.N, q.kBlocks, blob}, q.codes.data(), q.codes.size()),
                addConstant(base + "_scales", DataType::Float32, {w.N * q.kBlocks}, q.scales.data(), q.scales.size() * 4),
                addConstant(base + "_zero_points", DataType::UInt8, {w.N * zeroRow}, q.zeros.data(), q.zeros.size())};
    if (w.bias) {
      std::vector<float> bias(reinterpret_cast<const float*>(w.bias->data.bytes.get()),
                              reinterpret_cast<const float*>(w.bias->data.bytes.get()) + w.N);
      for (float& v : bias) v *= w.beta;
      m.inputs.push_back(-1);  // g_idx
      m.inputs.push_back(addConstant(w.bias->name + "_bias", DataType::Float32, {w.N}, bias.data(), bias.size() * 4));
    }
    w.act.store(m);
    m.outputs = {w.biasAdd >= 0 ? in_.nodes[w.biasAdd].outputs[0] : n.outputs[0]};
    g_.nodes.push_back(std::move(m));
    if (report_) {
      q.report.name = base;
      q.report.op = "MatMulNBits";
      report_->tensors.push_back(q.report);
    }
  }

  const Graph& in_;
  QuantizeOptions options_;
  QuantizeReport* report_;
  Graph g_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> isOutput_;
  std::vector<bool> absorbed_;
};

}  // namespace

Status quantizeWeightsOnly(const Graph& in, const QuantizeOptions& options, Graph* out, QuantizeReport* report) {
  if (options.weightBits != 4 && options.weightBits != 8)
    return Status::invalidArgument("weight-only quantization takes 4 or 8 bits, not " +
                                   std::to_string(options.weightBits));
  if (options.blockSize < 16 || (options.blockSize & (options.blockSize - 1)) != 0)
    return Status::invalidArgument("the block size must be a power of 2, at least 16, not " +
                                   std::to_string(options.blockSize));
  WeightRewriter rewriter(in, options, report);
  OSPREY_RETURN_IF_ERROR(rewriter.run(out));
  passes::fuseMatMulBias(*out);
  passes::fuseActivations(*out);
  passes::removeDeadCode(*out);
  passes::compactTensors(*out);
  OSPREY_RETURN_IF_ERROR(out->validate());
  return checkOpArity(*out);
}

}  // namespace osprey
