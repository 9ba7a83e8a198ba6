// QLinearConv (2-D) on channels-last bytes (CpuOptions::QuantizedLayout): each output position
// is a row of the integer GEMM (qgemm.h) with its window's channels as K, and the weights,
// reordered to [tap][input channel] per output channel and packed once, are its B; C is the
// output itself, [position][channel]. A 1x1 convolution reads the input's rows as they are (as
// A, when the GEMM multiplies raw uint8 bytes), others gather their window rows (im2col) into
// the packed form directly. Depthwise convolutions run on channels in vector lanes
// (quantized_depthwise_nhwc.h).
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/quantized_conv_nhwc.h"
#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "backends/cpu/kernels/quantized_winograd.h"
#include "core/layout.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

constexpr int64_t kColumnPadding = 64;  // column arrays are read in whole blocks of the widest kernel
constexpr int64_t kMaxExactTaps = (int64_t{1} << 24) / (255 * 255);
// Integer Winograd below these runs slower than the direct GEMM: few channels leave the
// transforms as much work as the products, and on a small map (ResNet-50's 7x7, 16 tiles against
// 512 x 512 channels) the 16 transformed weight matrices are read for few products.
constexpr int64_t kWinogradMinChannels = 16, kWinogradMinTiles = 25;

int64_t aligned(int64_t v) { return (v + 63) / 64 * 64; }

// n bytes from s to d: eight at a time for the short spans of a stem's window rows (3 channels
// by 3 or 7 taps), the last eight overlapping, rather than a library call per span.
inline void copySpan(uint8_t* d, const uint8_t* s, int64_t n) {
  if (n >= 64 || n < 8) {
    std::memcpy(d, s, static_cast<size_t>(n));
    return;
  }
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(d + i, s + i, 8);
  if (i < n) std::memcpy(d + n - 8, s + n - 8, 8);
}

// dst[i] = src[i] ^ flip for n bytes (int8 activations into the GEMM's uint8).
inline void copyFlipped(uint8_t* __restrict dst, const uint8_t* __restrict src, int64_t n, uint8_t flip) {
  if (!flip) {
    std::memcpy(dst, src, static_cast<size_t>(n));
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] ^ flip;
}

