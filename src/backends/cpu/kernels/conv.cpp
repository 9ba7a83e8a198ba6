// CPU Conv (2-D, float32, constant weights): the weights are packed once at resize into GEMM
// panels in STATIC memory; a 1x1 stride-1 unpadded convolution multiplies them straight with the
// NCHW input (on small maps with output positions as the GEMM's rows), every other runs im2col
// into planned scratch first: per thread in stripes of output positions that stay in L2 when
// there are enough of them, else whole. Bias, the residual Z (input 3) and the fused activation
// run in the GEMM's epilogue. Depthwise convolutions run the direct kernel in depthwise_conv.cpp,
// stems (few input channels) the one in direct_conv.cpp.
#include <algorithm>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "ops/window.h"

namespace osprey {

namespace {

class ConvExecution : public Execution {
 public:
  ConvExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
    group_ = node_.getInt("group", 1);
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &window_));
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &act_));
    batch_ = x.shape[0];
    inChannels_ = x.shape[1];
    outChannels_ = w.shape[0];
    groupIn_ = inChannels_ / group_;
    groupOut_ = outChannels_ / group_;
    K_ = groupIn_ * window_.kernelSize();
    pointwise_ = window_.kernelSize() == 1;
    for (int s = 0; s < 3; ++s)
      pointwise_ = pointwise_ && window_.stride[s] == 1 && window_.padBegin[s] == 0 && window_.padEnd[s] == 0;
    threads_ = 1;
    if (ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool()) threads_ = pool->threads();
    // A 1x1 window reads one column in two, from one row in two: gathering them costs less than
    // splitting every input row.
    splitColumns_ = !pointwise_ && window_.stride[2] == 2 && window_.kernel[2] > 1;
    // Groups without split columns are striped together: each thread takes whole stripes of
    // any group, instead of every group's im2col matrix and GEMM being split between threads.
    stripeGroups_ = group_ > 1 && !splitColumns_ ? group_ : 1;
    stripe_ = pointwise_ ? 0 : chooseStripe(cpuFunctions(), K_, groupOut_, window_.outSize(), stripeGroups_, threads_);
    const bool positionRows = stripe_ == 0 && preferPositionRows(cpuFunctions(), groupOut_, window_.outSize(), K_);
    if (!packedMem_ || positionRows != positionRows_) {
      positionRows_ = positionRows;
      OSPREY_RETURN_IF_ERROR(packWeights(reinterpret_cast<const float*>(w.host())));
    }
    // Scratch lives for this execution only: all are acquired before any is released.
    std::unique_ptr<MemObj> colScratch;
    if (!pointwise_) {
      const Shape colShape = stripe_ > 0 ? Shape{threads_ * K_ * stripe_} : Shape{K_, window_.outSize()};
      OSPREY_RETURN_IF_ERROR(
          acquireConvScratch(backend(), colShape, "im2col scratch", node_.name, &col_, &colScratch));
    }
    std::unique_ptr<MemObj> phaseScratch;
    if (splitColumns_)
      OSPREY_RETURN_IF_ERROR(acquireConvScratch(backend(),
                                                {groupIn_ * window_.in[0] * window_.in[1], 2 * ((window_.in[2] + 1) / 2)},
                                                "column phases", node_.name, &phases_, &phaseScratch));
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* bias = optionalFloats(inputs, 2);
    const float* z = optionalFloats(inputs, 3);
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    float* col = pointwise_ ? nullptr : reinterpret_cast<float*>(col_.host());
    const float* packed = reinterpret_cast<const float*>(packed_.host());
    const int64_t inSize = window_.inSize(), outSize = window_.outSize();
    const size_t perGroup = packedSize();
    for (int64_t n = 0; n < batch_; ++n) {
      if (stripe_ > 0 && stripeGroups_ > 1) {
        runStriped(pool, x + n * inChannels_ * inSize, nullptr, packed, bias, z ? z + n * outChannels_ * outSize : nullptr,
                   y + n * outChannels_ * outSize, col, stripeGroups_);
        continue;
      }
      for (int64_t g = 0; g < group_; ++g) {
        const float* xg = x + (n * inChannels_ + g * groupIn_) * inSize;
        const int64_t yOffset = (n * outChannels_ + g * groupOut_) * outSize;
        const float* zg = z ? z + yOffset : nullptr;
        const float* phases = splitColumns_ ? splitColumnPhases(pool, xg) : nullptr;
        if (stripe_ > 0) {
          runStriped(pool, xg, phases, packed + g * perGroup, bias ? bias + g * groupOut_ : nullptr, zg, y + yOffset,
                     col);
          continue;
        }
        if (!pointwise_) im2col(window_, xg, phases, groupIn_, col, pool);
        GemmEpilogue ep;
        ep.bias = bias ? bias + g * groupOut_ : nullptr;
        ep.biasRowStride = 1;
        ep.residual = zg;
        ep.residualRowStride = outSize;
        ep.act = act_;
        const float* columns = pointwise_ ? xg : col;
        if (positionRows_) {
          runPositionRows(pool, columns, packed + g * perGroup, ep, y + yOffset);
          continue;
        }
        GemmA a;
        a.data = packed + g * perGroup;
        a.packed = true;
        GemmB b;
        b.data = columns;
        b.rowStride = outSize;
        packedGemm(pool, cpuFunctions(), groupOut_, outSize, K_, a, b, y + yOffset, outSize, ep);
      }
    }
    return Status::ok();
  }

 private:
  // Output positions as the GEMM's rows (C^T = columns^T * W^T, then transposed into NCHW) when
  // that pads less: a 7x7 map's 49 positions fill 7 blocks of 8 rows (88%) but only 2 blocks of
  // 32 columns (77%), while the channels (usually a multiple of 32) fill the columns.
  // Only where the micro-kernel stores C transposed (gemmPlanes: AVX2 and AVX-512). With the 6x16
  // tile 49 positions run as 9 blocks of 5-6 rows against 49 columns in 4 blocks of 16 (77%):
  // MobileNetV2's 320 -> 1280 on 7x7 0.36 -> 0.28 ms, 960 -> 320 0.29 -> 0.22 (two threads, per-op
  // medians of 8 alternating runs); its 14x14 maps (196 of 208 columns) ran the same either way.
  // The transpose was once a separate pass over a position-major copy and cost about what 32
  // steps of K save at the padding's rate. The micro-kernel now transposes in registers: with a
  // margin of 2 steps, 14x14 maps go to positions too, and there the 1x1 convolutions ran 8-10%
  // faster (two threads, per-op minimums, alternating: EfficientNet-B0's 112 -> 672
  // 0.203 -> 0.187 ms, ResNet-50's 256 -> 1024 with residual 0.55-0.56 -> 0.50-0.51; the GEMM
  // alone, 196 x 672 x 112: 0.17 ms with channels as rows, 0.145 with positions).
  // The 6-row tile pads most channel counts a little (128 to 132), and with a margin of 2 steps
  // that sent large maps to positions, where A's rows (a map row per step of K) ran slower:
  // ResNet-50's 256 -> 128 on 56x56 1.39 -> 1.72 ms, ShuffleNetV2's 232 on 14x14 0.154 -> 0.168.
  // With 32 steps (the margin of the old transpose pass) the 7x7 maps keep positions and those
  // go back to channels.
  static bool preferPositionRows(const CpuFunctions& fn, int64_t channels, int64_t positions, int64_t K) {
    const int64_t mr = fn.gemmMr, nr = fn.gemmNr;
    if (!fn.gemmPlanes) return false;
    const int64_t channelRows = roundUpTo(channels, mr) * roundUpTo(positions, nr);
    // With kernels for the last few rows (fn.gemmTail) the positions are not padded at all.
    const int64_t positionRows = (fn.gemmTail ? positions : roundUpTo(positions, mr)) * roundUpTo(channels, nr);
    const int64_t transposeSteps = nr >= 32 ? 2 : 32;
    return (channelRows - positionRows) * K > transposeSteps * channelRows;
  }
  static int64_t roundUpTo(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

  size_t packedSize() const {
    return positionRows_ ? packedBSize(cpuFunctions(), K_, groupOut_) : packedASize(cpuFunctions(), groupOut_, K_);
  }

  // The weights of each group as the GEMM's A (channels as rows) or B (channels as columns).
  Status packWeights(const float* w) {
    const size_t perGroup = packedSize();
    bool fresh = false;
    OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend(), static_cast<int64_t>(perGroup * group_), node_.name,
                                                packKey(w, nullptr, "conv-gemm", {positionRows_, K_, groupOut_, group_}),
                                                &packed_, &packedMem_, &fresh));
    if (!fresh) return Status::ok();
    float* dst = reinterpret_cast<float*>(packed_.host());
    for (int64_t g = 0; g < group_; ++g) {
      const float* src = w + g * groupOut_ * K_;
      if (positionRows_)
        packGemmB(cpuFunctions(), src, 1, K_, K_, groupOut_, dst + g * perGroup);
      else
        packGemmA(cpuFunctions(), src, K_, 1, groupOut_, K_, dst + g * perGroup);
    }
    return Status::ok();
  }

  // y[o][p] = epilogue(sum over k of columns[k][p] * w[o][k]), stored into the planes by the
  // micro-kernel (gemmPlanes).
  void runPositionRows(ThreadPool* pool, const float* columns, const float* packedW, const GemmEpilogue& ep,
                       float* y) const {
    const CpuFunctions& fn = cpuFunctions();
    const int64_t positions = window_.outSize();
    GemmA a;
    a.data = columns;
    a.rowStride = 1;
    a.colStride = positions;
    GemmB b;
    b.data = packedW;
    b.packed = true;
    packedGemmToPlanes(pool, fn, positions, groupOut_, K_, a, b, ep.bias, ep.residual, ep.act, y, positions);
  }

  // Columns of output positions per im2col stripe, so that a stripe's columns (K x stripe) stay
  // in L2 while the GEMM reads them; 0 when there are too few stripes to keep every thread busy
  // (the whole im2col matrix is built and the GEMM itself is split over the threads instead).
  static int64_t chooseStripe(const CpuFunctions& fn, int64_t K, int64_t channels, int64_t outSize, int64_t groups,
                              int threads) {
    constexpr int64_t kStripeFloats = 128 * 1024;  // 512 KiB of columns
    // Every stripe streams all the weights: past a quarter of L2 they come from L3 or memory once
    // per stripe, and one whole im2col matrix (read once per block of weight rows) costs less.
    constexpr int64_t kStripedWeightFloats = 64 * 1024;
    if (K * channels > kStripedWeightFloats) return 0;
    const int64_t nr = fn.gemmNr;
    const int64_t stripe = std::max(nr, kStripeFloats / std::max<int64_t>(K, 1) / nr * nr);
    if (groups * ((outSize + stripe - 1) / stripe) >= 4 * threads) return stripe;
    // Shallow columns (a stem's 3 input channels): 4 stripes per thread are still large enough
    // to keep the micro-kernel busy, and each stays in L2 instead of a whole matrix in memory.
    const int64_t shallowStripe = (outSize / (4 * threads)) / nr * nr;
    return K <= 32 && shallowStripe >= 32 * nr ? shallowStripe : 0;
  }

  // Every input row as its even columns then its odd ones (each half (W + 1) / 2 wide), so that a
  // stride-2 im2col copies contiguous runs instead of gathering every other float.
  const float* splitColumnPhases(ThreadPool* pool, const float* x) const {
    float* phases = reinterpret_cast<float*>(phases_.host());
    const int64_t width = window_.in[2], half = (width + 1) / 2;
    parallelFor(pool, groupIn_ * window_.in[0] * window_.in[1], [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* src = x + r * width;
        float* even = phases + r * 2 * half;
        float* odd = even + half;
        for (int64_t i = 0; i < width / 2; ++i) even[i] = src[2 * i], odd[i] = src[2 * i + 1];
        if (width % 2) even[half - 1] = src[width - 1], odd[half - 1] = 0.f;
      }
    });
    return phases;
  }

  // Each thread builds the columns of its stripes of output positions and multiplies them at once;
  // with `groups` > 1, x, y, z, the bias and the packed weights hold that many groups in a row and
  // the stripes of every group are shared out together.
  void runStriped(ThreadPool* pool, const float* x, const float* phases, const float* packedW, const float* bias,
                  const float* z, float* y, float* col, int64_t groups = 1) const {
    const int64_t outSize = window_.outSize(), stripes = (outSize + stripe_ - 1) / stripe_;
    const int64_t tasks = groups * stripes;
    const size_t perGroup = packedSize();
    parallelFor(pool, threads_, [&](int64_t begin, int64_t end) {
      for (int64_t slot = begin; slot < end; ++slot) {
        float* stripeCol = col + slot * K_ * stripe_;
        for (int64_t t = slot * tasks / threads_; t < (slot + 1) * tasks / threads_; ++t) {
          const int64_t g = t / stripes, s = t % stripes;
          const int64_t p0 = s * stripe_, p1 = std::min(outSize, p0 + stripe_);
          const int64_t yOffset = g * groupOut_ * outSize;
          im2colStripe(window_, x + g * groupIn_ * window_.inSize(), phases, groupIn_, p0, p1, stripeCol);
          GemmA a;
          a.data = packedW + g * perGroup;
          a.packed = true;
          GemmB b;
          b.data = stripeCol;
          b.rowStride = p1 - p0;
          GemmEpilogue ep;
          ep.bias = bias ? bias + g * groupOut_ : nullptr;
          ep.biasRowStride = 1;
          ep.residual = z ? z + yOffset + p0 : nullptr;
          ep.residualRowStride = outSize;
          ep.act = act_;
          packedGemm(nullptr, cpuFunctions(), groupOut_, p1 - p0, K_, a, b, y + yOffset + p0, outSize, ep);
        }
      }
    });
  }

  const Node& node_;
  Window window_;
  FusedActivation act_;
  int64_t stripeGroups_ = 1;
  int64_t group_ = 1, batch_ = 0, inChannels_ = 0, outChannels_ = 0, groupIn_ = 0, groupOut_ = 0, K_ = 0;
  bool pointwise_ = false, positionRows_ = false, splitColumns_ = false;
  int threads_ = 1;
  int64_t stripe_ = 0;
  RuntimeTensor packed_, col_, phases_;
  std::unique_ptr<MemObj> packedMem_;
};

