// A non-owning view of a tensor's dtype, shape and (host) bytes: what shape functions and
// reference kernels see.
#pragma once
#include <string>
#include <vector>

#include "osprey/status.h"
#include "osprey/tensor.h"
#include "osprey/types.h"

namespace osprey {

struct TensorView {
  DataType dtype = DataType::Undefined;
  Shape shape;
  void* data = nullptr;  // null when the value is not known (shape time) or not present
  bool present = true;   // false for an omitted optional input
  const std::vector<std::string>* strings = nullptr;  // DataType::String values, when known
  // The whole value, where an op runs on the host between stages (OpDef::hostRun): a sequence's
  // items are reached only through it.
  const Tensor* value = nullptr;

  int64_t elements() const { return shapeElements(shape); }
  size_t bytes() const { return static_cast<size_t>(elements()) * dataTypeSize(dtype); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool hasValue() const { return present && data != nullptr; }
  template <class T>
  T* as() const { return static_cast<T*>(data); }
  // Reads an integer tensor (int32 or int64) of known value; names `what` in errors.
  Status readInts(std::vector<int64_t>* out, const char* what) const;
  // Reads a float tensor (f16/bf16/f32/f64) of known value as floats.
  Status readFloats(std::vector<float>* out, const char* what) const;
};

}  // namespace osprey
