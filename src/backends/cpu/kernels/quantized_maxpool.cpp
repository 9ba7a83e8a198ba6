// MaxPool on uint8 and int8 (2-D, NCHW or channels-last, no Indices output; quantized_elementwise.h). Each output
// row takes the maximum of its window's input rows first (a whole row at a time), then of the
// columns each tap reads; with stride 2 the row is split into its even and odd columns first so
// that every tap reads a contiguous run. Plain loops the compiler vectorises. The result is the
// reference's (src/ops/pool.cpp): the maximum of the taps inside the input (padding is never
// read), the type's minimum for a window with none.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/quantized_elementwise.h"
#include "backends/cpu/kernels/quantized_exec.h"

namespace osprey {

namespace {

// dst[c] = max(dst[c], src[c] ^ flip); restrict, so that the byte loop vectorises.
void maxFlipped(uint8_t* __restrict dst, const uint8_t* __restrict src, int64_t n, uint8_t flip) {
  for (int64_t c = 0; c < n; ++c) dst[c] = std::max(dst[c], static_cast<uint8_t>(src[c] ^ flip));
}

template <class T>
class ByteMaxPoolExecution : public Execution {
 public:
  ByteMaxPoolExecution(CPUBackend* backend, const Window& window, int64_t images, int64_t channels)
      : Execution(backend), g_(window), images_(images), channels_(channels), planes_(images * channels) {}

  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || layout == Layout::NHWC;
  }
  bool favorsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return false;
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const T* x = reinterpret_cast<const T*>(inputs[0]->host());
    T* y = reinterpret_cast<T*>(outputs[0]->host());
    if (inputs[0]->layout == Layout::NHWC) return runChannelsLast(x, y);
    const int64_t rows = planes_ * g_.out[1], inW = g_.in[2];
    ThreadPool* pool = rows * g_.out[2] >= kParallelMin ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, rows, [&](int64_t r0, int64_t r1) {
      T scratch[2 * kMaxWidth];  // the rows' maximum, then its even and odd columns (no allocation in a run)
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t plane = r / g_.out[1], oh = r % g_.out[1];
        poolRow(x + plane * g_.in[1] * inW, oh, scratch, y + r * g_.out[2]);
      }
    });
    return Status::ok();
  }

  // The widest input row the stack scratch holds; wider ones run the reference.
  static constexpr int64_t kMaxWidth = 4096;

 private:
  static constexpr int64_t kParallelMin = 16384;  // fewer output elements run on the calling thread

  // Channels last: each output position takes the maximum of its taps' channel rows, whole rows
  // at a time (the channels are the vectorised loop). int8 runs as uint8 with the top bit
  // flipped, which keeps the order: the baseline ISA has an unsigned byte maximum only.
  Status runChannelsLast(const T* xBytes, T* yBytes) const {
    const uint8_t flip = std::is_signed_v<T> ? 0x80 : 0;
    const uint8_t* x = reinterpret_cast<const uint8_t*>(xBytes);
    uint8_t* y = reinterpret_cast<uint8_t*>(yBytes);
    const int64_t inH = g_.in[1], inW = g_.in[2], outH = g_.out[1], outW = g_.out[2], C = channels_;
    const int64_t rows = images_ * outH;
    ThreadPool* pool = rows * outW * C >= kParallelMin ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t image = r / outH, oh = r % outH;
        const uint8_t* xi = x + image * inH * inW * C;
        uint8_t* out = y + r * outW * C;
        std::fill(out, out + outW * C, uint8_t{0});  // the type's lowest, flipped
        const int64_t h0 = oh * g_.stride[1] - g_.padBegin[1];
        int64_t khLo, khHi;
        validRange(h0, g_.dilation[1], inH, g_.kernel[1], &khLo, &khHi);
        for (int64_t kh = khLo; kh < khHi; ++kh) {
          const uint8_t* row = xi + (h0 + kh * g_.dilation[1]) * inW * C;
          for (int64_t kw = 0; kw < g_.kernel[2]; ++kw) {
            const int64_t q = kw * g_.dilation[2] - g_.padBegin[2];
            int64_t lo, hi;
            validRange(q, g_.stride[2], inW, outW, &lo, &hi);
            for (int64_t ow = lo; ow < hi; ++ow) {
              maxFlipped(out + ow * C, row + (ow * g_.stride[2] + q) * C, C, flip);
            }
          }
        }
        if (flip)
          for (int64_t i = 0; i < outW * C; ++i) out[i] ^= flip;
      }
    });
    return Status::ok();
  }

  // Output row oh of one plane xp into out.
  void poolRow(const T* xp, int64_t oh, T* scratch, T* out) const {
    const int64_t inH = g_.in[1], inW = g_.in[2], outW = g_.out[2];
    std::fill(out, out + outW, std::numeric_limits<T>::lowest());
    const int64_t h0 = oh * g_.stride[1] - g_.padBegin[1];
    int64_t khLo, khHi;  // the kernel rows inside the input
    validRange(h0, g_.dilation[1], inH, g_.kernel[1], &khLo, &khHi);
    if (khLo == khHi) return;
    const T* first = xp + (h0 + khLo * g_.dilation[1]) * inW;
    const T* rowMax = first;
    if (khHi - khLo > 1) {
      T* m = scratch;
      const T* second = first + g_.dilation[1] * inW;
      for (int64_t w = 0; w < inW; ++w) m[w] = std::max(first[w], second[w]);
      for (int64_t kh = khLo + 2; kh < khHi; ++kh) {
        const T* row = xp + (h0 + kh * g_.dilation[1]) * inW;
        for (int64_t w = 0; w < inW; ++w) m[w] = std::max(m[w], row[w]);
      }
      rowMax = m;
    }
    const int64_t stride = g_.stride[2];
    const T *evens = rowMax, *odds = rowMax;
    if (stride == 2) {  // tap offset q reads column 2 * ow + q: phase q & 1, shifted by q >> 1
      T* e = scratch + inW;
      T* o = e + (inW + 1) / 2;
      for (int64_t k = 0; k < inW / 2; ++k) e[k] = rowMax[2 * k], o[k] = rowMax[2 * k + 1];
      if (inW % 2) e[inW / 2] = rowMax[inW - 1];
      evens = e, odds = o;
    }
    for (int64_t kw = 0; kw < g_.kernel[2]; ++kw) {
      const int64_t q = kw * g_.dilation[2] - g_.padBegin[2];
      int64_t lo, hi;  // the output columns whose tap kw is inside the row
      validRange(q, stride, inW, outW, &lo, &hi);
      if (stride == 1) {
        for (int64_t ow = lo; ow < hi; ++ow) out[ow] = std::max(out[ow], rowMax[ow + q]);
      } else if (stride == 2) {
        const T* phase = (q & 1) ? odds : evens;
        const int64_t shift = q >> 1;  // rounds down for negative q
        for (int64_t ow = lo; ow < hi; ++ow) out[ow] = std::max(out[ow], phase[ow + shift]);
      } else {
        for (int64_t ow = lo; ow < hi; ++ow) out[ow] = std::max(out[ow], rowMax[ow * stride + q]);
      }
    }
  }

  Window g_;
  int64_t images_, channels_, planes_;
};

