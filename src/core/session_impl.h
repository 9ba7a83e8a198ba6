// A Session's machinery: resize (shape computation, constant folding, geometry lowering,
// backend choice, memory planning) and run.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/backend.h"
#include "core/graph.h"
#include "osprey/interpreter.h"

namespace osprey {

class SessionImpl {
 public:
  SessionImpl(std::shared_ptr<const Model> model, const ScheduleConfig& schedule, const BackendConfig& config);
  Status init();
  Status resize(const std::map<std::string, Shape>& inputShapes);
  Status run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>* outputs);
  std::vector<TensorInfoPublic> inputInfo() const;
  std::vector<TensorInfoPublic> outputInfo() const;
  const SessionStats& stats() const { return stats_; }
  void setProfiling(bool on) {
    profiling_ = on;
    if (main_) main_->onProfiling(on);
    if (backup_) backup_->onProfiling(on);
  }
  const std::vector<OpTiming>& lastRunProfile() const { return profile_; }

  // Held by each public Session call: calls from several threads run one after another.
  std::mutex callMutex;

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
    // A Concat whose inputs were placed inside its output (SessionImpl::partOf_): nothing runs.
    bool inputsInOutput = false;
  };
  // A tensor whose memory lies inside another's: bytes [offset, offset + its size) of `whole`.
  struct Part {
    RuntimeTensor* whole = nullptr;
    size_t offset = 0;
  };

  // Builds the command list for the current input shapes. With `inputValues`, graph inputs are
  // known values and everything folds (eager mode, for models whose shapes depend on data).
  Status plan(const std::map<std::string, const Tensor*>* inputValues);
  Status computeNode(const Node& node);
  Status createExecutions();
  // At Low precision, marks the commands at the model's input end that stay in fp32
  // (BackendConfig::fullPrecisionStem) where the main backend honours it.
  void chooseFullPrecisionStem();
  // Gives each group of activations its backend's layout where every execution supports it.
  void chooseLayouts();
  // Marks whole-tensor copies whose output can be a view of their input (Command::viewOf), and
  // Concats whose inputs can be written straight into their output (Command::inputsInOutput).
  void findViews();
  void findConcatParts();
  Status planMemory();
  Status checkInput(const TensorInfo& info, const Tensor& t) const;
  // Refuses a tensor whose shape overflows or whose bytes exceed memoryLimit_; `what` names it.
  Status checkTensorFits(const std::string& what, DataType dtype, const Shape& shape) const;
  Status checkPlanFits() const;
  Status storeOutputs(std::vector<Tensor>* outputs) const;
  uint8_t* allocateFolded(size_t bytes);

  std::shared_ptr<const Model> model_;
  ScheduleConfig schedule_;
  BackendConfig config_;
  std::unique_ptr<Runtime> mainRuntime_, backupRuntime_;
  std::unique_ptr<Backend> main_, backup_;
  // Graph inputs are written by the host: on a device main backend they live on the CPU
  // backup and reach the device through the pipeline's copies.
  Backend* inputHome() const {
    return main_->type() != ForwardType::CPU && backup_ && backup_->type() == ForwardType::CPU ? backup_.get() : main_.get();
  }

  std::vector<RuntimeTensor> tensors_;   // one per graph tensor
  std::vector<bool> known_;              // value known at resize time (constant or folded)
  std::deque<RuntimeTensor> mirrors_;    // copies of tensors on another backend
  std::vector<Command> commands_;
  std::unordered_map<const RuntimeTensor*, Part> partOf_;  // from findConcatParts
  std::vector<std::unique_ptr<MemObj>> memory_;
  std::vector<std::shared_ptr<uint8_t>> folded_;
  size_t foldedBytes_ = 0;
  uint64_t memoryLimit_ = 0;  // BackendConfig::memoryLimit, or the machine's memory
  std::map<std::string, Shape> shapes_;  // current input shapes
  // Dtypes of inputs the model leaves undeclared (subgraph inputs), as last given to run().
  std::map<std::string, DataType> givenDtypes_;
  bool planned_ = false;
  bool eager_ = false;  // some shape depends on input values: plan at every run
  std::string eagerReason_;
  SessionStats stats_;
  bool profiling_ = false;
  std::vector<OpTiming> profile_;
};

}  // namespace osprey
