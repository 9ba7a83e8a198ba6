// The CUDA backend: one stream per session, activations planned into one device arena per
// resize (MemoryPlanner), weights in STATIC device memory, host copies through pinned staging,
// and the whole run captured into a CUDA graph when every command is on the device.
//
// Conventions every CUDA Execution follows:
// - Storage: a tensor's RuntimeTensor::dtype is the model's dtype. On the device, Float32
//   tensors are stored in computeType() (fp32; fp16 or bf16 when precision is Low), except
//   those of the fp32 stem (RuntimeTensor::fullPrecision); every other dtype is stored as is.
//   storageType(t) says which; devicePtr(t) gives the bytes. The pipeline gives each command
//   its float tensors in one precision, so an execution may take its output's storage type
//   for all of them.
// - Layout: device tensors are stored in RuntimeTensor::layout. At fp16 / bf16 the backend asks
//   for NHWC for 4-D float activations (activationLayout); the pipeline grants it to groups of
//   tensors whose executions all support it (Execution::supportsLayout) and keeps NCHW
//   elsewhere, so an execution reads the layouts of its tensors in onResize. onCopyBuffer
//   converts dtype and layout to and from the host, where tensors are in the model's dtype.
// - onExecute only enqueues work on stream(): no cudaMalloc, no synchronisation, no host reads
//   of device data, because the run may be captured into a CUDA graph and replayed.
// - Scratch: acquireScratch() in onResize and releaseScratch() before onResize returns; the
//   address (scratchPtr) is valid from onExecute on. Weights: convert/pack them in onCreate or
//   onResize from inputs[i]->constData and upload with uploadStatic().
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_runtime.h"
#include "core/backend.h"
#include "core/memory_planner.h"
#include "core/thread_pool.h"

namespace osprey {

class CUDABackend : public Backend {
 public:
  CUDABackend(CUDARuntime* runtime, const BackendConfig& config);
  ~CUDABackend() override;

  std::unique_ptr<Execution> onCreate(const std::vector<RuntimeTensor*>& inputs,
                                      const std::vector<RuntimeTensor*>& outputs, const OpRef& op) override;
  std::unique_ptr<MemObj> onAcquire(RuntimeTensor* tensor, StorageType storage) override;
  void onClearBuffer() override;
  Status onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) override;
  void onResizeBegin() override;
  Status onResizeEnd() override;
  void onExecuteBegin() override;
  void onExecuteEnd() override;
  void onProfiling(bool on) override;
  void onStepwise(bool on) override;
  bool timesOnDevice() const override { return true; }
  Status onProfileMark() override;
  Status onProfileMarkTimes(std::vector<double>* us) override;
  Status onWaitFinish() override;
  Status onAllocateDevice(size_t bytes, void** data, std::shared_ptr<void>* owner) override;
  size_t arenaPeakBytes() const override { return planner_.peakBytes(); }
  size_t staticBytes() const override { return staticBytes_; }
  Layout activationLayout(const RuntimeTensor& t) const override;
  bool honoursFullPrecision() const override { return lowPrecision(); }
  // Concat and slice parts, at offsets of whole 256-byte lines (cudaMalloc's alignment, which
  // WMMA, ldmatrix and vector loads rely on).
  bool canPlaceInside(const RuntimeTensor&) const override { return true; }
  size_t storedElementBytes(const RuntimeTensor& t) const override { return dataTypeSize(storageType(&t)); }
  size_t placementAlignment() const override { return kDeviceAlignment; }
  static constexpr size_t kDeviceAlignment = 256;  // of planned activations and of parts
  bool computesFloat16() const override { return true; }

