#include "backends/cuda/kernels/cuda_common.cuh"
#include "backends/cuda/kernels/cuda_launch.h"

namespace osprey::cuda {

namespace {
template <class S, class D>
__global__ void convertKernel(const S* src, D* dst, int64_t n) {
  OSPREY_GRID_STRIDE(i, n) dst[i] = fromFloat<D>(toFloat(src[i]));
}
}  // namespace

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
