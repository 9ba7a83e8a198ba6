// A host tensor as users hand it to and get it from a Session.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "osprey/types.h"

namespace osprey {

class Tensor;
struct SequenceItems;

// A value a Session takes or gives: a tensor; a sequence of tensors (ONNX seq(tensor),
// DataType::Sequence); or, for an optional input or output (ONNX optional(...)), no value at all:
// a default-constructed Tensor, empty().
class Tensor {
 public:
  Tensor() = default;
  // Allocates zeroed host memory (64-byte aligned).
  Tensor(DataType dtype, Shape shape, Layout layout = Layout::NCHW);
  // Allocates host memory (64-byte aligned) left uninitialised, for a caller that writes it all.
  static Tensor uninitialized(DataType dtype, Shape shape, Layout layout = Layout::NCHW);
  // Borrows `data`, which must outlive the Tensor and every copy of it.
  static Tensor wrap(DataType dtype, Shape shape, void* data, Layout layout = Layout::NCHW);
  // A sequence of tensors of `elementType` (every item must have it); shape [items.size()].
  static Tensor sequence(DataType elementType, std::vector<Tensor> items);
  // A map: keys[i] -> values[i] (1-D tensors of one length; int64 or string keys); items() holds
  // {keys, values}, elementType() the values' dtype.
  static Tensor map(Tensor keys, Tensor values);

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Layout layout() const { return layout_; }
  int64_t elements() const { return shapeElements(shape_); }
  size_t bytes() const { return static_cast<size_t>(elements()) * dataTypeSize(dtype_); }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T>
  T* data() { return static_cast<T*>(data_); }
  template <class T>
  const T* data() const { return static_cast<const T*>(data_); }
  bool empty() const { return dtype_ == DataType::Undefined; }
  // Whether this handle is the only one on memory the Tensor allocated (not borrowed, no copy
  // of it alive), so that writing the memory can surprise no one.
  bool uniquelyOwned() const { return storage_ && storage_.use_count() == 1; }
  // Strings of a DataType::String tensor.
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }
  // A sequence's items and element type (empty and Undefined for a tensor).
  bool isSequence() const { return dtype_ == DataType::Sequence; }
  bool isMap() const { return dtype_ == DataType::Map; }
  const std::vector<Tensor>& items() const;
  DataType elementType() const;

 private:
  DataType dtype_ = DataType::Undefined;
  Shape shape_;
  Layout layout_ = Layout::NCHW;
  std::shared_ptr<void> storage_;  // null when borrowed
  void* data_ = nullptr;
  std::vector<std::string> strings_;
  std::shared_ptr<const SequenceItems> sequence_;  // immutable, so copies share it
};

struct SequenceItems {
  DataType elementType = DataType::Undefined;
  std::vector<Tensor> items;
};

}  // namespace osprey
