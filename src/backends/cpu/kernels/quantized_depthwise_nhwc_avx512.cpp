// The NHWC depthwise kernel (quantized_depthwise_nhwc.h) with 16 channels per zmm register.
// AVX512F only: the channel tail is stored with a masked narrowing store.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"

namespace osprey {

namespace {
#include "backends/cpu/kernels/quantized_depthwise_nhwc.inl"

class Avx512Vector {
 public:
  static constexpr int64_t kLanes = kNhwcBlock;
  static constexpr int kPositions = 8;
  using Reg = __m512;

  // An int8 byte b is the uint8 byte b ^ 0x80 less 128, so both read as uint8 with the zero
  // point moved by 128.
  Avx512Vector(const QDepthwiseNhwcArgs& a, const QGemmOutputStage& s)
      : flip_(_mm_set1_epi8(static_cast<char>(a.signedX ? 0x80 : 0))),
        xZero_(_mm512_set1_epi32(a.signedX ? a.xZero + 128 : a.xZero)),
        yZero_(_mm512_set1_epi32(s.zeroPoint)),
        lo_(_mm512_set1_ps(static_cast<float>(s.lo - s.zeroPoint))),
        hi_(_mm512_set1_ps(static_cast<float>(s.hi - s.zeroPoint))) {}

  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static Reg fma(Reg a, Reg b, Reg acc) { return _mm512_fmadd_ps(a, b, acc); }
  // A loaded column stays in its register: without the empty asm GCC folds the load back into
  // every FMA that reads it, and the loads, not the FMAs, then bound the loop.
  static Reg keep(Reg r) {
    __asm__("" : "+v"(r));
    return r;
  }

  void convert(const uint8_t* x, float* out) const {
    const __m128i bytes = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)), flip_);
    _mm512_storeu_ps(out, _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), xZero_)));
  }

  // (sum + bias high) * scale (NhwcCall: the float form of float(int32(sum) + bias)), clamped,
  // rounded half to even (the MXCSR default), + zero point; the narrowing store keeps each
  // int32's low byte, as the cast to uint8_t does. The constants are read before the first byte
  // store, which could alias them.
  template <int P>
  void store(const Reg* acc, const float* biasHigh, const float* scale, uint8_t* y, int64_t step, int64_t n) const {
    const __m512 high = _mm512_loadu_ps(biasHigh), scaleV = _mm512_loadu_ps(scale), lo = lo_, hi = hi_;
    const __m512i yZero = yZero_;
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
      const __m512 f = _mm512_mul_ps(_mm512_add_ps(acc[p], high), scaleV);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(f, lo), hi)), yZero);
      if (n == kLanes)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + p * step), _mm512_cvtepi32_epi8(q));
      else
        _mm512_mask_cvtepi32_storeu_epi8(y + p * step, mask, q);
    }
  }

 private:
  __m128i flip_;
  __m512i xZero_, yZero_;
  __m512 lo_, hi_;
};

}  // namespace

void qdwconv_nhwc__avx512f(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                           const int32_t* bias, const float* scale, const QGemmOutputStage& stage, int64_t oh0,
                           int64_t oh1, uint8_t* y, void* scratch) {
  depthwiseNhwcRows<Avx512Vector>(args, x, packedWeights, bias, scale, stage, oh0, oh1, y, scratch);
}

}  // namespace osprey
