// Interpreter (an immutable, verified model, shareable between threads) and Session (one
// schedule of it: backend, threads, memory plan).
//
// Threads: an Interpreter may be shared by any number of threads, each creating and running
// its own Sessions at the same time. One Session's calls (run, resize, inputs, outputs,
// setProfiling) may come from several threads; they are serialised (one waits for the other),
// so to run in parallel, give each thread its own Session. stats() and lastRunProfile() return
// references that the next run or resize rewrites: read them on the thread that ran.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "osprey/config.h"
#include "osprey/status.h"
#include "osprey/tensor.h"

namespace osprey {

struct Model;
class SessionImpl;
class Float16Widening;

struct TensorInfoPublic {
  std::string name;
  DataType dtype = DataType::Undefined;
  Shape shape;                        // -1 for symbolic dimensions
  std::vector<std::string> dimNames;  // the symbol, "" where fixed
  DataType elementDtype = DataType::Undefined;  // a sequence's (dtype Sequence) items, where declared
  bool optional = false;  // may be given or return no value (an empty Tensor)
};

struct SessionStats {
  size_t arenaPeakBytes = 0;        // the planner's activation arena
  size_t activationBytesSum = 0;    // every activation's size added up (no reuse)
  size_t staticBytes = 0;           // weights and pre-packed data
  int executions = 0;               // commands in the pipeline that run
  int views = 0;                    // whole-tensor copies (Reshape, ...) run as views: no work
  int relaidTensors = 0;            // activations kept in their backend's layout (not NCHW)
  int foldedOps = 0;                // ops computed once at resize (constant folding)
  int loweredOps = 0;               // ops lowered to Raster
  int fullPrecisionOps = 0;         // commands kept in fp32 at Low precision (the stem)
  // A node whose output shapes depend on values (NonZero, If, Loop ...) ends a planned stage and
  // runs on the host between it and the next, which plans again only for new shapes.
  int stages = 1;
  int hostOps = 0;                  // such nodes run on the host at each run
  // Weights packed for the kernels by this plan, and packed blocks it shared instead (made by an
  // earlier plan of another input shape, another stage or another session of the runtime).
  int weightsPacked = 0;
  int weightsShared = 0;
  int plansMade = 0;                // plans made since the session was created (every stage's own)
  int plansKept = 0;                // plans of other input shapes kept (BackendConfig::planCacheSize)
  // If / Loop / Scan bodies planned as sessions on this session's runtime and settings, at their
  // first run (nested bodies are counted by their own sessions).
  int bodySessions = 0;
  int64_t flops = 0;                // of the ops that run (2 per multiply-add)
  std::map<std::string, int> opsByBackend;  // "cpu:Conv" -> count
  std::map<std::string, int> referenceOps;  // "QLinearConv" -> commands running the reference kernel
  // "QLinearConv uint8 -> uint8" (op type, first input's and first output's dtypes) -> count
  std::map<std::string, int> opsByDtype;
};

// One command of the last profiled run (Session::setProfiling): an op, a Raster or a copy.
struct OpTiming {
  std::string opType;   // "Conv", "Raster", "Copy"
  std::string name;     // the node's name ("" for Raster and copies)
  std::string backend;  // "cpu", ...
  std::vector<Shape> inputShapes, outputShapes;
  double startUs = 0;     // from the start of the run
  double durationUs = 0;
};

// An op as a run callback sees it. Ops lowered to data movement (Transpose, Slice, Concat ...)
// keep their own type; ops computed once at resize (constant folding) are not reported.
struct OpCallbackInfo {
  std::string name;     // the node's name
  std::string type;     // "Conv", "Transpose", ...
  std::string backend;  // "cpu", "cuda", ... or "host" for an op whose output shapes depend on data
};

// The inputs (before the op) or outputs (after it) of the op being reported, readable while the
// callback runs.
class OpTensors {
 public:
  virtual ~OpTensors() = default;
  virtual size_t size() const = 0;
  virtual std::string name(size_t i) const = 0;  // "" for an omitted optional input
  virtual Shape shape(size_t i) const = 0;
  virtual DataType dtype(size_t i) const = 0;
  // A host copy in NCHW (from any backend and layout).
  virtual Status read(size_t i, Tensor* out) const = 0;
};

// Returns false to stop the run: run() then fails with StatusCode::Cancelled, naming the op.
using OpCallback = std::function<bool(const OpCallbackInfo& op, const OpTensors& tensors)>;

// MNN's runSessionWithCallBack: `before` sees each op's inputs, `after` its outputs; either may
// be empty. Callbacks run on the thread that called run().
struct RunCallbacks {
  OpCallback before, after;
};

// A tensor in a device backend's memory (CUDA: a device pointer), in the model's dtype, NCHW,
// contiguous. Session::allocateDevice makes one (freed with its last copy, through `owner`);
// wrapping memory the caller owns (a torch or CuPy tensor's pointer) leaves `owner` null.
struct DeviceTensor {
  ForwardType device = ForwardType::CUDA;
  void* data = nullptr;
  DataType dtype = DataType::Float32;
  Shape shape;
  std::shared_ptr<void> owner;
  int64_t elements() const { return shapeElements(shape); }
  size_t bytes() const { return static_cast<size_t>(elements()) * dataTypeSize(dtype); }
};

// The inputs and outputs of a run bound to memory the caller owns (ONNX Runtime's IOBinding): a
// host tensor (an output bound to one is written in place: nothing is allocated) or device
// memory of the session's backend (read and written on the device: no host copy).
class IoBinding {
 public:
  void bindInput(const std::string& name, const Tensor& host) { hostInputs[name] = host; }
  void bindInput(const std::string& name, const DeviceTensor& device) { deviceInputs[name] = device; }
  void bindOutput(const std::string& name, const Tensor& host) { hostOutputs[name] = host; }
  void bindOutput(const std::string& name, const DeviceTensor& device) { deviceOutputs[name] = device; }
  std::map<std::string, Tensor> hostInputs, hostOutputs;
  std::map<std::string, DeviceTensor> deviceInputs, deviceOutputs;
};

struct SharedRuntimeState;

// A backend's resources made once and used by several Sessions (MNN's createRuntime): thread
// pool, memory pools, compiled programs, tuning caches. Sessions on one runtime take turns: a
// run or resize waits while another session of the runtime runs on another thread (runs on
// different runtimes go in parallel). A Session created without one makes its own.
class SharedRuntime {
 public:
  ~SharedRuntime();
  const ScheduleConfig& schedule() const;
  const BackendConfig& backendConfig() const;
  int threadCount() const;  // the CPU runtime's worker threads, the caller's included
  // Returns to the system what the runtime's pools keep but no session uses (level 0: caches
  // that are quick to refill; higher levels free more).
  void garbageCollect(int level = 0);

