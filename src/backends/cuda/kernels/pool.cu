// Windowed and indexed reads: MaxPool / AveragePool, Gather along an axis, 2-D Resize.
#include <algorithm>

#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/cuda_launch.h"

namespace osprey::cuda {

namespace {

// Mirrors the reference kernel (ops/pool.cpp): padding never wins a max and counts in an
// average only with count_include_pad, and then only the explicit padding.
// I is the index type: int32 where every offset fits, as 64-bit division costs far more.
template <class T, class I>
__global__ void poolKernel(bool isMax, const T* src, T* dst, PoolGeometry geometry) {
  struct {
    I in[3], out[3], kernel[3], stride[3], dilation[3], padBegin[3], padEnd[3], channels, planes;
  } g;
  for (int s = 0; s < 3; ++s) {
    g.in[s] = static_cast<I>(geometry.in[s]);
    g.out[s] = static_cast<I>(geometry.out[s]);
    g.kernel[s] = static_cast<I>(geometry.kernel[s]);
    g.stride[s] = static_cast<I>(geometry.stride[s]);
    g.dilation[s] = static_cast<I>(geometry.dilation[s]);
    g.padBegin[s] = static_cast<I>(geometry.padBegin[s]);
    g.padEnd[s] = static_cast<I>(geometry.padEnd[s]);
  }
  g.channels = static_cast<I>(geometry.channels);
  g.planes = static_cast<I>(geometry.planes);
  const I outSize = g.out[0] * g.out[1] * g.out[2];
  const I inSize = g.in[0] * g.in[1] * g.in[2];
  for (I i = static_cast<I>(blockIdx.x * blockDim.x + threadIdx.x); i < g.planes * outSize;
       i += static_cast<I>(blockDim.x * gridDim.x)) {
    // Channels-last: neighbouring threads take neighbouring channels of one position.
    const T* x;
    I o, step;
    if (geometry.channelsLast) {
      const I c = i % g.channels, batch = i / (g.channels * outSize);
      o = (i / g.channels) % outSize;
      x = src + batch * inSize * g.channels + c;
      step = g.channels;
    } else {
      o = i % outSize;
      x = src + (i / outSize) * inSize;
      step = 1;
    }
    const I oPos[3] = {o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
    I start[3];
    for (int s = 0; s < 3; ++s) start[s] = oPos[s] * g.stride[s] - g.padBegin[s];
    float best = 0.f, sum = 0.f;
    I valid = 0, padded = 0;
    for (I kd = 0; kd < g.kernel[0]; ++kd) {
      const I id = start[0] + kd * g.dilation[0];
      for (I kh = 0; kh < g.kernel[1]; ++kh) {
        const I ih = start[1] + kh * g.dilation[1];
        for (I kw = 0; kw < g.kernel[2]; ++kw) {
          const I iw = start[2] + kw * g.dilation[2];
          const I pos[3] = {id, ih, iw};
          bool inside = true, inPadded = true;
          for (int s = 0; s < 3; ++s) {
            inside = inside && pos[s] >= 0 && pos[s] < g.in[s];
            inPadded = inPadded && pos[s] >= -g.padBegin[s] && pos[s] < g.in[s] + g.padEnd[s];
          }
          padded += inPadded;
          if (!inside) continue;
          const float v = toFloat(x[((id * g.in[1] + ih) * g.in[2] + iw) * step]);
          if (valid == 0 || v > best) best = v;
          sum += v;
          ++valid;
        }
      }
    }
    float r;
    if (isMax) {
      r = best;
    } else {
      const I count = geometry.countIncludePad ? padded : valid;
      r = count ? sum / static_cast<float>(count) : NAN;
    }
    dst[i] = fromFloat<T>(r);
  }
}

// The common MaxPool (2-D, K x K window, no dilation) with the window unrolled: the general
// kernel's loops and divisions took 0.136 ms for ResNet-50's 3x3 pool at batch 32 on an H200.
// The same result as poolKernel, ties and NaNs included.
template <class T, int K>
__global__ void maxPool2dKernel(const T* src, T* dst, int channels, int inH, int inW, int outH, int outW, int strideH,
                                int strideW, int padH, int padW, bool channelsLast, int total) {
  const int outSize = outH * outW;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const T* x;
    int o, step;
    if (channelsLast) {
      o = (i / channels) % outSize;
      x = src + (i / (channels * outSize)) * inH * inW * channels + i % channels;
      step = channels;
    } else {
      o = i % outSize;
      x = src + (i / outSize) * inH * inW;
      step = 1;
    }
    const int y0 = (o / outW) * strideH - padH, x0 = (o % outW) * strideW - padW;
    float best = 0.f;
    bool any = false;
#pragma unroll
    for (int kh = 0; kh < K; ++kh) {
      const int iy = y0 + kh;
      if (iy < 0 || iy >= inH) continue;
#pragma unroll
      for (int kw = 0; kw < K; ++kw) {
        const int ix = x0 + kw;
        if (ix < 0 || ix >= inW) continue;
        const float v = toFloat(x[(iy * inW + ix) * step]);
        if (!any || v > best) best = v;
        any = true;
      }
    }
    dst[i] = fromFloat<T>(best);
  }
}

template <class E, class I>
__global__ void gatherKernel(const E* data, const I* indices, E* dst, int64_t outer, int64_t axisSize, int64_t inner, int64_t count) {
  OSPREY_GRID_STRIDE(i, outer * count * inner) {
    const int64_t in = i % inner;
    const int64_t j = (i / inner) % count;
    const int64_t b = i / (inner * count);
    int64_t k = static_cast<int64_t>(indices[j]);
    if (k < 0) k += axisSize;
    dst[i] = (k >= 0 && k < axisSize) ? data[(b * axisSize + k) * inner + in] : E(0);
  }
}

// The reference's coordinate transforms (ops/resize.cpp), in double like it.
__host__ __device__ __forceinline__ double sourceCoordinate(int coordinate, int64_t x, double scale, int64_t inSize, double resized) {
  const double xr = static_cast<double>(x);
  switch (coordinate) {
    case 1: return xr / scale;
    case 2: return resized == 1.0 ? 0.0 : xr * static_cast<double>(inSize - 1) / (resized - 1.0);
    case 3: return resized == 1.0 ? -0.5 : (xr + 0.5) / scale - 0.5;
    default: return (xr + 0.5) / scale - 0.5;
  }
}

// Rounds like the reference: the fraction decides, ties by the mode.
__host__ __device__ __forceinline__ int64_t nearestIndex(double c, int mode, int64_t size) {
  const double fl = floor(c), frac = c - fl;
  bool up = false;
  if (frac > 0) {
    switch (mode) {
      case 0: up = false; break;
      case 1: up = true; break;
      case 3: up = frac >= 0.5; break;
      default: up = frac > 0.5; break;
    }
  }
  const int64_t k = static_cast<int64_t>(fl) + (up ? 1 : 0);
  return k < 0 ? 0 : (k >= size ? size - 1 : k);
}

// Output element i of a resize (host-callable so the arithmetic can be checked without a device).
template <class T>
__host__ __device__ inline float resizeSample(const T* src, const ResizeGeometry& g, int64_t i) {
  const int64_t ox = i % g.outW, oy = (i / g.outW) % g.outH, p = i / (g.outW * g.outH);
  const T* x = src + p * g.inH * g.inW;
  const double cy = sourceCoordinate(g.coordinate, oy, g.scaleH, g.inH, g.resizedH);
  const double cx = sourceCoordinate(g.coordinate, ox, g.scaleW, g.inW, g.resizedW);
  float r;
  if (!g.linear) {
    r = toFloat(x[nearestIndex(cy, g.nearestMode, g.inH) * g.inW + nearestIndex(cx, g.nearestMode, g.inW)]);
  } else {
    // Taps beyond the border repeat the edge, so clamping the coordinate gives the same weights.
    const double fy = fmin(fmax(cy, 0.0), static_cast<double>(g.inH - 1));
    const double fx = fmin(fmax(cx, 0.0), static_cast<double>(g.inW - 1));
    const int64_t y0 = static_cast<int64_t>(floor(fy)), x0 = static_cast<int64_t>(floor(fx));
    const int64_t y1 = y0 + 1 < g.inH ? y0 + 1 : y0, x1 = x0 + 1 < g.inW ? x0 + 1 : x0;
    const float wy = static_cast<float>(fy - static_cast<double>(y0)), wx = static_cast<float>(fx - static_cast<double>(x0));
    const float top = toFloat(x[y0 * g.inW + x0]) * (1.f - wx) + toFloat(x[y0 * g.inW + x1]) * wx;
    const float bottom = toFloat(x[y1 * g.inW + x0]) * (1.f - wx) + toFloat(x[y1 * g.inW + x1]) * wx;
    r = top * (1.f - wy) + bottom * wy;
  }
  return r;
}

template <class T>
__global__ void resizeKernel(const T* src, T* dst, ResizeGeometry g) {
  OSPREY_GRID_STRIDE(i, g.planes * g.outH * g.outW) dst[i] = fromFloat<T>(resizeSample(src, g, i));
}

}  // namespace

cudaError_t pool(bool isMax, const void* src, void* dst, const PoolGeometry& g, DataType storage, cudaStream_t stream) {
  const int64_t n = g.planes * g.out[0] * g.out[1] * g.out[2];
  if (n <= 0) return cudaSuccess;
  bool ok = dispatchStorage(storage, [&](auto t) {
    using T = decltype(t);
    const int64_t inElements = g.planes * g.in[0] * g.in[1] * g.in[2];
    const bool small = std::max(n, inElements) < (int64_t(1) << 30);  // the grid stride must not overflow either
    const bool plain2d = isMax && small && g.in[0] == 1 && g.out[0] == 1 && g.kernel[0] == 1 && g.dilation[1] == 1 &&
                         g.dilation[2] == 1 && g.kernel[1] == g.kernel[2] && (g.kernel[1] == 2 || g.kernel[1] == 3);
    if (plain2d) {
      const auto i32 = [](int64_t v) { return static_cast<int>(v); };
      auto launch = [&](auto kernel) {
        kernel<<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst), i32(g.channels),
                                                    i32(g.in[1]), i32(g.in[2]), i32(g.out[1]), i32(g.out[2]), i32(g.stride[1]),
                                                    i32(g.stride[2]), i32(g.padBegin[1]), i32(g.padBegin[2]), g.channelsLast, i32(n));
      };
      if (g.kernel[1] == 3)
        launch(maxPool2dKernel<T, 3>);
      else
        launch(maxPool2dKernel<T, 2>);
    } else if (small)
      poolKernel<T, int32_t><<<blocksFor(n), kBlock, 0, stream>>>(isMax, static_cast<const T*>(src), static_cast<T*>(dst), g);
    else
      poolKernel<T, int64_t><<<blocksFor(n), kBlock, 0, stream>>>(isMax, static_cast<const T*>(src), static_cast<T*>(dst), g);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t gather(const void* data, const void* indices, bool indices64, void* dst, int64_t outer, int64_t axisSize,
                   int64_t inner, int64_t count, int elementSize, cudaStream_t stream) {
  const int64_t n = outer * count * inner;
  if (n <= 0) return cudaSuccess;
  auto launch = [&](auto e) {
    using E = decltype(e);
    if (indices64)
      gatherKernel<E, int64_t><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const E*>(data), static_cast<const int64_t*>(indices),
                                                                    static_cast<E*>(dst), outer, axisSize, inner, count);
    else
      gatherKernel<E, int32_t><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const E*>(data), static_cast<const int32_t*>(indices),
                                                                    static_cast<E*>(dst), outer, axisSize, inner, count);
  };
  switch (elementSize) {
    case 1: launch(uint8_t{}); break;
    case 2: launch(uint16_t{}); break;
    case 4: launch(uint32_t{}); break;
    case 8: launch(uint64_t{}); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t resize2d(const void* src, void* dst, const ResizeGeometry& g, DataType storage, cudaStream_t stream) {
  const int64_t n = g.planes * g.outH * g.outW;
  if (n <= 0) return cudaSuccess;
  bool ok = dispatchStorage(storage, [&](auto t) {
    using T = decltype(t);
    resizeKernel<T><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst), g);
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace osprey::cuda
