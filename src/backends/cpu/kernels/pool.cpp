// CPU MaxPool and AveragePool (2-D, float32, NCHW, no Indices output): clamped window bounds
// computed once per output row and column instead of per tap. Same order of taps and the same
// tie and NaN rule as the reference (the first value counts, later ones only when greater).
// GlobalAveragePool with vectorised partial sums (shared with ReduceSum and ReduceMean).
#include <algorithm>
#include <limits>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/cpu_kernels.h"

namespace osprey {

namespace {

template <bool kMax>
class PoolExecution : public Execution {
 public:
  PoolExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor& x = *inputs[0];
    OSPREY_RETURN_IF_ERROR(readWindow(node_, Shape(x.shape.begin() + 2, x.shape.end()), node_.getInts("kernel_shape"), &g_));
    OSPREY_RETURN_IF_ERROR(resolveForwardWindow(node_.getInt("ceil_mode", 0) != 0, &g_));
    countIncludePad_ = node_.getInt("count_include_pad", 0) != 0;
    planes_ = x.shape[0] * x.shape[1];
    // Each output column's taps inside the input row, found once (two divisions each).
    kwRange_.resize(2 * g_.out[2]);
    for (int64_t ow = 0; ow < g_.out[2]; ++ow)
      validRange(ow * g_.stride[2] - g_.padBegin[2], g_.dilation[2], g_.in[2], g_.kernel[2], &kwRange_[2 * ow],
                 &kwRange_[2 * ow + 1]);
    // 3x3 stride-2 max pooling (ResNet, SqueezeNet, ShuffleNet): the output columns whose taps
    // are all inside, [interiorLo_, interiorHi_), run the table's vectorised row kernel.
    maxPool3x3s2_ = kMax && g_.kernel[1] == 3 && g_.kernel[2] == 3 && g_.stride[1] == 2 && g_.stride[2] == 2 &&
                    g_.dilation[1] == 1 && g_.dilation[2] == 1;
    interiorLo_ = std::min(g_.out[2], (g_.padBegin[2] + 1) / 2);
    const int64_t last = g_.in[2] - 3 + g_.padBegin[2];  // 2 * ow <= last
    interiorHi_ = last < 0 ? interiorLo_ : std::max(interiorLo_, std::min(g_.out[2], last / 2 + 1));
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const Window& g = g_;
    const int64_t inH = g.in[1], inW = g.in[2], outH = g.out[1], outW = g.out[2];
    parallelFor(static_cast<CPUBackend*>(backend())->threadPool(), planes_, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const float* xp = x + p * inH * inW;
        float* yp = y + p * outH * outW;
        for (int64_t oh = 0; oh < outH; ++oh) {
          const int64_t h0 = oh * g.stride[1] - g.padBegin[1];
          int64_t khLo, khHi;  // taps inside the input rows
          validRange(h0, g.dilation[1], inH, g.kernel[1], &khLo, &khHi);
          int64_t skipLo = 0, skipHi = 0;  // columns done by the vectorised interior kernel
          if (maxPool3x3s2_ && h0 >= 0 && h0 + 2 < inH && interiorLo_ < interiorHi_) {
            const float* r0 = xp + h0 * inW - g.padBegin[2];
            cpuFunctions().maxPool3x3s2(r0, r0 + inW, r0 + 2 * inW, interiorLo_, interiorHi_, inW + g.padBegin[2],
                                        yp + oh * outW);
            skipLo = interiorLo_, skipHi = interiorHi_;
          }
          for (int64_t ow = 0; ow < outW; ++ow) {
            if (ow == skipLo && skipLo < skipHi) ow = skipHi;
            if (ow >= outW) break;
            const int64_t w0 = ow * g.stride[2] - g.padBegin[2];
            const int64_t kwLo = kwRange_[2 * ow], kwHi = kwRange_[2 * ow + 1];
            float acc = 0.f;
            if constexpr (kMax) {  // starts from the first tap; a select, not a branch, per later tap
              acc = khLo < khHi && kwLo < kwHi ? xp[(h0 + khLo * g.dilation[1]) * inW + w0 + kwLo * g.dilation[2]]
                                               : -std::numeric_limits<float>::infinity();
            }
            for (int64_t kh = khLo; kh < khHi; ++kh) {
              const float* row = xp + (h0 + kh * g.dilation[1]) * inW + w0;
              for (int64_t kw = kwLo; kw < kwHi; ++kw) {
                const float v = row[kw * g.dilation[2]];
                if constexpr (kMax) {
                  acc = v > acc ? v : acc;
                } else {
                  acc += v;
                }
              }
            }
            if constexpr (!kMax) {
              int64_t count = (khHi - khLo) * (kwHi - kwLo);
              if (countIncludePad_) {  // taps inside the padded extent (dilation 1 here)
                const int64_t hLo = std::max(h0, -g.padBegin[1]), hHi = std::min(h0 + g.kernel[1], inH + g.padEnd[1]);
                const int64_t wLo = std::max(w0, -g.padBegin[2]), wHi = std::min(w0 + g.kernel[2], inW + g.padEnd[2]);
                count = (hHi - hLo) * (wHi - wLo);
              }
              acc = count ? acc / static_cast<float>(count) : std::numeric_limits<float>::quiet_NaN();
            }
            yp[oh * outW + ow] = acc;
          }
        }
      }
    });
    return Status::ok();
  }

 private:
  const Node& node_;
  Window g_;
  bool countIncludePad_ = false;
  int64_t planes_ = 0;
  std::vector<int64_t> kwRange_;
  bool maxPool3x3s2_ = false;
  int64_t interiorLo_ = 0, interiorHi_ = 0;
};

