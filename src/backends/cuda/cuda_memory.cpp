#include "backends/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace osprey {

bool DeviceBuffer::allocate(size_t bytes) {
  reset();
  if (cudaMalloc(&ptr_, std::max<size_t>(bytes, 1)) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error so later calls do not see it
    ptr_ = nullptr;
    return false;
  }
  bytes_ = bytes;
  return true;
}

void DeviceBuffer::reset() {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

bool PinnedBuffer::allocate(size_t bytes) {
  reset();
  if (cudaMallocHost(&ptr_, std::max<size_t>(bytes, 1)) != cudaSuccess) {
    cudaGetLastError();
    ptr_ = nullptr;
    return false;
  }
  bytes_ = bytes;
  return true;
}

void PinnedBuffer::reset() {
  if (ptr_) cudaFreeHost(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace osprey
