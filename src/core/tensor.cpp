#include <cstdlib>
#include <cstring>

#include "osprey/config.h"
#include "osprey/tensor.h"

namespace osprey {

Tensor::Tensor(DataType dtype, Shape shape, Layout layout) : Tensor(uninitialized(dtype, std::move(shape), layout)) {
  if (data_) std::memset(data_, 0, bytes());
}

Tensor Tensor::uninitialized(DataType dtype, Shape shape, Layout layout) {
  Tensor t;
  t.dtype_ = dtype, t.shape_ = std::move(shape), t.layout_ = layout;
  const size_t rounded = (std::max<size_t>(t.bytes(), 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  t.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  if (dtype == DataType::String) t.strings_.resize(static_cast<size_t>(t.elements()));
  return t;
}

Tensor Tensor::wrap(DataType dtype, Shape shape, void* data, Layout layout) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.layout_ = layout;
  t.data_ = data;
  return t;
}

Tensor Tensor::sequence(DataType elementType, std::vector<Tensor> items) {
  Tensor t;
  t.dtype_ = DataType::Sequence;
  t.shape_ = {static_cast<int64_t>(items.size())};
  auto s = std::make_shared<SequenceItems>();
  s->elementType = elementType;
  s->items = std::move(items);
  t.sequence_ = std::move(s);
  return t;
}

Tensor Tensor::map(Tensor keys, Tensor values) {
  const DataType valueType = values.dtype();
  Tensor t = sequence(valueType, {std::move(keys), std::move(values)});
  t.dtype_ = DataType::Map;
  t.shape_ = {t.items()[0].elements()};
  return t;
}

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return sequence_ ? sequence_->items : kNone;
}

DataType Tensor::elementType() const { return sequence_ ? sequence_->elementType : DataType::Undefined; }

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
