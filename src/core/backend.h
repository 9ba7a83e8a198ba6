// The backend contract: Runtime (per-device resources) -> Backend (per session) -> Execution
// (per op). A null Execution from onCreate means "not here"; the backup backend takes the op.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/graph.h"
#include "core/runtime_tensor.h"
#include "core/raster_plan.h"
#include "osprey/config.h"

namespace osprey {

class ThreadPool;

enum class StorageType {
  STATIC,            // weights and pre-packed data: never reused
  DYNAMIC,           // activations: planned into the arena, reused after release
};

// RAII ownership of acquired memory: destroying a MemObj returns the memory. For DYNAMIC
// storage during resize this marks the end of the tensor's lifetime in the plan.
class MemObj {
 public:
  virtual ~MemObj() = default;
};

// What an Execution runs: an op of the model, or a Raster synthesised by geometry lowering.
struct OpRef {
  OpType type = OpType::Invalid;
  const Node* node = nullptr;                // the model's node (attributes, name)
  std::shared_ptr<const RasterPlan> raster;  // for OpType::Raster
  // Run in fp32 although the backend runs at Low precision (BackendConfig::fullPrecisionStem);
  // only set where the backend honoursFullPrecision().
  bool fullPrecision = false;
  std::string describe() const { return node ? node->describe() : std::string("Raster"); }
};

class Backend;

class Execution {
 public:
  explicit Execution(Backend* backend) : backend_(backend) {}
  virtual ~Execution() = default;
  // Shapes are final here: acquire scratch (and release it before returning), choose the algorithm.
  virtual Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
    (void)inputs;
    (void)outputs;
    return Status::ok();
  }
  virtual Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) = 0;
  // Whether this execution runs when every one of its tensors whose layout matters (see
  // layoutMatters in core/layout.h) is stored in `layout`. Asked after onCreate, before
  // onResize, which then sees the chosen layouts (SessionImpl::chooseLayouts).
  virtual bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                              const std::vector<RuntimeTensor*>& outputs) const {
    (void)inputs;
    (void)outputs;
    return layout == Layout::NCHW;
  }
  // Whether this execution joins two layouts: its tensors that the backend wants in a non-NCHW
  // layout (activationLayout) may be stored in it while its others stay NCHW, so the wanting ones
  // form groups of their own (QuantizeLinear from NCHW floats into channels-last bytes).
  virtual bool bridgesLayouts() const { return false; }
  // False for an execution that adapts to whatever layout each of its tensors is given
  // (converting them around its kernel): it neither joins nor constrains the layout groups.
  virtual bool joinsLayoutGroups(const std::vector<RuntimeTensor*>& inputs,
                                 const std::vector<RuntimeTensor*>& outputs) const {
    (void)inputs, (void)outputs;
    return true;
  }
  // Whether running in the layout supportsLayout grants is a reason to choose it (the kernel is
  // faster there). Conversions around an NCHW kernel, conversions at a group's edges and loops
  // that run alike in any layout are not: a group takes a layout only where one of its
  // executions favors it.
  virtual bool favorsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                            const std::vector<RuntimeTensor*>& outputs) const {
    (void)layout, (void)inputs, (void)outputs;
    return true;
  }
  Backend* backend() const { return backend_; }
  // Whether this runs the op's reference kernel (plain loops) rather than a backend's own.
  virtual bool isReference() const { return false; }

 private:
  Backend* backend_;
};

class Backend {
 public:
  explicit Backend(ForwardType type) : type_(type) {}
  virtual ~Backend() = default;
  ForwardType type() const { return type_; }

