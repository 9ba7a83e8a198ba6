// QLinearConv on the CPU (1-D and 2-D, constant weights): depthwise convolutions sum their taps
// per channel plane; every other group runs the integer GEMM (qgemm.h) with the weights as A
// (a row per output channel, packed once) and the input's rows (its channel planes, or for a
// window larger than one position the planes' shifted copies, im2col) packed into B's panels
// at each run, so that C's rows are the output's NCHW planes.
// Scales and zero points of X and Y are read at each run; W's and the bias must be constants.
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "backends/cpu/kernels/cpu_functions.h"
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

class QuantizedConvExecution : public Execution {
 public:
  QuantizedConvExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[3];
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &window_));
    batch_ = x.shape[0], channels_ = x.shape[1], outChannels_ = w.shape[0];
    group_ = node_.getInt("group", 1);
    groupIn_ = channels_ / group_, groupOut_ = outChannels_ / group_;
    K_ = groupIn_ * window_.kernelSize();
    depthwise_ = groupIn_ == 1 && groupOut_ == 1 && window_.kernelSize() <= kMaxExactTaps;
    pointwise_ = window_.kernelSize() == 1 && window_.stride[1] == 1 && window_.stride[2] == 1 &&
                 window_.padBegin[1] == 0 && window_.padBegin[2] == 0 && window_.padEnd[1] == 0 &&
                 window_.padEnd[2] == 0;
    const RuntimeTensor* wScale = inputs[4];
    const RuntimeTensor* wZero = inputs.size() > 5 ? inputs[5] : nullptr;
    const RuntimeTensor* bias = inputs.size() > 8 ? inputs[8] : nullptr;
    wScale_.resize(static_cast<size_t>(outChannels_));
    bias_.assign(static_cast<size_t>(outChannels_), 0);
    for (int64_t o = 0; o < outChannels_; ++o) {
      wScale_[o] = reinterpret_cast<const float*>(wScale->host())[wScale->elements() == 1 ? 0 : o];
      if (bias) bias_[o] = reinterpret_cast<const int32_t*>(bias->host())[o];
    }
    if (depthwise_) {
      tapsFloat_.resize(static_cast<size_t>(outChannels_ * window_.kernelSize()));
      for (int64_t o = 0; o < outChannels_; ++o) {
        const int32_t zw = byteAt(wZero, wZero && wZero->elements() > 1 ? o : 0);
        for (int64_t t = 0; t < window_.kernelSize(); ++t)
          tapsFloat_[o * window_.kernelSize() + t] = static_cast<float>(byteAt(&w, o * window_.kernelSize() + t) - zw);
      }
      return Status::ok();
    }
    OSPREY_RETURN_IF_ERROR(packWeights(w, wZero));
    return acquireScratch();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    QGemmOutputStage stage;
    const RuntimeTensor& y = *outputs[0];
    stage.signedOutput = y.dtype == DataType::Int8;
    stage.lo = stage.signedOutput ? -128 : 0;
    stage.hi = stage.signedOutput ? 127 : 255;
    stage.zeroPoint = byteAt(inputs[7], 0);
    const float xs = reinterpret_cast<const float*>(inputs[1]->host())[0];
    const float ys = reinterpret_cast<const float*>(inputs[6]->host())[0];
    scale_.assign(static_cast<size_t>(outChannels_), 0.f);
    for (int64_t o = 0; o < outChannels_; ++o) scale_[o] = xs * wScale_[o] / ys;  // ONNX Runtime's order
    if (depthwise_)
      runDepthwise(*inputs[0], byteAt(inputs[2], 0), stage, y);
    else
      runGemm(*inputs[0], byteAt(inputs[2], 0), stage, y);
    return Status::ok();
  }

 private:
  Status packWeights(const RuntimeTensor& w, const RuntimeTensor* wZero) {
    weights_.resize(static_cast<size_t>(group_));
    for (int64_t g = 0; g < group_; ++g) {
      const uint8_t* src = w.host() + g * groupOut_ * K_;
      RuntimeTensor zeroPoints;
      const RuntimeTensor* groupZero = wZero;
      if (wZero && wZero->elements() > 1) {  // this group's slice
        zeroPoints.dtype = wZero->dtype;
        zeroPoints.shape = {groupOut_};
        zeroPoints.constData = wZero->host() + g * groupOut_;
        groupZero = &zeroPoints;
      }
      OSPREY_RETURN_IF_ERROR(weights_[g].pack(backend(), node_.name, true, src, w.dtype, src, "conv", 1, K_, K_,
                                              groupOut_, groupZero));
    }
    return Status::ok();
  }

  Status acquireScratch() {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    const int64_t positions = window_.outSize();
    colsOffset_ = 0;
    panelsOffset_ = (pointwise_ ? 0 : K_ * positions + 63) / 64 * 64;
    sumsOffset_ = panelsOffset_ + static_cast<int64_t>(qgemmPackedBBytes(f, K_, positions));
    std::unique_ptr<MemObj> memory;
    return acquireByteScratch(backend(), sumsOffset_ + 4 * qgemmPaddedN(f, positions), "QLinearConv scratch",
                              node_.name, &scratch_, &memory);
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
    std::vector<int32_t> rowOffset(static_cast<size_t>(groupOut_));
    stage.unsignedA = false;
    stage.scalePerRow = true;
    for (int64_t g = 0; g < group_; ++g) {
      const QuantizedWeights& wg = weights_[g];
      qgemmZeroPointOffsets(f, K_, groupOut_, groupOut_, bias_.data() + g * groupOut_, za, wg.sums(), wg.zeroPoints(),
                            rowOffset.data());
      stage.rowOffset = rowOffset.data();
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
        qgemm(pool, f, groupOut_, positions, K_, wg.data(), panels, stage,
              y.host() + (n * outChannels_ + g * groupOut_) * positions, positions);
      }
    }
  }

  // Depthwise planes run the float depthwise kernels on (x - zx) and (w - zw), which is exact:
  // every product and partial sum is an integer below 2^24 (kMaxExactTaps taps of 255 * 255),
  // so float adds them without rounding in any order. Then + bias in int32, and the requantisation.
  static constexpr int64_t kMaxExactTaps = (int64_t{1} << 24) / (255 * 255);

  void runDepthwise(const RuntimeTensor& x, int32_t xZero, const QGemmOutputStage& stage, const RuntimeTensor& y) {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
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
    const bool signedX = x.dtype == DataType::Int8;
    parallelFor(pool, batch_ * channels_, [&](int64_t p0, int64_t p1) {
      std::vector<float> plane(static_cast<size_t>(inSize)), out(static_cast<size_t>(outSize));
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t c = p % channels_;
        fn.qgemm.bytesToFloats(x.host() + p * inSize, inSize, signedX, xZero, plane.data());
        kernel(args, plane.data(), tapsFloat_.data() + c * g.kernelSize(), 0.f, out.data());
        fn.qgemm.requantizeFloats(out.data(), outSize, bias_[c], scale_[c], stage, y.host() + p * outSize);
      }
    });
  }

  const Node& node_;
  Window window_;
  int64_t batch_ = 0, channels_ = 0, outChannels_ = 0, group_ = 1, groupIn_ = 0, groupOut_ = 0, K_ = 0;
  bool depthwise_ = false, pointwise_ = false;
  std::vector<float> wScale_, scale_;
  std::vector<int32_t> bias_;
  std::vector<float> tapsFloat_;
  std::vector<QuantizedWeights> weights_;
  int64_t colsOffset_ = 0, panelsOffset_ = 0, sumsOffset_ = 0;
  RuntimeTensor scratch_;
};

}  // namespace

