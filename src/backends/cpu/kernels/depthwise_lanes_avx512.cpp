// The AVX-512 depthwise kernel on 16 channels in lanes. A chunk of up to 8 outputs of a row keeps
// its accumulators, the chunk's input columns of one window row and the tap's weights in the 32
// vector registers: each input vector is loaded once per window row and feeds up to K FMAs, where
// the NC8HW8 row kernel loaded it once per tap (5 loads per 4 FMAs, bound by the load ports). The
// input is unpadded: a chunk reaching past the row's ends zeroes those columns in registers, and
// rows outside the plane are skipped. 1152 channels on 7x7 with 5x5 windows, one thread: 24 us for
// the rows, 14 us to move the planes into lanes, 8 us back (the blocked path: 100 us in all).
// This file alone is compiled with -mavx512f -mfma (see CMakeLists.txt).
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "backends/cpu/kernels/avx512_lanes.h"

namespace osprey {

namespace {

constexpr int kMaxChunk = 8;  // outputs per chunk: 8 accumulators and up to 19 input columns

// Outputs [ow0, ow0 + N) of output row oh; iw0 = ow0 * S - padW is the chunk's first input column.
template <int K, int S, int N>
void chunk(const BlockedDepthwiseArgs& a, int64_t oh, int64_t iw0, const float* x, const float* w, const float* bias,
           float* y) {
  constexpr int kColumns = (N - 1) * S + K;
  __m512 acc[N];
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) acc[n] = _mm512_loadu_ps(bias);
  const bool inside = iw0 >= 0 && iw0 + kColumns <= a.inW;
  const int64_t ih0 = oh * S - a.padH;
#pragma GCC unroll 5
  for (int kh = 0; kh < K; ++kh) {
    const int64_t ih = ih0 + kh;
    if (ih < 0 || ih >= a.inH) continue;
    const float* row = x + (ih * a.inW + iw0) * 16;
    __m512 column[kColumns];
    if (inside) {
#pragma GCC unroll 20
      for (int j = 0; j < kColumns; ++j) column[j] = _mm512_loadu_ps(row + j * 16);
    } else {
#pragma GCC unroll 20
      for (int j = 0; j < kColumns; ++j)
        column[j] = iw0 + j >= 0 && iw0 + j < a.inW ? _mm512_loadu_ps(row + j * 16) : _mm512_setzero_ps();
    }
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw) {
      const __m512 tap = _mm512_loadu_ps(w + (kh * K + kw) * 16);
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) acc[n] = _mm512_fmadd_ps(column[n * S + kw], tap, acc[n]);
    }
  }
  const __m512 lo = _mm512_set1_ps(a.lo), hi = _mm512_set1_ps(a.hi);
#pragma GCC unroll 8
  for (int n = 0; n < N; ++n) _mm512_storeu_ps(y + n * 16, _mm512_min_ps(hi, _mm512_max_ps(lo, acc[n])));
}

using ChunkFn = void (*)(const BlockedDepthwiseArgs&, int64_t, int64_t, const float*, const float*, const float*,
                         float*);

template <int K, int S>
struct Chunks {
  static constexpr ChunkFn table[kMaxChunk] = {chunk<K, S, 1>, chunk<K, S, 2>, chunk<K, S, 3>, chunk<K, S, 4>,
                                               chunk<K, S, 5>, chunk<K, S, 6>, chunk<K, S, 7>, chunk<K, S, 8>};
};

}  // namespace

// Each row in chunks of equal width (14 outputs as 7 + 7, not 8 + 6), so that no chunk runs with
// only a few accumulators.
void f32_nc16_dwconv_rows__avx512f(const BlockedDepthwiseArgs& a, int64_t oh0, int64_t oh1, const float* x,
                                   const float* w, const float* bias, float* y) {
  const bool three = a.kernelH == 3;
  const ChunkFn* table = a.strideW == 1 ? (three ? Chunks<3, 1>::table : Chunks<5, 1>::table)
                                        : (three ? Chunks<3, 2>::table : Chunks<5, 2>::table);
  const int64_t chunks = (a.outW + kMaxChunk - 1) / kMaxChunk;
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    int64_t ow = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t n = (a.outW - ow + chunks - c - 1) / (chunks - c);
      table[n - 1](a, oh, ow * a.strideW - a.padW, x, w, bias, y);
      y += n * 16;
      ow += n;
    }
  }
}

void f32_nc16_interleave__avx512f(const float* planes, int64_t planeStride, int64_t channels, int64_t count,
                                  float* dst) {
  for (int64_t p = 0; p < count; p += 16) {
    const int64_t n = count - p < 16 ? count - p : 16;
    const __mmask16 positions = firstLanes(n);
    __m512 r[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c)
      r[c] = c < channels ? _mm512_maskz_loadu_ps(positions, planes + c * planeStride + p) : _mm512_setzero_ps();
    transpose16x16(r);
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j)
      if (j < n) _mm512_storeu_ps(dst + (p + j) * 16, r[j]);
  }
}

}  // namespace osprey

#endif