std::unique_ptr<Execution> createByteMaxPoolExecution(CPUBackend* backend, const OpRef& op,
                                                      const std::vector<RuntimeTensor*>& inputs,
                                                      const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() != 1 || outputs.empty() || !outputs[0]) return nullptr;
  if (outputs.size() > 1 && outputs[1]) return nullptr;  // Indices: the reference computes them
  const RuntimeTensor &x = *inputs[0], &y = *outputs[0];
  if (!isByteType(&x) || y.dtype != x.dtype || x.shape.size() != 4) return nullptr;
  if (x.layout != Layout::NCHW || y.layout != Layout::NCHW) return nullptr;
  if (x.shape[3] > ByteMaxPoolExecution<uint8_t>::kMaxWidth) return nullptr;
  const Node& node = *op.node;
  if (node.getInts("kernel_shape").size() != 2) return nullptr;
  for (const char* flag : {"ceil_mode", "count_include_pad", "storage_order"}) {
    const int64_t v = node.getInt(flag, 0);
    if (v != 0 && v != 1) return nullptr;  // the reference names the bad attribute
  }
  Window g;
  const Shape spatial(x.shape.begin() + 2, x.shape.end());
  if (!readWindow(node, spatial, node.getInts("kernel_shape"), &g).isOk()) return nullptr;
  if (!resolveForwardWindow(node.getInt("ceil_mode", 0) == 1, &g).isOk()) return nullptr;
  if (y.shape != Shape{x.shape[0], x.shape[1], g.out[1], g.out[2]}) return nullptr;
  if (x.dtype == DataType::Int8) return std::make_unique<ByteMaxPoolExecution<int8_t>>(backend, g, x.shape[0], x.shape[1]);
  return std::make_unique<ByteMaxPoolExecution<uint8_t>>(backend, g, x.shape[0], x.shape[1]);
}

}  // namespace

std::unique_ptr<Execution> createMaxPoolAnyExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs) {
  if (auto floatPool = createMaxPoolExecution(backend, op, inputs, outputs)) return floatPool;
  return createByteMaxPoolExecution(backend, op, inputs, outputs);
}

}  // namespace osprey