class QuantizedConvNhwcExecution : public Execution {
 public:
  QuantizedConvNhwcExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  // Weights given at run time are read as [O][I][kH][kW]: the pipeline must not relay them.
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NHWC && (inputs[3]->constData || !layoutMatters(inputs[3]->shape, Layout::NHWC));
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[3];
    if (x.layout != Layout::NHWC && x.shape[2] * x.shape[3] > 1 && x.shape[1] > 1)
      return Status::internal("QLinearConv '" + node_.name + "': channels-last execution given another layout");
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &window_));
    batch_ = x.shape[0], channels_ = x.shape[1], outChannels_ = w.shape[0];
    group_ = node_.getInt("group", 1);
    groupIn_ = channels_ / group_, groupOut_ = outChannels_ / group_;
    taps_ = window_.kernelSize();
    K_ = groupIn_ * taps_;
    depthwise_ = groupIn_ == 1 && groupOut_ == 1 && group_ > 1;
    pointwise_ = taps_ == 1 && window_.stride[1] == 1 && window_.stride[2] == 1 && window_.padBegin[1] == 0 &&
                 window_.padBegin[2] == 0 && window_.padEnd[1] == 0 && window_.padEnd[2] == 0;
    constantWeights_ = w.constData != nullptr;
    scale_.assign(static_cast<size_t>(outChannels_ + kColumnPadding), 1.f);
    bias_.assign(static_cast<size_t>(outChannels_ + kColumnPadding), 0);
    columnOffset_.assign(static_cast<size_t>(outChannels_ + kColumnPadding), 0);
    constantScales_ = inputs[1]->constData && inputs[6]->constData && inputs[4]->constData;
    if (constantScales_) computeScales(inputs);
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    threads_ = pool ? pool->threads() : 1;
    if (depthwise_) {
      // Weights given at run time may change their zero points: they take the float-sum kernels,
      // which read any.
      const RuntimeTensor* wZero = inputAt(inputs, 5);
      bool centred = false;
      if (constantWeights_ && (!wZero || wZero->constData)) {
        readDepthwiseZeroPoints(wZero);
        centred = qdepthwiseNhwcCentredWeights(w.dtype == DataType::Int8, depthwiseZeroPoints_.data(),
                                               static_cast<int64_t>(depthwiseZeroPoints_.size()));
      }
      depthwiseKernels_ = qdepthwiseNhwcKernels(cpuFunctions().isa, centred);
      packedTaps_.assign(depthwiseKernels_.packedBytes(channels_, window_.kernel[1], window_.kernel[2]), 0);
      if (constantWeights_) packDepthwise(w, wZero);
    } else {
      OSPREY_RETURN_IF_ERROR(chooseWinograd(w, inputAt(inputs, 5)));
      weights_.resize(static_cast<size_t>(group_));
      if (constantWeights_ && !winograd_) OSPREY_RETURN_IF_ERROR(packWeights(w, inputAt(inputs, 5), true));
    }
    return acquireScratch();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &y = *outputs[0];
    QGemmOutputStage stage;
    stage.signedOutput = y.dtype == DataType::Int8;
    stage.lo = stage.signedOutput ? -128 : 0;
    stage.hi = stage.signedOutput ? 127 : 255;
    stage.zeroPoint = byteAt(inputAt(inputs, 7), 0);
    if (!constantScales_) computeScales(inputs);
    if (const RuntimeTensor* bias = inputAt(inputs, 8))
      std::memcpy(bias_.data(), bias->host(), static_cast<size_t>(outChannels_) * sizeof(int32_t));
    const int32_t xZero = byteAt(inputAt(inputs, 2), 0);
    if (depthwise_) {
      if (!constantWeights_) packDepthwise(*inputs[3], inputAt(inputs, 5));
      runDepthwise(x, xZero, stage, y);
    } else if (winograd_) {
      runWinograd(x, xZero, stage, y);
    } else {
      if (!constantWeights_) OSPREY_RETURN_IF_ERROR(packWeights(*inputs[3], inputAt(inputs, 5), false));
      runGemm(x, xZero, stage, y);
    }
    return Status::ok();
  }

 private:
  void computeScales(const std::vector<RuntimeTensor*>& inputs) {
    const float xs = reinterpret_cast<const float*>(inputs[1]->host())[0];
    const float ys = reinterpret_cast<const float*>(inputs[6]->host())[0];
    const RuntimeTensor* wScale = inputs[4];
    const float* ws = reinterpret_cast<const float*>(wScale->host());
    for (int64_t o = 0; o < outChannels_; ++o) scale_[o] = xs * ws[wScale->elements() == 1 ? 0 : o] / ys;
  }

  // Group g's weights as [output channel][tap][input channel] (the order of an im2col row), then
  // packed as B. Constants into the runtime's packed-weight cache (`cached`), others into scratch.
  Status packWeights(const RuntimeTensor& w, const RuntimeTensor* wZero, bool cached) {
    std::vector<uint8_t>& reordered = reorderedWeights_;  // kept: weights given at run time reorder at every run
    reordered.resize(static_cast<size_t>(groupOut_ * K_));
    const int64_t perGroup = static_cast<int64_t>(QuantizedWeights::packedBytes(false, K_, groupOut_));
    for (int64_t g = 0; g < group_; ++g) {
      const uint8_t* src = w.host() + g * groupOut_ * K_;
      for (int64_t o = 0; o < groupOut_; ++o)
        for (int64_t c = 0; c < groupIn_; ++c)
          for (int64_t t = 0; t < taps_; ++t) reordered[o * K_ + t * groupIn_ + c] = src[(o * groupIn_ + c) * taps_ + t];
      RuntimeTensor slice;
      const RuntimeTensor* zeroPoints = wZero;
      if (wZero && wZero->elements() > 1) {
        slice.dtype = wZero->dtype, slice.shape = {groupOut_}, slice.constData = wZero->host() + g * groupOut_;
        zeroPoints = &slice;
      }
      if (cached)
        OSPREY_RETURN_IF_ERROR(weights_[g].pack(backend(), node_.name, false, reordered.data(), w.dtype, src,
                                                "conv-channels-last", 1, K_, K_, groupOut_, zeroPoints));
      else
        weights_[g].packInto(false, reordered.data(), w.dtype, 1, K_, K_, groupOut_, zeroPoints,
                             scratch_.host() + weightsOffset_ + g * perGroup);
    }
    return Status::ok();
  }

  // Integer Winograd (quantized_winograd.h) where the GEMM is the AVX2 one, whose int16 pairs
  // it feeds: constant 3x3 weights, stride 1, no dilation, one group, enough channels for the
  // transforms to pay, and sums that cannot leave int32.
  Status chooseWinograd(const RuntimeTensor& w, const RuntimeTensor* wZero) {
    winograd_ = false;
    const Window& win = window_;
    if (cpuFunctions().qgemm.format != QGemmFormat::Pairs16 || !constantWeights_ || group_ != 1 ||
        win.kernel[1] != 3 || win.kernel[2] != 3 || win.stride[1] != 1 || win.stride[2] != 1 ||
        win.dilation[1] != 1 || win.dilation[2] != 1 || channels_ < kWinogradMinChannels ||
        outChannels_ < kWinogradMinChannels || (win.out[1] + 1) / 2 * ((win.out[2] + 1) / 2) < kWinogradMinTiles)
      return Status::ok();
    std::vector<int32_t> zeroPoints(static_cast<size_t>(wZero && wZero->elements() > 1 ? outChannels_ : 1), 0);
    for (size_t i = 0; i < zeroPoints.size(); ++i) zeroPoints[i] = byteAt(wZero, static_cast<int64_t>(i));
    const bool wSigned = w.dtype == DataType::Int8;
    const auto zeroCount = static_cast<int64_t>(zeroPoints.size());
    if (!qwinogradExact(w.host(), wSigned, zeroPoints.data(), zeroCount, outChannels_, channels_)) return Status::ok();
    bool fresh = false;
    const auto bytes = static_cast<int64_t>(qwinogradPackedBytes(channels_, outChannels_));
    OSPREY_RETURN_IF_ERROR(acquirePackedWeights(
        backend(), (bytes + 3) / 4, node_.name,
        packKey(w.constData, wZero ? wZero->host() : nullptr, "qwinograd-f2x2-3x3-pairs16", {channels_, outChannels_}),
        &winogradWeights_, &winogradMemory_, &fresh));
    if (fresh)
      qwinogradPackWeights(w.host(), wSigned, zeroPoints.data(), zeroCount, outChannels_, channels_,
                           reinterpret_cast<int16_t*>(winogradWeights_.host()));
    winograd_ = true;
    return Status::ok();
  }

  QWinogradShape winogradShape() const {
    QWinogradShape s;
    s.H = window_.in[1], s.W = window_.in[2], s.C = channels_, s.O = outChannels_;
    s.outH = window_.out[1], s.outW = window_.out[2], s.padTop = window_.padBegin[1], s.padLeft = window_.padBegin[2];
    return s;
  }

  void runWinograd(const RuntimeTensor& x, int32_t xZero, QGemmOutputStage stage, const RuntimeTensor& y) {
#if defined(__x86_64__) || defined(_M_X64)
    stage.columnOffset = bias_.data();  // Pairs16 operands carry their zero points: the offsets are the bias
    stage.scale = scale_.data();
    const QWinogradShape shape = winogradShape();
    const uint8_t flip = x.dtype == DataType::Int8 ? 0x80 : 0;
    const int32_t za = activationZeroPoint(x.dtype, xZero);
    for (int64_t n = 0; n < batch_; ++n)
      qwinogradConv__avx2(static_cast<CPUBackend*>(backend())->threadPool(), static_cast<int>(threads_), shape,
                          x.host() + n * window_.inSize() * channels_, flip, za,
                          reinterpret_cast<const int16_t*>(winogradWeights_.host()), stage,
                          y.host() + n * window_.outSize() * outChannels_, scratch_.host());
#else
    (void)x, (void)xZero, (void)stage, (void)y;
#endif
  }

  void readDepthwiseZeroPoints(const RuntimeTensor* wZero) {
    std::vector<int32_t>& zeroPoints = depthwiseZeroPoints_;
    zeroPoints.assign(static_cast<size_t>(wZero && wZero->elements() > 1 ? channels_ : 1), 0);
    for (size_t i = 0; i < zeroPoints.size(); ++i) zeroPoints[i] = byteAt(wZero, static_cast<int64_t>(i));
  }

  void packDepthwise(const RuntimeTensor& w, const RuntimeTensor* wZero) {
    readDepthwiseZeroPoints(wZero);
    depthwiseKernels_.pack(w.host(), channels_, window_.kernel[1], window_.kernel[2], w.dtype == DataType::Int8,
                           depthwiseZeroPoints_.data(), static_cast<int64_t>(depthwiseZeroPoints_.size()),
                           packedTaps_.data());
  }

  QDepthwiseNhwcArgs depthwiseArgs(bool signedX, int32_t xZero) const {
    QDepthwiseNhwcArgs a;
    a.inH = window_.in[1], a.inW = window_.in[2], a.outH = window_.out[1], a.outW = window_.out[2];
    a.channels = channels_;
    a.kernelH = window_.kernel[1], a.kernelW = window_.kernel[2];
    a.strideH = window_.stride[1], a.strideW = window_.stride[2];
    a.padH = window_.padBegin[1], a.padW = window_.padBegin[2];
    a.dilationH = window_.dilation[1], a.dilationW = window_.dilation[2];
    a.signedX = signedX, a.xZero = xZero;
    return a;
  }

  // The rows of A are used as the input's own bytes where the GEMM multiplies raw uint8 rows of
  // exactly K bytes: a 1x1 convolution of one group on uint8 activations, K a multiple of 4.
  bool readsInputAsA(DataType xType, bool needRowSums) const {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    return pointwise_ && group_ == 1 && f.format == QGemmFormat::Quads && xType == DataType::UInt8 && !needRowSums &&
           qgemmPaddedK(f, K_) == K_;
  }

  Status acquireScratch() {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    std::unique_ptr<MemObj> memory;
    if (depthwise_) {
      slotBytes_ = aligned(static_cast<int64_t>(depthwiseKernels_.scratchBytes(depthwiseArgs(false, 0))));
      return acquireByteScratch(backend(), threads_ * slotBytes_, "QLinearConv rows", node_.name, &scratch_, &memory);
    }
    if (winograd_)
      return acquireByteScratch(backend(), threads_ * static_cast<int64_t>(qwinogradScratchBytes(winogradShape())),
                                "QLinearConv Winograd tiles", node_.name, &scratch_, &memory);
    // Rows of a whole batch for a 1x1 convolution, else of one image: the gathered bytes (for
    // formats that widen them), their packed form and their sums.
    rows_ = pointwise_ ? batch_ * window_.outSize() : window_.outSize();
    const int64_t rowBytes = static_cast<int64_t>(qgemmPackedARowBytes(f, K_));
    const int64_t C = channels_, reach = ((window_.out[2] - 1) * window_.stride[2] + window_.kernel[2]) * C;
    paddedBytes_ = aligned(std::max((window_.padBegin[2] + window_.in[2]) * C, reach));
    gatheredOffset_ = 0;
    packedOffset_ = aligned(rows_ * K_);
    sumsOffset_ = packedOffset_ + aligned(rows_ * rowBytes);
    paddedOffset_ = sumsOffset_ + aligned(4 * rows_);
    weightsOffset_ = paddedOffset_ + threads_ * paddedBytes_;
    const int64_t weightBytes =
        constantWeights_ ? 0 : group_ * static_cast<int64_t>(QuantizedWeights::packedBytes(false, K_, groupOut_));
    return acquireByteScratch(backend(), weightsOffset_ + weightBytes, "QLinearConv rows", node_.name, &scratch_,
                              &memory);
  }

  // rows[p][tap * groupIn + c] = the input byte tap reads for output position p of image `x`,
  // channels of group g, xZero where it reads padding; each byte ^ flip; rowStride bytes apart;
  // positions [p0, p1) (a 1x1 convolution's positions run over the whole batch). `padded` holds
  // paddedBytes_ for the whole-row form.
  void gatherRange(const uint8_t* x, int64_t g, uint8_t xZero, uint8_t flip, uint8_t* rows, int64_t rowStride,
                   int64_t p0, int64_t p1, uint8_t* padded) const {
    const auto zeroTail = [&](int64_t p) { std::memset(rows + p * rowStride + K_, 0, static_cast<size_t>(rowStride - K_)); };
    if (pointwise_) {
      for (int64_t p = p0; p < p1; ++p) {
        copyFlipped(rows + p * rowStride, x + p * channels_ + g * groupIn_, K_, flip);
        zeroTail(p);
      }
      return;
    }
    const Window& win = window_;
    const int64_t H = win.in[1], W = win.in[2], outW = win.out[2], kW = win.kernel[2];
    const uint8_t pad = xZero ^ flip;
    if (group_ == 1 && win.dilation[2] == 1) {
      // One group, no dilation: a window row's taps are kW * C consecutive bytes of the input row
      // padded on both sides, copied once (flipped) per output row and window row.
      const int64_t C = channels_, span = kW * C;
      for (int64_t p = p0; p < p1;) {
        const int64_t oh = p / outW, ow0 = p % outW, ow1 = std::min(outW, ow0 + (p1 - p));
        for (int64_t kh = 0; kh < win.kernel[1]; ++kh) {
          const int64_t ih = oh * win.stride[1] - win.padBegin[1] + kh * win.dilation[1];
          uint8_t* first = rows + (p - ow0) * rowStride + kh * span;
          if (ih < 0 || ih >= H) {
            for (int64_t ow = ow0; ow < ow1; ++ow) std::memset(first + ow * rowStride, pad, static_cast<size_t>(span));
            continue;
          }
          std::memset(padded, pad, static_cast<size_t>(paddedBytes_));
          copyFlipped(padded + win.padBegin[2] * C, x + ih * W * C, W * C, flip);
          for (int64_t ow = ow0; ow < ow1; ++ow) copySpan(first + ow * rowStride, padded + ow * win.stride[2] * C, span);
        }
        for (int64_t ow = ow0; ow < ow1; ++ow) zeroTail(p - ow0 + ow);
        p += ow1 - ow0;
      }
      return;
    }
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t oh = p / outW, ow = p % outW;
      uint8_t* row = rows + p * rowStride;
      for (int64_t kh = 0; kh < win.kernel[1]; ++kh) {
        const int64_t ih = oh * win.stride[1] - win.padBegin[1] + kh * win.dilation[1];
        for (int64_t kw = 0; kw < kW; ++kw, row += groupIn_) {
          const int64_t iw = ow * win.stride[2] - win.padBegin[2] + kw * win.dilation[2];
          if (ih < 0 || ih >= H || iw < 0 || iw >= W)
            std::memset(row, pad, static_cast<size_t>(groupIn_));
          else
            copyFlipped(row, x + (ih * W + iw) * channels_ + g * groupIn_, groupIn_, flip);
        }
      }
      zeroTail(p);
    }
  }

  // Per image and group: each thread gathers a block of positions' rows into the packed form
  // and multiplies that block at once, while the rows are in its cache; a 1x1 convolution on
  // uint8 rows of K bytes hands them to the GEMM as they are. Few rows (small maps against many
  // channels) go to the GEMM's own tiling over the columns instead.
  void runGemm(const RuntimeTensor& x, int32_t xZero, QGemmOutputStage stage, const RuntimeTensor& y) {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int32_t za = activationZeroPoint(x.dtype, xZero);
    const uint8_t flip = x.dtype == DataType::Int8 ? 0x80 : 0;
    QGemmOperandBytes bytes;  // the gathered rows are already flipped
    bytes.zeroPoints = &za;
    QGemmOperandBytes inputBytes = bytes;
    inputBytes.flip = flip != 0;
    uint8_t* base = scratch_.host();
    uint8_t *packed = base + packedOffset_, *gathered = base + gatheredOffset_;
    int32_t* sums = reinterpret_cast<int32_t*>(base + sumsOffset_);
    const int64_t rowBytes = static_cast<int64_t>(qgemmPackedARowBytes(f, K_));
    const int64_t positions = window_.outSize(), inSize = window_.inSize();
    const int64_t images = pointwise_ ? 1 : batch_;
    const int64_t blockRows = f.mr * 8, blocks = (rows_ + blockRows - 1) / blockRows;
    const bool byBlocks = blocks >= 2 * threads_;
    stage.unsignedA = true;
    stage.scalePerRow = false;
    for (int64_t g = 0; g < group_; ++g) {
      const QuantizedWeights& wg = weights_[g];
      const bool needSums = wg.needsActivationSums();
      qgemmZeroPointOffsets(f, K_, groupOut_, qgemmPaddedN(f, groupOut_), bias_.data() + g * groupOut_, za, wg.sums(),
                            wg.zeroPoints(), columnOffset_.data());
      stage.columnOffset = columnOffset_.data();
      stage.columnZeroPoints = needSums ? wg.zeroPoints() : nullptr;
      stage.rowSums = needSums ? sums : nullptr;
      stage.scale = scale_.data() + g * groupOut_;
      const bool direct = f.format == QGemmFormat::Quads && !needSums;  // gathered rows are the packed ones
      for (int64_t n = 0; n < images; ++n) {
        const uint8_t* image = x.host() + n * inSize * channels_;
        uint8_t* out = y.host() + n * positions * outChannels_ + g * groupOut_;
        if (readsInputAsA(x.dtype, needSums)) {
          qgemm(pool, f, rows_, groupOut_, K_, image, wg.data(), stage, out, outChannels_);
          continue;
        }
        // Rows [r0, r1) gathered and packed by the calling thread.
        const auto prepare = [&](int64_t r0, int64_t r1, uint8_t* padded) {
          if (direct) return gatherRange(image, g, static_cast<uint8_t>(xZero), flip, packed, rowBytes, r0, r1, padded);
          if (pointwise_)  // the input's rows are A's: packed (flipped, widened) straight from them
            return qgemmPackA(f, image + r0 * channels_ + g * groupIn_, channels_, r1 - r0, K_, inputBytes,
                              packed + r0 * rowBytes, needSums ? sums + r0 : nullptr);
          gatherRange(image, g, static_cast<uint8_t>(xZero), flip, gathered, K_, r0, r1, padded);
          qgemmPackA(f, gathered + r0 * K_, K_, r1 - r0, K_, bytes, packed + r0 * rowBytes, needSums ? sums + r0 : nullptr);
        };
        if (!byBlocks) {
          parallelFor(pool, threads_, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t)
              prepare(t * rows_ / threads_, (t + 1) * rows_ / threads_, base + paddedOffset_ + t * paddedBytes_);
          });
          qgemm(pool, f, rows_, groupOut_, K_, packed, wg.data(), stage, out, outChannels_);
          continue;
        }
        parallelFor(pool, threads_, [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t)
            for (int64_t b = t * blocks / threads_; b < (t + 1) * blocks / threads_; ++b) {
              const int64_t r0 = b * blockRows, r1 = std::min(rows_, r0 + blockRows);
              prepare(r0, r1, base + paddedOffset_ + t * paddedBytes_);
              QGemmOutputStage block = stage;  // its row arrays start at the block's first row
              if (block.rowSums) block.rowSums += r0;
              qgemm(nullptr, f, r1 - r0, groupOut_, K_, packed + r0 * rowBytes, wg.data(), block, out + r0 * outChannels_,
                    outChannels_);
            }
        });
      }
    }
  }

  void runDepthwise(const RuntimeTensor& x, int32_t xZero, const QGemmOutputStage& stage, const RuntimeTensor& y) {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const QDepthwiseNhwcArgs args = depthwiseArgs(x.dtype == DataType::Int8, xZero);
    const int64_t outH = args.outH, inBytes = window_.inSize() * channels_, outBytes = window_.outSize() * channels_;
    // Bands of output rows over (image, row): one per thread (or image), each a single kernel
    // call. Each thread runs its own bands in turn, so more of them would share nothing out and
    // only convert the window rows above each band again (3x3 on a 14x14 map: 28 input rows
    // converted in eight bands, 16 in two).
    const int64_t bands = std::min(batch_ * outH, std::max<int64_t>(threads_, batch_));
    parallelFor(pool, threads_, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        uint8_t* slot = scratch_.host() + t * slotBytes_;
        for (int64_t b = t * bands / threads_; b < (t + 1) * bands / threads_; ++b) {
          const int64_t first = b * batch_ * outH / bands, last = (b + 1) * batch_ * outH / bands;
          for (int64_t r = first; r < last;) {
            const int64_t image = r / outH, oh0 = r % outH, oh1 = std::min(outH, oh0 + (last - r));
            depthwiseKernels_.run(args, x.host() + image * inBytes, packedTaps_.data(), bias_.data(), scale_.data(),
                                  stage, oh0, oh1, y.host() + image * outBytes, slot);
            r += oh1 - oh0;
          }
        }
      }
    });
  }

  const Node& node_;
  Window window_;
  int64_t batch_ = 0, channels_ = 0, outChannels_ = 0, group_ = 1, groupIn_ = 0, groupOut_ = 0, taps_ = 1, K_ = 0;
  bool depthwise_ = false, pointwise_ = false, constantWeights_ = true, constantScales_ = false, winograd_ = false;
  RuntimeTensor winogradWeights_;
  std::unique_ptr<MemObj> winogradMemory_;
  std::vector<float> scale_;
  std::vector<int32_t> bias_, columnOffset_;
  std::vector<QuantizedWeights> weights_;
  QDepthwiseNhwcKernels depthwiseKernels_;
  std::vector<uint8_t> packedTaps_, reorderedWeights_;
  std::vector<int32_t> depthwiseZeroPoints_;
  int64_t threads_ = 1, slotBytes_ = 0, rows_ = 0;
  int64_t gatheredOffset_ = 0, packedOffset_ = 0, sumsOffset_ = 0, paddedOffset_ = 0, weightsOffset_ = 0;
  int64_t paddedBytes_ = 0;
  RuntimeTensor scratch_;
};

}  // namespace

std::unique_ptr<Execution> createQuantizedConvNhwcExecution(CPUBackend* backend, const OpRef& op,
                                                            const std::vector<RuntimeTensor*>& inputs,
                                                            const std::vector<RuntimeTensor*>& outputs) {
  if (op.node->type != OpType::QLinearConv || inputs[0]->shape.size() != 4) return nullptr;
  const RuntimeTensor &x = *inputs[0], &w = *inputs[3];
  const int64_t group = op.node->getInt("group", 1);
  const bool depthwise = group > 1 && x.shape[1] == group && w.shape[0] == group;
  if (depthwise && w.shape[2] * w.shape[3] > kMaxExactTaps) return nullptr;
  (void)outputs;
  return std::make_unique<QuantizedConvNhwcExecution>(backend, op);
}

}  // namespace osprey
