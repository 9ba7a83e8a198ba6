// The AVX2 row kernel of the direct convolution for stems (direct_conv.cpp; the AVX-512 one is in
// kernels_avx512.cpp). Compiled with -mavx2 -mfma (CMakeLists.txt); runs only where
// cpu_features.cpp found both.
#include "backends/cpu/kernels/cpu_functions.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace osprey {

namespace {

constexpr int kMaxChannels = 6;          // output channels per step, broadcast weights
constexpr int64_t kStepColumns = 16;     // output columns per step: 2 vectors
constexpr int64_t kWindowFloats = 4096;  // the copied window rows of a chunk of columns: 16 KiB, in L1
constexpr int64_t kMaxLiveRows = 64;

// One chunk's window rows copied into zero-padded runs: with stride 2 each row split into its even
// and odd columns, so that a tap reads 8 consecutive floats for 8 outputs. Loading them from the
// rows in place took two loads and two shuffles per vector, which fed only 12 FMAs and would
// share the FMA ports. Padding columns become zeros, so no step needs a mask.
struct WindowCopy {
  int64_t phaseLength = 0, rowFloats = 0;  // floats per phase, per copied row (stride x phaseLength)
};

// copy[p * phaseLength + i] = input column first + i * stride + p, 0 outside [0, inW).
void copyWindowRow(const float* row, int64_t inW, int64_t first, int64_t stride, const WindowCopy& window,
                   float* copy) {
  if (stride == 1) {
    const int64_t lo = std::clamp<int64_t>(-first, 0, window.phaseLength);
    const int64_t hi = std::clamp<int64_t>(inW - first, lo, window.phaseLength);
    std::fill(copy, copy + lo, 0.f);
    std::memcpy(copy + lo, row + first + lo, sizeof(float) * (hi - lo));
    std::fill(copy + hi, copy + window.phaseLength, 0.f);
    return;
  }
  float* even = copy;
  float* odd = copy + window.phaseLength;
  auto at = [&](int64_t col) { return col >= 0 && col < inW ? row[col] : 0.f; };
  int64_t i = 0;
  for (; i < window.phaseLength && first + 2 * i < 0; ++i) even[i] = at(first + 2 * i), odd[i] = at(first + 2 * i + 1);
  // Sixteen columns in, eight of each phase out.
  for (; i + 8 <= window.phaseLength && first + 2 * i + 16 <= inW; i += 8) {
    const __m256 lo = _mm256_loadu_ps(row + first + 2 * i), hi = _mm256_loadu_ps(row + first + 2 * i + 8);
    const __m256 evens = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));  // lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6
    const __m256 odds = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    _mm256_storeu_ps(even + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), 0xD8)));
    _mm256_storeu_ps(odd + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odds), 0xD8)));
  }
  for (; i < window.phaseLength; ++i) even[i] = at(first + 2 * i), odd[i] = at(first + 2 * i + 1);
}

// Outputs [j0, j0 + 16) of the chunk (those below `columns` stored) of kChannels output channels
// from o: each tap's two input vectors feed 2 kChannels FMAs with broadcast weights. At 6 channels
// the 12 accumulators, 2 inputs and a weight leave one of the 16 registers free; 4 channels by 24
// columns took all 16, and GCC spilled an accumulator. kKernelW: the window's width when unrolled
// (3 and 7, the usual stems; 7 unrolled ran 11% faster), else 0 (read from the arguments).
template <int kChannels, int kStride, int kKernelW>
void channelsStep(const DirectConvRowArgs& a, const float* copies, const int64_t* copiedRows, int64_t liveRows,
                  const WindowCopy& window, const float* w, const float* bias, int64_t o, int64_t j0, int64_t columns,
                  float* y) {
  __m256 acc[kChannels][2];
  #pragma GCC unroll 6
  for (int c = 0; c < kChannels; ++c) acc[c][0] = acc[c][1] = _mm256_set1_ps(bias ? bias[o + c] : 0.f);
  const int64_t kernelW = kKernelW ? kKernelW : a.kernelW;
  for (int64_t s = 0; s < liveRows; ++s) {
    const float* copy = copies + s * window.rowFloats + j0;
    const float* wr = w + copiedRows[s] * kernelW * kDirectConvBlock;
    #pragma GCC unroll 8
    for (int64_t kw = 0; kw < kernelW; ++kw) {
      const float* src = copy + (kw % kStride) * window.phaseLength + kw / kStride;
      const float* wt = wr + kw * kDirectConvBlock;
      const __m256 x0 = _mm256_loadu_ps(src), x1 = _mm256_loadu_ps(src + 8);
      #pragma GCC unroll 6
      for (int c = 0; c < kChannels; ++c) {
        const __m256 weight = _mm256_broadcast_ss(wt + c);
        acc[c][0] = _mm256_fmadd_ps(x0, weight, acc[c][0]);
        acc[c][1] = _mm256_fmadd_ps(x1, weight, acc[c][1]);
      }
    }
  }
  const __m256 lo = _mm256_set1_ps(a.lo), hi = _mm256_set1_ps(a.hi);
  const int64_t left = columns - j0;
  #pragma GCC unroll 6
  for (int c = 0; c < kChannels; ++c) {
    float* out = y + (o + c) * a.outPlaneStride + j0;
    // max/min return their second operand for NaN: this order keeps NaN, as the scalar clamp does.
    const __m256 v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, acc[c][0]));
    const __m256 v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, acc[c][1]));
    if (left >= kStepColumns) {
      _mm256_storeu_ps(out, v0);
      _mm256_storeu_ps(out + 8, v1);
    } else {  // the row's last outputs
      alignas(32) float last[kStepColumns];
      _mm256_store_ps(last, v0);
      _mm256_store_ps(last + 8, v1);
      std::memcpy(out, last, sizeof(float) * left);
    }
  }
}

