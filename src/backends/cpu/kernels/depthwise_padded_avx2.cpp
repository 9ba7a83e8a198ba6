// Depthwise 3x3 / 5x5 planes (stride 1 or 2, dilation 1) through zero-padded copies of bands of
// input rows: with the padding in memory every output is an interior one, so each row runs as
// whole 8-wide vectors with no bounds checks. A band holds as many rows as fit in about L1, so
// planes of any size take this path. For stride 2 each copied row is stored de-interleaved (even
// columns, then odd ones): every tap is then one plain load, where gathering the even lanes of
// the raw row takes two loads and two shuffles per tap.
// Compiled with -mavx2 -mfma.
#include <algorithm>

#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace osprey {

namespace {

constexpr int64_t kBandFloats = 12 * 1024;  // 48 KiB on the stack, about L1

// The padding of a row is a few floats: GCC would turn the short loops below into memset and
// memcpy calls, each costing more than the loop.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-distribute-patterns")
#endif

// Zeroes [begin, end) in whole vectors, so up to 7 floats past end: callers write those later or
// leave that slack.
inline void zeroVectors(float* begin, float* end) {
  for (float* v = begin; v < end; v += 8) _mm256_storeu_ps(v, _mm256_setzero_ps());
}

// dst[0, n) = src[0, n) and zeros up to the next multiple of 8 floats, reading nothing past src
// + n. A masked load but no masked store: AMD cores run vmaskmovps stores in microcode.
inline void copyFloatsZeroTail(const float* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
  if (i < n) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_storeu_ps(dst + i, _mm256_maskload_ps(src + i, mask));
  }
}

// Input rows [firstRow, firstRow + rows) of the plane in padded coordinates (ih + padH), each as
// `rowFloats` floats of the padded row, zero outside the input; band has 8 floats of slack.
// Stride 2 stores padded column c at c / 2 in the first half of the row when c is even, else in
// the second half. Each row's zeros are written before its data, which may overwrite them.
template <int S>
void copyBand(const DepthwiseArgs& p, const float* x, int64_t firstRow, int64_t rows, int64_t rowFloats, float* band) {
  // Input columns that land inside the row (for stride 2, short of each half's 8 floats of slack).
  const int64_t cols = std::min(p.inW, (S == 1 ? rowFloats : rowFloats - 16) - p.padW);
  const int64_t half = rowFloats / 2, dataEnd = p.padW + cols;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ih = firstRow + r - p.padH;
    float* dst = band + r * rowFloats;
    if (ih < 0 || ih >= p.inH) {
      zeroVectors(dst, dst + rowFloats);
      continue;
    }
    const float* src = x + ih * p.inW;
    if (S == 1) {
      zeroVectors(dst + dataEnd, dst + rowFloats);
      zeroVectors(dst, dst + p.padW);
      copyFloatsZeroTail(src, cols, dst + p.padW);
      continue;
    }
    float *even = dst, *odd = dst + half;
    // Up to the last column a tap reads (the slack is never read); spills into odd's start,
    // which is zeroed or copied next.
    zeroVectors(even + dataEnd / 2, even + half - 8);
    zeroVectors(odd + dataEnd / 2, odd + half - 8);
    zeroVectors(even, even + (p.padW + 1) / 2);
    zeroVectors(odd, odd + (p.padW + 1) / 2);
    int64_t iw = 0;
    if (p.padW % 2 == 1 && cols > 0) odd[p.padW / 2] = src[0], iw = 1;  // vectors start on an even column
    // 16 input columns per step; the last step loads only what is left and stores zeros past it,
    // within the halves' 8 floats of slack.
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (; iw < cols; iw += 16) {
      __m256 lo, hi;
      if (iw + 16 <= cols) {
        lo = _mm256_loadu_ps(src + iw), hi = _mm256_loadu_ps(src + iw + 8);
      } else {
        const int left = static_cast<int>(cols - iw);
        lo = _mm256_maskload_ps(src + iw, _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lanes));
        hi = _mm256_maskload_ps(src + iw + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(left - 8), lanes));
      }
      const __m256 evens = _mm256_shuffle_ps(lo, hi, 0x88), odds = _mm256_shuffle_ps(lo, hi, 0xDD);
      const int64_t c = (iw + p.padW) / 2;
      _mm256_storeu_ps(even + c, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), 0xD8)));
      _mm256_storeu_ps(odd + c, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odds), 0xD8)));
    }
  }
}