// dst[i] = input column i * stride + offW of input row `inRow` (of all the planes' rows), for i in
// [lo, hi) (all inside the row): copied from the row's column phases when the input was split
// (stride 2), else gathered from x.
void copyTapColumns(const Window& g, const float* x, const float* phases, int64_t inRow, int64_t offW, int64_t lo,
                    int64_t hi, float* __restrict dst) {
  const int64_t stride = g.stride[2], width = g.in[2];
  if (phases) {  // column 2i + offW is in phase (offW & 1) at index i + floor(offW / 2)
    const int64_t half = (width + 1) / 2;
    const float* src = phases + inRow * 2 * half + (offW & 1) * half + (offW >> 1);
    std::copy(src + lo, src + hi, dst + lo);
    return;
  }
  const float* src = x + inRow * width + offW;
  if (stride == 1) {
    std::copy(src + lo, src + hi, dst + lo);
  } else {
    for (int64_t i = lo; i < hi; ++i) dst[i] = src[i * stride];
  }
}

}  // namespace

CpuKernelChoices& cpuKernelChoices() {
  static CpuKernelChoices choices;
  return choices;
}

Status acquirePackedWeights(Backend* backend, int64_t floats, const std::string& convName, PackKey key,
                            RuntimeTensor* packed, std::unique_ptr<MemObj>* memory, bool* fresh) {
  memory->reset();
  packed->dtype = DataType::Float32;
  packed->shape = {floats};
  key.bytes = static_cast<size_t>(floats) * sizeof(float);
  *memory = static_cast<CPUBackend*>(backend)->acquirePacked(packed, key, fresh);
  if (!*memory) return Status::outOfMemory("cannot allocate packed weights for '" + convName + "'");
  return Status::ok();
}

