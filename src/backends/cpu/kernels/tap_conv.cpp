// CPU Conv as an implicit GEMM over the window's taps (AVX2 and AVX-512 tables). Output
// positions, up to the table's gemmMr of one output row at a time, are the GEMM's rows and output
// channels, gemmNr at a time, its columns; for each tap the A operand is the input itself,
// shifted by the tap. im2col built a K x positions matrix instead (nine copies of the input for a
// 3x3 window, the 7x7 map's 4608 x 49 written and read again for every call). The input is copied once into zero-padded rows, the
// rows of a stride-2 convolution split into even and odd columns, so that a tap reads 8
// consecutive floats per channel; the micro-kernel (gemmTaps) stores its block straight into the
// output planes with bias, residual and Relu/Clip.
#include <algorithm>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "core/thread_pool.h"
#include "ops/window.h"

namespace osprey {

namespace {

constexpr int64_t kMaxTaps = 49;
// A block of output positions has two accumulators per row; below 4 rows they cover less than the
// FMA latency (8 in flight). With the 6-row tile a 7-wide output row would run as 4 + 3: ResNet-18's
// 256 -> 512 stride 2 on 14 -> 7 ran 1.05-1.10 ms so against 1.01-1.02 with im2col (positions as rows).
constexpr int64_t kMinBlockRows = 4;
constexpr int64_t kGroupPositions = 512;  // output positions per work item: its panel of channels in L2

class TapConvExecution : public Execution {
 public:
  TapConvExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &window_));
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &act_));
    batch_ = x.shape[0];
    inChannels_ = x.shape[1];
    outChannels_ = w.shape[0];
    stride_ = window_.stride[2];
    const int64_t kH = window_.kernel[1], kW = window_.kernel[2], outH = window_.out[1], outW = window_.out[2];
    // Padded rows: every row a tap of an output row reads; each split into stride_ phases of
    // phaseLength columns (phase p holds padded columns p, p + stride, ...), row-major across the
    // channels ([row][channel][phase][column]), so that one tap's rows of all channels lie
    // together instead of a plane apart (a page per channel: 128 channels on 56x56 ran 45% slower).
    paddedRows_ = std::max(window_.padBegin[1] + window_.in[1] + window_.padEnd[1], (outH - 1) * stride_ + kH);
    phaseLength_ = std::max((window_.padBegin[2] + window_.in[2] + window_.padEnd[2] + stride_ - 1) / stride_,
                            outW + (kW - 1) / stride_);
    const int64_t rowPitch = inChannels_ * stride_ * phaseLength_;
    taps_ = kH * kW;
    for (int64_t kh = 0; kh < kH; ++kh)
      for (int64_t kw = 0; kw < kW; ++kw)
        offsets_[kh * kW + kw] = kh * rowPitch + (kw % stride_) * phaseLength_ + kw / stride_;
    const ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int threads = pool ? pool->threads() : 1;
    const int64_t panels = outChannels_ / cpuFunctions().gemmNr;
    const int64_t maxRows = std::max<int64_t>(1, kGroupPositions / outW);
    int64_t groups = (outH + maxRows - 1) / maxRows;
    while (groups < outH && panels * groups < 2 * threads) ++groups;
    groupRows_ = (outH + groups - 1) / groups;  // groups of equal rows: the threads' items cost the same
    clampOnly_ = clampBounds(act_, &lo_, &hi_);
    if (!packedMem_) OSPREY_RETURN_IF_ERROR(packWeights(reinterpret_cast<const float*>(w.host())));
    std::unique_ptr<MemObj> scratch;
    return acquireConvScratch(backend(), {paddedRows_ * rowPitch}, "padded input rows", node_.name, &padded_, &scratch);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* bias = optionalFloats(inputs, 2);
    const float* z = optionalFloats(inputs, 3);
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const int64_t inPlane = window_.in[1] * window_.in[2], outPlane = window_.out[1] * window_.out[2];
    for (int64_t n = 0; n < batch_; ++n) {
      padInput(pool, x + n * inChannels_ * inPlane);
      const int64_t yOffset = n * outChannels_ * outPlane;
      multiply(pool, bias, z ? z + yOffset : nullptr, y + yOffset);
    }
    return Status::ok();
  }

 private:
  // padded[r][c][p][i] = x[c][r - padTop][i * stride + p - padLeft], 0 outside the input.
  void padInput(ThreadPool* pool, const float* x) const {
    float* padded = reinterpret_cast<float*>(padded_.host());
    const int64_t inH = window_.in[1], inW = window_.in[2], padTop = window_.padBegin[1], padLeft = window_.padBegin[2];
    const int64_t rowFloats = stride_ * phaseLength_;
    parallelFor(pool, inChannels_ * paddedRows_, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        float* dst = padded + row * rowFloats;  // row = r * inChannels_ + c
        const int64_t c = row % inChannels_, ih = row / inChannels_ - padTop;
        if (ih < 0 || ih >= inH) {
          std::fill(dst, dst + rowFloats, 0.f);
          continue;
        }
        const float* src = x + (c * inH + ih) * inW;
        if (stride_ == 1) {
          std::fill(dst, dst + padLeft, 0.f);
          std::copy(src, src + inW, dst + padLeft);
          std::fill(dst + padLeft + inW, dst + rowFloats, 0.f);
          continue;
        }
        // Padded column j = iw + padLeft goes to phase j % 2 at j / 2.
        float* even = dst;
        float* odd = dst + phaseLength_;
        std::fill(dst, dst + rowFloats, 0.f);
        const int64_t first = padLeft % 2;  // the phase of input column 0
        float* p0 = first ? odd : even;
        float* p1 = first ? even : odd;
        const int64_t start0 = padLeft / 2, start1 = (padLeft + 1) / 2;
        for (int64_t i = 0; 2 * i < inW; ++i) p0[start0 + i] = src[2 * i];
        for (int64_t i = 0; 2 * i + 1 < inW; ++i) p1[start1 + i] = src[2 * i + 1];
      }
    });
  }

  void multiply(ThreadPool* pool, const float* bias, const float* z, float* y) const {
    const CpuFunctions& fn = cpuFunctions();
    const float* padded = reinterpret_cast<const float*>(padded_.host());
    const float* packed = reinterpret_cast<const float*>(packed_.host());
    const int64_t outH = window_.out[1], outW = window_.out[2], outPlane = outH * outW;
    const int64_t channelStride = stride_ * phaseLength_, rowPitch = inChannels_ * channelStride;
    const int64_t nr = fn.gemmNr, K = taps_ * inChannels_, panels = outChannels_ / nr;
    const int64_t groups = (outH + groupRows_ - 1) / groupRows_;
    // An output row in blocks of equal size, at most gemmMr each: with 6 rows a 13-wide row runs
    // 4 + 4 + 5, not 6 + 6 + 1, whose single row waits on its two sums' latency (8-row blocks ran
    // the same either way: ResNet-18's and SqueezeNet's taps within noise of 8 + 8 + 8 + 4).
    const int64_t rowBlocks = (outW + fn.gemmMr - 1) / fn.gemmMr;
    parallelFor(pool, panels * groups, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t panel = item % panels, oh0 = (item / panels) * groupRows_, oh1 = std::min(outH, oh0 + groupRows_);
        const float* panelB = packed + panel * K * nr;
        float* yPanel = y + panel * nr * outPlane;
        GemmOutputStage stage;
        stage.columnBias = bias ? bias + panel * nr : nullptr;
        stage.lo = lo_, stage.hi = hi_;
        stage.residualStride = outPlane;
        // All of K in one pass: each block is stored once. Passes of 256 (B's 256 x 32 in L1 across
        // the item's rows) stored and reloaded it per pass, 5 to 18 times; one pass ran the stride-2
        // 3x3 convolutions 5-7% faster (128 channels 56 -> 28, 256 channels 28 -> 14, two threads,
        // alternating runs in one process) and 512 channels on 7x7 the same.
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          const float* aRow = padded + oh * stride_ * rowPitch;
          for (int64_t block = 0; block < rowBlocks; ++block) {
            const int64_t ow = outW * block / rowBlocks, rows = outW * (block + 1) / rowBlocks - ow;
            const int64_t p = oh * outW + ow;
            if (z) stage.residual = z + panel * nr * outPlane + p;
            fn.gemmTaps[rows](taps_, offsets_, inChannels_, aRow + ow, channelStride, panelB, yPanel + p, outPlane,
                              &stage);
          }
        }
        if (!clampOnly_)
          for (int64_t o = 0; o < nr; ++o)
            applyActivation(fn, act_, yPanel + o * outPlane + oh0 * outW, (oh1 - oh0) * outW);
      }
    }, kFineRangesPerThread);
  }

  // B [K x outChannels], K in tap-major order (tap, channel), packed in panels of gemmNr columns.
  Status packWeights(const float* w) {
    const CpuFunctions& fn = cpuFunctions();
    const int64_t K = taps_ * inChannels_;
    bool fresh = false;
    OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend(), static_cast<int64_t>(packedBSize(fn, K, outChannels_)),
                                                node_.name, packKey(w, nullptr, "tap-conv", {taps_, inChannels_, outChannels_}),
                                                &packed_, &packedMem_, &fresh));
    if (!fresh) return Status::ok();
    std::vector<float> tapMajor(K * outChannels_);
    for (int64_t o = 0; o < outChannels_; ++o)
      for (int64_t c = 0; c < inChannels_; ++c)
        for (int64_t t = 0; t < taps_; ++t)
          tapMajor[(t * inChannels_ + c) * outChannels_ + o] = w[(o * inChannels_ + c) * taps_ + t];
    packGemmB(fn, tapMajor.data(), outChannels_, 1, K, outChannels_, reinterpret_cast<float*>(packed_.host()));
    return Status::ok();
  }

  const Node& node_;
  Window window_;
  FusedActivation act_;
  bool clampOnly_ = true;
  float lo_ = 0.f, hi_ = 0.f;
  int64_t batch_ = 0, inChannels_ = 0, outChannels_ = 0, stride_ = 1;
  int64_t paddedRows_ = 0, phaseLength_ = 0, taps_ = 0, groupRows_ = 1;
  int64_t offsets_[kMaxTaps] = {};
  RuntimeTensor packed_, padded_;
  std::unique_ptr<MemObj> packedMem_;
};

}  // namespace

std::unique_ptr<Execution> createTapConvExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs) {
  if (!cpuFunctions().gemmTaps || !cpuKernelChoices().tapConv) return nullptr;
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (x.shape.size() != 4 || op.node->getInt("group", 1) != 1 || w.shape[0] % cpuFunctions().gemmNr != 0)
    return nullptr;
  Window window;
  if (!readConvWindow(*op.node, x.shape, w.shape, &window)) return nullptr;
  if (window.kernelSize() == 1 || window.kernelSize() > kMaxTaps || window.outSize() == 0) return nullptr;
  if (window.stride[1] != window.stride[2] || window.stride[2] > 2) return nullptr;
  if (window.dilation[1] != 1 || window.dilation[2] != 1) return nullptr;
  const int64_t outW = window.out[2], rowBlocks = (outW + cpuFunctions().gemmMr - 1) / cpuFunctions().gemmMr;
  if (rowBlocks > 1 && outW / rowBlocks < kMinBlockRows) return nullptr;
  return std::make_unique<TapConvExecution>(backend, op);
}

}  // namespace osprey
