// A Session's machinery: resize (shape computation, constant folding, geometry lowering,
// backend choice, memory planning) and run.
#pragma once
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/backend.h"
#include "core/graph.h"
#include "core/shared_runtime.h"
#include "core/subgraph_sessions.h"
#include "osprey/interpreter.h"
#include "runtime/float16_widening.h"

namespace osprey {

class SessionImpl {
 public:
  SessionImpl(std::shared_ptr<const Model> model, const ScheduleConfig& schedule, const BackendConfig& config);
  // A session on `runtime`, with its settings.
  SessionImpl(std::shared_ptr<const Model> model, std::shared_ptr<SharedRuntime> runtime);
  ~SessionImpl();
  // `float16`: the model widened to float32, taken where the main backend has no float16 kernels
  // (null: the model as it is; later stages share their first stage's).
  Status init(Float16Widening* float16 = nullptr);
  std::recursive_mutex& runtimeMutex() { return runtimeState(*runtime_).runMutex; }
  // The stage of `parent`'s model that follows a data-dependent op (see plan()): the nodes from
  // `firstNode` on, fed `entries` at every run and the parent's `known` values, returning
  // `exits`. It creates its backends from the parent's runtimes.
  SessionImpl(const SessionImpl& parent, size_t firstNode, std::vector<int> entries, std::vector<int> exits,
              std::map<int, const RuntimeTensor*> known);
  Status resize(const std::map<std::string, Shape>& inputShapes);
  Status run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>* outputs,
             const RunCallbacks* callbacks = nullptr);
  Status run(const IoBinding& io);
  void releaseMemory();
  Status allocateDevice(DataType dtype, const Shape& shape, DeviceTensor* out);
  Status copyToDevice(const Tensor& host, const DeviceTensor& device);
  Status copyFromDevice(const DeviceTensor& device, Tensor* host);
  // The host value of an activation or constant in NCHW.
  Status readTensor(const RuntimeTensor& rt, Tensor* out) const;
  // The same into `out`, which already has rt's dtype and shape (nothing allocated).
  Status readInto(const RuntimeTensor& rt, Tensor* out) const;
  std::vector<TensorInfoPublic> inputInfo() const;
  std::vector<TensorInfoPublic> outputInfo() const;
  const SessionStats& stats() const {
    SessionStats& s = next_ || boundary_ >= 0 ? mergedStats_ : stats_;
    // Made at a body's first run, so read when asked.
    s.bodySessions = subgraphs_ ? static_cast<int>(subgraphs_->size()) : 0;
    return s;
  }
  void setProfiling(bool on) {
    profiling_ = on;
    if (main_) main_->onProfiling(on);
    if (backup_) backup_->onProfiling(on);
    if (next_) next_->setProfiling(on);
  }
  void setCallbacks(const RunCallbacks* callbacks) {
    callbacks_ = callbacks;
    for (Backend* b : {main_.get(), backup_.get()}) {
      if (!b) continue;
      b->onProfiling(profiling_ || callbacks);
      b->onStepwise(callbacks != nullptr);
    }
    if (next_) next_->setCallbacks(callbacks);
  }
  const std::vector<OpTiming>& lastRunProfile() const { return profile_; }

  // Held by each public Session call: calls from several threads run one after another.
  std::mutex callMutex;
  // The run started by Session::runAsync, and its outputs (asyncMutex guards both handles).
  std::mutex asyncMutex;
  std::future<Status> pendingRun;
  std::vector<Tensor> pendingOutputs;

 private:
  struct Command {
    OpRef op;
    std::vector<RuntimeTensor*> inputs, outputs;
    Backend* backend = nullptr;
    std::unique_ptr<Execution> execution;
    int64_t flops = 0;
    bool isCopy = false;  // a copy inserted by the pipeline (across backends, or converting within one)
    // Copies: the backend that owns the mirror (its consumer). A device-to-host copy runs on the
    // device backend (`backend`) but its output is host memory of the CPU backend.
    Backend* outputHome = nullptr;
    // A whole-tensor copy within one backend: its output is a view of this input (same memory),
    // so nothing runs (planMemory shares the chunk).
    RuntimeTensor* viewOf = nullptr;
    // A Concat whose inputs were placed inside its output, or a slice whose output was placed
    // inside its input (SessionImpl::partOf_): nothing runs.
    bool inputsInOutput = false;
    // Every output has no elements: nothing to run (a kernel might still walk the other
    // dimensions: 2^35 planes of a MaxPool of an empty [N, C, H, 0] input). Set by plan().
    bool noOutput = false;
  };
  // A tensor whose memory lies inside another's: bytes [offset, offset + its size) of `whole`.
  struct Part {
    RuntimeTensor* whole = nullptr;
    int64_t elements = 0;  // where the part starts in the whole, in elements
  };

