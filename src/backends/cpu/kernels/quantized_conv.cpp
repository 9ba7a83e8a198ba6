// QLinearConv and ConvInteger on the CPU (1-D and 2-D): depthwise convolutions sum their taps
// per channel plane; every other group runs the integer GEMM (qgemm.h) with the weights as A
// (a row per output channel, packed once) and the input's rows (its channel planes, or for a
// window larger than one position the planes' shifted copies, im2col) packed into B's panels
// at each run, so that C's rows are the output's NCHW planes.
// On maps of fewer positions than the GEMM's column block (a 2x2 or 4x4 map: 4 of 32 columns
// used), positions become A's rows instead and the weights B's columns, so that the kernel's
// short row blocks carry the waste, and the [position][channel] result is transposed into the
// planes. Depthwise convolutions on small maps run on 16 channels in lanes (quantized_depthwise.h).
// Constant weights are packed once; others (an ONNX test's inputs) at each run. Constant scales
// are combined once at resize; other scales, the zero points and the bias are read at each run.
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/layout_choice.h"
#include "backends/cpu/kernels/quantized_conv_nhwc.h"
#include "backends/cpu/kernels/quantized_depthwise.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

// Short rows: plain loops the compiler vectorizes, cheaper than a libc call per row.
inline void fillBytes(uint8_t* d, int64_t n, uint8_t v) {
  for (int64_t i = 0; i < n; ++i) d[i] = v;
}
inline void copyBytes(uint8_t* d, const uint8_t* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = s[i];
}
// d[i] = s[2 * i], sixteen at a time (reading no further than s[2 * (n - 1)]).
inline void copyEvenBytes(uint8_t* d, const uint8_t* s, int64_t n) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128i low = _mm_set1_epi16(0x00FF);
  for (; i + 17 <= n; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i + 16));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low)));
  }
#endif
  for (; i < n; ++i) d[i] = s[2 * i];
}

bool isPlanarWindow(const Window& w) { return w.in[0] == 1 && w.kernel[0] == 1 && w.out[0] == 1; }

int64_t roundUp(int64_t v, int64_t step) { return (v + step - 1) / step * step; }

// Whether the GEMM wastes clearly less of its blocks with positions as rows: a block of mr rows
// costs about mr single rows, so the padding of each form is what it pays for.
bool positionsAsRows(const QGemmFunctions& f, int64_t positions, int64_t channels) {
  const int64_t channelRows = roundUp(channels, f.mr) * roundUp(positions, f.nr);
  const int64_t positionRows = positions * roundUp(channels, f.nr);
  return positionRows * 10 < channelRows * 7;
}

// dst[c * dstStride + r] = src[r * srcStride + c] for r < rows, c < columns; the longer side
// is the inner loop (a 2x2 map has 4 positions against hundreds of channels).
void transposeBytes(const uint8_t* src, int64_t srcStride, int64_t rows, int64_t columns, uint8_t* dst,
                    int64_t dstStride) {
  if (rows < columns) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < columns; ++c) dst[c * dstStride + r] = src[r * srcStride + c];
  } else {
    for (int64_t c = 0; c < columns; ++c)
      for (int64_t r = 0; r < rows; ++r) dst[c * dstStride + r] = src[r * srcStride + c];
  }
}

// Column arrays (scales, biases, offsets) are read in whole blocks of the widest kernel.
constexpr int64_t kColumnPadding = 64;

// Where each op keeps its operands (-1: it has no such input).
struct ConvOperands {
  int x = 0, xScale = -1, xZero = -1, w = -1, wScale = -1, wZero = -1, yScale = -1, yZero = -1, bias = -1;
  bool int32Out = false;  // ConvInteger: the int32 sums themselves
};

ConvOperands convOperandsOf(OpType type) {
  ConvOperands o;
  if (type == OpType::QLinearConv) o = {0, 1, 2, 3, 4, 5, 6, 7, 8, false};
  if (type == OpType::ConvInteger) o = {0, -1, 2, 1, -1, 3, -1, -1, -1, true};
  return o;
}

