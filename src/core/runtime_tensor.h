// A tensor as the pipeline sees it: a description plus the memory a backend gave it.
#pragma once
#include <memory>
#include <string>

#include "core/tensor_view.h"

namespace osprey {

class Backend;

// Where a tensor's bytes are. Planned memory learns its address only when the plan is made
// (Backend::onResizeEnd), so tensors hold the chunk, not a pointer.
struct MemChunk {
  uint8_t* const* base = nullptr;  // the arena's base pointer, owned by the backend
  size_t offset = 0;
  size_t size = 0;
  void* device = nullptr;  // a backend's own handle (cl_mem, device pointer base) if not host
  uint8_t* host() const { return base && *base ? *base + offset : nullptr; }
};

struct RuntimeTensor {
  std::string name;
  DataType dtype = DataType::Undefined;
  Shape shape;
  Layout layout = Layout::NCHW;
  bool fullPrecision = false;             // kept in fp32 by a Low-precision backend (OpRef::fullPrecision)
  Backend* backend = nullptr;             // owner of the memory; null for host constants
  std::shared_ptr<MemChunk> chunk;        // set by Backend::onAcquire
  const uint8_t* constData = nullptr;     // constants and folded values: host bytes
  const std::vector<std::string>* strings = nullptr;

  int64_t elements() const { return shapeElements(shape); }
  size_t bytes() const { return static_cast<size_t>(elements()) * dataTypeSize(dtype); }
  uint8_t* host() const { return constData ? const_cast<uint8_t*>(constData) : (chunk ? chunk->host() : nullptr); }
  TensorView view() const {
    TensorView v;
    viewInto(&v);
    return v;
  }
  // Refreshes a view kept between runs; its shape's storage is reused, so nothing is allocated.
  void viewInto(TensorView* v) const {
    v->dtype = dtype;
    v->shape = shape;
    v->data = host();
    v->present = true;
    v->strings = strings;
  }
};

}  // namespace osprey