  // Everything a plan holds, kept for a later run at its shapes (BackendConfig::planCacheSize).
  // Its backends are its own (their arenas hold its activations); weights packed by the plans of
  // one runtime are shared (the CPU backend's PackedWeights), so a plan for a new shape repacks
  // nothing that a kept plan packed.
  struct PlanState {
    std::map<std::string, Shape> shapes;
    std::map<std::string, DataType> dtypes;
    std::set<std::string> deviceInputs;
    std::unique_ptr<Backend> main, backup;
    std::vector<RuntimeTensor> tensors;
    std::vector<bool> known, hostValue;
    std::deque<RuntimeTensor> mirrors;
    std::vector<Command> commands;
    std::unordered_map<const RuntimeTensor*, Part> partOf;
    std::vector<std::unique_ptr<MemObj>> memory;
    std::vector<std::shared_ptr<uint8_t>> folded;
    size_t foldedBytes = 0;
    SessionStats stats, mergedStats;
    int boundary = -1;
    std::vector<int> keep, copiedEntries, boundEntries;
    std::vector<uint8_t*> entryBases;
    std::vector<bool> outputBound;
    std::vector<uint8_t*> outputBases;
    std::unique_ptr<SessionImpl> next;
    bool hasPlan = false;
    uint64_t bytes() const { return uint64_t{mergedStats.arenaPeakBytes} + mergedStats.staticBytes + foldedBytes; }
  };
  // Makes the plan for `shapes` current: a kept one, or a new one planned beside the kept ones.
  Status switchPlan(const std::map<std::string, Shape>& shapes);
  void swapPlan(PlanState& other);
  // Moves the current plan into plans_ and gives the session fresh backends for the next one.
  Status keepCurrentPlan();
  // The main and backup backends from the runtimes, in the session's profiling mode.
  Status createBackends();
  void evictPlans();
  std::deque<PlanState> plans_;  // most recently used first
  int plansMade_ = 0;

  // Builds the command list for the current input shapes. A node whose output shapes depend on
  // values not known before the run (NonZero, If, a Reshape fed by data) ends the planned stage:
  // the commands before it run, the node runs on the host with their results, and the nodes
  // after it form the next stage (next_), a session of its own that plans again only when the
  // shapes reaching it change.
  Status plan();
  // Returns false in *planned when the node is data-dependent and ends the stage.
  Status computeNode(const Node& node, bool* planned);
  Status splitAfter(size_t boundary);
  Status runBoundary(const std::map<int, Tensor>& values, std::vector<Tensor>* outputs);
  Status executeCommands();
  // How a pipeline copy is named in profiles: "CopyToDevice", "CopyToHost", or "Copy" within one
  // memory (a layout or precision conversion).
  static const char* copyKind(const Command& cmd);
  void reportPlannedWork();
  // The pool for host copies of inputs and outputs: none when the plan's runs keep to the
  // calling thread (Backend::onPlannedWork).
  ThreadPool* copyPool() const { return serialCopies_ ? nullptr : mainRuntime_->threadPool(); }
  // Shows a command (or a node run on the host) to callbacks_ before or after it runs.
  Status report(const Command& cmd, bool after) const;
  Status reportHost(const Node& node, const std::map<int, Tensor>& values, bool after) const;
  // After this stage's commands: hands what later stages need to `values` (host tensors by graph
  // index, shared by the stages of one run), runs the boundary node and the next stage.
  Status continueStages(std::map<int, Tensor>* values);
  // A later stage's run: entries from `values`, its outputs and kept tensors into it.
  Status runStage(std::map<int, Tensor>* values);
  Status createExecutions();
  // At Low precision, marks the commands at the model's input end that stay in fp32
  // (BackendConfig::fullPrecisionStem) where the main backend honours it.
  void chooseFullPrecisionStem();
  // Gives each group of activations its backend's layout where every execution supports it.
  void chooseLayouts();
  // Marks whole-tensor copies whose output can be a view of their input (Command::viewOf),
  // contiguous slices whose output can lie inside their input, and Concats whose inputs can be
  // written straight into their output (Command::inputsInOutput).
  void findViews();
  using Producers = std::unordered_map<const RuntimeTensor*, const Command*>;  // of each command's outputs
  void findSliceParts(const Producers& producer);
  void findConcatParts(const Producers& producer);
  Status planMemory();
  Status checkInput(const TensorInfo& info, const Tensor& t) const;
  bool isInput(int tensor) const;
  // Inputs held as host values (sequences, optionals, declared so or given so): never copied into
  // planned memory, they reach the ops reading them, which run on the host, through the stages'
  // values. Each plan records them in hostValue_.
  bool hostInput(int tensor) const;
  static bool isHostValue(const Tensor& t) { return t.isSequence() || t.empty(); }
  Backend::PackCounts packCounts() const;  // of the main and backup backends, since made
  // Refuses a tensor whose shape overflows or whose bytes exceed memoryLimit_; `what` names it.
  Status checkTensorFits(const std::string& what, DataType dtype, const Shape& shape) const;
  Status checkPlanFits() const;
  // "the plan for input shapes x [1, 3, 224, 224]": what the errors of planning are about.
  std::string planName() const;
  // Whether output tensor t, acquired on `backend`, is written in the caller's memory instead of
  // the arena (planMemory); the memory itself comes at each run (bindOutputs).
  bool bindsOutput(const RuntimeTensor* t, const Backend* backend) const;
  // The tensors this run's outputs go to: `last`'s where the caller holds no other handle on
  // them and they fit, else new ones; the bound outputs' chunks point at them.
  std::vector<Tensor> bindOutputs(std::vector<Tensor>* last);
  Status storeOutputs(std::vector<Tensor>* outputs);
  uint8_t* allocateFolded(size_t bytes);
  // Memory::Low: the activation arenas of this stage and the later ones give their pages back
  // (at the end of a run, once the outputs are out), and a mapped model file its weights' pages
  // (after a plan has packed them).
  void releaseScratch();
  void releaseModelPages();
  struct ScratchRelease {
    SessionImpl* session;
    ~ScratchRelease() { session->releaseScratch(); }
  };

