#include <cstdlib>
#include <cstring>

#include "osprey/config.h"
#include "osprey/tensor.h"

namespace osprey {

Tensor::Tensor(DataType dtype, Shape shape, Layout layout) : dtype_(dtype), shape_(std::move(shape)), layout_(layout) {
  size_t n = bytes();
  size_t rounded = (std::max<size_t>(n, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p) std::memset(p, 0, rounded);
  storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
  if (dtype == DataType::String) strings_.resize(static_cast<size_t>(elements()));
}

Tensor Tensor::wrap(DataType dtype, Shape shape, void* data, Layout layout) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.layout_ = layout;
  t.data_ = data;
  return t;
}

const char* forwardTypeName(ForwardType t) {
  switch (t) {
    case ForwardType::CPU: return "cpu";
    case ForwardType::CUDA: return "cuda";
    case ForwardType::OpenCL: return "opencl";
    case ForwardType::Vulkan: return "vulkan";
  }
  return "unknown";
}

bool forwardTypeFromName(const std::string& name, ForwardType* out) {
  for (ForwardType t : {ForwardType::CPU, ForwardType::CUDA, ForwardType::OpenCL, ForwardType::Vulkan}) {
    if (name == forwardTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

}  // namespace osprey