PackKey packKey(const void* source, const void* extra, const char* what, std::initializer_list<int64_t> dims) {
  PackKey key;
  key.source = source;
  key.extra = extra;
  key.kind = what;
  for (int64_t d : dims) key.kind += ":" + std::to_string(d);
  return key;
}

Status acquireConvScratch(Backend* backend, const Shape& shape, const char* what, const std::string& convName,
                          RuntimeTensor* scratch, std::unique_ptr<MemObj>* memory) {
  scratch->dtype = DataType::Float32;
  scratch->shape = shape;
  *memory = backend->onAcquire(scratch, StorageType::DYNAMIC);
  if (!*memory) return Status::outOfMemory(std::string("cannot allocate ") + what + " for op " + convName);
  return Status::ok();
}

// col[c * kernelSize + tap][outPos] = the input value that tap reads for outPos (0 in padding).
void im2col(const Window& g, const float* x, const float* phases, int64_t channels, float* col, ThreadPool* pool) {
  const int64_t kSize = g.kernelSize(), outSize = g.outSize();
  parallelFor(pool, channels * kSize, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t tap = r % kSize;
      const int64_t kw = tap % g.kernel[2], kh = (tap / g.kernel[2]) % g.kernel[1], kd = tap / (g.kernel[2] * g.kernel[1]);
      float* dst = col + r * outSize;
      const int64_t offW = kw * g.dilation[2] - g.padBegin[2];
      int64_t lo, hi;
      validRange(offW, g.stride[2], g.in[2], g.out[2], &lo, &hi);
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const int64_t id = od * g.stride[0] - g.padBegin[0] + kd * g.dilation[0];
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const int64_t ih = oh * g.stride[1] - g.padBegin[1] + kh * g.dilation[1];
          float* row = dst + (od * g.out[1] + oh) * g.out[2];
          if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
            std::fill(row, row + g.out[2], 0.f);
            continue;
          }
          const int64_t inRow = ((r / kSize) * g.in[0] + id) * g.in[1] + ih;
          std::fill(row, row + lo, 0.f);
          copyTapColumns(g, x, phases, inRow, offW, lo, hi, row);
          std::fill(row + hi, row + g.out[2], 0.f);
        }
      }
    }
  });
}

