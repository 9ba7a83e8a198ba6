// AVX2+FMA kernels of the NC8HW8 layout: one __m256 holds the 8 channels of one position, so
// neither the convolution tile nor the depthwise row ever shuffles. Compiled with -mavx2 -mfma;
// only called after cpu_features.cpp found both.
#include <immintrin.h>

#include <cmath>

#include "backends/cpu/kernels/cpu_functions.h"

namespace osprey {

namespace {

// lo <= v <= hi with NaN passing through, as the scalar kernels (max/min return their second
// operand when either is NaN).
inline __m256 clampTo(__m256 v, __m256 lo, __m256 hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, v)); }

// P positions by OB output blocks: 12 accumulators, two weight vectors and one broadcast at
// the largest block, all in registers. PS is the position stride when fixed (8: stride 1, 16:
// stride 2), so that every broadcast is one load at a constant offset; 0 reads it from args.
// `lanes` input channels of one block: 8 (unrolled) or the real channels of a last block.
template <int P, int OB, int PS, bool kFull>
inline void accumulateBlock(const float* xb, const float* wb, int64_t ps, int64_t ws, int lanes, __m256 (&acc)[P][OB]) {
  const int64_t stride = PS ? PS : ps;
#pragma GCC unroll 8
  for (int i = 0; i < (kFull ? 8 : lanes); ++i) {
    const __m256 w0 = _mm256_loadu_ps(wb + i * 8);
    const __m256 w1 = OB > 1 ? _mm256_loadu_ps(wb + ws + i * 8) : w0;
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      const __m256 v = _mm256_broadcast_ss(xb + p * stride + i);
      acc[p][0] = _mm256_fmadd_ps(v, w0, acc[p][0]);
      if constexpr (OB > 1) acc[p][1] = _mm256_fmadd_ps(v, w1, acc[p][1]);
    }
  }
}

template <int P, int OB, int PS>
void convTile(const Nc8ConvArgs& a, const float* x, const float* w, const float* bias, const float* residual,
              float* y) {
  __m256 acc[P][OB];
  for (int p = 0; p < P; ++p)
    for (int k = 0; k < OB; ++k) acc[p][k] = _mm256_setzero_ps();
  const int64_t ps = a.positionStride, ws = a.weightBlockStride, fullBlocks = a.inLanes == 8 ? a.inBlocks : a.inBlocks - 1;
  for (int64_t t = 0; t < a.taps; ++t) {
    const float* xb = x + a.tapOffsets[t];
    const float* wb = w + a.tapWeights[t] * a.inBlocks * 64;
    for (int64_t b = 0; b < fullBlocks; ++b, xb += a.inBlockStride, wb += 64)
      accumulateBlock<P, OB, PS, true>(xb, wb, ps, ws, 8, acc);
    if (fullBlocks < a.inBlocks) accumulateBlock<P, OB, PS, false>(xb, wb, ps, ws, static_cast<int>(a.inLanes), acc);
  }
  const __m256 lo = _mm256_set1_ps(a.lo), hi = _mm256_set1_ps(a.hi);
  for (int k = 0; k < OB; ++k) {
    const __m256 b = bias ? _mm256_loadu_ps(bias + 8 * k) : _mm256_setzero_ps();
    for (int p = 0; p < P; ++p) {
      const int64_t at = k * a.outBlockStride + 8 * p;
      __m256 v = _mm256_add_ps(acc[p][k], b);
      if (residual) v = _mm256_add_ps(v, _mm256_loadu_ps(residual + at));
      _mm256_storeu_ps(y + at, clampTo(v, lo, hi));
    }
  }
}

