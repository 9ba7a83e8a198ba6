// Widening copies for reference kernels that compute in one precision whatever the storage
// type: float for float32/float16/bfloat16, double for float64 (see dispatchComputeFloat).
#pragma once
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/tensor_view.h"

namespace osprey {

// Copies any numeric tensor into a vector of C (empty input view: zeros of its shape).
template <class C>
std::vector<C> toComputeBuffer(const TensorView& v) {
  std::vector<C> out(static_cast<size_t>(v.present ? v.elements() : 0));
  if (!v.hasValue()) return out;
  dispatchNumeric(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = v.as<const T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<C>(static_cast<ComputeType<T>>(p[i]));
  });
  return out;
}

// Narrows `values` into the (float-typed) output view, element by element.
template <class C>
void storeComputeBuffer(const C* values, TensorView& out) {
  if (!out.present || !out.data) return;
  const int64_t n = out.elements();
  dispatchNumeric(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out.as<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<ComputeType<T>>(values[i]));
  });
}

// Calls fn(TypeTag<C>{}) with C = double for float64 and float for the other float dtypes;
// returns false for non-float dtypes.
template <class Fn>
bool dispatchComputeFloat(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::Float64: fn(TypeTag<double>{}); return true;
    case DataType::Float32:
    case DataType::Float16:
    case DataType::BFloat16: fn(TypeTag<float>{}); return true;
    default: return false;
  }
}

}  // namespace osprey