 private:
  friend Status makeSharedRuntime(const ScheduleConfig&, const BackendConfig&, std::shared_ptr<SharedRuntime>*);
  friend SharedRuntimeState& runtimeState(const SharedRuntime& runtime);
  SharedRuntime();
  std::unique_ptr<SharedRuntimeState> state_;
};

class Session {
 public:
  ~Session();
  // Sets new input shapes and replans; a repeated call with the same shapes does nothing.
  Status resize(const std::map<std::string, Shape>& inputShapes);
  // Runs with the given inputs (missing ones keep their last values). Shapes that differ from
  // the current ones trigger a resize first. Outputs are host tensors in NCHW. A shape whose
  // tensors would pass BackendConfig::memoryLimit is refused (StatusCode::OutOfMemory).
  Status run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>* outputs);
  // A run that reports every op to `callbacks` (see RunCallbacks).
  Status run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>* outputs, const RunCallbacks& callbacks);
  // A run with inputs and outputs bound to the caller's memory (see IoBinding); every input must
  // be bound, and outputs left unbound are computed but not returned. Returns once the device has
  // finished. Bound output memory must hold the output's dtype and shape.
  Status run(const IoBinding& io);
  // Starts run(inputs) (or run(io)) on a thread of its own and returns at once, so the caller
  // can prepare the next inputs meanwhile; wait() blocks until that run ends and returns its
  // status and outputs. One run is pending at a time: a second runAsync before wait() is
  // refused. Calls made on the session meanwhile run before or after it, never during it; an
  // IoBinding and its memory must stay alive until wait() returns. Destroying the session
  // waits for the run.
  Status runAsync(std::map<std::string, Tensor> inputs);
  Status runAsync(const IoBinding& io);
  Status wait(std::vector<Tensor>* outputs = nullptr);
  // Device memory of the session's backend for a tensor of `dtype` and `shape`, and copies
  // between it and the host (synchronous).
  Status allocateDevice(DataType dtype, const Shape& shape, DeviceTensor* out);
  Status copyToDevice(const Tensor& host, const DeviceTensor& device);
  Status copyFromDevice(const DeviceTensor& device, Tensor* host);
  std::vector<TensorInfoPublic> inputs() const;
  std::vector<TensorInfoPublic> outputs() const;
  const SessionStats& stats() const;
  // Times every command of each following run (off by default, and free when off).
  void setProfiling(bool on);
  // Returns the memory of every plan (activation arenas, folded values, executions and the
  // packed weights no other session of the runtime holds) to the system; the next run plans
  // again. For a server that keeps a session idle for long.
  void releaseMemory();
  // The commands of the last run made while profiling was on, in execution order.
  const std::vector<OpTiming>& lastRunProfile() const;

 private:
  friend class Interpreter;
  explicit Session(std::unique_ptr<SessionImpl> impl);
  std::unique_ptr<SessionImpl> impl_;
};

