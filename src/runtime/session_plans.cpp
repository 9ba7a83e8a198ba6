// The plans of recently used input shapes (BackendConfig::planCacheSize): returning to a shape
// swaps its plan back in, with its executions, packed weights and memory plan as they were.
#include <algorithm>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <utility>

#include "runtime/session_impl.h"

namespace osprey {

void SessionImpl::swapPlan(PlanState& o) {
  std::swap(shapes_, o.shapes);
  std::swap(planDtypes_, o.dtypes);
  std::swap(planDeviceInputs_, o.deviceInputs);
  std::swap(main_, o.main);
  std::swap(backup_, o.backup);
  std::swap(tensors_, o.tensors);
  std::swap(known_, o.known);
  std::swap(hostValue_, o.hostValue);
  std::swap(mirrors_, o.mirrors);
  std::swap(commands_, o.commands);
  std::swap(partOf_, o.partOf);
  std::swap(memory_, o.memory);
  std::swap(folded_, o.folded);
  std::swap(foldedBytes_, o.foldedBytes);
  std::swap(stats_, o.stats);
  std::swap(mergedStats_, o.mergedStats);
  std::swap(boundary_, o.boundary);
  std::swap(keep_, o.keep);
  std::swap(copiedEntries_, o.copiedEntries);
  std::swap(boundEntries_, o.boundEntries);
  std::swap(entryBases_, o.entryBases);
  std::swap(outputBound_, o.outputBound);
  std::swap(outputBases_, o.outputBases);
  std::swap(next_, o.next);
  std::swap(hasPlan_, o.hasPlan);
}

Status SessionImpl::keepCurrentPlan() {
  plans_.emplace_front();
  swapPlan(plans_.front());
  return createBackends();
}

void SessionImpl::evictPlans() {
  const size_t capacity = static_cast<size_t>(std::max(config_.planCacheSize, 0));
  uint64_t held = uint64_t{stats().arenaPeakBytes} + stats().staticBytes + foldedBytes_;
  for (const PlanState& p : plans_) held += p.bytes();
  while (!plans_.empty() && (plans_.size() > capacity || held > memoryLimit_)) {
    held -= plans_.back().bytes();
    plans_.pop_back();
  }
}

void SessionImpl::releaseMemory() {
  plans_.clear();
  PlanState current;
  swapPlan(current);  // the current plan leaves with `current`; the session keeps its backends
  std::swap(main_, current.main);
  std::swap(backup_, current.backup);
  shapes_ = current.shapes;  // the shapes a later run without inputs' shapes falls back to
  current = PlanState();
  if (main_) main_->onClearBuffer();
  if (backup_) backup_->onClearBuffer();
  planned_ = false;
#ifdef __GLIBC__
  // glibc raises its mmap threshold after large blocks are freed, so later large blocks come
  // from the heap, which free() does not shrink: give the freed pages back.
  malloc_trim(0);
#endif
}

// Kept plans hold backends of runtime_'s runtimes, and plans_ is declared before runtime_: they
// would outlive it (an OpenCL backend returns its arena to the runtime's pool when it dies).
SessionImpl::~SessionImpl() { plans_.clear(); }

Status SessionImpl::switchPlan(const std::map<std::string, Shape>& shapes) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if (it->shapes != shapes || it->dtypes != givenDtypes_ || it->deviceInputs != deviceInputs_) continue;
    PlanState found = std::move(*it);
    plans_.erase(it);
    if (hasPlan_) {
      plans_.emplace_front();
      swapPlan(plans_.front());
    }
    swapPlan(found);
    setProfiling(profiling_);  // the kept backends may have run with other settings
    planned_ = true;
    mergedStats_.plansMade = stats_.plansMade = plansMade_;
    return Status::ok();
  }
  if (hasPlan_ && config_.planCacheSize > 0) OSPREY_RETURN_IF_ERROR(keepCurrentPlan());
  shapes_ = shapes;
  planned_ = false;
  hasPlan_ = false;
  OSPREY_RETURN_IF_ERROR(plan());
  planDtypes_ = givenDtypes_;
  planDeviceInputs_ = deviceInputs_;
  hasPlan_ = planned_ = true;
  ++plansMade_;
  mergedStats_.plansMade = stats_.plansMade = plansMade_;
  mergedStats_.plansKept = stats_.plansKept = static_cast<int>(plans_.size());
  evictPlans();
  mergedStats_.plansKept = stats_.plansKept = static_cast<int>(plans_.size());
  return Status::ok();
}

}  // namespace osprey
