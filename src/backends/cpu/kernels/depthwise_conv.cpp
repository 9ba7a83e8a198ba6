// CPU depthwise Conv (2-D, one input channel per group, float32). The paths, by table:
// - AVX-512, square 3x3 / 5x5 windows, stride 1 or 2, one output channel per input channel: 16
//   channels in lanes (a band of input rows moved in by 16x16 transposes, register-blocked rows,
//   Swish or Sigmoid on the lanes, a transposing store back; 1152 channels on 7x7 with 5x5
//   windows: 0.074 -> 0.031 ms at two threads), except on wide maps, where the transposes cost
//   more than the blocking saves and the kernels in place run: the flat kernel for 3x3 stride 1
//   with the input's size from 28 columns (14 with Relu / Clip fused), 16 consecutive positions
//   per vector across row ends (MobileNetV2's 14x14 with Relu6: 0.028 flat against 0.038), and the
//   strided kernel for stride 2 from 8 output columns (interleaving its input, four times the
//   output, cost more than the convolution).
// - Otherwise, with one output channel per input channel: blocks of 8 channels through the NC8HW8
//   row kernel, each block's input interleaved into a zero-padded band of rows in per-thread
//   scratch, so that small maps such as 7x7 waste no lanes, and de-interleaved back.
// - A channel multiplier above 1, and wide 3x3 stride-1 rows off the table's kernels: per plane.
// Bias, the residual Z and Relu/Clip are fused; other activations run over the finished rows.
#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/nc8hw8.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "ops/activation.h"

