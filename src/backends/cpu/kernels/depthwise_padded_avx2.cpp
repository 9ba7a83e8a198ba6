// Depthwise 3x3 / 5x5 planes (stride 1 or 2, dilation 1) through a zero-padded copy of the plane:
// with the padding in memory every output is an interior one, so each row runs as whole
// 8-wide vectors with no bounds checks. This pays most on the small planes of late layers
// (14x14, 7x7), where the border columns are most of the row. Compiled with -mavx2 -mfma.
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

namespace osprey {

namespace {

constexpr int64_t kPaddedPlaneFloats = 12 * 1024;  // 48 KiB on the stack, about L1

// Floats r[0], r[2], ..., r[14].
inline __m256 evenLanes(const float* r) {
  const __m256 lo = _mm256_loadu_ps(r), hi = _mm256_loadu_ps(r + 8);
  const __m256 mixed = _mm256_shuffle_ps(lo, hi, 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), 0xD8));
}

template <int K, int S>
void paddedPlane(const DepthwiseArgs& p, const float* padded, int64_t paddedW, const float* w, float bias, float* y) {
  __m256 wv[K * K];
  for (int i = 0; i < K * K; ++i) wv[i] = _mm256_set1_ps(w[i]);
  const __m256 lo = _mm256_set1_ps(p.reluMin ? p.clipLo : -__builtin_inff());
  const __m256 hi = _mm256_set1_ps(p.reluMin ? p.clipHi : __builtin_inff());
  alignas(32) float tail[8];
  for (int64_t oh = 0; oh < p.outH; ++oh) {
    const float* rows = padded + oh * S * paddedW;
    float* out = y + oh * p.outW;
    for (int64_t ow = 0; ow < p.outW; ow += 8) {
      __m256 acc = _mm256_set1_ps(bias);
      for (int kh = 0; kh < K; ++kh) {
        const float* src = rows + kh * paddedW + ow * S;
        for (int kw = 0; kw < K; ++kw) {
          const __m256 v = S == 1 ? _mm256_loadu_ps(src + kw) : evenLanes(src + kw);
          acc = _mm256_fmadd_ps(wv[kh * K + kw], v, acc);
        }
      }
      if (p.residual) {
        const float* z = p.residual + oh * p.outW + ow;
        if (ow + 8 <= p.outW) {
          acc = _mm256_add_ps(acc, _mm256_loadu_ps(z));
        } else {
          std::fill(tail, tail + 8, 0.f);
          std::memcpy(tail, z, sizeof(float) * (p.outW - ow));
          acc = _mm256_add_ps(acc, _mm256_load_ps(tail));
        }
      }
      acc = _mm256_min_ps(hi, _mm256_max_ps(lo, acc));  // keeps NaN, as the scalar clamp does
      if (ow + 8 <= p.outW) {
        _mm256_storeu_ps(out + ow, acc);
      } else {
        _mm256_store_ps(tail, acc);
        std::memcpy(out + ow, tail, sizeof(float) * (p.outW - ow));
      }
    }
  }
}

}  // namespace

bool f32_dwconv2d_padded__avx2_fma(const DepthwiseArgs& p, const float* x, const float* w, float bias, float* y) {
  const int64_t K = p.kernelH;
  if (p.kernelW != K || (K != 3 && K != 5) || p.dilationH != 1 || p.dilationW != 1 || p.strideH != p.strideW ||
      (p.strideW != 1 && p.strideW != 2) || p.outW <= 0 || p.outH <= 0)
    return false;
  const int64_t s = p.strideW;
  const int64_t outW8 = (p.outW + 7) / 8 * 8;
  // Every read of the last vector (stride 2 reads 16 floats per vector) stays inside a row.
  const int64_t paddedW = (outW8 - 1) * s + K + (s == 2 ? 8 : 0);
  const int64_t paddedH = (p.outH - 1) * s + K;
  if (paddedW * paddedH > kPaddedPlaneFloats) return false;
  alignas(32) float padded[kPaddedPlaneFloats];
  std::fill(padded, padded + paddedW * paddedH, 0.f);
  const int64_t cols = std::min(p.inW, paddedW - p.padW);
  for (int64_t ih = 0; ih < p.inH; ++ih) {
    const int64_t r = ih + p.padH;
    if (r >= paddedH) break;
    std::memcpy(padded + r * paddedW + p.padW, x + ih * p.inW, sizeof(float) * cols);
  }
  if (K == 3)
    s == 1 ? paddedPlane<3, 1>(p, padded, paddedW, w, bias, y) : paddedPlane<3, 2>(p, padded, paddedW, w, bias, y);
  else
    s == 1 ? paddedPlane<5, 1>(p, padded, paddedW, w, bias, y) : paddedPlane<5, 2>(p, padded, paddedW, w, bias, y);
  return true;
}

}  // namespace osprey

#endif