class QuantizedConvExecution : public Execution {
 public:
  QuantizedConvExecution(CPUBackend* backend, const OpRef& op)
      : Execution(backend), node_(*op.node), ops_(convOperandsOf(op.node->type)) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[ops_.x], &w = *inputs[ops_.w];
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &window_));
    batch_ = x.shape[0], channels_ = x.shape[1], outChannels_ = w.shape[0];
    group_ = node_.getInt("group", 1);
    groupIn_ = channels_ / group_, groupOut_ = outChannels_ / group_;
    K_ = groupIn_ * window_.kernelSize();
    depthwise_ = groupIn_ == 1 && groupOut_ == 1 && window_.kernelSize() <= kMaxExactTaps;
    pointwise_ = window_.kernelSize() == 1 && window_.stride[1] == 1 && window_.stride[2] == 1 &&
                 window_.padBegin[1] == 0 && window_.padBegin[2] == 0 && window_.padEnd[1] == 0 &&
                 window_.padEnd[2] == 0;
    constantWeights_ = w.constData != nullptr;
    scale_.assign(static_cast<size_t>(outChannels_ + kColumnPadding), 1.f);
    bias_.assign(static_cast<size_t>(outChannels_ + kColumnPadding), 0);
    rowOffset_.assign(static_cast<size_t>(groupOut_ + kColumnPadding), 0);
    weights_.resize(static_cast<size_t>(group_));
    // Constant scales are divided once here: a division per channel at each run cost as much as
    // a small map's sums.
    constantScales_ = !ops_.int32Out && inputs[ops_.xScale]->constData && inputs[ops_.yScale]->constData &&
                      inputs[ops_.wScale]->constData;
    if (constantScales_) computeScales(inputs);
    const CpuFunctions& fn = cpuFunctions();
    lanes_ = depthwise_ && !ops_.int32Out && preferDepthwiseLanes(window_.inSize(), window_.outSize(), channels_);
    rowsArePositions_ = !depthwise_ && !ops_.int32Out && positionsAsRows(fn.qgemm, window_.outSize(), groupOut_);
    if (depthwise_) {
      tapsFloat_.resize(static_cast<size_t>(outChannels_ * window_.kernelSize()));
      if (lanes_) {
        lanesKernel_ = qdepthwiseLanesKernel(fn.isa);
        lanesTaps_.resize(static_cast<size_t>(roundUp(outChannels_, kQDepthwiseLanes) * window_.kernelSize()));
      }
      if (constantWeights_) depthwiseTaps(w, inputAt(inputs, ops_.wZero));
    } else if (constantWeights_) {
      OSPREY_RETURN_IF_ERROR(packWeights(w, inputAt(inputs, ops_.wZero)));
    }
    return acquireScratch();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor& y = *outputs[0];
    QGemmOutputStage stage;
    stage.int32Output = ops_.int32Out;
    stage.signedOutput = y.dtype == DataType::Int8;
    stage.lo = stage.signedOutput ? -128 : 0;
    stage.hi = stage.signedOutput ? 127 : 255;
    stage.zeroPoint = byteAt(inputAt(inputs, ops_.yZero), 0);
    if (!ops_.int32Out && !constantScales_) computeScales(inputs);
    if (const RuntimeTensor* bias = inputAt(inputs, ops_.bias))
      std::memcpy(bias_.data(), bias->host(), static_cast<size_t>(outChannels_) * sizeof(int32_t));
    const RuntimeTensor& x = *inputs[ops_.x];
    const int32_t xZero = byteAt(inputAt(inputs, ops_.xZero), 0);
    if (depthwise_) {
      if (!constantWeights_) depthwiseTaps(*inputs[ops_.w], inputAt(inputs, ops_.wZero));
      runDepthwise(x, xZero, stage, y);
    } else {
      if (!constantWeights_) packWeightsNow(*inputs[ops_.w], inputAt(inputs, ops_.wZero));
      runGemm(x, xZero, stage, y);
    }
    return Status::ok();
  }

 private:
  void computeScales(const std::vector<RuntimeTensor*>& inputs) {
    const float xs = reinterpret_cast<const float*>(inputs[ops_.xScale]->host())[0];
    const float ys = reinterpret_cast<const float*>(inputs[ops_.yScale]->host())[0];
    const RuntimeTensor* wScale = inputs[ops_.wScale];
    const float* ws = reinterpret_cast<const float*>(wScale->host());
    for (int64_t o = 0; o < outChannels_; ++o)
      scale_[o] = xs * ws[wScale->elements() == 1 ? 0 : o] / ys;  // ONNX Runtime's order
  }

  // Group g's slice of per-channel weight zero points (or the per-tensor one).
  const RuntimeTensor* groupZeroPoints(const RuntimeTensor* wZero, int64_t g, RuntimeTensor* slice) const {
    if (!wZero || wZero->elements() == 1) return wZero;
    slice->dtype = wZero->dtype;
    slice->shape = {groupOut_};
    slice->constData = wZero->host() + g * groupOut_;
    return slice;
  }

  Status packWeights(const RuntimeTensor& w, const RuntimeTensor* wZero) {
    for (int64_t g = 0; g < group_; ++g) {
      const uint8_t* src = w.host() + g * groupOut_ * K_;
      RuntimeTensor slice;
      if (rowsArePositions_)  // element (k, o) at src[o * K + k]
        OSPREY_RETURN_IF_ERROR(weights_[g].pack(backend(), node_.name, false, src, w.dtype, src, "conv-columns", 1, K_,
                                                K_, groupOut_, groupZeroPoints(wZero, g, &slice)));
      else
        OSPREY_RETURN_IF_ERROR(weights_[g].pack(backend(), node_.name, true, src, w.dtype, src, "conv", 1, K_, K_,
                                                groupOut_, groupZeroPoints(wZero, g, &slice)));
    }
    return Status::ok();
  }

  void packWeightsNow(const RuntimeTensor& w, const RuntimeTensor* wZero) {
    const bool asRows = !rowsArePositions_;
    const int64_t perGroup = static_cast<int64_t>(QuantizedWeights::packedBytes(asRows, K_, groupOut_));
    for (int64_t g = 0; g < group_; ++g) {
      RuntimeTensor slice;
      weights_[g].packInto(asRows, w.host() + g * groupOut_ * K_, w.dtype, 1, K_, K_, groupOut_,
                           groupZeroPoints(wZero, g, &slice), scratch_.host() + weightsOffset_ + g * perGroup);
    }
  }

  void depthwiseTaps(const RuntimeTensor& w, const RuntimeTensor* wZero) {
    const int64_t taps = window_.kernelSize();
    for (int64_t o = 0; o < outChannels_; ++o) {
      const int32_t zw = byteAt(wZero, wZero && wZero->elements() > 1 ? o : 0);
      for (int64_t t = 0; t < taps; ++t) tapsFloat_[o * taps + t] = static_cast<float>(byteAt(&w, o * taps + t) - zw);
    }
    if (lanes_) packDepthwiseLanesTaps(tapsFloat_.data(), outChannels_, taps, lanesTaps_.data());
  }

  Status acquireScratch() {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    const int64_t positions = window_.outSize();
    auto aligned = [](int64_t v) { return (v + 63) / 64 * 64; };
    if (depthwise_) {  // a float input plane and output plane per thread
      ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
      threads_ = pool ? pool->threads() : 1;
      planeFloats_ = window_.inSize() + window_.outSize();
      const int64_t slotBytes = lanes_ ? depthwiseLanesScratchBytes(lanesArgs()) : planeFloats_ * 4;
      std::unique_ptr<MemObj> memory;
      return acquireByteScratch(backend(), threads_ * slotBytes, "QLinearConv planes", node_.name, &scratch_, &memory);
    }
    colsOffset_ = 0;
    panelsOffset_ = aligned(pointwise_ ? 0 : K_ * positions);
    if (rowsArePositions_) {  // [position][k] bytes, their packed rows and sums, [position][channel] bytes
      sumsOffset_ = panelsOffset_ + aligned(positions * K_);
      packedRowsOffset_ = sumsOffset_ + aligned(4 * positions);
      resultOffset_ = packedRowsOffset_ + aligned(positions * static_cast<int64_t>(qgemmPackedARowBytes(f, K_)));
      weightsOffset_ = resultOffset_ + aligned(positions * groupOut_);
    } else {
      sumsOffset_ = panelsOffset_ + aligned(static_cast<int64_t>(qgemmPackedBBytes(f, K_, positions)));
      weightsOffset_ = sumsOffset_ + aligned(4 * qgemmPaddedN(f, positions));
    }
    const int64_t weightBytes =
        constantWeights_
            ? 0
            : group_ * static_cast<int64_t>(QuantizedWeights::packedBytes(!rowsArePositions_, K_, groupOut_));
    std::unique_ptr<MemObj> memory;
    return acquireByteScratch(backend(), weightsOffset_ + weightBytes, "QLinearConv scratch", node_.name, &scratch_,
                              &memory);
  }

  // Stride 1 with rows as wide as the input's ("same" padding): the tap's row is the plane shifted
  // by one offset, so one copy of the rows it reads, then the padded edges written over what the
  // copy brought in from the neighbouring input rows (small planes make a copy per row costly).
  void shiftedPlane(const uint8_t* plane, int64_t rowShift, int64_t colOffset, int64_t lo, int64_t hi, uint8_t pad,
                    uint8_t* row) const {
    const int64_t H = window_.in[1], W = window_.in[2], outH = window_.out[1];
    const int64_t first = std::clamp<int64_t>(-rowShift, 0, outH), last = std::clamp<int64_t>(H - rowShift, first, outH);
    fillBytes(row, first * W, pad);
    fillBytes(row + last * W, (outH - last) * W, pad);
    if (first == last) return;
    const int64_t begin = first * W + lo, end = (last - 1) * W + hi;
    std::memcpy(row + begin, plane + begin + rowShift * W + colOffset, static_cast<size_t>(end - begin));
    for (int64_t oh = first; oh < last; ++oh) {
      fillBytes(row + oh * W, lo, pad);
      fillBytes(row + oh * W + hi, W - hi, pad);
    }
  }

  // cols[c * taps + tap][p] = the input byte that tap reads for output position p, `pad` where
  // it reads padding.
  void im2colBytes(const uint8_t* x, uint8_t pad, uint8_t* cols, ThreadPool* pool) const {
    const Window& g = window_;
    const int64_t H = g.in[1], W = g.in[2], outH = g.out[1], outW = g.out[2], taps = g.kernelSize();
    const int64_t sw = g.stride[2];
    parallelFor(pool, groupIn_ * taps, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t c = r / taps, kh = r % taps / g.kernel[2], kw = r % g.kernel[2];
        const uint8_t* plane = x + c * H * W;
        uint8_t* row = cols + r * outH * outW;
        const int64_t offset = kw * g.dilation[2] - g.padBegin[2];
        int64_t lo = 0, hi = 0;
        validRange(offset, sw, W, outW, &lo, &hi);
        if (g.stride[1] == 1 && sw == 1 && outW == W && lo < hi) {
          shiftedPlane(plane, kh * g.dilation[1] - g.padBegin[1], offset, lo, hi, pad, row);
          continue;
        }
        for (int64_t oh = 0; oh < outH; ++oh, row += outW) {
          const int64_t ih = oh * g.stride[1] - g.padBegin[1] + kh * g.dilation[1];
          if (ih < 0 || ih >= H || lo >= hi) {
            fillBytes(row, outW, pad);
            continue;
          }
          fillBytes(row, lo, pad);
          const uint8_t* in = plane + ih * W + offset;
          if (sw == 1)
            copyBytes(row + lo, in + lo, hi - lo);
          else if (sw == 2)
            copyEvenBytes(row + lo, in + 2 * lo, hi - lo);
          else
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] = in[ow * sw];
          fillBytes(row + hi, outW - hi, pad);
        }
      }
    });
  }

  void runGemm(const RuntimeTensor& x, int32_t xZero, QGemmOutputStage stage, const RuntimeTensor& y) {
    if (rowsArePositions_) return runGemmPositionsAsRows(x, xZero, stage, y);
    const QGemmFunctions& f = cpuFunctions().qgemm;
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int64_t positions = window_.outSize(), inSize = window_.inSize();
    const int32_t za = activationZeroPoint(x.dtype, xZero);
    QGemmOperandBytes bytes;
    bytes.flip = x.dtype == DataType::Int8;
    bytes.zeroPoints = &za;
    uint8_t* base = scratch_.host();
    uint8_t *cols = base + colsOffset_, *panels = base + panelsOffset_;
    int32_t* sums = reinterpret_cast<int32_t*>(base + sumsOffset_);
    stage.unsignedA = false;
    stage.scalePerRow = true;
    for (int64_t g = 0; g < group_; ++g) {
      const QuantizedWeights& wg = weights_[g];
      qgemmZeroPointOffsets(f, K_, groupOut_, groupOut_, bias_.data() + g * groupOut_, za, wg.sums(), wg.zeroPoints(),
                            rowOffset_.data());
      stage.rowOffset = rowOffset_.data();
      stage.rowZeroPoints = wg.zeroPoints();
      stage.columnSums = wg.needsActivationSums() ? sums : nullptr;
      stage.scale = scale_.data() + g * groupOut_;
      for (int64_t n = 0; n < batch_; ++n) {
        const uint8_t* xg = x.host() + (n * channels_ + g * groupIn_) * inSize;
        if (!pointwise_) im2colBytes(xg, static_cast<uint8_t>(xZero), cols, pool);
        const uint8_t* rows = pointwise_ ? xg : cols;
        const int64_t rowStride = pointwise_ ? inSize : positions;
        parallelFor(pool, (positions + f.nr - 1) / f.nr, [&](int64_t p0, int64_t p1) {
          const int64_t n0 = p0 * f.nr, n1 = std::min(positions, p1 * f.nr);
          qgemmPackBRows(f, rows + n0, rowStride, K_, n1 - n0, bytes,
                         panels + static_cast<int64_t>(qgemmPackedBBytes(f, K_, f.nr)) * p0);
        });
        if (stage.columnSums) qgemmColumnSums(f, rows, rowStride, 1, K_, positions, bytes, sums);
        const int64_t elementBytes = ops_.int32Out ? 4 : 1;
        qgemm(pool, f, groupOut_, positions, K_, wg.data(), panels, stage,
              y.host() + (n * outChannels_ + g * groupOut_) * positions * elementBytes, positions);
      }
    }
  }

  // A the positions' rows of activations (uint8 in the GEMM), B the weights' panels, C
  // [position][channel] transposed into the output planes.
  void runGemmPositionsAsRows(const RuntimeTensor& x, int32_t xZero, QGemmOutputStage stage, const RuntimeTensor& y) {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int64_t positions = window_.outSize(), inSize = window_.inSize();
    const int32_t za = activationZeroPoint(x.dtype, xZero);
    QGemmOperandBytes bytes;
    bytes.flip = x.dtype == DataType::Int8;
    bytes.zeroPoints = &za;
    uint8_t* base = scratch_.host();
    uint8_t *cols = base + colsOffset_, *rows = base + panelsOffset_, *packed = base + packedRowsOffset_;
    uint8_t* result = base + resultOffset_;
    int32_t* sums = reinterpret_cast<int32_t*>(base + sumsOffset_);
    stage.unsignedA = true;
    stage.scalePerRow = false;
    for (int64_t g = 0; g < group_; ++g) {
      const QuantizedWeights& wg = weights_[g];
      qgemmZeroPointOffsets(f, K_, groupOut_, qgemmPaddedN(f, groupOut_), bias_.data() + g * groupOut_, za, wg.sums(),
                            wg.zeroPoints(), rowOffset_.data());
      stage.columnOffset = rowOffset_.data();
      stage.columnZeroPoints = wg.needsActivationSums() ? wg.zeroPoints() : nullptr;
      stage.rowSums = stage.columnZeroPoints ? sums : nullptr;
      stage.scale = scale_.data() + g * groupOut_;
      for (int64_t n = 0; n < batch_; ++n) {
        const uint8_t* xg = x.host() + (n * channels_ + g * groupIn_) * inSize;
        if (!pointwise_) im2colBytes(xg, static_cast<uint8_t>(xZero), cols, pool);
        transposeBytes(pointwise_ ? xg : cols, pointwise_ ? inSize : positions, K_, positions, rows, K_);
        qgemmPackA(f, rows, K_, positions, K_, bytes, packed, stage.rowSums ? sums : nullptr);
        qgemm(pool, f, positions, groupOut_, K_, packed, wg.data(), stage, result, groupOut_);
        transposeBytes(result, groupOut_, positions, groupOut_, y.host() + (n * outChannels_ + g * groupOut_) * positions,
                       positions);
      }
    }
  }

  QDepthwiseLanesArgs lanesArgs() const {
    const Window& g = window_;
    QDepthwiseLanesArgs a;
    a.inH = g.in[1], a.inW = g.in[2], a.outH = g.out[1], a.outW = g.out[2];
    a.kernelH = g.kernel[1], a.kernelW = g.kernel[2];
    a.strideH = g.stride[1], a.strideW = g.stride[2];
    a.padH = g.padBegin[1], a.padW = g.padBegin[2];
    a.dilationH = g.dilation[1], a.dilationW = g.dilation[2];
    return a;
  }

  // Depthwise planes run the float depthwise kernels on (x - zx) and (w - zw), which is exact:
  // every product and partial sum is an integer below 2^24 (kMaxExactTaps taps of 255 * 255),
  // so float adds them without rounding in any order. Then + bias in int32, and the requantisation.
  static constexpr int64_t kMaxExactTaps = (int64_t{1} << 24) / (255 * 255);

  void runDepthwise(const RuntimeTensor& x, int32_t xZero, const QGemmOutputStage& stage, const RuntimeTensor& y) {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const bool signedX = x.dtype == DataType::Int8;
    if (lanes_)
      return runDepthwiseLanes(pool, threads_, lanesKernel_, lanesArgs(), x.host(), signedX, xZero, batch_, channels_,
                               lanesTaps_.data(), bias_.data(), scale_.data(), stage, y.host(), scratch_.host());
    const Window& g = window_;
    const int64_t inSize = g.inSize(), outSize = g.outSize();
    DepthwiseArgs args;
    args.inH = g.in[1], args.inW = g.in[2], args.outH = g.out[1], args.outW = g.out[2];
    args.kernelH = g.kernel[1], args.kernelW = g.kernel[2];
    args.strideH = g.stride[1], args.strideW = g.stride[2];
    args.padH = g.padBegin[1], args.padW = g.padBegin[2];
    args.dilationH = g.dilation[1], args.dilationW = g.dilation[2];
    const CpuFunctions& fn = cpuFunctions();
    const bool strided = fn.depthwiseStride2 && args.kernelH == args.kernelW &&
                         (args.kernelH == 3 || args.kernelH == 5) && args.strideH == 2 && args.strideW == 2 &&
                         args.dilationH == 1 && args.dilationW == 1 && args.outW >= 8;
    const DepthwisePlaneKernel kernel = strided ? fn.depthwiseStride2 : fn.depthwisePlane;
    // One range of planes per thread, each with its own slot of the scratch.
    const int64_t planes = batch_ * channels_, perThread = (planes + threads_ - 1) / threads_;
    parallelFor(pool, threads_, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        float* plane = reinterpret_cast<float*>(scratch_.host()) + t * planeFloats_;
        float* out = plane + inSize;
        for (int64_t p = t * perThread; p < std::min(planes, (t + 1) * perThread); ++p) {
          const int64_t c = p % channels_;
          fn.qgemm.bytesToFloats(x.host() + p * inSize, inSize, signedX, xZero, plane);
          kernel(args, plane, tapsFloat_.data() + c * g.kernelSize(), 0.f, out);
          if (ops_.int32Out) {
            int32_t* yp = reinterpret_cast<int32_t*>(y.host()) + p * outSize;
            for (int64_t i = 0; i < outSize; ++i) yp[i] = static_cast<int32_t>(out[i]);
          } else {
            fn.qgemm.requantizeFloats(out, outSize, bias_[c], scale_[c], stage, y.host() + p * outSize);
          }
        }
      }
    });
  }

  const Node& node_;
  ConvOperands ops_;
  Window window_;
  int64_t batch_ = 0, channels_ = 0, outChannels_ = 0, group_ = 1, groupIn_ = 0, groupOut_ = 0, K_ = 0;
  bool depthwise_ = false, pointwise_ = false, constantWeights_ = true, lanes_ = false, rowsArePositions_ = false;
  bool constantScales_ = false;
  QDepthwiseLanesKernel lanesKernel_ = nullptr;
  std::vector<float> scale_, tapsFloat_, lanesTaps_;
  std::vector<int32_t> bias_, rowOffset_;
  std::vector<QuantizedWeights> weights_;
  int64_t colsOffset_ = 0, panelsOffset_ = 0, sumsOffset_ = 0, weightsOffset_ = 0, packedRowsOffset_ = 0,
          resultOffset_ = 0;
  int64_t threads_ = 1, planeFloats_ = 0;
  RuntimeTensor scratch_;
};

}  // namespace

