#include "dlpack_import.h"

namespace py = pybind11;

namespace osprey::python {

namespace {

DataType dtypeOf(const DLDataType& t) {
  if (t.lanes != 1) return DataType::Undefined;
  switch (t.code) {
    case 0:  // kDLInt
      return t.bits == 8 ? DataType::Int8 : t.bits == 16 ? DataType::Int16 : t.bits == 32 ? DataType::Int32
                                          : t.bits == 64 ? DataType::Int64 : DataType::Undefined;
    case 1:  // kDLUInt
      return t.bits == 8 ? DataType::UInt8 : t.bits == 16 ? DataType::UInt16 : t.bits == 32 ? DataType::UInt32
                                           : t.bits == 64 ? DataType::UInt64 : DataType::Undefined;
    case 2:  // kDLFloat
      return t.bits == 16 ? DataType::Float16 : t.bits == 32 ? DataType::Float32 : t.bits == 64 ? DataType::Float64
                                                                                : DataType::Undefined;
    case 4:  // kDLBfloat
      return t.bits == 16 ? DataType::BFloat16 : DataType::Undefined;
    case 6:  // kDLBool
      return t.bits == 8 ? DataType::Bool : DataType::Undefined;
    default:
      return DataType::Undefined;
  }
}

}  // namespace

DLDevice dlpackDevice(const py::object& value) {
  if (!py::hasattr(value, "__dlpack_device__")) return {kDLCPU, 0};
  const py::tuple device = value.attr("__dlpack_device__")();
  return {device[0].cast<int32_t>(), device[1].cast<int32_t>()};
}

Status cudaTensorFromDLPack(const std::string& what, const py::object& value, DeviceTensor* out, DLPackHandle* keep) {
  py::capsule capsule = value.attr("__dlpack__")();
  if (std::string(capsule.name() ? capsule.name() : "") != "dltensor")
    return Status::invalidArgument(what + ": __dlpack__ returned a capsule that is not a 'dltensor' (already used?)");
  auto* managed = static_cast<DLManagedTensor*>(capsule.get_pointer());
  // The consumer owns the tensor from here: the renamed capsule no longer frees it.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  *keep = DLPackHandle(managed, [](DLManagedTensor* t) {
    if (t && t->deleter) t->deleter(t);
  });
  const DLTensor& t = managed->tensor;
  if (t.device.type != kDLCUDA)
    return Status::invalidArgument(what + " is DLPack memory of device type " + std::to_string(t.device.type) +
                                   "; only CUDA memory (2) is bound in place");
  DeviceTensor d;
  d.device = ForwardType::CUDA;
  d.dtype = dtypeOf(t.dtype);
  if (d.dtype == DataType::Undefined)
    return Status::invalidArgument(what + " has DLPack dtype code " + std::to_string(t.dtype.code) + ", " +
                                   std::to_string(t.dtype.bits) + " bits, which cannot be bound");
  for (int32_t i = 0; i < t.ndim; ++i) d.shape.push_back(t.shape[i]);
  if (t.strides) {
    int64_t expected = 1;
    for (int32_t i = t.ndim; i-- > 0;) {
      if (d.shape[i] != 1 && t.strides[i] != expected)
        return Status::invalidArgument(what + " is not contiguous CUDA memory (call .contiguous() first)");
      expected *= d.shape[i];
    }
  }
  d.data = static_cast<uint8_t*>(t.data) + t.byteOffset;
  *out = std::move(d);
  return Status::ok();
}

}  // namespace osprey::python
