// The AVX-512 depthwise kernel for 3x3 and 5x5 windows with stride 2, on a plane in place. Sixteen
// outputs of a row read 32 + K - 1 consecutive columns of each input row: two-source permutes
// pull out the even and the odd columns, which are the taps' vectors (kw even: the even columns
// from kw on; kw odd: the odd ones from kw - 1). Padding columns are masked off in the loads,
// padding rows skipped. The blocked path interleaved the whole input into channel lanes first,
// four times the output's size, and that copy cost more than the convolution (MobileNetV2's
// 96-channel 112x112 -> 56x56: interleaving 26% of the op at one thread, the row kernel 18%).
// This file alone is compiled with -mavx512f -mfma (see CMakeLists.txt).
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <limits>

#include "backends/cpu/kernels/avx512_lanes.h"

namespace osprey {

namespace {

// Lanes j with 0 <= start + j < width: the columns of a load from start that lie in the row.
inline __mmask16 columnsInside(int64_t start, int64_t width) {
  return static_cast<__mmask16>(firstLanes(width - start) & ~firstLanes(-start));
}

template <int K>
void depthwiseStride2(const DepthwiseArgs& a, const float* x, const float* w, float bias, float* y) {
  constexpr int kLoads = (K + 1) / 2;  // column steps 0, 2, 4 past the window's start
  const __m512i evenIdx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i oddIdx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i oneIdx = _mm512_set1_epi32(1);
  __m512 weight[K * K];
#pragma GCC unroll 32
  for (int t = 0; t < K * K; ++t) weight[t] = _mm512_set1_ps(w[t]);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const __m512 b = _mm512_set1_ps(bias), lo = _mm512_set1_ps(a.reluMin ? a.clipLo : -kInf),
               hi = _mm512_set1_ps(a.reluMin ? a.clipHi : kInf);
  for (int64_t oh = 0; oh < a.outH; ++oh) {
    const int64_t firstRow = oh * 2 - a.padH;
    for (int64_t ow0 = 0; ow0 < a.outW; ow0 += 16) {
      const int64_t start = ow0 * 2 - a.padW;
      __mmask16 lower[kLoads], upper[kLoads], tail[kLoads];
#pragma GCC unroll 4
      for (int l = 0; l < kLoads; ++l) {
        lower[l] = columnsInside(start + 2 * l, a.inW);
        upper[l] = columnsInside(start + 2 * l + 16, a.inW);
        tail[l] = static_cast<__mmask16>(columnsInside(start + 2 * l + 30, a.inW) & 0x3);  // two columns
      }
      __m512 even = b, odd = _mm512_setzero_ps();  // two chains: half the FMA latency per vector
#pragma GCC unroll 8
      for (int kh = 0; kh < K; ++kh) {
        const int64_t ih = firstRow + kh;
        if (ih < 0 || ih >= a.inH) continue;
        const float* row = x + ih * a.inW + start;  // masked-off lanes are not read
        // Columns 2j and 2j + 1 from the first pair of loads; 2j + 2 (and 2j + 3) are those
        // shifted by one lane with column 32 (33) appended, column 2l + 2j from pair l.
        __m512 evenCols, oddCols;
#pragma GCC unroll 4
        for (int l = 0; l < kLoads; ++l) {
          if (l == 0) {
            const __m512 v0 = _mm512_maskz_loadu_ps(lower[0], row), v1 = _mm512_maskz_loadu_ps(upper[0], row + 16);
            evenCols = _mm512_permutex2var_ps(v0, evenIdx, v1);
            oddCols = _mm512_permutex2var_ps(v0, oddIdx, v1);
          } else {
            const __m512 next = _mm512_maskz_loadu_ps(tail[l], row + 2 * l + 30);  // columns 2l + 30, 2l + 31
            evenCols = _mm512_castsi512_ps(
                _mm512_alignr_epi32(_mm512_castps_si512(next), _mm512_castps_si512(evenCols), 1));
            oddCols = _mm512_castsi512_ps(_mm512_alignr_epi32(
                _mm512_castps_si512(_mm512_permutexvar_ps(oneIdx, next)), _mm512_castps_si512(oddCols), 1));
          }
          even = _mm512_fmadd_ps(evenCols, weight[kh * K + 2 * l], even);
          if (2 * l + 1 < K) odd = _mm512_fmadd_ps(oddCols, weight[kh * K + 2 * l + 1], odd);
        }
      }
      __m512 acc = _mm512_add_ps(even, odd);
      const __mmask16 keep = firstLanes(a.outW - ow0);
      float* out = y + oh * a.outW + ow0;
      if (a.residual) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(keep, a.residual + oh * a.outW + ow0));
      if (a.reluMin) acc = _mm512_min_ps(hi, _mm512_max_ps(lo, acc));  // NaN passes, as in the reference
      _mm512_mask_storeu_ps(out, keep, acc);
    }
  }
}

}  // namespace

void f32_dwconv_stride2__avx512f(const DepthwiseArgs& a, const float* x, const float* w, float bias, float* y) {
  if (a.kernelH == 5)
    depthwiseStride2<5>(a, x, w, bias, y);
  else
    depthwiseStride2<3>(a, x, w, bias, y);
}

}  // namespace osprey

#endif
