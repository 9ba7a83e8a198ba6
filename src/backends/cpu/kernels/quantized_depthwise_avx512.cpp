// The depthwise lanes kernel (quantized_depthwise.h) with one zmm register per position.
#include <immintrin.h>

#include "backends/cpu/kernels/quantized_depthwise.h"

namespace osprey {

void qdwconv_lanes16__avx512f(const QDepthwiseLanesArgs& a, const float* x, const float* w, const int32_t* bias,
                              const float* scale, const QGemmOutputStage& stage, uint8_t* y) {
  const __m512i biasV = _mm512_loadu_si512(bias), zero = _mm512_set1_epi32(stage.zeroPoint);
  const __m512 scaleV = _mm512_loadu_ps(scale);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(stage.lo - stage.zeroPoint));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(stage.hi - stage.zeroPoint));
  for (int64_t oh = 0; oh < a.outH; ++oh) {
    const int64_t ih0 = oh * a.strideH - a.padH;
    for (int64_t ow = 0; ow < a.outW; ++ow) {
      const int64_t iw0 = ow * a.strideW - a.padW;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t kh = 0; kh < a.kernelH; ++kh) {
        const int64_t ih = ih0 + kh * a.dilationH;
        if (ih < 0 || ih >= a.inH) continue;
        const float* xr = x + ih * a.inW * kQDepthwiseLanes;
        const float* wr = w + kh * a.kernelW * kQDepthwiseLanes;
        for (int64_t kw = 0; kw < a.kernelW; ++kw) {
          const int64_t iw = iw0 + kw * a.dilationW;
          if (iw < 0 || iw >= a.inW) continue;
          acc = _mm512_fmadd_ps(_mm512_loadu_ps(xr + iw * kQDepthwiseLanes), _mm512_loadu_ps(wr + kw * kQDepthwiseLanes),
                                acc);
        }
      }
      // float(int32(sum) + bias) * scale, clamped, rounded half to even (the MXCSR default), + zero point.
      const __m512i sum = _mm512_add_epi32(_mm512_cvttps_epi32(acc), biasV);
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), scaleV);
      f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), zero);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + (oh * a.outW + ow) * kQDepthwiseLanes), _mm512_cvtepi32_epi8(q));
    }
  }
}

}  // namespace osprey
