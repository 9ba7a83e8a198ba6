// The CPU backend: activations planned into one arena, STATIC memory allocated at once,
// executions from the CPU kernel registry or, for any op without one, its reference kernel.
#pragma once
#include <memory>
#include <vector>

#include "backends/cpu/packed_weights.h"
#include "core/backend.h"
#include "core/memory_planner.h"
#include "core/thread_pool.h"

namespace osprey {

class CPURuntime : public Runtime {
 public:
  explicit CPURuntime(int threads, ThreadPool::Pinning pin = ThreadPool::Pinning::Auto) : pool_(threads, pin) {}
  // Returns the heap pages freed since (glibc keeps them for later allocations).
  void onGarbageCollect(int level) override;
  std::unique_ptr<Backend> onCreate(const BackendConfig& config) override;
  ThreadPool* threadPool() override { return &pool_; }
  PackedWeights& packedWeights() { return packedWeights_; }

 private:
  ThreadPool pool_;
  PackedWeights packedWeights_;
};

class CPUBackend : public Backend {
 public:
  CPUBackend(CPURuntime* runtime, const BackendConfig& config);
  ~CPUBackend() override;
  std::unique_ptr<Execution> onCreate(const std::vector<RuntimeTensor*>& inputs,
                                      const std::vector<RuntimeTensor*>& outputs, const OpRef& op) override;
  std::unique_ptr<MemObj> onAcquire(RuntimeTensor* tensor, StorageType storage) override;
  void onClearBuffer() override;
  Status onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) override;
  void onResizeBegin() override;
  // A plan of less arithmetic than kSerialRunWork runs on the calling thread alone: after an idle
  // pause the workers' wake-up costs more than they save (docs/cpu.md, "Small models").
  bool onPlannedWork(int64_t flops) override {
    serialRuns_ = flops >= 0 && flops < kSerialRunWork;
    return serialRuns_;
  }
  void onExecuteBegin() override;
  void onExecuteEnd() override;
  void onExecuteAbort() override { onExecuteEnd(); }
  void onReleaseScratch() override;
  Status onResizeEnd() override;
  size_t arenaPeakBytes() const override { return planner_.peakBytes(); }
  size_t staticBytes() const override { return staticBytes_; }
  // Host memory: a tensor inside another is its base pointer plus a larger offset.
  bool canPlaceInside(const RuntimeTensor&) const override { return true; }
  // NC8HW8 for 4-D float32 activations when CpuOptions::layout asks for it (kernels/nc8hw8.h).
  Layout activationLayout(const RuntimeTensor& t) const override;
  ThreadPool* threadPool() const { return runtime_->threadPool(); }
  const BackendConfig& config() const { return config_; }
  MemoryPlanner& planner() { return planner_; }
  // STATIC memory for weights packed as `key` (PackedWeights): *fresh when just made (zeroed),
  // for the caller to fill; else the runtime's block, already filled.
  std::unique_ptr<MemObj> acquirePacked(RuntimeTensor* tensor, const PackKey& key, bool* fresh);
  PackCounts packCounts() const override { return packCounts_; }

 private:
  static constexpr int64_t kSerialRunWork = 4'000'000;
  CPURuntime* runtime_;
  BackendConfig config_;
  bool serialRuns_ = false, serialBefore_ = false;
  MemoryPlanner planner_;
  std::shared_ptr<uint8_t> arena_;
  size_t arenaCapacity_ = 0;
  size_t staticBytes_ = 0;
  PackCounts packCounts_;
  bool packedLayout_ = false;
};

// Creates the CPU execution for an op, or null when the CPU has no kernel for it.
using CPUExecutionCreator = std::unique_ptr<Execution> (*)(CPUBackend* backend, const OpRef& op,
                                                            const std::vector<RuntimeTensor*>& inputs,
                                                            const std::vector<RuntimeTensor*>& outputs);
// The registry of optimised CPU kernels, filled from the list in cpu_kernels.cpp.
CPUExecutionCreator cpuKernelCreator(OpType type);

void registerCpuRuntime();

}  // namespace osprey
