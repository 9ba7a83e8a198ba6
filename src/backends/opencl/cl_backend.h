// OpenCLBackend: activations planned into one device arena (MemoryPlanner offsets into a pooled
// cl_mem), STATIC memory from the runtime's pools, copies to and from the
// host in any layout pair, and executions from the OpenCL kernel registry (cl_kernels.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/opencl/cl_runtime.h"
#include "core/memory_planner.h"

namespace osprey::opencl {

// What MemChunk::device points at: the buffer (or image) and, for an image, its extent.
struct DeviceSlot {
  cl_mem mem = nullptr;
  size_t imageWidth = 0, imageHeight = 0;  // 0 for a buffer
  bool bound = false;  // the caller's memory (IoBinding): float32 whatever the precision
};

// Where a device tensor's elements are: a buffer and an element offset into it, or an image
// and log2 of its width (element i at texel (i % width, i / width)). Kernels take the pair as
// (mem, int) arguments either way; the storage macros of common.cl read the int accordingly.
struct DeviceRef {
  cl_mem mem = nullptr;
  int offset = 0;  // in elements of the tensor's device type; log2 of the width for an image
  bool image = false;
  size_t width = 0, height = 0;  // the image's extent
};

class OpenCLBackend : public Backend {
 public:
  OpenCLBackend(OpenCLRuntime* runtime, const BackendConfig& config);
  ~OpenCLBackend() override;
  std::unique_ptr<Execution> onCreate(const std::vector<RuntimeTensor*>& inputs,
                                      const std::vector<RuntimeTensor*>& outputs, const OpRef& op) override;
  std::unique_ptr<MemObj> onAcquire(RuntimeTensor* tensor, StorageType storage) override;
  void onClearBuffer() override;
  Status onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) override;
  void onResizeBegin() override;
  Status onResizeEnd() override;
  void onExecuteEnd() override;
  Status onWaitFinish() override;
  // Device tensors are cl_mem buffers of float32 (or the model's dtype), NCHW: allocated here, or
  // the caller's own cl_mem of this context passed as DeviceTensor::data.
  Status onAllocateDevice(size_t bytes, void** data, std::shared_ptr<void>* owner) override;
  std::shared_ptr<MemChunk> onWrapDevice(void* data, size_t bytes) const override;
  size_t arenaPeakBytes() const override { return planner_.peakBytes(); }
  size_t staticBytes() const override { return staticBytes_; }
  Layout preferredLayout(const RuntimeTensor& t) const override;
  // An image's geometry belongs to its tensor: only buffers are shared between views.
  bool canShareMemory(const RuntimeTensor&) const override { return !runtime_->useImages(); }

  OpenCLRuntime* runtime() const { return runtime_; }
  // fp16 storage (precision Low): half in memory.
  bool fp16() const { return fp16_; }
  // Half arithmetic too (fp16 storage on a device with cl_khr_fp16): -DUSE_FP16_MATH.
  bool halfMath() const { return halfMath_; }
  // Bytes of one element of `dtype` in device memory (float32 is stored as half under fp16).
  size_t deviceElementSize(DataType dtype) const;
  // Build options every program of this backend gets (FLOAT type, fp16 extension).
  const std::string& buildOptions() const { return buildOptions_; }
  DeviceRef ref(const RuntimeTensor* t) const;
  // True when `t` is (or will be) held in an image: image mode, float32, and it fits the
  // device's image2d limits (anything larger falls back to a buffer).
  bool imageTensor(const RuntimeTensor* t) const;
  // buildOptions() plus -DIMGk for each argument slot k whose tensor is an image.
  std::string optionsFor(const std::vector<const RuntimeTensor*>& slots) const;
  // Images of this backend's DYNAMIC tensors (see OpenCLRuntime::staticImagePool).
  ImagePool& dynamicImagePool() { return dynamicImages_; }
  // True when `t` lives in this backend's device memory.
  bool onDevice(const RuntimeTensor* t) const { return t && !t->constData && t->backend == this && t->chunk; }

 private:
  Status upload(const RuntimeTensor* src, RuntimeTensor* dst);
  Status download(const RuntimeTensor* src, RuntimeTensor* dst);
  Status writeDevice(const RuntimeTensor* dst, const uint8_t* bytes, size_t size);
  Status readDevice(const RuntimeTensor* src, uint8_t* bytes, size_t size);
  Status copyOnDevice(const RuntimeTensor* src, RuntimeTensor* dst, size_t size);

  OpenCLRuntime* runtime_;
  BackendConfig config_;
  bool fp16_ = false, halfMath_ = false;
  std::string buildOptions_;
  MemoryPlanner planner_;
  DeviceSlot arena_;  // the planned activations (a buffer); chunks point at this slot
  size_t arenaCapacity_ = 0;
  size_t staticBytes_ = 0;
  // Freed while a plan is made but written when it runs: never cleared before the backend dies.
  ImagePool dynamicImages_;
};

// Creates the OpenCL execution for an op, or null when there is no kernel for it here.
using CLExecutionCreator = std::unique_ptr<Execution> (*)(OpenCLBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs);
CLExecutionCreator clKernelCreator(OpType type);

}  // namespace osprey::opencl