// Output rows [oh0, oh1) from a band whose first row is padded input row oh0 * S. 5x5 rows go
// in pairs: its 25 weights are more than the registers hold and are reloaded from the stack, so
// feeding each loaded input vector to both rows' sums nearly halves the loads per FMA (3x3, with
// its weights in registers, gains nothing from it).
template <int K, int S>
void bandRows(const DepthwiseArgs& p, const float* band, int64_t rowFloats, const float* w, float bias, int64_t oh0,
              int64_t oh1, float* y) {
  __m256 wv[K * K];  // local, so the stores to y cannot make the compiler reload them
  for (int i = 0; i < K * K; ++i) wv[i] = _mm256_set1_ps(w[i]);
  const __m256 lo = _mm256_set1_ps(p.reluMin ? p.clipLo : -__builtin_inff());
  const __m256 hi = _mm256_set1_ps(p.reluMin ? p.clipHi : __builtin_inff());
  const int64_t half = rowFloats / 2;
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  auto tap = [&](const float* row, int kw, int64_t ow) {
    return _mm256_loadu_ps(S == 1 ? row + ow + kw : row + (kw % 2 ? half : 0) + ow + kw / 2);
  };
  // Residual, clamp and store of the 8 outputs at (oh, ow); the last vector of a row is partial.
  auto finish = [&](__m256 acc, int64_t oh, int64_t ow) {
    const int64_t left = p.outW - ow;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(left < 8 ? left : 8)), lanes);
    if (p.residual) {
      const float* z = p.residual + oh * p.outW + ow;
      acc = _mm256_add_ps(acc, left >= 8 ? _mm256_loadu_ps(z) : _mm256_maskload_ps(z, mask));
    }
    acc = _mm256_min_ps(hi, _mm256_max_ps(lo, acc));  // keeps NaN, as the scalar clamp does
    float* out = y + oh * p.outW + ow;
    if (left >= 8) {
      _mm256_storeu_ps(out, acc);
    } else {
      alignas(32) float tail[8];
      _mm256_store_ps(tail, acc);
      for (int64_t i = 0; i < left; ++i) out[i] = tail[i];
    }
  };
  int64_t oh = oh0;
  for (; K == 5 && oh + 2 <= oh1; oh += 2) {
    const float* rows = band + (oh - oh0) * S * rowFloats;
    for (int64_t ow = 0; ow < p.outW; ow += 8) {
      __m256 acc0 = _mm256_set1_ps(bias), acc1 = acc0;
      // Input rows 0 .. K+S-1 of the pair: row r is tap row r of oh and tap row r - S of oh + 1.
      for (int r = 0; r < K + S; ++r) {
        const float* row = rows + r * rowFloats;
        for (int kw = 0; kw < K; ++kw) {
          const __m256 v = tap(row, kw, ow);
          if (r < K) acc0 = _mm256_fmadd_ps(wv[r * K + kw], v, acc0);
          if (r >= S) acc1 = _mm256_fmadd_ps(wv[(r - S) * K + kw], v, acc1);
        }
      }
      finish(acc0, oh, ow);
      finish(acc1, oh + 1, ow);
    }
  }
  for (; oh < oh1; ++oh) {
    const float* rows = band + (oh - oh0) * S * rowFloats;
    for (int64_t ow = 0; ow < p.outW; ow += 8) {
      __m256 acc = _mm256_set1_ps(bias);
      for (int kh = 0; kh < K; ++kh)
        for (int kw = 0; kw < K; ++kw) acc = _mm256_fmadd_ps(wv[kh * K + kw], tap(rows + kh * rowFloats, kw, ow), acc);
      finish(acc, oh, ow);
    }
  }
}

template <int K, int S>
bool paddedPlane(const DepthwiseArgs& p, const float* x, const float* w, float bias, float* y) {
  const int64_t outW8 = (p.outW + 7) / 8 * 8;
  // The last vector of a row reads padded columns up to (outW8 - 1) * S + K - 1; a de-interleaved
  // row keeps both halves that long, plus 8 floats for the copy's last vector.
  const int64_t rowFloats = S == 1 ? outW8 - 1 + K : 2 * (outW8 + (K - 1) / 2 + 8);
  const int64_t rowsPerBand = (kBandFloats / rowFloats - K) / S + 1;  // output rows
  if (rowsPerBand < 1) return false;
  alignas(32) float band[kBandFloats + 8];
  for (int64_t oh0 = 0; oh0 < p.outH; oh0 += rowsPerBand) {
    const int64_t oh1 = std::min(p.outH, oh0 + rowsPerBand);
    copyBand<S>(p, x, oh0 * S, (oh1 - oh0 - 1) * S + K, rowFloats, band);
    bandRows<K, S>(p, band, rowFloats, w, bias, oh0, oh1, y);
  }
  return true;
}

}  // namespace

bool f32_dwconv2d_padded__avx2_fma(const DepthwiseArgs& p, const float* x, const float* w, float bias, float* y) {
  const int64_t K = p.kernelH;
  if (p.kernelW != K || (K != 3 && K != 5) || p.dilationH != 1 || p.dilationW != 1 || p.strideH != p.strideW ||
      (p.strideW != 1 && p.strideW != 2) || p.outW <= 0 || p.outH <= 0)
    return false;
  if (K == 3)
    return p.strideW == 1 ? paddedPlane<3, 1>(p, x, w, bias, y) : paddedPlane<3, 2>(p, x, w, bias, y);
  return p.strideW == 1 ? paddedPlane<5, 1>(p, x, w, bias, y) : paddedPlane<5, 2>(p, x, w, bias, y);
}

}  // namespace osprey

#endif
