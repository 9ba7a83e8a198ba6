// The depthwise 2-D convolution of one channel plane, written once and compiled twice: into
// cpu_features.cpp with the baseline flags and into kernels_avx2.cpp with -mavx2 -mfma, where the
// compiler vectorises its contiguous row loops with AVX2. Internal linkage keeps the two
// compilations apart (an inline function with external linkage would be merged by the linker).
#pragma once
#include <cstdint>

#include "backends/cpu/kernels/cpu_functions.h"

namespace osprey {
namespace {

// No std::min/max: their out-of-line copies would have external linkage, and the linker could
// hand the AVX2 build of one to baseline code.
inline int64_t dwMin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t dwMax(int64_t a, int64_t b) { return a > b ? a : b; }

// Output columns [lo, hi) of a 3x3 window whose nine taps all lie inside the input rows r0..r2.
template <int64_t kStride>
inline void dw3x3Interior(const float* __restrict r0, const float* __restrict r1, const float* __restrict r2,
                          const float* __restrict w, float bias, int64_t lo, int64_t hi, int64_t d,
                          float* __restrict row) {
  for (int64_t ow = lo; ow < hi; ++ow) {
    const int64_t i = ow * kStride;
    row[ow] = bias + w[0] * r0[i] + w[1] * r0[i + d] + w[2] * r0[i + 2 * d] + w[3] * r1[i] + w[4] * r1[i + d] +
              w[5] * r1[i + 2 * d] + w[6] * r2[i] + w[7] * r2[i + d] + w[8] * r2[i + 2 * d];
  }
}

// Output columns [lo, hi) of a K x K window (dilation 1) whose taps all lie inside the K input
// rows r[0..K-1]; the taps are summed in registers, vectorised along the output row for stride 1.
template <int64_t K, int64_t kStride>
inline void dwSquareInterior(const float* const* r, const float* __restrict w, float bias, int64_t lo, int64_t hi,
                             float* __restrict row) {
  for (int64_t ow = lo; ow < hi; ++ow) {
    const int64_t i = ow * kStride;
    float acc = bias;
    for (int64_t kh = 0; kh < K; ++kh)
      for (int64_t kw = 0; kw < K; ++kw) acc += w[kh * K + kw] * r[kh][i + kw];
    row[ow] = acc;
  }
}

// One output row of a 5 x 5 window with dilation 1: interior columns in registers (stride 1 by
// interior5x5s1(r, w, bias, lo, hi, row)), the border columns tap by tap with bounds checks.
// False when the row's window leaves the input rows.
template <class Interior5x5S1>
inline bool dw5x5Row(const DepthwiseArgs& p, const float* __restrict x, const float* __restrict w, float bias,
                     int64_t oh, float* __restrict row, Interior5x5S1& interior5x5s1) {
  constexpr int64_t K = 5;
  const int64_t ih0 = oh * p.strideH - p.padH;
  if (ih0 < 0 || ih0 + K - 1 >= p.inH) return false;
  const int64_t lo = dwMin(p.outW, (p.padW + p.strideW - 1) / p.strideW);
  const int64_t last = p.inW - K + p.padW;  // ow * stride <= last keeps every tap inside
  const int64_t hi = last < 0 ? lo : dwMax(lo, dwMin(p.outW, last / p.strideW + 1));
  const float* r[K];
  for (int64_t kh = 0; kh < K; ++kh) r[kh] = x + (ih0 + kh) * p.inW - p.padW;
  if (p.strideW == 1)
    interior5x5s1(r, w, bias, lo, hi, row);
  else
    dwSquareInterior<K, 2>(r, w, bias, lo, hi, row);
  for (int64_t ow = 0; ow < p.outW; ++ow) {
    if (ow == lo) ow = hi;
    if (ow >= p.outW) break;
    float acc = bias;
    for (int64_t kh = 0; kh < K; ++kh)
      for (int64_t kw = 0; kw < K; ++kw) {
        const int64_t iw = ow * p.strideW - p.padW + kw;
        if (iw >= 0 && iw < p.inW) acc += w[kh * K + kw] * r[kh][iw + p.padW];
      }
    row[ow] = acc;
  }
  return true;
}

// Output columns [lo, hi) whose tap kw lands inside the input row.
inline void tapColumns(const DepthwiseArgs& p, int64_t kw, int64_t* lo, int64_t* hi) {
  const int64_t offW = kw * p.dilationW - p.padW;
  int64_t l = offW >= 0 ? 0 : (-offW + p.strideW - 1) / p.strideW;
  int64_t h = p.inW - offW <= 0 ? 0 : (p.inW - offW + p.strideW - 1) / p.strideW;
  l = dwMin(l, p.outW);
  *lo = l;
  *hi = dwMax(l, dwMin(h, p.outW));
}

// Any kernel size: taps accumulated one by one along contiguous output rows. columns holds
// tapColumns for each kw (found once per plane: they cost two divisions each), or is null.
[[maybe_unused]] void depthwiseRowGeneral(const DepthwiseArgs& p, const float* __restrict x, const float* __restrict w,
                                          float bias, int64_t oh, const int64_t* columns, float* __restrict row) {
  for (int64_t ow = 0; ow < p.outW; ++ow) row[ow] = bias;
  for (int64_t kh = 0; kh < p.kernelH; ++kh) {
    const int64_t ih = oh * p.strideH - p.padH + kh * p.dilationH;
    if (ih < 0 || ih >= p.inH) continue;
    for (int64_t kw = 0; kw < p.kernelW; ++kw) {
      const float wv = w[kh * p.kernelW + kw];
      int64_t lo, hi;
      if (columns) {
        lo = columns[2 * kw], hi = columns[2 * kw + 1];
      } else {
        tapColumns(p, kw, &lo, &hi);
      }
      const float* __restrict src = x + ih * p.inW + kw * p.dilationW - p.padW;
      if (p.strideW == 1) {
        for (int64_t ow = lo; ow < hi; ++ow) row[ow] += wv * src[ow];
      } else {
        for (int64_t ow = lo; ow < hi; ++ow) row[ow] += wv * src[ow * p.strideW];
      }
    }
  }
}

// Interior3x3S2(r0, r1, r2, w, bias, lo, hi, rowLength, row) computes the stride-2, dilation-1
// interior columns [lo, hi); rowLength is how many floats each r may read. Interior5x5S1 is
// dwSquareInterior<5, 1>'s signature.
template <class Interior3x3S2, class Interior5x5S1>
void depthwisePlaneWith(const DepthwiseArgs& p, const float* __restrict x, const float* __restrict w, float bias,
                        float* __restrict y, Interior3x3S2&& interior3x3s2, Interior5x5S1&& interior5x5s1) {
  // 3x3 with stride 1 or 2: output columns whose nine taps are all inside run one fused sum
  // (vectorised for stride 1); the border columns and rows take the general path below.
  const bool fast3x3 = p.kernelH == 3 && p.kernelW == 3 && (p.strideW == 1 || p.strideW == 2);
  const bool fast5x5 = p.kernelH == 5 && p.kernelW == 5 && p.dilationH == 1 && p.dilationW == 1 &&
                       (p.strideW == 1 || p.strideW == 2);
  int64_t interiorLo = 0, interiorHi = 0;
  if (fast3x3) {
    interiorLo = dwMin(p.outW, (p.padW + p.strideW - 1) / p.strideW);
    const int64_t last = p.inW - 1 - 2 * p.dilationW + p.padW;  // ow * stride <= last
    interiorHi = last < 0 ? interiorLo : dwMax(interiorLo, dwMin(p.outW, last / p.strideW + 1));
  }
  constexpr int64_t kMaxKernelW = 16;  // wider kernels find their columns per tap
  int64_t columnsOfPlane[2 * kMaxKernelW];
  if (p.kernelW <= kMaxKernelW)
    for (int64_t kw = 0; kw < p.kernelW; ++kw) tapColumns(p, kw, &columnsOfPlane[2 * kw], &columnsOfPlane[2 * kw + 1]);
  for (int64_t oh = 0; oh < p.outH; ++oh) {
    float* __restrict row = y + oh * p.outW;
    const int64_t ih0 = oh * p.strideH - p.padH;
    if (fast3x3 && ih0 >= 0 && ih0 + 2 * p.dilationH < p.inH && interiorLo < interiorHi) {
      const float* r0 = x + ih0 * p.inW - p.padW;
      const float* r1 = r0 + p.dilationH * p.inW;
      const float* r2 = r1 + p.dilationH * p.inW;
      if (p.strideW == 1) {
        dw3x3Interior<1>(r0, r1, r2, w, bias, interiorLo, interiorHi, p.dilationW, row);
      } else if (p.dilationW == 1) {
        interior3x3s2(r0, r1, r2, w, bias, interiorLo, interiorHi, p.inW + p.padW, row);
      } else {
        dw3x3Interior<2>(r0, r1, r2, w, bias, interiorLo, interiorHi, p.dilationW, row);
      }
      for (int64_t ow = 0; ow < p.outW; ++ow) {
        if (ow == interiorLo) ow = interiorHi;
        if (ow >= p.outW) break;
        float acc = bias;
        for (int64_t kh = 0; kh < 3; ++kh) {
          const float* src = x + (ih0 + kh * p.dilationH) * p.inW;
          for (int64_t kw = 0; kw < 3; ++kw) {
            const int64_t iw = ow * p.strideW - p.padW + kw * p.dilationW;
            if (iw >= 0 && iw < p.inW) acc += w[kh * 3 + kw] * src[iw];
          }
        }
        row[ow] = acc;
      }
    } else if (!(fast5x5 && dw5x5Row(p, x, w, bias, oh, row, interior5x5s1))) {
      depthwiseRowGeneral(p, x, w, bias, oh, p.kernelW <= kMaxKernelW ? columnsOfPlane : nullptr, row);
    }
    if (p.residual) {
      const float* __restrict z = p.residual + oh * p.outW;
      for (int64_t ow = 0; ow < p.outW; ++ow) row[ow] += z[ow];
    }
    if (p.reluMin) {
      const float lo = p.clipLo, hi = p.clipHi;
      for (int64_t ow = 0; ow < p.outW; ++ow) {
        const float v = row[ow] < lo ? lo : row[ow];
        row[ow] = v > hi ? hi : v;
      }
    }
  }
}

[[maybe_unused]] void depthwisePlane(const DepthwiseArgs& p, const float* __restrict x, const float* __restrict w,
                                     float bias, float* __restrict y) {
  depthwisePlaneWith(p, x, w, bias, y,
                     [](const float* r0, const float* r1, const float* r2, const float* w, float bias, int64_t lo,
                        int64_t hi, int64_t, float* row) { dw3x3Interior<2>(r0, r1, r2, w, bias, lo, hi, 1, row); },
                     dwSquareInterior<5, 1>);
}

}  // namespace
}  // namespace osprey