  std::shared_ptr<const Model> model_;
  ScheduleConfig schedule_;
  BackendConfig config_;
  std::shared_ptr<SharedRuntime> runtime_;
  std::shared_ptr<SubgraphSessions> subgraphs_;  // shared with the later stages
  Runtime* mainRuntime_ = nullptr;
  bool serialCopies_ = false;
  Runtime* backupRuntime_ = nullptr;
  // The stage this session plans: nodes from firstNode_ on, fed inputs_, returning outputs_ (the
  // graph's own for the first stage). known_ values given by an earlier stage: givenKnown_.
  size_t firstNode_ = 0;
  std::vector<int> inputs_, outputs_;
  std::map<int, const RuntimeTensor*> givenKnown_;
  bool isStage_ = false;
  // Set when a data-dependent node ends this stage (plan()).
  int boundary_ = -1;
  std::vector<int> keep_;  // produced here or fed in, needed by the boundary or the next stage
  // The entries this stage's commands read (copied into its memory at each run); the others
  // only pass through it, to the boundary or a later stage.
  std::vector<int> copiedEntries_;
  // Entries read where the earlier stage's host tensor lies: their chunks' base is entryBases_[k],
  // set at each run.
  std::vector<int> boundEntries_;
  std::vector<uint8_t*> entryBases_;
  // Outputs written straight into the caller's memory (outputBound_[k], for outputs_[k]): their
  // chunks' base is outputBases_[k], set at each run (bindOutputs).
  std::vector<bool> outputBound_;
  std::vector<uint8_t*> outputBases_;
  void bindEntries();
  std::unique_ptr<SessionImpl> next_;
  mutable SessionStats mergedStats_;
  const RunCallbacks* callbacks_ = nullptr;  // during a run given them  // this stage's and the following stages', as of the last run
  std::unique_ptr<Backend> main_, backup_;
  // Graph inputs are written by the host: on a device main backend they live on the CPU
  // backup and reach the device through the pipeline's copies.
  Backend* inputHome() const {
    return main_->type() != ForwardType::CPU && backup_ && backup_->type() == ForwardType::CPU ? backup_.get() : main_.get();
  }

  std::vector<RuntimeTensor> tensors_;   // one per graph tensor
  std::vector<bool> known_;              // value known at resize time (constant or folded)
  std::vector<bool> hostValue_;          // a host input of this plan (hostInput)
  std::deque<RuntimeTensor> mirrors_;    // copies of tensors on another backend
  std::vector<Command> commands_;
  std::unordered_map<const RuntimeTensor*, Part> partOf_;  // from findSliceParts, findConcatParts
  std::vector<std::unique_ptr<MemObj>> memory_;
  std::vector<std::shared_ptr<uint8_t>> folded_;
  size_t foldedBytes_ = 0;
  uint64_t memoryLimit_ = 0;  // BackendConfig::memoryLimit, or the machine's memory
  std::map<std::string, Shape> shapes_;  // current input shapes
  std::map<std::string, DataType> planDtypes_;  // givenDtypes_ when the current plan was made
  // Inputs bound to device memory (IoBinding): they live on the main backend, not the host.
  std::set<std::string> deviceInputs_, planDeviceInputs_;
  Backend* homeOfInput(int tensor) const;
  bool hasPlan_ = false;                        // the members below hold a whole plan
  // Dtypes of inputs the model leaves undeclared (subgraph inputs), as last given to run().
  std::map<std::string, DataType> givenDtypes_;
  bool planned_ = false;
  mutable SessionStats stats_;
  bool profiling_ = false;
  std::vector<OpTiming> profile_;
};

}  // namespace osprey
