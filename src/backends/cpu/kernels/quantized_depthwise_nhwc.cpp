// Depthwise QLinearConv on channels-last bytes (quantized_depthwise_nhwc.h): weight packing, the
// portable kernel and the choice of kernel.
#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"

#include <algorithm>
#include <cstring>

namespace osprey {

namespace {
#include "backends/cpu/kernels/quantized_depthwise_nhwc.inl"

// Plain arrays of 16 channels, which the compiler may vectorise for the baseline ISA.
class ScalarVector {
 public:
  static constexpr int64_t kLanes = kNhwcBlock;
  static constexpr int kPositions = 4;
  struct Reg {
    float v[kLanes];
  };

  ScalarVector(const QDepthwiseNhwcArgs& a, const QGemmOutputStage& stage)
      : signedX_(a.signedX), xZero_(a.xZero), stage_(stage) {}

  static Reg keep(const Reg& r) { return r; }
  static Reg load(const float* p) {
    Reg r;
    std::memcpy(r.v, p, sizeof(r.v));
    return r;
  }
  static Reg fma(const Reg& a, const Reg& b, Reg acc) {
    for (int64_t i = 0; i < kLanes; ++i) acc.v[i] += a.v[i] * b.v[i];
    return acc;
  }
  void convert(const uint8_t* x, float* out) const {
    for (int64_t i = 0; i < kLanes; ++i)
      out[i] = static_cast<float>((signedX_ ? static_cast<int8_t>(x[i]) : static_cast<int32_t>(x[i])) - xZero_);
  }
  template <int P>
  void store(const Reg* acc, const float* biasHigh, const float* scale, uint8_t* y, int64_t step, int64_t n) const {
    for (int p = 0; p < P; ++p)
      for (int64_t i = 0; i < n; ++i) {
        const float f = (acc[p].v[i] + biasHigh[i]) * scale[i];
        y[p * step + i] = static_cast<uint8_t>(qgemmRequantize(f, stage_));
      }
  }

 private:
  bool signedX_;
  int32_t xZero_;
  const QGemmOutputStage& stage_;
};

}  // namespace

size_t qdepthwiseNhwcPackedBytes(int64_t channels, int64_t taps) {
  return static_cast<size_t>(nhwcBlocks(channels) * taps * kNhwcBlock) * sizeof(float);
}

void qdepthwiseNhwcPackWeights(const uint8_t* w, int64_t channels, int64_t taps, bool signedW, const int32_t* wZero,
                               int64_t wZeroCount, void* packed) {
  constexpr int64_t L = kNhwcBlock;
  float* dst = static_cast<float*>(packed);
  std::fill(dst, dst + nhwcBlocks(channels) * taps * L, 0.f);
  for (int64_t c = 0; c < channels; ++c) {
    const int32_t zero = wZero[wZeroCount == 1 ? 0 : c];
    for (int64_t t = 0; t < taps; ++t) {
      const uint8_t b = w[c * taps + t];
      const int32_t value = signedW ? static_cast<int8_t>(b) : static_cast<int32_t>(b);
      dst[(c / L * taps + t) * L + c % L] = static_cast<float>(value - zero);
    }
  }
}

void qdwconv_nhwc__scalar(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                          const int32_t* bias, const float* scale, const QGemmOutputStage& stage, int64_t oh0,
                          int64_t oh1, uint8_t* y, void* scratch) {
  depthwiseNhwcRows<ScalarVector>(args, x, packedWeights, bias, scale, stage, oh0, oh1, y, scratch);
}

QDepthwiseNhwcKernel qdepthwiseNhwcKernel(const char* isa) {
#if defined(__x86_64__) || defined(_M_X64)
  if (std::strcmp(isa, "avx512f") == 0) return qdwconv_nhwc__avx512f;
  if (std::strcmp(isa, "avx2_fma") == 0) return qdwconv_nhwc__avx2;
#endif
  return qdwconv_nhwc__scalar;
}

size_t qdepthwiseNhwcScratchBytes(const QDepthwiseNhwcArgs& args) { return nhwcScratchBytes(args); }

}  // namespace osprey