std::unique_ptr<Execution> createQuantizedConvExecution(CPUBackend* backend, const OpRef& op,
                                                        const std::vector<RuntimeTensor*>& inputs,
                                                        const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 8 || outputs.size() != 1) return nullptr;
  const RuntimeTensor *x = inputs[0], *w = inputs[3];
  if (!isByteType(x) || !isByteType(w) || !w->constData || !isByteType(outputs[0])) return nullptr;
  if (x->shape.size() < 3 || x->shape.size() > 4 || w->shape.size() != x->shape.size()) return nullptr;
  const int64_t outChannels = w->shape[0];
  const int64_t group = op.node->getInt("group", 1);
  if (group <= 0 || x->shape[1] % group != 0 || outChannels % group != 0 || w->shape[1] != x->shape[1] / group)
    return nullptr;
  if (!isFloatScalar(inputs[1]) || !isFloatScalar(inputs[6])) return nullptr;
  if (inputs[2] && (inputs[2]->dtype != x->dtype || inputs[2]->elements() != 1)) return nullptr;
  if (!inputs[7] || inputs[7]->dtype != outputs[0]->dtype || inputs[7]->elements() != 1) return nullptr;
  if (!inputs[4] || inputs[4]->dtype != DataType::Float32 || !isPerTensorOr(inputs[4], outChannels)) return nullptr;
  const RuntimeTensor* wZero = inputs[5];
  if (wZero && (wZero->dtype != w->dtype || !isPerTensorOr(wZero, outChannels))) return nullptr;
  const RuntimeTensor* bias = inputs.size() > 8 ? inputs[8] : nullptr;
  if (bias && (bias->dtype != DataType::Int32 || !bias->constData || bias->elements() != outChannels)) return nullptr;
  Window window;
  if (!readConvWindow(*op.node, x->shape, w->shape, &window).isOk() || !isPlanarWindow(window)) return nullptr;
  return std::make_unique<QuantizedConvExecution>(backend, op);
}

}  // namespace osprey