  virtual std::unique_ptr<Execution> onCreate(const std::vector<RuntimeTensor*>& inputs,
                                              const std::vector<RuntimeTensor*>& outputs, const OpRef& op) = 0;
  // Gives `tensor` memory for its current shape and layout (tensor->chunk is set).
  virtual std::unique_ptr<MemObj> onAcquire(RuntimeTensor* tensor, StorageType storage) = 0;
  virtual void onClearBuffer() = 0;
  // Copies between this backend and the host (or within it), converting layouts as needed.
  virtual Status onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) = 0;
  virtual void onResizeBegin() {}
  // Makes the memory plan; afterwards every chunk has its address.
  virtual Status onResizeEnd() { return Status::ok(); }
  // Before onResizeEnd: the arithmetic (ops/flops.h) of the ops this backend runs in the plan
  // just made; -1 where an op's work is not counted (a subgraph's). Returns whether its runs of
  // this plan keep to the calling thread: the session's host copies of inputs and outputs then do
  // too (waking a worker to copy would cost more than the copy).
  virtual bool onPlannedWork(int64_t flops) {
    (void)flops;
    return false;
  }
  virtual void onExecuteBegin() {}
  virtual void onExecuteEnd() {}
  // A run that failed after onExecuteBegin: release what the run held (no results to finish).
  virtual void onExecuteAbort() {}
  // BackendConfig::Memory::Low, after a run has handed back its outputs: return the activation
  // arena's pages to the system. The plan keeps its addresses; the next run touches fresh pages.
  virtual void onReleaseScratch() {}
  // Per-op timing is wanted (Session::setProfiling): a device backend without a clock of its own
  // (timesOnDevice) then finishes each op before its onExecute returns, so host clocks time ops.
  virtual void onProfiling(bool on) { (void)on; }
  // Run callbacks read tensors between ops: a backend that would otherwise replay a recorded run
  // (CUDA graphs) runs each op as it comes while this is on.
  virtual void onStepwise(bool on) { (void)on; }
  // Per-op timing on the device's own clock, where the backend has one (timesOnDevice()): while
  // profiling, the session puts a mark into the backend's queue before and after each command it
  // runs there (onProfileMark, which does not wait), and after the run reads each mark's time in
  // microseconds after the run's first mark (onProfileMarkTimes). Nothing waits between ops.
  virtual bool timesOnDevice() const { return false; }
  virtual Status onProfileMark() { return Status::ok(); }
  virtual Status onProfileMarkTimes(std::vector<double>* us) {
    us->clear();
    return Status::ok();
  }
  // Waits until the work enqueued so far has finished (the seeds' onWaitFinish), reporting an
  // error that asynchronous work met.
  virtual Status onWaitFinish() { return Status::ok(); }
  // Device memory of `bytes` the caller may bind as a run's input or output (DeviceTensor):
  // *data its address, *owner frees it. Unsupported on backends whose memory is the host's.
  virtual Status onAllocateDevice(size_t bytes, void** data, std::shared_ptr<void>* owner) {
    (void)bytes, (void)data, (void)owner;
    return Status::unsupported("this backend has no device memory to bind");
  }
  // A chunk over caller memory bound as a DeviceTensor (IoBinding and the device copies): `data`
  // as allocated by onAllocateDevice or given by the caller (a CUDA address, an OpenCL cl_mem),
  // in the form this backend's copies read. The default holds the address (a device pointer).
  virtual std::shared_ptr<MemChunk> onWrapDevice(void* data, size_t bytes) const {
    struct AddressChunk : MemChunk {
      uint8_t* address = nullptr;
    };
    auto chunk = std::make_shared<AddressChunk>();
    chunk->address = static_cast<uint8_t*>(data);
    chunk->device = &chunk->address;
    chunk->size = bytes;
    return chunk;
  }
  // Planner report of the activation arena.
  virtual size_t arenaPeakBytes() const { return 0; }
  // Bytes held in STATIC storage (pre-packed weights, uploaded constants).
  virtual size_t staticBytes() const { return 0; }
  // Weights this backend packed, and packed blocks it took from its runtime instead (made by
  // another plan, stage or session of the runtime).
  struct PackCounts {
    int made = 0, reused = 0;
  };
  virtual PackCounts packCounts() const { return {}; }
  // Whether two tensors of the same dtype, layout and element count may share one MemChunk: the
  // pipeline then runs a whole-tensor copy (Reshape, Flatten, Squeeze, ...) as a view of its
  // input instead of a Raster. False where memory depends on more than the element count.
  virtual bool canShareMemory(const RuntimeTensor& t) const {
    (void)t;
    return true;
  }
  // Whether t may live inside another tensor's memory on this backend, at a byte offset (a
  // MemChunk with the other's base and a larger offset): the pipeline then has the ops that
  // produce a Concat's inputs write them straight into its output, and the Concat runs nothing,
  // and reads a contiguous slice of a tensor where it lies, and the slice runs nothing.
  virtual bool canPlaceInside(const RuntimeTensor& t) const {
    (void)t;
    return false;
  }
  // Bytes of one of t's elements in this backend's memory (where parts are placed inside a
  // whole: a byte offset is elements times this).
  virtual size_t storedElementBytes(const RuntimeTensor& t) const { return dataTypeSize(t.dtype); }
  // What a part's byte offset inside its whole must be a multiple of, for the kernels that read
  // and write it (vector and tensor-core loads want aligned addresses).
  virtual size_t placementAlignment() const { return 1; }
  // Whether the backend runs ops marked OpRef::fullPrecision in fp32 while the others run at
  // Low precision. It stores each float activation in the precision of the ops that read it
  // (RuntimeTensor::fullPrecision); the pipeline inserts a converting copy within the backend
  // where producer and consumer differ, and onCopyBuffer converts.
  virtual bool honoursFullPrecision() const { return false; }
  // Whether the backend has float16 kernels of its own. A session whose main backend has none
  // runs a float16 model widened to float32 inside (runtime/float16_widening.h), so that its ops
  // take the float32 kernels instead of falling to reference kernels.
  virtual bool computesFloat16() const { return false; }
  // Layout this backend wants for an activation of the given rank (e.g. NC4HW4 for 4-D).
  virtual Layout preferredLayout(const RuntimeTensor& t) const {
    (void)t;
    return Layout::NCHW;
  }
  // The layout this backend would keep activation `t` in between its own executions (NHWC for
  // tensor-core convolution, packed channels for SIMD). The pipeline uses it for every group of
  // tensors whose executions all support it, and keeps NCHW elsewhere; onCopyBuffer converts.
  virtual Layout activationLayout(const RuntimeTensor& t) const {
    (void)t;
    return Layout::NCHW;
  }

 private:
  ForwardType type_;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::unique_ptr<Backend> onCreate(const BackendConfig& config) = 0;
  // Returns memory the runtime holds between runs (SharedRuntime::garbageCollect); level 100 returns all it can.
  virtual void onGarbageCollect(int level) { (void)level; }
  virtual ThreadPool* threadPool() { return nullptr; }
};

struct DeviceInfo {
  std::string name;
  std::string detail;
};

class RuntimeCreator {
 public:
  virtual ~RuntimeCreator() = default;
  // The runtime's settings are those of its first session (SharedRuntime: of createRuntime).
  virtual std::unique_ptr<Runtime> onCreate(const ScheduleConfig& schedule, const BackendConfig& config) const = 0;
  // As onCreate, with the reason when there is no runtime (a device that does not match, a driver
  // call that failed); the default reports only that none was found.
  virtual Status create(const ScheduleConfig& schedule, const BackendConfig& config, std::unique_ptr<Runtime>* out) const {
    *out = onCreate(schedule, config);
    return *out ? Status::ok() : Status::unsupported("found no device");
  }
  virtual std::vector<DeviceInfo> devices() const = 0;  // what `osprey backends` lists
};

// Registration by forward type from an explicit list (core/backend_registry.cpp), never from
// static initialisers that a static library could drop.
void insertRuntimeCreator(ForwardType type, std::unique_ptr<RuntimeCreator> creator);
const RuntimeCreator* getRuntimeCreator(ForwardType type);
void registerBuiltinBackends();  // idempotent

}  // namespace osprey