// How Interpreter::fromFile reads a model.
struct LoadOptions {
  // .osp: map the file instead of reading it into memory. The weights are then pages of the
  // file, which a session at BackendConfig::Memory::Low returns to the system once it has
  // packed them (read again from the file where a later plan needs them). The file must stay
  // unchanged while the interpreter lives. An .onnx model is converted into memory either way.
  bool mapFile = false;
  // A Caffe network (a .prototxt path): its weights file. Empty: the .caffemodel of the same
  // name beside it, when there is one.
  std::string weights;
  // A TensorFlow SavedModel directory: the signature to run. Empty: serving_default.
  std::string signature;
};

class Interpreter {
 public:
  // Loads a .osp file, or an .onnx, .tflite or Caffe .prototxt model converted in memory.
  static Status fromFile(const std::string& path, std::shared_ptr<Interpreter>* out);
  static Status fromFile(const std::string& path, const LoadOptions& options, std::shared_ptr<Interpreter>* out);
  // Loads .osp bytes (verified first: corrupt bytes are an error, never a crash).
  static Status fromBuffer(const void* data, size_t size, std::shared_ptr<Interpreter>* out);
  // Wraps an in-memory model (built by the converter or by tests); validated first.
  static Status fromModel(std::shared_ptr<const Model> model, std::shared_ptr<Interpreter>* out);
  ~Interpreter();

  Status createSession(const ScheduleConfig& schedule, const BackendConfig& backend,
                       std::unique_ptr<Session>* out) const;
  // Makes the runtime of a schedule, for sessions to share (of this or any other model).
  static Status createRuntime(const ScheduleConfig& schedule, const BackendConfig& backend,
                              std::shared_ptr<SharedRuntime>* out);
  // A session on `runtime`, with its schedule and backend settings.
  Status createSession(const std::shared_ptr<SharedRuntime>& runtime, std::unique_ptr<Session>* out) const;
  std::vector<TensorInfoPublic> inputs() const;
  std::vector<TensorInfoPublic> outputs() const;
  const Model& model() const { return *model_; }

 private:
  Interpreter() = default;
  static std::shared_ptr<Interpreter> holding(std::shared_ptr<const Model> model);
  std::shared_ptr<const Model> model_;
  // The model as sessions on a backend without float16 kernels run it.
  std::shared_ptr<Float16Widening> float16_;
};

// Backends compiled into this build and the devices each sees.
struct BackendDescription {
  std::string name;
  std::vector<std::string> devices;
};
std::vector<BackendDescription> availableBackends();

}  // namespace osprey
