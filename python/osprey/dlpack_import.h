// Objects with __dlpack__ (torch, JAX, CuPy, numpy ...) read as a CUDA DeviceTensor without a
// copy. DLPack's C ABI is stable (dlpack.h, version 0.8 and later); only the structs read here
// are declared. The binding takes the capsule as its consumer: it renames it "used_dltensor"
// and calls the producer's deleter when the binding ends.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

#include "osprey/interpreter.h"

namespace osprey::python {

struct DLDevice {
  int32_t type;  // kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLCUDAManaged 13 ...
  int32_t id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: C-contiguous
  uint64_t byteOffset;
};
struct DLManagedTensor {
  DLTensor tensor;
  void* managerContext;
  void (*deleter)(DLManagedTensor* self);
};

constexpr int32_t kDLCPU = 1, kDLCUDA = 2;

// The producer's tensor, released when the last copy of this handle goes.
using DLPackHandle = std::shared_ptr<DLManagedTensor>;

// (device type, id) of an object with __dlpack_device__; kDLCPU when it has none.
DLDevice dlpackDevice(const pybind11::object& value);

// Takes `value.__dlpack__()` and describes it as a CUDA DeviceTensor in *out. An error (another
// device, a dtype Osprey has no name for, strided memory) names `what`.
Status cudaTensorFromDLPack(const std::string& what, const pybind11::object& value, DeviceTensor* out,
                            DLPackHandle* keep);

}  // namespace osprey::python
