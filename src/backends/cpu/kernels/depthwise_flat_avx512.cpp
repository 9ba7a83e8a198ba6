// The AVX-512 depthwise kernel for 3x3 stride-1 planes whose output has the input's size. With
// stride 1 and equal row lengths, tap t of output position p reads input position p + offset(t)
// of the flattened plane, so sixteen consecutive positions are one vector, rows included: a 14x14
// plane fills its lanes, and nothing is interleaved or copied. The lanes whose tap falls outside the plane (a padding row or column, or the wrap into
// the next row) are cleared by the load's mask, from the table that depthwiseFlatMasks builds.
// This file alone is compiled with -mavx512f -mfma (see CMakeLists.txt).
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "backends/cpu/kernels/avx512_lanes.h"

#include <limits>

namespace osprey {

// Two chains of FMAs per vector, every tap unrolled so that the weights stay in registers (a tap
// loop left rolled read them from the stack: 1.5x slower).
void f32_dwconv3x3_flat__avx512f(const DepthwiseArgs& a, const uint16_t* masks, const float* x, const float* w,
                                 float bias, float* y) {
  constexpr int K = 3, kTaps = K * K;
  const int64_t width = a.inW, n = a.outH * a.outW, vectors = (n + kFlatLanes - 1) / kFlatLanes;
  int64_t offset[kTaps];
  __m512 weight[kTaps];
#pragma GCC unroll 8
  for (int kh = 0; kh < K; ++kh)
#pragma GCC unroll 8
    for (int kw = 0; kw < K; ++kw) {
      offset[kh * K + kw] = (kh * a.dilationH - a.padH) * width + kw * a.dilationW - a.padW;
      weight[kh * K + kw] = _mm512_set1_ps(w[kh * K + kw]);
    }
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const __m512 b = _mm512_set1_ps(bias), lo = _mm512_set1_ps(a.reluMin ? a.clipLo : -kInf),
               hi = _mm512_set1_ps(a.reluMin ? a.clipHi : kInf);
  for (int64_t v = 0; v < vectors; ++v) {
    // Masked-off lanes are not read, so a tap may point before or past the plane.
    const float* xv = x + v * kFlatLanes;
    const uint16_t* m = masks + v * kTaps;
    __m512 even = b, odd = _mm512_setzero_ps();  // two chains: half the FMA latency per vector
#pragma GCC unroll 32
    for (int t = 0; t < kTaps; t += 2) {
      even = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m[t], xv + offset[t]), weight[t], even);
      if (t + 1 < kTaps) odd = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m[t + 1], xv + offset[t + 1]), weight[t + 1], odd);
    }
    __m512 acc = _mm512_add_ps(even, odd);
    const __mmask16 keep = firstLanes(n - v * kFlatLanes);
    if (a.residual) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(keep, a.residual + v * kFlatLanes));
    if (a.reluMin) acc = _mm512_min_ps(hi, _mm512_max_ps(lo, acc));  // NaN passes, as in the reference
    _mm512_mask_storeu_ps(y + v * kFlatLanes, keep, acc);
  }
}

}  // namespace osprey

#endif