template <bool kMax>
std::unique_ptr<Execution> createPool(CPUBackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                      const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.empty() || !inputs[0] || inputs[0]->dtype != DataType::Float32) return nullptr;
  if (inputs[0]->shape.size() != 4 || inputs[0]->layout != Layout::NCHW) return nullptr;
  if (outputs.size() > 1 && outputs[1]) return nullptr;  // Indices: the reference computes them
  if (op.node->getInts("kernel_shape").size() != 2) return nullptr;
  if (!kMax) {  // the padded count assumes dilation 1
    for (int64_t d : op.node->getInts("dilations"))
      if (d != 1) return nullptr;
  }
  return std::make_unique<PoolExecution<kMax>>(backend, op);
}

// GlobalAveragePool: the mean of each (n, c) plane (planeSumsDivided).
class GlobalAveragePoolExecution : public Execution {
 public:
  explicit GlobalAveragePoolExecution(CPUBackend* backend) : Execution(backend) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor& x = *inputs[0];
    const int64_t planes = x.shape[0] * x.shape[1], size = planes ? x.elements() / planes : 0;
    planeSumsDivided(static_cast<CPUBackend*>(backend())->threadPool(), reinterpret_cast<const float*>(x.host()),
                     planes, size, static_cast<float>(size), reinterpret_cast<float*>(outputs[0]->host()));
    return Status::ok();
  }
};

}  // namespace

// The reference sums in double one element at a time; here 32 independent float partial sums
// (vectorised, each over size / 32 elements, the tail into the first ones) are added pairwise at
// the end, and small planes sum in one chain each.
void planeSumsDivided(ThreadPool* pool, const float* xs, int64_t planes, int64_t size, float divisor, float* ys) {
  if (planes * size < 16384) pool = nullptr;
  parallelFor(pool, planes, [&](int64_t begin, int64_t end) {
    int64_t p = begin;
    // Small planes (7x7, 8x8) eight at a time, one chain of additions per plane: the partial
    // sums below spent most of a 7x7 plane's time in their tail and pairwise sum (EfficientNet-B0's
    // 1152 planes of 7x7: 0.033 -> 0.009 ms). A chain of at most kChainMax additions in float stays
    // within a few 1e-6.
    constexpr int64_t kChainMax = 64, kGroup = 8;  // 14x14 planes ran slower this way
    if (size <= kChainMax)
      for (; p + kGroup <= end; p += kGroup) {
        float sums[kGroup] = {};
        for (int64_t i = 0; i < size; ++i)
          for (int64_t j = 0; j < kGroup; ++j) sums[j] += xs[(p + j) * size + i];
        for (int64_t j = 0; j < kGroup; ++j) ys[p + j] = sums[j] / divisor;
      }
    constexpr int64_t kLanes = 32;
    for (; p < end; ++p) {
      const float* xp = xs + p * size;
      float lanes[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= size; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] += xp[i + j];
      for (int64_t j = 0; i + j < size; ++j) lanes[j] += xp[i + j];
      // Lanes added pairwise: summing them (and the tail) one by one in double was a chain of
      // about 50 dependent additions per plane, most of the time for a 7x7 plane.
      for (int64_t width = kLanes / 2; width > 0; width /= 2)
        for (int64_t j = 0; j < width; ++j) lanes[j] += lanes[j + width];
      ys[p] = lanes[0] / divisor;
    }
  });
}

std::unique_ptr<Execution> createGlobalAveragePoolExecution(CPUBackend* backend, const OpRef& op,
                                                            const std::vector<RuntimeTensor*>& inputs,
                                                            const std::vector<RuntimeTensor*>& outputs) {
  const RuntimeTensor* x = inputs.empty() ? nullptr : inputs[0];
  if (!x || x->dtype != DataType::Float32 || x->layout != Layout::NCHW || x->shape.size() < 3) return nullptr;
  if (x->elements() == 0 || !outputs[0] || outputs[0]->layout != Layout::NCHW) return nullptr;  // empty: the reference
  return std::make_unique<GlobalAveragePoolExecution>(backend);
}

std::unique_ptr<Execution> createMaxPoolExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs) {
  return createPool<true>(backend, op, inputs, outputs);
}

std::unique_ptr<Execution> createAveragePoolExecution(CPUBackend* backend, const OpRef& op,
                                                      const std::vector<RuntimeTensor*>& inputs,
                                                      const std::vector<RuntimeTensor*>& outputs) {
  return createPool<false>(backend, op, inputs, outputs);
}

}  // namespace osprey