namespace {

// How many output rows from position p (the start of a row) up to p1 read input rows that follow
// one another, each as wide as the output: stride 1 along H and W, a 2-D window, ih the first
// row's input row. 0 where that does not hold (the general copy runs).
int64_t contiguousRows(const Window& g, int64_t p, int64_t p1, int64_t id, int64_t ih) {
  const int64_t w = g.out[2];
  if (p % w != 0 || g.stride[1] != 1 || g.stride[2] != 1 || g.in[2] != w || g.in[0] != 1 || g.out[0] != 1 ||
      id != 0 || ih < 0)
    return 0;
  return std::max<int64_t>(0, std::min((p1 - p) / w, g.in[1] - ih));
}

}  // namespace

void im2colStripe(const Window& g, const float* x, const float* phases, int64_t channels, int64_t p0, int64_t p1,
                  float* col) {
  const int64_t kSize = g.kernelSize(), width = p1 - p0, plane = g.out[1] * g.out[2];
  for (int64_t r = 0; r < channels * kSize; ++r) {
    const int64_t tap = r % kSize;
    const int64_t kw = tap % g.kernel[2], kh = (tap / g.kernel[2]) % g.kernel[1], kd = tap / (g.kernel[2] * g.kernel[1]);
    float* dst = col + r * width;
    const int64_t offW = kw * g.dilation[2] - g.padBegin[2];
    int64_t lo, hi;
    validRange(offW, g.stride[2], g.in[2], g.out[2], &lo, &hi);
    for (int64_t p = p0; p < p1;) {
      const int64_t od = p / plane, oh = (p / g.out[2]) % g.out[1], ow0 = p % g.out[2];
      const int64_t ow1 = std::min(g.out[2], ow0 + (p1 - p));
      float* seg = dst + (p - p0) - ow0;  // seg[ow] is position (od, oh, ow)
      const int64_t id = od * g.stride[0] - g.padBegin[0] + kd * g.dilation[0];
      const int64_t ih = oh * g.stride[1] - g.padBegin[1] + kh * g.dilation[1];
      if (const int64_t rows = contiguousRows(g, p, p1, id, ih)) {
        // Whole rows of a stride-1 plane as wide as the input: their taps are one run of the
        // input, shifted by offW; the columns that wrapped into a neighbouring row are padding.
        const int64_t w = g.out[2], inRow = ((r / kSize) * g.in[0] + id) * g.in[1] + ih;
        const float* src = x + inRow * w + offW;
        std::copy(src + lo, src + (rows - 1) * w + hi, seg + lo);
        for (int64_t k = 0; k < rows; ++k) {
          std::fill(seg + k * w, seg + k * w + lo, 0.f);
          std::fill(seg + k * w + hi, seg + (k + 1) * w, 0.f);
        }
        p += rows * w;
        continue;
      }
      if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
        std::fill(seg + ow0, seg + ow1, 0.f);
      } else {
        const int64_t inRow = ((r / kSize) * g.in[0] + id) * g.in[1] + ih;
        const int64_t a = std::max(ow0, lo), b = std::min(ow1, hi);
        if (a >= b) {
          std::fill(seg + ow0, seg + ow1, 0.f);
        } else {
          std::fill(seg + ow0, seg + a, 0.f);
          copyTapColumns(g, x, phases, inRow, offW, a, b, seg);
          std::fill(seg + b, seg + ow1, 0.f);
        }
      }
      p += ow1 - ow0;
    }
  }
}

