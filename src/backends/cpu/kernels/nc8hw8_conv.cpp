// CPU Conv in NC8HW8 (2-D, float32, constant weights and bias): one direct kernel for every
// dense convolution (1x1 included: positions as rows, output channels in blocks of 8 as
// columns, the 6x16 tile of cpu_functions.h) over weights packed once into STATIC memory as
// [Cout/8][tap][Cin/8][8 in][8 out], and a depthwise kernel over [C/8][tap][8]. Padding never
// runs through the tile: taps outside the input are left out of the tap list of the positions
// they miss. Bias, the residual Z (input 3) and Relu/Clip run in the tile's epilogue, other
// activations once per finished row.
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/nc8hw8.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "ops/activation.h"
#include "ops/window.h"

namespace osprey {

namespace {

constexpr int64_t kMaxTaps = 64;  // larger windows (11x11 stems) keep NCHW
constexpr int64_t kTile = 6;      // positions per tile

int64_t blocksOf(int64_t channels) { return (channels + 7) / 8; }

class Nc8hw8ConvExecution : public Execution {
 public:
  Nc8hw8ConvExecution(CPUBackend* backend, const OpRef& op, bool depthwise)
      : Execution(backend), node_(*op.node), depthwise_(depthwise) {}

  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&,
                      const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NC8HW8;
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
    const RuntimeTensor* z = inputs.size() > 3 ? inputs[3] : nullptr;
    if (x.layout != Layout::NC8HW8 || outputs[0]->layout != Layout::NC8HW8 || (z && z->layout != Layout::NC8HW8))
      return Status::internal("NC8HW8 Conv given tensors in another layout");
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &g_));
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &act_));
    if (g_.kernelSize() > kMaxTaps) return Status::internal("NC8HW8 Conv window larger than its tap list");
    batch_ = x.shape[0];
    inChannels_ = x.shape[1];
    outChannels_ = w.shape[0];
    lo_ = -std::numeric_limits<float>::infinity(), hi_ = std::numeric_limits<float>::infinity();
    if (act_.kind == FusedActivation::Kind::Relu) lo_ = 0.f;
    if (act_.kind == FusedActivation::Kind::Clip) lo_ = act_.a, hi_ = act_.b;
    separateActivation_ = act_.kind != FusedActivation::Kind::None && act_.kind != FusedActivation::Kind::Relu &&
                          act_.kind != FusedActivation::Kind::Clip;
    // Columns whose every kw tap is inside the row.
    const int64_t firstStart = g_.padBegin[2], lastStart = g_.in[2] - 1 - (g_.kernel[2] - 1) * g_.dilation[2] + g_.padBegin[2];
    owLo_ = std::min(g_.out[2], (firstStart + g_.stride[2] - 1) / g_.stride[2]);
    owHi_ = lastStart < 0 ? owLo_ : std::clamp(lastStart / g_.stride[2] + 1, owLo_, g_.out[2]);
    pointwise_ = !depthwise_ && g_.kernelSize() == 1 && g_.stride[1] == 1 && g_.stride[2] == 1 &&
                 g_.padBegin[1] == 0 && g_.padBegin[2] == 0;
    if (!packedMem_) OSPREY_RETURN_IF_ERROR(packWeights(w, inputs.size() > 2 ? inputs[2] : nullptr));
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* z = optionalFloats(inputs, 3);
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    if (depthwise_) {
      runDepthwise(pool, x, z, y);
    } else if (pointwise_) {
      runPointwise(pool, x, z, y);
    } else {
      runDirect(pool, x, z, y);
    }
    return Status::ok();
  }

 private:
  Status packWeights(const RuntimeTensor& w, const RuntimeTensor* bias) {
    const int64_t taps = g_.kernelSize(), inBlocks = blocksOf(depthwise_ ? 1 : inChannels_), outBlocks = blocksOf(outChannels_);
    const int64_t weightFloats = depthwise_ ? outBlocks * taps * 8 : outBlocks * taps * inBlocks * 64;
    bool fresh = false;
    OSPREY_RETURN_IF_ERROR(  // zero-filled: padding lanes and taps stay zero
        acquirePackedWeights(backend(), weightFloats + outBlocks * 8, node_.name,
                             packKey(w.host(), bias ? bias->host() : nullptr, "nc8hw8-conv",
                                     {depthwise_, inChannels_, outChannels_, taps}),
                             &packed_, &packedMem_, &fresh));
    float* dst = reinterpret_cast<float*>(packed_.host());
    const float* src = reinterpret_cast<const float*>(w.host());
    bias_ = dst + weightFloats;
    if (!fresh) return Status::ok();
    if (depthwise_) {
      packLaneDepthwiseWeights(src, bias ? reinterpret_cast<const float*>(bias->host()) : nullptr, outChannels_, taps,
                               8, dst);
      return Status::ok();
    }
    const int64_t perFilter = inChannels_ * taps;  // KCRS
    for (int64_t m = 0; m < outChannels_; ++m)
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t c = 0; c < inChannels_; ++c)
          dst[((m / 8 * taps + t) * inBlocks + c / 8) * 64 + (c % 8) * 8 + m % 8] = src[m * perFilter + c * taps + t];
    if (bias) std::memcpy(bias_, bias->host(), static_cast<size_t>(outChannels_) * sizeof(float));
    return Status::ok();
  }

  Nc8ConvArgs denseArgs() const {
    Nc8ConvArgs a;
    a.inBlocks = blocksOf(inChannels_);
    a.inBlockStride = g_.in[1] * g_.in[2] * 8;
    a.inLanes = inChannels_ - (a.inBlocks - 1) * 8;  // a 3-channel image: 3 of 8 lanes
    a.weightBlockStride = g_.kernelSize() * a.inBlocks * 64;
    a.outBlockStride = g_.out[1] * g_.out[2] * 8;
    a.lo = lo_, a.hi = hi_;
    return a;
  }

  // Activations other than Relu/Clip, then zeros into the padding channels, over `positions`
  // consecutive outputs of output block `block` starting at y.
  void finish(int64_t block, float* y, int64_t positions) const {
    if (separateActivation_) applyActivation(cpuFunctions(), act_, y, positions * 8);
    const int64_t real = outChannels_ - block * 8;
    if (real >= 8) return;
    for (int64_t p = 0; p < positions; ++p) std::fill(y + p * 8 + real, y + p * 8 + 8, 0.f);
  }

  // 1x1 stride 1: the positions of a plane are one contiguous run, tiled straight through.
  void runPointwise(ThreadPool* pool, const float* x, const float* z, float* y) const {
    const Nc8ConvArgs base = denseArgs();
    const int64_t plane = g_.out[1] * g_.out[2], outBlocks = blocksOf(outChannels_), pairs = (outBlocks + 1) / 2;
    // Chunks of positions whose inputs (all input channels) take about 32 KiB, so they stay in
    // L1/L2 while every pair of output blocks passes over them.
    const int64_t chunk = std::clamp<int64_t>(8192 / (base.inBlocks * 8) / kTile * kTile, kTile, 16 * kTile);
    const int64_t chunks = (plane + chunk - 1) / chunk;
    // With the input of a whole image in L2, pairs go outermost so each one's weights are read once.
    const bool pairsOuter = plane * base.inBlocks * 8 * 4 <= 256 * 1024;
    const int64_t zero = 0;
    parallelFor(pool, batch_ * chunks * pairs, [&](int64_t begin, int64_t end) {
      Nc8ConvArgs a = base;
      a.tapOffsets = &zero, a.tapWeights = &zero, a.taps = 1, a.positionStride = 8;
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / (chunks * pairs), rest = task % (chunks * pairs);
        const int64_t c = pairsOuter ? rest % chunks : rest / pairs, pair = pairsOuter ? rest / chunks : rest % pairs;
        const int64_t p0 = c * chunk, p1 = std::min(plane, p0 + chunk), ob = std::min<int64_t>(2, outBlocks - 2 * pair);
        const float* xs = x + n * base.inBlocks * base.inBlockStride + p0 * 8;
        const int64_t yOffset = (n * outBlocks + 2 * pair) * base.outBlockStride + p0 * 8;
        const float* w = reinterpret_cast<const float*>(packed_.host()) + 2 * pair * base.weightBlockStride;
        for (int64_t p = p0; p < p1; p += kTile) {
          const int64_t at = (p - p0) * 8;
          cpuFunctions().nc8Conv(a, std::min(kTile, p1 - p), ob, xs + at, w, bias_ + 16 * pair,
                                 z ? z + yOffset + at : nullptr, y + yOffset + at);
        }
        for (int64_t k = 0; k < ob; ++k) finish(2 * pair + k, y + yOffset + k * base.outBlockStride, p1 - p0);
      }
    });
  }

  // Any window and stride, one output row per task: the interior columns in tiles, the columns
  // whose window is cut by the padding one by one with the taps that stay inside.
  void runDirect(ThreadPool* pool, const float* x, const float* z, float* y) const {
    const Nc8ConvArgs base = denseArgs();
    const int64_t outH = g_.out[1], outW = g_.out[2], outBlocks = blocksOf(outChannels_), pairs = (outBlocks + 1) / 2;
    const int64_t kH = g_.kernel[1], kW = g_.kernel[2];
    // Rows outermost keeps a row's inputs hot over all weights; with weights beyond L2, pairs go
    // outermost instead so each pair's weights are read from memory once.
    const bool pairsOuter = base.weightBlockStride * outBlocks * 4 > 512 * 1024;
    parallelFor(pool, batch_ * outH * pairs, [&](int64_t begin, int64_t end) {
      int64_t offsets[kMaxTaps], weights[kMaxTaps];
      Nc8ConvArgs a = base;
      a.tapOffsets = offsets, a.tapWeights = weights, a.positionStride = g_.stride[2] * 8;
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / (outH * pairs), rest = task % (outH * pairs);
        const int64_t oh = pairsOuter ? rest % outH : rest / pairs, pair = pairsOuter ? rest / outH : rest % pairs;
        const int64_t ob = std::min<int64_t>(2, outBlocks - 2 * pair), ih0 = oh * g_.stride[1] - g_.padBegin[1];
        const float* xs = x + n * base.inBlocks * base.inBlockStride;
        const int64_t yOffset = (n * outBlocks + 2 * pair) * base.outBlockStride + oh * outW * 8;
        const float* w = reinterpret_cast<const float*>(packed_.host()) + 2 * pair * base.weightBlockStride;
        auto collectTaps = [&](int64_t ow) {  // ow < 0: every kw (the interior)
          a.taps = 0;
          for (int64_t kh = 0; kh < kH; ++kh) {
            const int64_t ih = ih0 + kh * g_.dilation[1];
            if (ih < 0 || ih >= g_.in[1]) continue;
            for (int64_t kw = 0; kw < kW; ++kw) {
              const int64_t dw = kw * g_.dilation[2] - g_.padBegin[2];
              if (ow >= 0 && (ow * g_.stride[2] + dw < 0 || ow * g_.stride[2] + dw >= g_.in[2])) continue;
              offsets[a.taps] = (ih * g_.in[2] + dw) * 8;
              weights[a.taps++] = kh * kW + kw;
            }
          }
        };
        auto tile = [&](int64_t ow, int64_t positions) {
          const int64_t at = ow * 8;
          cpuFunctions().nc8Conv(a, positions, ob, xs + ow * g_.stride[2] * 8, w, bias_ + 16 * pair,
                                 z ? z + yOffset + at : nullptr, y + yOffset + at);
        };
        collectTaps(-1);
        for (int64_t ow = owLo_; ow < owHi_; ow += kTile) tile(ow, std::min(kTile, owHi_ - ow));
        for (int64_t ow = 0; ow < outW; ++ow) {
          if (ow == owLo_) ow = std::max(owLo_, owHi_);
          if (ow >= outW) break;
          collectTaps(ow);
          tile(ow, 1);
        }
        for (int64_t k = 0; k < ob; ++k) finish(2 * pair + k, y + yOffset + k * base.outBlockStride, outW);
      }
    });
  }

  void runDepthwise(ThreadPool* pool, const float* x, const float* z, float* y) const {
    BlockedDepthwiseArgs a;
    a.inH = g_.in[1], a.inW = g_.in[2], a.outW = g_.out[2], a.kernelH = g_.kernel[1], a.kernelW = g_.kernel[2];
    a.strideH = g_.stride[1], a.strideW = g_.stride[2], a.padH = g_.padBegin[1], a.padW = g_.padBegin[2];
    a.dilationH = g_.dilation[1], a.dilationW = g_.dilation[2], a.lo = lo_, a.hi = hi_;
    const int64_t blocks = blocksOf(outChannels_), outH = g_.out[1], taps = g_.kernelSize();
    const int64_t inPlane = a.inH * a.inW * 8, outPlane = outH * a.outW * 8;
    const float* w = reinterpret_cast<const float*>(packed_.host());
    parallelFor(pool, batch_ * blocks * outH, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t plane = task / outH, oh = task % outH, block = plane % blocks;
        const int64_t yOffset = plane * outPlane + oh * a.outW * 8;
        cpuFunctions().nc8DepthwiseRow(a, oh, x + plane * inPlane, w + block * taps * 8, bias_ + block * 8,
                                       z ? z + yOffset : nullptr, y + yOffset);
        finish(block, y + yOffset, a.outW);
      }
    });
  }

  const Node& node_;
  const bool depthwise_;
  Window g_;
  FusedActivation act_;
  bool separateActivation_ = false, pointwise_ = false;
  float lo_ = 0.f, hi_ = 0.f;
  int64_t batch_ = 0, inChannels_ = 0, outChannels_ = 0, owLo_ = 0, owHi_ = 0;
  RuntimeTensor packed_;
  std::unique_ptr<MemObj> packedMem_;
  float* bias_ = nullptr;  // outBlocks * 8 floats after the packed weights, zero past the channels
};

}  // namespace

std::unique_ptr<Execution> createNc8hw8ConvExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || !inputs[0] || !inputs[1] || outputs.size() != 1 || !outputs[0]) return nullptr;
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (x.dtype != DataType::Float32 || w.dtype != DataType::Float32 || !w.constData) return nullptr;
  if (x.shape.size() != 4 || w.shape.size() != 4 || w.shape[2] * w.shape[3] > kMaxTaps) return nullptr;
  const RuntimeTensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
  if (bias && (bias->dtype != DataType::Float32 || !bias->constData || bias->elements() != w.shape[0])) return nullptr;
  const RuntimeTensor* z = inputs.size() > 3 ? inputs[3] : nullptr;
  if (z && (z->dtype != DataType::Float32 || z->constData || z->shape != outputs[0]->shape)) return nullptr;
  const int64_t group = op.node->getInt("group", 1);
  const bool dense = group == 1 && w.shape[1] == x.shape[1];
  const bool depthwise = group > 1 && group == x.shape[1] && w.shape[0] == group && w.shape[1] == 1;
  if (!dense && !depthwise) return nullptr;  // grouped and channel-multiplier convolutions keep NCHW
  return std::make_unique<Nc8hw8ConvExecution>(backend, op, depthwise);
}

}  // namespace osprey
