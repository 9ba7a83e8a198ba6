#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/cuda_launch.h"

namespace osprey::cuda {

namespace {

struct RasterBatch {
  DeviceRasterRegion regions[kRasterRegionsPerLaunch];
};

// blockIdx.y picks the region; x threads stride over its elements.
template <class E>
__global__ void rasterKernel(RasterBatch batch, E* dst) {
  const DeviceRasterRegion& r = batch.regions[blockIdx.y];
  const int64_t inner = r.size[2], middle = r.size[1];
  const int64_t n = r.size[0] * middle * inner;
  const E* src = static_cast<const E*>(r.src);
  OSPREY_GRID_STRIDE(i, n) {
    int64_t z = i % inner;
    int64_t t = i / inner;
    int64_t y = t % middle;
    int64_t x = t / middle;
    dst[r.dstOffset + x * r.dstStride[0] + y * r.dstStride[1] + z * r.dstStride[2]] =
        src[r.srcOffset + x * r.srcStride[0] + y * r.srcStride[1] + z * r.srcStride[2]];
  }
}

template <class E>
__global__ void fillKernel(E* dst, int64_t n, E value) {
  OSPREY_GRID_STRIDE(i, n) dst[i] = value;
}

template <class Fn>
bool dispatchElementSize(int size, Fn&& fn) {
  switch (size) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    default: return false;
  }
}

}  // namespace

cudaError_t rasterCopy(const DeviceRasterRegion* regions, int count, void* dst, int elementSize, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  if (count > kRasterRegionsPerLaunch) return cudaErrorInvalidValue;
  RasterBatch batch{};
  int64_t largest = 1;
  for (int i = 0; i < count; ++i) {
    batch.regions[i] = regions[i];
    largest = std::max<int64_t>(largest, regions[i].size[0] * regions[i].size[1] * regions[i].size[2]);
  }
  dim3 grid(std::min<unsigned>(blocksFor(largest), 4096u), static_cast<unsigned>(count));
  bool ok = dispatchElementSize(elementSize, [&](auto e) {
    using E = decltype(e);
    rasterKernel<E><<<grid, kBlock, 0, stream>>>(batch, static_cast<E*>(dst));
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

cudaError_t fillPattern(void* dst, int64_t n, int elementSize, uint64_t pattern, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  bool ok = dispatchElementSize(elementSize, [&](auto e) {
    using E = decltype(e);
    fillKernel<E><<<blocksFor(n), kBlock, 0, stream>>>(static_cast<E*>(dst), n, static_cast<E>(pattern));
  });
  return ok ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace osprey::cuda