std::unique_ptr<Execution> createQuantizedConvExecution(CPUBackend* backend, const OpRef& op,
                                                        const std::vector<RuntimeTensor*>& inputs,
                                                        const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || outputs.size() != 1) return nullptr;
  const ConvOperands o = convOperandsOf(op.node->type);
  if (o.w < 0) return nullptr;
  const RuntimeTensor *x = inputAt(inputs, o.x), *w = inputAt(inputs, o.w);
  if (!isByteType(x) || !isByteType(w)) return nullptr;
  if (o.int32Out ? outputs[0]->dtype != DataType::Int32 : !isByteType(outputs[0])) return nullptr;
  if (x->shape.size() < 3 || x->shape.size() > 4 || w->shape.size() != x->shape.size()) return nullptr;
  const int64_t outChannels = w->shape[0];
  const int64_t group = op.node->getInt("group", 1);
  if (group <= 0 || x->shape[1] % group != 0 || outChannels % group != 0 || w->shape[1] != x->shape[1] / group)
    return nullptr;
  const RuntimeTensor* xZero = inputAt(inputs, o.xZero);
  if (xZero && (xZero->dtype != x->dtype || xZero->elements() != 1)) return nullptr;
  const RuntimeTensor* wZero = inputAt(inputs, o.wZero);
  if (wZero && (wZero->dtype != w->dtype || !hasOneOr(wZero, outChannels))) return nullptr;
  if (!o.int32Out) {
    if (!isFloatScalar(inputAt(inputs, o.xScale)) || !isFloatScalar(inputAt(inputs, o.yScale))) return nullptr;
    const RuntimeTensor* yZero = inputAt(inputs, o.yZero);
    if (!yZero || yZero->dtype != outputs[0]->dtype || yZero->elements() != 1) return nullptr;
    const RuntimeTensor* wScale = inputAt(inputs, o.wScale);
    if (!wScale || wScale->dtype != DataType::Float32 || !hasOneOr(wScale, outChannels)) return nullptr;
  }
  const RuntimeTensor* bias = inputAt(inputs, o.bias);
  if (bias && (bias->dtype != DataType::Int32 || bias->elements() != outChannels)) return nullptr;
  Window window;
  if (!readConvWindow(*op.node, x->shape, w->shape, &window).isOk() || !isPlanarWindow(window)) return nullptr;
  auto nchw = std::make_unique<QuantizedConvExecution>(backend, op);
  if (auto nhwc = createQuantizedConvNhwcExecution(backend, op, inputs, outputs))
    return std::make_unique<LayoutChoiceExecution>(backend, Layout::NHWC, std::move(nchw), std::move(nhwc));
  return nchw;
}

}  // namespace osprey