using TileFn = void (*)(const Nc8ConvArgs&, const float*, const float*, const float*, const float*, float*);
template <int PS>
struct Tiles {
  static constexpr TileFn table[6][2] = {
      {convTile<1, 1, PS>, convTile<1, 2, PS>}, {convTile<2, 1, PS>, convTile<2, 2, PS>},
      {convTile<3, 1, PS>, convTile<3, 2, PS>}, {convTile<4, 1, PS>, convTile<4, 2, PS>},
      {convTile<5, 1, PS>, convTile<5, 2, PS>}, {convTile<6, 1, PS>, convTile<6, 2, PS>},
  };
};

// One output position whose window may be cut by the padding: taps outside are skipped.
inline __m256 depthwiseEdge(const BlockedDepthwiseArgs& a, int64_t ih0, int64_t iw0, const float* x, const float* w,
                            __m256 acc) {
  forEachNc8DepthwiseTap(a, ih0, iw0, [&](int64_t xo, int64_t wo) {
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + xo), _mm256_loadu_ps(w + wo), acc);
  });
  return acc;
}

// The interior columns (every kw tap inside the row) four at a time, so that four independent
// FMA chains hide the latency; K and S are the kernel width and stride when fixed (0: read from
// the arguments, dilation 1 or not).
template <int K, int S>
void depthwiseRow(const BlockedDepthwiseArgs& a, int64_t oh, const float* x, const float* w, const float* bias,
                  const float* residual, float* y) {
  const int64_t kW = K ? K : a.kernelW, sW = S ? S : a.strideW, dW = K ? 1 : a.dilationW;
  const int64_t ih0 = oh * a.strideH - a.padH;
  int64_t khLo = 0, khHi = a.kernelH;
  while (khLo < khHi && ih0 + khLo * a.dilationH < 0) ++khLo;
  while (khHi > khLo && ih0 + (khHi - 1) * a.dilationH >= a.inH) --khHi;
  // Columns whose first and last taps are inside: iw0 >= 0 and iw0 + (kW - 1) * dW < inW.
  int64_t lo = (a.padW + sW - 1) / sW;
  const int64_t lastStart = a.inW - 1 - (kW - 1) * dW + a.padW;
  int64_t hi = lastStart < 0 ? 0 : lastStart / sW + 1;
  lo = lo > a.outW ? a.outW : lo;
  hi = hi > a.outW ? a.outW : (hi < lo ? lo : hi);
  const __m256 b = _mm256_loadu_ps(bias), vlo = _mm256_set1_ps(a.lo), vhi = _mm256_set1_ps(a.hi);
  auto finish = [&](int64_t ow, __m256 acc) {
    if (residual) acc = _mm256_add_ps(acc, _mm256_loadu_ps(residual + ow * 8));
    _mm256_storeu_ps(y + ow * 8, clampTo(acc, vlo, vhi));
  };
  for (int64_t ow = 0; ow < lo; ++ow) finish(ow, depthwiseEdge(a, ih0, ow * a.strideW - a.padW, x, w, b));
  int64_t ow = lo;
  for (; ow + 4 <= hi; ow += 4) {
    __m256 acc0 = b, acc1 = b, acc2 = b, acc3 = b;
    for (int64_t kh = khLo; kh < khHi; ++kh) {
      const float* row = x + ((ih0 + kh * a.dilationH) * a.inW + ow * sW - a.padW) * 8;
      const float* wr = w + kh * kW * 8;
      for (int64_t kw = 0; kw < kW; ++kw) {
        const __m256 wv = _mm256_loadu_ps(wr + kw * 8);
        const float* xp = row + kw * dW * 8;
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp), wv, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + sW * 8), wv, acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 2 * sW * 8), wv, acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(xp + 3 * sW * 8), wv, acc3);
      }
    }
    finish(ow, acc0), finish(ow + 1, acc1), finish(ow + 2, acc2), finish(ow + 3, acc3);
  }
  for (; ow < hi; ++ow) {
    __m256 acc = b;
    for (int64_t kh = khLo; kh < khHi; ++kh) {
      const float* row = x + ((ih0 + kh * a.dilationH) * a.inW + ow * sW - a.padW) * 8;
      for (int64_t kw = 0; kw < kW; ++kw)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(row + kw * dW * 8), _mm256_loadu_ps(w + (kh * kW + kw) * 8), acc);
    }
    finish(ow, acc);
  }
  for (ow = hi > lo ? hi : lo; ow < a.outW; ++ow) finish(ow, depthwiseEdge(a, ih0, ow * a.strideW - a.padW, x, w, b));
}