namespace osprey {

namespace {

constexpr int64_t kLanes = 8;
constexpr int64_t kBandFloats = 16 * 1024;  // 64 KiB of interleaved input rows per band
constexpr int64_t kLaneBandFloats = 8 * 1024;  // 16-lane input and output rows of one band: 32 KiB
// Narrower stride-2 outputs fill too few of the strided kernel's 16 lanes: 7-wide 5x5 ran 0.061
// ms in place against 0.048 in blocks (EfficientNet's 672 channels), 7-wide 3x3 tied.
constexpr int64_t kMinStridedWidth = 8;

// The masks of the flat kernel (DepthwiseFlatKernel): bit j of masks[v * taps + t] is set when
// position v * kFlatLanes + j is an output position whose tap t reads inside the input.
std::vector<uint16_t> depthwiseFlatMasks(const DepthwiseArgs& a) {
  const int64_t positions = a.outH * a.outW, taps = a.kernelH * a.kernelW;
  std::vector<uint16_t> masks((positions + kFlatLanes - 1) / kFlatLanes * taps, 0);
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t oh = p / a.outW, ow = p % a.outW;
    for (int64_t kh = 0; kh < a.kernelH; ++kh)
      for (int64_t kw = 0; kw < a.kernelW; ++kw) {
        const int64_t ih = oh * a.strideH + kh * a.dilationH - a.padH, iw = ow * a.strideW + kw * a.dilationW - a.padW;
        if (ih >= 0 && ih < a.inH && iw >= 0 && iw < a.inW)
          masks[(p / kFlatLanes) * taps + kh * a.kernelW + kw] |= static_cast<uint16_t>(1u << (p % kFlatLanes));
      }
  }
  return masks;
}

class DepthwiseConvExecution : public Execution {
 public:
  DepthwiseConvExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
    Window g;
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &g));
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &act_));
    batch_ = x.shape[0];
    inChannels_ = x.shape[1];
    outChannels_ = w.shape[0];
    args_ = DepthwiseArgs();
    args_.inH = g.in[1], args_.inW = g.in[2], args_.outH = g.out[1], args_.outW = g.out[2];
    args_.kernelH = g.kernel[1], args_.kernelW = g.kernel[2];
    args_.strideH = g.stride[1], args_.strideW = g.stride[2];
    args_.padH = g.padBegin[1], args_.padW = g.padBegin[2];
    args_.dilationH = g.dilation[1], args_.dilationW = g.dilation[2];
    if (act_.kind == FusedActivation::Kind::Relu) {
      args_.reluMin = true, args_.clipLo = 0.f, args_.clipHi = std::numeric_limits<float>::infinity();
    } else if (act_.kind == FusedActivation::Kind::Clip) {
      args_.reluMin = true, args_.clipLo = act_.a, args_.clipHi = act_.b;
    }
    const RuntimeTensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    const CpuFunctions& fn = cpuFunctions();
    const bool flatFits = fn.depthwiseFlat && args_.kernelH == 3 && args_.kernelW == 3 && args_.strideH == 1 &&
                          args_.strideW == 1 && args_.outH == args_.inH && args_.outW == args_.inW;
    const bool stridedFits = fn.depthwiseStride2 && args_.kernelH == args_.kernelW &&
                             (args_.kernelH == 3 || args_.kernelH == 5) && args_.strideH == 2 && args_.strideW == 2 &&
                             args_.dilationH == 1 && args_.dilationW == 1 && args_.outW >= kMinStridedWidth;
    flat_ = strided_ = lanes16_ = blocked_ = false;
    if (takesLanes16(bias, flatFits, stridedFits)) return resizeLanes16(w, bias);
    if (flatFits) {
      flat_ = true;
      flatMasks_ = depthwiseFlatMasks(args_);
      return Status::ok();
    }
    if (stridedFits) {
      strided_ = true;
      return Status::ok();
    }
    // Wide 3x3 stride-1 rows fill the per-plane kernel's vectors, and there interleaving the input
    // costs more than it saves (EfficientNet-B0's 56- and 112-wide maps: 0.165 and 0.150 ms per
    // plane, 0.20 and 0.18 ms in blocks, at one thread); everywhere else blocks are faster.
    const bool widePlanes = args_.kernelH == 3 && args_.kernelW == 3 && args_.strideW == 1 && args_.outW >= 32;
    blocked_ = outChannels_ == inChannels_ && (!bias || bias->constData) && !widePlanes;  // the bias is packed once
    if (!blocked_) return Status::ok();
    threads_ = 1;
    if (ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool()) threads_ = pool->threads();
    // The padded band: output rows are computed in groups of 4 columns (the kernel's unrolled
    // step), so the band is wide enough for outW rounded up to 4, reading zeros past the input.
    const int64_t windowRows = (args_.kernelH - 1) * args_.dilationH + 1;
    const int64_t windowCols = (args_.kernelW - 1) * args_.dilationW + 1;
    rowOutputs_ = (args_.outW + 3) / 4 * 4;
    tileW_ = std::max((rowOutputs_ - 1) * args_.strideW + windowCols, args_.padW + args_.inW);
    const int64_t fitRows = kBandFloats / (tileW_ * kLanes);
    bandRows_ = fitRows > windowRows ? (fitRows - windowRows) / args_.strideH + 1 : 1;
    bandRows_ = std::max<int64_t>(1, std::min(bandRows_, args_.outH));
    tileRows_ = (bandRows_ - 1) * args_.strideH + windowRows;
    if (packedLanes_ != kLanes) OSPREY_RETURN_IF_ERROR(packWeights(w, bias, kLanes));
    std::unique_ptr<MemObj> scratchMem;
    return acquireConvScratch(backend(), {threads_ * slotFloats()}, "depthwise scratch", node_.name, &scratch_,
                              &scratchMem);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* z = optionalFloats(inputs, 3);
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    if (lanes16_) {
      runLanes16(pool, x, z, y);
      return Status::ok();
    }
    if (blocked_) {
      runBlocked(pool, x, z, y);
      return Status::ok();
    }
    const float* w = reinterpret_cast<const float*>(inputs[1]->host());
    const float* bias = optionalFloats(inputs, 2);
    const int64_t M = outChannels_, perGroup = outChannels_ / inChannels_;
    const int64_t inSize = args_.inH * args_.inW, outSize = args_.outH * args_.outW, kSize = args_.kernelH * args_.kernelW;
    const DepthwisePlaneKernel kernel = strided_ ? cpuFunctions().depthwiseStride2 : cpuFunctions().depthwisePlane;
    const DepthwiseFlatKernel flatKernel = flat_ ? cpuFunctions().depthwiseFlat : nullptr;
    const bool separateActivation = !args_.reluMin && act_.kind != FusedActivation::Kind::None;
    parallelFor(pool, batch_ * M, [&](int64_t begin, int64_t end) {
      for (int64_t nm = begin; nm < end; ++nm) {
        const int64_t n = nm / M, m = nm % M;
        float* yc = y + nm * outSize;
        DepthwiseArgs args = args_;
        args.residual = z ? z + nm * outSize : nullptr;
        const float* plane = x + (n * inChannels_ + m / perGroup) * inSize;
        if (flatKernel)
          flatKernel(args, flatMasks_.data(), plane, w + m * kSize, bias ? bias[m] : 0.f, yc);
        else
          kernel(args, plane, w + m * kSize, bias ? bias[m] : 0.f, yc);
        if (separateActivation) applyActivation(cpuFunctions(), act_, yc, outSize);
      }
    });
    return Status::ok();
  }

 private:
  int64_t blocks() const { return (outChannels_ + kLanes - 1) / kLanes; }
  int64_t taps() const { return args_.kernelH * args_.kernelW; }
  // One thread's scratch: a padded band of interleaved input rows, then the band's interleaved
  // output rows (outW apart; the last row's extra outputs, up to rowOutputs_, spill past them).
  int64_t slotFloats() const {
    return (tileRows_ * tileW_ + bandRows_ * args_.outW + rowOutputs_ - args_.outW) * kLanes;
  }

  // The layout of the kernels on channels in lanes (packLaneDepthwiseWeights), in STATIC memory:
  // once, unless a later resize moves to the path with the other lane count.
  Status packWeights(const RuntimeTensor& w, const RuntimeTensor* bias, int64_t lanes) {
    const int64_t blockCount = (outChannels_ + lanes - 1) / lanes;
    bool fresh = false;
    OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend(), blockCount * (taps() + 1) * lanes, node_.name,
                                                packKey(w.host(), bias ? bias->host() : nullptr, "depthwise-lanes",
                                                        {lanes, outChannels_, taps()}),
                                                &packed_, &packedMem_, &fresh));
    packedLanes_ = lanes;
    if (!fresh) return Status::ok();
    packLaneDepthwiseWeights(reinterpret_cast<const float*>(w.host()),
                             bias ? reinterpret_cast<const float*>(bias->host()) : nullptr, outChannels_, taps(), lanes,
                             reinterpret_cast<float*>(packed_.host()));
    return Status::ok();
  }

  // The AVX-512 kernel on 16 channels in lanes: square 3x3 and 5x5 windows, stride 1 or 2, one
  // output channel per input channel, a constant bias (packed with the weights). The kernels in
  // place keep the wide maps: 3x3 stride 1 from 28 columns (14 where Relu / Clip is fused there)
  // and stride 2 from 8 output columns, where moving the planes into lanes costs more than the
  // register blocking saves.
  bool takesLanes16(const RuntimeTensor* bias, bool flatFits, bool stridedFits) const {
    const DepthwiseArgs& a = args_;
    const bool fits = cpuFunctions().nc16DepthwiseRows && outChannels_ == inChannels_ && (!bias || bias->constData) &&
                      a.kernelH == a.kernelW && (a.kernelH == 3 || a.kernelH == 5) && a.strideH == a.strideW &&
                      (a.strideH == 1 || a.strideH == 2) && a.dilationH == 1 && a.dilationW == 1;
    if (!fits || !cpuKernelChoices().depthwiseLanes) return false;
    const bool clampOnly = act_.kind == FusedActivation::Kind::None || a.reluMin;
    return !stridedFits && !(flatFits && (a.outW >= 28 || (a.outW >= 14 && clampOnly)));
  }

  // Bands of output rows whose input rows and output rows, 16 channels each, fit kLaneBandFloats.
  Status resizeLanes16(const RuntimeTensor& w, const RuntimeTensor* bias) {
    lanes16_ = true;
    threads_ = 1;
    if (ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool()) threads_ = pool->threads();
    const int64_t S = args_.strideH, K = args_.kernelH;
    auto floatsFor = [&](int64_t rows) { return (((rows - 1) * S + K) * args_.inW + rows * args_.outW) * 16; };
    bandRows_ = 1;
    while (bandRows_ < args_.outH && floatsFor(bandRows_ + 1) <= kLaneBandFloats) ++bandRows_;
    tileRows_ = (bandRows_ - 1) * S + K;
    if (packedLanes_ != 16) OSPREY_RETURN_IF_ERROR(packWeights(w, bias, 16));
    std::unique_ptr<MemObj> scratchMem;
    return acquireConvScratch(backend(), {threads_ * lanes16SlotFloats()}, "depthwise scratch", node_.name, &scratch_,
                              &scratchMem);
  }
  int64_t lanes16SlotFloats() const { return (tileRows_ * args_.inW + bandRows_ * args_.outW) * 16; }

  // Tasks of (image, block of 16 channels, band of output rows), split evenly over the threads:
  // the band's input rows into lanes, the rows kernel, the activation on the lanes, and back.
  void runLanes16(ThreadPool* pool, const float* x, const float* z, float* y) const {
    const CpuFunctions& fn = cpuFunctions();
    constexpr int64_t L = 16;
    const int64_t blockCount = (outChannels_ + L - 1) / L, bands = (args_.outH + bandRows_ - 1) / bandRows_;
    const int64_t tasks = batch_ * blockCount * bands;
    const int64_t inSize = args_.inH * args_.inW, outSize = args_.outH * args_.outW;
    const float* weights = reinterpret_cast<const float*>(packed_.host());
    const float* bias = weights + blockCount * taps() * L;
    float* scratch = reinterpret_cast<float*>(scratch_.host());
    constexpr float kInf = std::numeric_limits<float>::infinity();
    // Relu / Clip in the rows kernel unless the residual comes first (then in the transpose back);
    // any other activation on the lanes, or over the finished planes where there is a residual.
    const bool clampInKernel = args_.reluMin && !z;
    const bool separateActivation = !args_.reluMin && act_.kind != FusedActivation::Kind::None;
    BlockedDepthwiseArgs base;
    base.inW = args_.inW, base.outW = args_.outW, base.kernelH = args_.kernelH, base.kernelW = args_.kernelW;
    base.strideH = args_.strideH, base.strideW = args_.strideW, base.padW = args_.padW;
    base.lo = clampInKernel ? args_.clipLo : -kInf, base.hi = clampInKernel ? args_.clipHi : kInf;
    const float backLo = args_.reluMin && z ? args_.clipLo : -kInf, backHi = args_.reluMin && z ? args_.clipHi : kInf;
    parallelFor(pool, threads_, [&](int64_t slotBegin, int64_t slotEnd) {
      for (int64_t slot = slotBegin; slot < slotEnd; ++slot) {
        float* inRows = scratch + slot * lanes16SlotFloats();
        float* outRows = inRows + tileRows_ * args_.inW * L;
        for (int64_t task = slot * tasks / threads_; task < (slot + 1) * tasks / threads_; ++task) {
          const int64_t image = task / (blockCount * bands), block = (task / bands) % blockCount, b = task % bands;
          const int64_t c0 = block * L, lanes = std::min(L, outChannels_ - c0);
          const int64_t oh0 = b * bandRows_, oh1 = std::min(args_.outH, oh0 + bandRows_);
          const int64_t firstRow = oh0 * args_.strideH - args_.padH;
          const int64_t inLo = std::max<int64_t>(0, firstRow);
          const int64_t inHi = std::min(args_.inH, (oh1 - 1) * args_.strideH - args_.padH + args_.kernelH);
          BlockedDepthwiseArgs a = base;
          a.inH = std::max<int64_t>(0, inHi - inLo), a.padH = args_.padH + inLo;  // rows from inLo
          const int64_t planes = image * outChannels_ + c0;
          if (a.inH > 0) fn.nc16Interleave(x + planes * inSize + inLo * args_.inW, inSize, lanes, a.inH * args_.inW, inRows);
          fn.nc16DepthwiseRows(a, oh0, oh1, inRows, weights + block * taps() * L, bias + block * L, outRows);
          const int64_t first = oh0 * args_.outW, count = (oh1 - oh0) * args_.outW;
          if (separateActivation && !z) applyActivation(fn, act_, outRows, count * L);
          float* yPlanes = y + planes * outSize + first;
          fn.transposeToPlanes(outRows, L, count, lanes, nullptr, z ? z + planes * outSize + first : nullptr, backLo,
                               backHi, yPlanes, outSize);
          if (separateActivation && z)
            for (int64_t c = 0; c < lanes; ++c) applyActivation(fn, act_, yPlanes + c * outSize, count);
        }
      }
    });
  }

  // Tasks of (image, block of 8 channels, band of output rows), split evenly over the threads.
  void runBlocked(ThreadPool* pool, const float* x, const float* z, float* y) const {
    const CpuFunctions& fn = cpuFunctions();
    const int64_t bands = (args_.outH + bandRows_ - 1) / bandRows_, tasks = batch_ * blocks() * bands;
    const int64_t inSize = args_.inH * args_.inW, outSize = args_.outH * args_.outW;
    const float* weights = reinterpret_cast<const float*>(packed_.host());
    const float* bias = weights + blocks() * taps() * kLanes;
    float* scratch = reinterpret_cast<float*>(scratch_.host());
    BlockedDepthwiseArgs base;  // on the padded band: no padding left to skip
    base.inW = tileW_, base.outW = rowOutputs_, base.kernelH = args_.kernelH, base.kernelW = args_.kernelW;
    base.strideH = args_.strideH, base.strideW = args_.strideW;
    base.dilationH = args_.dilationH, base.dilationW = args_.dilationW;
    // Relu / Clip in the row kernel unless the residual must be added first (after the rows are
    // de-interleaved); any other activation over the finished rows.
    const bool clampInKernel = args_.reluMin && !z;
    base.lo = clampInKernel ? args_.clipLo : -std::numeric_limits<float>::infinity();
    base.hi = clampInKernel ? args_.clipHi : std::numeric_limits<float>::infinity();
    const bool separateActivation = !args_.reluMin && act_.kind != FusedActivation::Kind::None;
    const int64_t windowRows = (args_.kernelH - 1) * args_.dilationH + 1;
    parallelFor(pool, threads_, [&](int64_t slotBegin, int64_t slotEnd) {
      for (int64_t slot = slotBegin; slot < slotEnd; ++slot) {
        float* band = scratch + slot * slotFloats();
        float* outRows = band + tileRows_ * tileW_ * kLanes;
        for (int64_t task = slot * tasks / threads_; task < (slot + 1) * tasks / threads_; ++task) {
          const int64_t image = task / (blocks() * bands), block = (task / bands) % blocks(), b = task % bands;
          const int64_t c0 = block * kLanes, lanes = std::min(kLanes, outChannels_ - c0);
          const int64_t oh0 = b * bandRows_, oh1 = std::min(args_.outH, oh0 + bandRows_);
          // Band row r is input row firstRow + r: zero above and below the input, and in the
          // padding columns on either side.
          const int64_t firstRow = oh0 * args_.strideH - args_.padH, rows = (oh1 - oh0 - 1) * args_.strideH + windowRows;
          const int64_t inLo = std::max<int64_t>(0, firstRow), inHi = std::min(args_.inH, firstRow + rows);
          const int64_t rowFloats = tileW_ * kLanes;
          if (inHi <= inLo) {
            std::fill(band, band + rows * rowFloats, 0.f);
          } else {
            std::fill(band, band + (inLo - firstRow) * rowFloats, 0.f);
            std::fill(band + (inHi - firstRow) * rowFloats, band + rows * rowFloats, 0.f);
            for (int64_t r = inLo - firstRow; r < inHi - firstRow; ++r) {
              float* row = band + r * rowFloats;
              std::fill(row, row + args_.padW * kLanes, 0.f);
              std::fill(row + (args_.padW + args_.inW) * kLanes, row + rowFloats, 0.f);
            }
            fn.nc8Interleave(x + (image * inChannels_ + c0) * inSize + inLo * args_.inW, inSize, lanes, args_.inW,
                             inHi - inLo, tileW_, band + ((inLo - firstRow) * tileW_ + args_.padW) * kLanes);
          }
          BlockedDepthwiseArgs a = base;
          a.inH = rows;
          for (int64_t oh = oh0; oh < oh1; ++oh)
            fn.nc8DepthwiseRow(a, oh - oh0, band, weights + block * taps() * kLanes, bias + block * kLanes, nullptr,
                               outRows + (oh - oh0) * args_.outW * kLanes);
          float* yPlanes = y + (image * outChannels_ + c0) * outSize;
          fn.nc8Deinterleave(outRows, (oh1 - oh0) * args_.outW, lanes, yPlanes + oh0 * args_.outW, outSize);
          const int64_t first = oh0 * args_.outW, count = (oh1 - oh0) * args_.outW;
          for (int64_t c = 0; c < lanes; ++c) {
            float* done = yPlanes + c * outSize + first;  // this band's rows of plane c
            if (z) finishResidual(z + (image * outChannels_ + c0 + c) * outSize + first, count, done);
            if (separateActivation) applyActivation(fn, act_, done, count);
          }
        }
      }
    });
  }

  // rows += residual, then the fused Relu / Clip (NaN passes through, as in the kernels).
  void finishResidual(const float* residual, int64_t count, float* rows) const {
    for (int64_t i = 0; i < count; ++i) rows[i] += residual[i];
    if (!args_.reluMin) return;
    const float lo = args_.clipLo, hi = args_.clipHi;
    for (int64_t i = 0; i < count; ++i) rows[i] = rows[i] < lo ? lo : (rows[i] > hi ? hi : rows[i]);
  }

  const Node& node_;
  FusedActivation act_;
  DepthwiseArgs args_;
  int64_t batch_ = 0, inChannels_ = 0, outChannels_ = 0;
  bool blocked_ = false, flat_ = false, strided_ = false, lanes16_ = false;
  std::vector<uint16_t> flatMasks_;
  int threads_ = 1;
  int64_t rowOutputs_ = 0, tileW_ = 0, bandRows_ = 1, tileRows_ = 1;
  int64_t packedLanes_ = 0;  // the lanes of packed_ (8 or 16), 0 before the first packing
  RuntimeTensor packed_, scratch_;
  std::unique_ptr<MemObj> packedMem_;
};

}  // namespace

std::unique_ptr<Execution> createDepthwiseConvExecution(CPUBackend* backend, const OpRef& op,
                                                        const std::vector<RuntimeTensor*>& inputs,
                                                        const std::vector<RuntimeTensor*>& outputs) {
  if (inputs[0]->shape.size() != 4) return nullptr;  // 1-D and 3-D run the reference
  return std::make_unique<DepthwiseConvExecution>(backend, op);
}

}  // namespace osprey
