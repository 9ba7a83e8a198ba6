// Depthwise QLinearConv on channels-last bytes (quantized_depthwise_nhwc.h): weight packing for
// both formats, the portable kernel and the choice of kernel.
#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"

#include "backends/cpu/kernels/cpu_functions.h"

#include <algorithm>
#include <cstring>

namespace osprey {

namespace {
#include "backends/cpu/kernels/quantized_depthwise_nhwc.inl"
#include "backends/cpu/kernels/quantized_depthwise_nhwc_quads.inl"

int32_t weightValue(uint8_t b, bool signedW) { return signedW ? static_cast<int8_t>(b) : static_cast<int32_t>(b); }

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

size_t qdepthwiseNhwcPackedBytes(int64_t channels, int64_t kernelH, int64_t kernelW) {
  return static_cast<size_t>(nhwcBlocks(channels) * kernelH * kernelW * kNhwcBlock) * sizeof(float);
}

void qdepthwiseNhwcPackWeights(const uint8_t* w, int64_t channels, int64_t kernelH, int64_t kernelW, bool signedW,
                               const int32_t* wZero, int64_t wZeroCount, void* packed) {
  constexpr int64_t L = kNhwcBlock;
  const int64_t taps = kernelH * kernelW;
  float* dst = static_cast<float*>(packed);
  std::fill(dst, dst + nhwcBlocks(channels) * taps * L, 0.f);
  for (int64_t c = 0; c < channels; ++c) {
    const int32_t zero = wZero[wZeroCount == 1 ? 0 : c];
    for (int64_t t = 0; t < taps; ++t)
      dst[(c / L * taps + t) * L + c % L] = static_cast<float>(weightValue(w[c * taps + t], signedW) - zero);
  }
}

size_t qdepthwiseNhwcPackedQuadBytes(int64_t channels, int64_t kernelH, int64_t kernelW) {
  const int64_t sums = kernelH * quadBlocks(channels) * kQuadLanes * 4;
  return static_cast<size_t>(quadWeightSumsOffset(channels, kernelH, kernelW) + sums);
}

void qdepthwiseNhwcPackQuads(const uint8_t* w, int64_t channels, int64_t kernelH, int64_t kernelW, bool signedW,
                             const int32_t* wZero, int64_t wZeroCount, void* packed) {
  constexpr int64_t L = kQuadLanes;
  const int64_t taps = kernelH * kernelW, quads = quadsPerKernelRow(kernelW), lanes = quadBlocks(channels) * L;
  const int64_t blockBytes = quadWeightBlockBytes(kernelH, kernelW);
  auto* dst = static_cast<uint8_t*>(packed);
  std::memset(dst, 0, qdepthwiseNhwcPackedQuadBytes(channels, kernelH, kernelW));
  int32_t* sums = reinterpret_cast<int32_t*>(dst + quadWeightSumsOffset(channels, kernelH, kernelW));
  for (int64_t c = 0; c < channels; ++c) {
    const int32_t zero = wZero[wZeroCount == 1 ? 0 : c];
    int32_t sum = 0;
    for (int64_t kh = 0; kh < kernelH; ++kh) {
      for (int64_t kw = 0; kw < kernelW; ++kw) {
        const int32_t value = weightValue(w[c * taps + kh * kernelW + kw], signedW) - zero;  // in int8: centred
        uint8_t* quad = dst + c / L * blockBytes + ((kh * quads + kw / 4) * L + c % L) * 4;
        quad[kw % 4] = static_cast<uint8_t>(value);
        sum += value;
      }
      sums[kh * lanes + c] = sum;
    }
  }
}

bool qdepthwiseNhwcCentredWeights(bool signedW, const int32_t* wZero, int64_t wZeroCount) {
  const int32_t centre = signedW ? 0 : 128;
  return std::all_of(wZero, wZero + wZeroCount, [centre](int32_t z) { return z == centre; });
}

void qdwconv_nhwc__scalar(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                          const int32_t* bias, const float* scale, const QGemmOutputStage& stage, int64_t oh0,
                          int64_t oh1, uint8_t* y, void* scratch) {
  depthwiseNhwcRows<ScalarVector>(args, x, packedWeights, bias, scale, stage, oh0, oh1, y, scratch);
}

size_t qdepthwiseNhwcScratchBytes(const QDepthwiseNhwcArgs& args) { return nhwcScratchBytes(args); }

size_t qdepthwiseNhwcQuadScratchBytes(const QDepthwiseNhwcArgs& args) {
  return static_cast<size_t>(quadScratch(args).bytes);
}

QDepthwiseNhwcKernels qdepthwiseNhwcKernels(const char* isa, bool centredWeights) {
  QDepthwiseNhwcKernels k;
  k.run = qdwconv_nhwc__scalar;
  k.pack = qdepthwiseNhwcPackWeights;
  k.packedBytes = qdepthwiseNhwcPackedBytes;
  k.scratchBytes = qdepthwiseNhwcScratchBytes;
#if defined(__x86_64__) || defined(_M_X64)
  if (std::strcmp(isa, "avx512f") == 0) {
    // The table proved AVX-512F and the OS's ZMM state; VNNI is asked of the CPU as the table
    // asks it for the integer GEMM.
    if (centredWeights && cpuSupportsAvx512Vnni()) {
      k.run = qdwconv_nhwc_quads__avx512vnni;
      k.pack = qdepthwiseNhwcPackQuads;
      k.packedBytes = qdepthwiseNhwcPackedQuadBytes;
      k.scratchBytes = qdepthwiseNhwcQuadScratchBytes;
    } else {
      k.run = qdwconv_nhwc__avx512f;
    }
  } else if (std::strcmp(isa, "avx2_fma") == 0) {
    k.run = qdwconv_nhwc__avx2;
  }
#else
  (void)isa, (void)centredWeights;
#endif
  return k;
}

}  // namespace osprey