  // --- What executions use ---
  CUDARuntime* runtime() const { return runtime_; }
  // How this session's products and convolutions choose their algorithms (CudaOptions::autotune).
  cuda::TuningRequest tuningRequest() const { return {&runtime_->tuning(), config().cuda.graphs}; }
  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t cublasLt() { return runtime_->cublasLt(); }
  cudnnHandle_t cudnn();  // bound to stream()
  const BackendConfig& config() const { return config_; }
  bool lowPrecision() const { return computeType_ != DataType::Float32; }
  // Storage dtype of Float32 activations: Float32, or Float16/BFloat16 when precision is Low
  // (BFloat16 when CudaOptions::lowPrecision says so).
  DataType computeType() const { return computeType_; }
  // A tensor of the fp32 stem (RuntimeTensor::fullPrecision) stays Float32.
  DataType storageType(const RuntimeTensor* t) const {
    return t->dtype == DataType::Float32 && !t->fullPrecision ? computeType_ : t->dtype;
  }
  // The storage dtype `op` reads a tensor of `dtype` in, before the pipeline has given it the
  // op's inputs (in onCreate, an input may still be the producer's tensor, not its mirror).
  DataType operandType(DataType dtype, const OpRef& op) const {
    return dtype == DataType::Float32 && !op.fullPrecision ? computeType_ : dtype;
  }
  void* devicePtr(const RuntimeTensor* t) const;
  template <class T>
  T* devicePtr(const RuntimeTensor* t) const {
    return static_cast<T*>(devicePtr(t));
  }
  // Scratch planned with the activations (see the conventions above).
  std::shared_ptr<MemChunk> acquireScratch(size_t bytes);
  void releaseScratch(const std::shared_ptr<MemChunk>& chunk);
  void* scratchPtr(const MemChunk& chunk) const;
  // STATIC device memory for weights: allocated and filled now, counted in staticBytes().
  Status uploadStatic(const void* host, size_t bytes, DeviceBuffer* out);
  Status allocateStatic(size_t bytes, DeviceBuffer* out);

 private:
  enum class GraphMode { Eager, Capture, Replay };
  friend class GraphAwareExecution;
  bool replaying() const { return graphMode_ == GraphMode::Replay; }
  void abandonCapture();
  void dropGraph();  // the next runs run eagerly, then capture again
  Status copyHostToDevice(const RuntimeTensor* src, RuntimeTensor* dst);
  Status copyDeviceToHost(const RuntimeTensor* src, RuntimeTensor* dst);
  Status copyDeviceToDevice(const RuntimeTensor* src, RuntimeTensor* dst);
  PinnedBuffer* stagingFor(const RuntimeTensor* t, size_t bytes);
  // memcpy between the user's host memory and pinned staging, split over copyPool_ when large:
  // one thread copies pageable memory at a fraction of what the memory system delivers.
  void hostCopy(void* dst, const void* src, size_t bytes);
  // The same for a float32 -> fp16 / bf16 copy of n values.
  void hostNarrow(uint16_t* dst, const float* src, size_t n, DataType to);
  // work(from, to) over byte ranges of [0, bytes), in parallel when large.
  void hostParallel(size_t bytes, const std::function<void(size_t, size_t)>& work);

  CUDARuntime* runtime_;
  BackendConfig config_;
  DataType computeType_ = DataType::Float32;
  bool channelsLast_ = false;  // 4-D float activations in NHWC where executions agree
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  MemoryPlanner planner_;
  DeviceBuffer arena_;
  uint8_t* arenaBase_ = nullptr;  // chunk->device points here: device address = *base + offset
  size_t staticBytes_ = 0;
  std::map<const RuntimeTensor*, PinnedBuffer> staging_;
  std::unique_ptr<ThreadPool> copyPool_;  // made at the first large copy
  bool copyPoolChecked_ = false;
  // fp32 image of a tensor on its way to/from fp16 storage; uploads may sit in a captured
  // graph, read-backs never do, so they have separate buffers.
  DeviceBuffer uploadScratch_, readbackScratch_;

  // CUDA graph of the run: the first run after a resize runs eagerly and watches for
  // device-to-host copies inside the run (a CPU-fallback op); without any, the second run is
  // captured and every later run replays it. CudaOptions::graphs = false disables capture.
  GraphMode graphMode_ = GraphMode::Eager;
  bool graphAllowed_ = true;
  // Per-op timing: CUDA events between the commands (reused run to run), recorded inside the
  // captured graph as its event nodes, so that a replay times each op on the device.
  bool profiling_ = false;
  bool stepwise_ = false;  // run callbacks: no graph, each op launched as it comes
  std::vector<cudaEvent_t> profileEvents_;
  size_t profileMarks_ = 0;
  bool inRun_ = false;
  bool sawHostReadInRun_ = false;
  bool lastEagerRunClean_ = false;
  int eagerRunsSinceResize_ = 0;
  cudaGraphExec_t graphExec_ = nullptr;
  Status graphError_;
};

// Creates the CUDA execution for an op, or null when the op stays on the CPU.
using CUDAExecutionCreator = std::unique_ptr<Execution> (*)(CUDABackend* backend, const OpRef& op,
                                                             const std::vector<RuntimeTensor*>& inputs,
                                                             const std::vector<RuntimeTensor*>& outputs);
// The registry of CUDA kernels, filled from the explicit list in cuda_kernels.cpp.
CUDAExecutionCreator cudaKernelCreator(OpType type);

void registerCudaRuntime();

}  // namespace osprey
