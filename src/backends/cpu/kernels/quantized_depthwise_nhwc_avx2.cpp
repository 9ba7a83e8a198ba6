// The NHWC depthwise kernel (quantized_depthwise_nhwc.h) on AVX2 + FMA.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"

namespace osprey {

namespace {
#include "backends/cpu/kernels/quantized_depthwise_nhwc.inl"

// 16 channels as two ymm registers, so that a block of positions keeps twice as many FMA
// chains in flight (two FMAs a cycle, four cycles each).
class Avx2Vector {
 public:
  static constexpr int64_t kLanes = kNhwcBlock;
  static constexpr int kPositions = 4;
  struct Reg {
    __m256 lo, hi;
  };

  // An int8 byte b is the uint8 byte b ^ 0x80 less 128, so both read as uint8 with the zero
  // point moved by 128.
  Avx2Vector(const QDepthwiseNhwcArgs& a, const QGemmOutputStage& s)
      : flip_(_mm_set1_epi8(static_cast<char>(a.signedX ? 0x80 : 0))),
        xZero_(_mm256_set1_epi32(a.signedX ? a.xZero + 128 : a.xZero)),
        yZero_(_mm256_set1_epi32(s.zeroPoint)),
        lo_(_mm256_set1_ps(static_cast<float>(s.lo - s.zeroPoint))),
        hi_(_mm256_set1_ps(static_cast<float>(s.hi - s.zeroPoint))) {}

  static Reg load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static Reg keep(const Reg& r) { return r; }
  static Reg fma(const Reg& a, const Reg& b, const Reg& acc) {
    return {_mm256_fmadd_ps(a.lo, b.lo, acc.lo), _mm256_fmadd_ps(a.hi, b.hi, acc.hi)};
  }

  void convert(const uint8_t* x, float* out) const {
    const __m128i bytes = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)), flip_);
    const __m256i lo = _mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes), xZero_);
    const __m256i hi = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)), xZero_);
    _mm256_storeu_ps(out, _mm256_cvtepi32_ps(lo));
    _mm256_storeu_ps(out + 8, _mm256_cvtepi32_ps(hi));
  }

  // (sum + bias high) * scale (NhwcCall: the float form of float(int32(sum) + bias)), clamped,
  // rounded half to even (the MXCSR default), + zero point; each int32's low byte is kept, as the
  // cast to uint8_t does, by masking before the unsigned packs (which then cannot saturate). The
  // constants are read before the first byte store, which could alias them.
  template <int P>
  void store(const Reg* acc, const float* biasHigh, const float* scale, uint8_t* y, int64_t step, int64_t n) const {
    const Reg high = load(biasHigh), scaleV = load(scale);
    const __m256 lo = lo_, hi = hi_;
    const __m256i yZero = yZero_, lowByte = _mm256_set1_epi32(0xFF);
    auto quantize = [&](__m256 sum, __m256 h, __m256 s) {
      const __m256 f = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_add_ps(sum, h), s), lo), hi);
      return _mm256_and_si256(_mm256_add_epi32(_mm256_cvtps_epi32(f), yZero), lowByte);
    };
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
      const __m256i words =
          _mm256_packus_epi32(quantize(acc[p].lo, high.lo, scaleV.lo), quantize(acc[p].hi, high.hi, scaleV.hi));
      const __m256i ordered = _mm256_permute4x64_epi64(words, 0xD8);  // packus works within 128-bit lanes
      const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(ordered), _mm256_extracti128_si256(ordered, 1));
      if (n == kLanes) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + p * step), bytes);
      } else {
        alignas(16) uint8_t tail[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tail), bytes);
        std::memcpy(y + p * step, tail, static_cast<size_t>(n));
      }
    }
  }

 private:
  __m128i flip_;
  __m256i xZero_, yZero_;
  __m256 lo_, hi_;
};

}  // namespace

void qdwconv_nhwc__avx2(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                        const int32_t* bias, const float* scale, const QGemmOutputStage& stage, int64_t oh0,
                        int64_t oh1, uint8_t* y, void* scratch) {
  depthwiseNhwcRows<Avx2Vector>(args, x, packedWeights, bias, scale, stage, oh0, oh1, y, scratch);
}

}  // namespace osprey