// r[0..7] transposed in place: element j of r[i] becomes element i of r[j].
inline void transpose8x8(__m256* r) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20), r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20), r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20), r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20), r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

}  // namespace

void f32_nc8_interleave__avx2_fma(const float* planes, int64_t planeStride, int64_t channels, int64_t rowLength,
                                  int64_t rows, int64_t dstRowStride, float* dst) {
  // Groups of 8 consecutive positions of the planes, which may cross from one row to the next.
  const int64_t count = rowLength * rows;
  int64_t row = 0, col = 0;
  for (int64_t i = 0; i < count; i += 8) {
    const int64_t n = count - i < 8 ? count - i : 8;  // a last partial group: masked loads
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 r[8];
    for (int64_t c = 0; c < 8; ++c)
      r[c] = c >= channels ? _mm256_setzero_ps()
             : n == 8      ? _mm256_loadu_ps(planes + c * planeStride + i)
                           : _mm256_maskload_ps(planes + c * planeStride + i, mask);
    transpose8x8(r);
    for (int64_t j = 0; j < n; ++j) {
      _mm256_storeu_ps(dst + 8 * (row * dstRowStride + col), r[j]);
      if (++col == rowLength) col = 0, ++row;
    }
  }
}

void f32_nc8_deinterleave__avx2_fma(const float* src, int64_t count, int64_t channels, float* planes,
                                    int64_t planeStride) {
  for (int64_t i = 0; i < count; i += 8) {
    const int64_t n = count - i < 8 ? count - i : 8;  // a last partial group: masked stores
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 r[8];
    for (int64_t j = 0; j < 8; ++j) r[j] = j < n ? _mm256_loadu_ps(src + 8 * (i + j)) : _mm256_setzero_ps();
    transpose8x8(r);
    for (int64_t c = 0; c < channels; ++c) {
      if (n == 8)
        _mm256_storeu_ps(planes + c * planeStride + i, r[c]);
      else
        _mm256_maskstore_ps(planes + c * planeStride + i, mask, r[c]);
    }
  }
}

void f32_nc8_conv_6x16__avx2_fma(const Nc8ConvArgs& args, int64_t positions, int64_t outBlocks, const float* x,
                                 const float* w, const float* bias, const float* residual, float* y) {
  const int64_t ps = args.positionStride;
  const auto& tiles = ps == 8 ? Tiles<8>::table : ps == 16 ? Tiles<16>::table : Tiles<0>::table;
  tiles[positions - 1][outBlocks - 1](args, x, w, bias, residual, y);
}

void f32_nc8_dwconv_row__avx2_fma(const BlockedDepthwiseArgs& a, int64_t oh, const float* x, const float* w,
                                  const float* bias, const float* residual, float* y) {
  const bool plain = a.dilationW == 1;
  if (plain && a.kernelW == 3 && a.strideW == 1) return depthwiseRow<3, 1>(a, oh, x, w, bias, residual, y);
  if (plain && a.kernelW == 3 && a.strideW == 2) return depthwiseRow<3, 2>(a, oh, x, w, bias, residual, y);
  if (plain && a.kernelW == 5 && a.strideW == 1) return depthwiseRow<5, 1>(a, oh, x, w, bias, residual, y);
  if (plain && a.kernelW == 5 && a.strideW == 2) return depthwiseRow<5, 2>(a, oh, x, w, bias, residual, y);
  depthwiseRow<0, 0>(a, oh, x, w, bias, residual, y);
}

}  // namespace osprey
