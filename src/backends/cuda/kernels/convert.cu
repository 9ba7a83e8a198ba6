#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/cuda_launch.h"

namespace osprey::cuda {

namespace {
template <class S, class D>
__global__ void convertKernel(const S* src, D* dst, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) dst[i] = fromFloat<D>(toFloat(src[i]));
}
// One thread per destination element: dst[n, s, c] = src[n, c, s] toward channels-last, the
// inverse otherwise.
template <class S, class D>
__global__ void convertLayoutKernel(const S* src, D* dst, int64_t channels, int64_t spatial, int64_t n,
                                    bool toChannelsLast) {
  OSPREY_GRID_STRIDE(i, n) {
    int64_t from;
    if (toChannelsLast) {
      const int64_t c = i % channels, s = (i / channels) % spatial, b = i / (channels * spatial);
      from = (b * channels + c) * spatial + s;
    } else {
      const int64_t s = i % spatial, c = (i / spatial) % channels, b = i / (channels * spatial);
      from = (b * spatial + s) * channels + c;
    }
    dst[i] = fromFloat<D>(toFloat(src[from]));
  }
}
// Per batch, dst[c][r] = src[r][c] over a rows x cols matrix, through 32x32 tiles in shared
// memory so that reads and writes are both coalesced (one thread per element read 4-byte values
// 3-4x slower at ResNet-50's stem edge, [32, 256, 56, 56]).
constexpr int kTile = 32, kTileRows = 8;
template <class S, class D>
__global__ void transposeTilesKernel(const S* src, D* dst, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t plane = rows * cols;
  const S* in = src + static_cast<int64_t>(blockIdx.z) * plane;
  D* out = dst + static_cast<int64_t>(blockIdx.z) * plane;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile, r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  for (int k = threadIdx.y; k < kTile; k += kTileRows) {
    const int64_t r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[k][threadIdx.x] = toFloat(in[r * cols + c]);
  }
  __syncthreads();
  for (int k = threadIdx.y; k < kTile; k += kTileRows) {
    const int64_t c = c0 + k, r = r0 + threadIdx.x;
    if (c < cols && r < rows) out[c * rows + r] = fromFloat<D>(tile[threadIdx.x][k]);
  }
}
// Nearest TF32 value of v (10 mantissa bits), as float bits with the low 13 cleared.
__device__ inline float roundToTf32(float v) {
  return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u);
}
// dst[b] = [hi | lo | hi] over the batch's `perBatch` values, hi = tf32(x), lo = x - hi (exact).
__global__ void splitTf32Kernel(const float* src, float* dst, int64_t perBatch, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) {
    const int64_t b = i / perBatch, j = i - b * perBatch;
    const float v = src[i], hi = roundToTf32(v);
    float* out = dst + b * 3 * perBatch + j;
    out[0] = hi;
    out[perBatch] = v - hi;
    out[2 * perBatch] = hi;
  }
}
template <class E>
__global__ void padChannelsKernel(const E* src, E* dst, int64_t channels, int64_t padded, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) {
    const int64_t c = i % padded, row = i / padded;
    dst[i] = c < channels ? src[row * channels + c] : E(0);
  }
}
}  // namespace

cudaError_t padChannels(const void* src, void* dst, int64_t rows, int64_t channels, int64_t paddedChannels,
                        int elementSize, cudaStream_t stream) {
  const int64_t n = rows * paddedChannels;
  if (n <= 0) return cudaSuccess;
  if (elementSize == 2)
    padChannelsKernel<uint16_t><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const uint16_t*>(src),
                                                                      static_cast<uint16_t*>(dst), channels, paddedChannels, n);
  else if (elementSize == 4)
    padChannelsKernel<uint32_t><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const uint32_t*>(src),
                                                                      static_cast<uint32_t*>(dst), channels, paddedChannels, n);
  else
    return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t splitTf32(const float* src, float* dst, int64_t batch, int64_t perBatch, cudaStream_t stream) {
  const int64_t n = batch * perBatch;
  if (n <= 0) return cudaSuccess;
  splitTf32Kernel<<<blocksFor(n), kBlock, 0, stream>>>(src, dst, perBatch, n);
  return cudaGetLastError();
}

cudaError_t convertFloatLayout(const void* src, DataType srcType, void* dst, DataType dstType, int64_t batch,
                               int64_t channels, int64_t spatial, bool toChannelsLast, cudaStream_t stream) {
  const int64_t n = batch * channels * spatial;
  if (n <= 0) return cudaSuccess;
  // NCHW is a [channels, spatial] matrix per batch, NHWC its transpose.
  const int64_t rows = toChannelsLast ? channels : spatial, cols = toChannelsLast ? spatial : channels;
  const int64_t rowTiles = (rows + kTile - 1) / kTile, colTiles = (cols + kTile - 1) / kTile;
  const bool tiled = rowTiles <= 65535 && batch <= 65535 && colTiles <= 0x7fffffff;
  bool ok = dispatchStorage(srcType, [&](auto s) {
    using S = decltype(s);
    dispatchStorage(dstType, [&](auto d) {
      using D = decltype(d);
      if (tiled) {
        const dim3 grid(static_cast<unsigned>(colTiles), static_cast<unsigned>(rowTiles), static_cast<unsigned>(batch));
        transposeTilesKernel<S, D><<<grid, dim3(kTile, kTileRows), 0, stream>>>(static_cast<const S*>(src),
                                                                               static_cast<D*>(dst), rows, cols);
      } else {
        convertLayoutKernel<S, D><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst),
                                                                     channels, spatial, n, toChannelsLast);
      }
    });
  });
  if (!ok) return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t convertFloat(const void* src, DataType srcType, void* dst, DataType dstType, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  bool ok = dispatchStorage(srcType, [&](auto s) {
    using S = decltype(s);
    dispatchStorage(dstType, [&](auto d) {
      using D = decltype(d);
      convertKernel<S, D><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<const S*>(src), static_cast<D*>(dst), n);
    });
  });
  if (!ok) return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace osprey::cuda