std::unique_ptr<Execution> createConvExecution(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || !inputs[0] || !inputs[1]) return nullptr;
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (x.dtype != DataType::Float32 || w.dtype != DataType::Float32 || !w.constData) return nullptr;
  if (x.shape.size() < 3 || x.shape.size() > 5 || w.shape.size() != x.shape.size()) return nullptr;
  if (inputs.size() > 2 && inputs[2] && inputs[2]->dtype != DataType::Float32) return nullptr;
  if (inputs.size() > 3 && inputs[3] && inputs[3]->dtype != DataType::Float32) return nullptr;
  if (x.layout != Layout::NCHW || outputs[0]->layout != Layout::NCHW) return nullptr;
  if (inputs.size() > 3 && inputs[3] && inputs[3]->layout != Layout::NCHW) return nullptr;
  const int64_t group = op.node->getInt("group", 1);
  if (group < 1 || x.shape[1] % group != 0 || w.shape[1] * group != x.shape[1] || w.shape[0] % group != 0)
    return nullptr;  // the reference kernel reports the model error
  if (auto viewed = createViewedConvExecution(backend, op, inputs, outputs)) return viewed;
  if (w.shape[1] == 1 && group > 1) return createDepthwiseConvExecution(backend, op, inputs, outputs);
  if (auto direct = createDirectConvExecution(backend, op, inputs, outputs)) return direct;
  // Over fewer than 32 input channels Winograd's GEMMs (K = the channels) run far below the
  // micro-kernel's pace; the taps' implicit GEMM has K = 9 x the channels. Two threads, single-Conv
  // models, minimums: 16 -> 64 on 55x55 0.39-0.42 ms with Winograd, 0.32-0.34 with taps; from 32
  // channels on Winograd wins (32 -> 128 on 27x27 0.26 against 0.34, 64 -> 64 on 56x56 0.90 / 1.16).
  constexpr int64_t kTapsOverWinogradBelow = 32;
  if (x.shape[1] < kTapsOverWinogradBelow)
    if (auto taps = createTapConvExecution(backend, op, inputs, outputs)) return taps;
  if (auto winograd = createWinogradConvExecution(backend, op, inputs, outputs)) return winograd;
  if (auto taps = createTapConvExecution(backend, op, inputs, outputs)) return taps;
  return std::make_unique<ConvExecution>(backend, op);
}

}  // namespace osprey