using ChannelsStep = void (*)(const DirectConvRowArgs&, const float*, const int64_t*, int64_t, const WindowCopy&,
                              const float*, const float*, int64_t, int64_t, int64_t, float*);

template <int kStride, int kKernelW>
constexpr ChannelsStep kSteps[kMaxChannels + 1] = {
    nullptr,
    channelsStep<1, kStride, kKernelW>,
    channelsStep<2, kStride, kKernelW>,
    channelsStep<3, kStride, kKernelW>,
    channelsStep<4, kStride, kKernelW>,
    channelsStep<5, kStride, kKernelW>,
    channelsStep<6, kStride, kKernelW>};

}  // namespace

// Output columns in chunks whose window rows, copied (WindowCopy), stay in L1 while every output
// channel reads them; within a chunk, steps of up to 6 output channels by 16 columns. Each block of
// 16 channels (the weights' layout) is cut into steps of as equal a size as 6 allows (16: 6 5 5).
void f32_direct_conv_row__avx2_fma(const DirectConvRowArgs& a, const float* const* rows, const float* w,
                                   const float* bias, float* y) {
  int64_t copiedRows[kMaxLiveRows];
  int64_t liveRows = 0;
  for (int64_t r = 0; r < a.rowCount; ++r)
    if (rows[r]) {
      if (liveRows == kMaxLiveRows) return f32_direct_conv_row__scalar(a, rows, w, bias, y);
      copiedRows[liveRows++] = r;
    }
  const int64_t reach = (a.kernelW - 1) / a.stride;  // columns a tap reads past its output's, per phase
  const int64_t perRow = kWindowFloats / std::max<int64_t>(1, liveRows) / a.stride - reach;
  const int64_t wholeRow = (a.outW + kStepColumns - 1) / kStepColumns * kStepColumns;
  const int64_t chunk = std::min(perRow / kStepColumns * kStepColumns, wholeRow);
  if (chunk < kStepColumns) return f32_direct_conv_row__scalar(a, rows, w, bias, y);
  const ChannelsStep* steps = a.stride == 2
                                  ? (a.kernelW == 3 ? kSteps<2, 3> : a.kernelW == 7 ? kSteps<2, 7> : kSteps<2, 0>)
                                  : (a.kernelW == 3 ? kSteps<1, 3> : a.kernelW == 7 ? kSteps<1, 7> : kSteps<1, 0>);
  alignas(32) float copies[kWindowFloats];
  for (int64_t ow0 = 0; ow0 < a.outW; ow0 += chunk) {
    const int64_t columns = std::min(chunk, a.outW - ow0);
    WindowCopy window;
    window.phaseLength = (columns + kStepColumns - 1) / kStepColumns * kStepColumns + reach;
    window.rowFloats = a.stride * window.phaseLength;
    for (int64_t s = 0; s < liveRows; ++s)
      copyWindowRow(rows[copiedRows[s]], a.inW, ow0 * a.stride - a.padW, a.stride, window,
                    copies + s * window.rowFloats);
    for (int64_t block = 0; block < a.outChannels; block += kDirectConvBlock) {
      const float* wb = w + block * a.rowCount * a.kernelW;
      const int64_t blockChannels = std::min(kDirectConvBlock, a.outChannels - block);
      const int64_t parts = (blockChannels + kMaxChannels - 1) / kMaxChannels;
      for (int64_t part = 0; part < parts; ++part) {
        const int64_t c0 = blockChannels * part / parts, c1 = blockChannels * (part + 1) / parts;
        for (int64_t j0 = 0; j0 < columns; j0 += kStepColumns)
          steps[c1 - c0](a, copies, copiedRows, liveRows, window, wb + c0, bias, block + c0, j0, columns, y + ow0);
      }
    }
  }
}

}  // namespace osprey

#endif
