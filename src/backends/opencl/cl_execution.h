// What OpenCL executions share: an owned cl_kernel, argument setting and the tuned launch.
#pragma once
#include <string>
#include <vector>

#include "backends/opencl/cl_backend.h"

namespace osprey::opencl {

// An owned kernel object; arguments are set in order through arg()/mem().
class Kernel {
 public:
  Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel() {
    if (kernel_) clReleaseKernel(kernel_);
  }
  // `slots`: the tensors of the kernel's tensor arguments in order (IN(k) / OUT(k) in the .cl
  // text), which decide per argument whether it is built for a buffer or an image.
  Status create(OpenCLBackend* backend, const std::string& program, const std::string& name,
                const std::vector<const RuntimeTensor*>& slots = {}) {
    if (kernel_) clReleaseKernel(kernel_);
    kernel_ = nullptr;
    const std::string options = backend->optionsFor(slots);
    key_ = program + "/" + name + (options.empty() ? "" : "/" + options);
    return backend->runtime()->kernel(program, name, options, &kernel_);
  }
  // Starts setting arguments from the first.
  Kernel& begin() {
    index_ = 0;
    error_ = CL_SUCCESS;
    tensors_.clear();
    return *this;
  }
  template <class T>
  Kernel& arg(const T& value) {
    if (error_ == CL_SUCCESS) error_ = clSetKernelArg(kernel_, index_, sizeof(T), &value);
    ++index_;
    return *this;
  }
  // A tensor: its buffer and its element offset (or its image and width), two arguments. The
  // last tensor of every kernel is its output.
  Kernel& mem(const DeviceRef& r) {
    tensors_.push_back({index_, r});
    return arg(r.mem).arg(r.offset);
  }
  Status launch(OpenCLBackend* backend, int dims, const size_t* global) {
    if (error_ != CL_SUCCESS) return clCheck(error_, "setting argument " + std::to_string(index_) + " of " + key_);
    InPlaceCopies copies;
    OSPREY_RETURN_IF_ERROR(separateInPlace(backend, &copies));
    return backend->runtime()->launch(kernel_, key_, dims, global);
  }
  // With a fixed work-group size (kernels that share local memory); global rounds up to it.
  Status launchGroups(OpenCLBackend* backend, int dims, const size_t* global, const size_t* local) {
    if (error_ != CL_SUCCESS) return clCheck(error_, "setting argument " + std::to_string(index_) + " of " + key_);
    InPlaceCopies copies;
    OSPREY_RETURN_IF_ERROR(separateInPlace(backend, &copies));
    return backend->runtime()->launchWithLocal(kernel_, key_, dims, global, local);
  }
  Status launch(OpenCLBackend* backend, size_t x, size_t y = 0, size_t z = 0) {
    size_t g[3] = {x, y, z};
    return launch(backend, z ? 3 : y ? 2 : 1, g);
  }

 private:
  // Images made for one launch, released after it is enqueued (OpenCL frees them once the
  // kernel is done with them).
  struct InPlaceCopies {
    std::vector<cl_mem> images;
    ~InPlaceCopies() {
      for (cl_mem m : images) clReleaseMemObject(m);
    }
  };
  // An image is read-only or write-only inside a kernel: an input image that is also the
  // output (an in-place op) is read from a copy made just before the launch.
  Status separateInPlace(OpenCLBackend* backend, InPlaceCopies* copies) {
    if (tensors_.size() < 2 || !tensors_.back().second.image) return Status::ok();
    const DeviceRef& out = tensors_.back().second;
    for (size_t i = 0; i + 1 < tensors_.size(); ++i) {
      if (tensors_[i].second.mem != out.mem) continue;
      cl_image_format format;
      OSPREY_RETURN_IF_ERROR(clCheck(clGetImageInfo(out.mem, CL_IMAGE_FORMAT, sizeof(format), &format, nullptr),
                                     "clGetImageInfo for an in-place " + key_));
      cl_image_desc desc{};
      desc.image_type = CL_MEM_OBJECT_IMAGE2D;
      desc.image_width = out.width;
      desc.image_height = out.height;
      cl_int err = CL_SUCCESS;
      cl_mem copy = clCreateImage(backend->runtime()->context(), CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
      OSPREY_RETURN_IF_ERROR(clCheck(err, "the input copy of an in-place " + key_));
      copies->images.push_back(copy);
      size_t origin[3] = {0, 0, 0}, region[3] = {out.width, out.height, 1};
      OSPREY_RETURN_IF_ERROR(clCheck(clEnqueueCopyImage(backend->runtime()->queue(), out.mem, copy, origin, origin,
                                                        region, 0, nullptr, nullptr),
                                     "the input copy of an in-place " + key_));
      OSPREY_RETURN_IF_ERROR(
          clCheck(clSetKernelArg(kernel_, tensors_[i].first, sizeof(cl_mem), &copy), "in-place argument of " + key_));
    }
    return Status::ok();
  }

  cl_kernel kernel_ = nullptr;
  std::vector<std::pair<cl_uint, DeviceRef>> tensors_;  // (argument index, tensor) as set by mem()
  std::string key_;
  cl_uint index_ = 0;
  cl_int error_ = CL_SUCCESS;
};

class CLExecution : public Execution {
 public:
  explicit CLExecution(OpenCLBackend* backend) : Execution(backend) {}
  OpenCLBackend* cl() const { return static_cast<OpenCLBackend*>(backend()); }
  DeviceRef ref(const RuntimeTensor* t) const { return cl()->ref(t); }
};

// Packs four sizes into a kernel's int4 argument.
inline cl_int4 int4Of(int64_t a, int64_t b, int64_t c, int64_t d) {
  cl_int4 v;
  v.s[0] = static_cast<cl_int>(a);
  v.s[1] = static_cast<cl_int>(b);
  v.s[2] = static_cast<cl_int>(c);
  v.s[3] = static_cast<cl_int>(d);
  return v;
}

// True when every present tensor of `ts` is float32 (what the float kernels handle).
inline bool allFloat(const std::vector<RuntimeTensor*>& ts) {
  for (auto* t : ts)
    if (t && t->dtype != DataType::Float32) return false;
  return true;
}

// Row-major strides of `shape`, with 0 for size-1 dims (broadcast), right-aligned to `rank`.
std::vector<int> broadcastStrides(const Shape& shape, size_t rank);

// The creators, one per kernel file.
std::unique_ptr<Execution> createConv(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                      const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createPool(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                      const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createUnary(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                       const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createBinary(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                        const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createMatMul(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                        const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createSoftmax(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                         const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createLayerNorm(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                           const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createReduce(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                        const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createRaster(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                        const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createResize(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                        const std::vector<RuntimeTensor*>&);
std::unique_ptr<Execution> createBatchNorm(OpenCLBackend*, const OpRef&, const std::vector<RuntimeTensor*>&,
                                           const std::vector<RuntimeTensor*>&);

}  // namespace osprey::opencl
