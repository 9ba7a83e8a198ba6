// Limits a run is held to beyond one command: the wall-clock limit of a run
// (ScheduleConfig::runTimeLimitMs), which the ops that loop inside one command (Loop, Scan)
// check at each iteration, and the machine's memory, which bounds what they accumulate. A model
// may legitimately ask for 2^63 iterations; with a limit it ends with an error instead of never.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "osprey/status.h"

namespace osprey {

uint64_t physicalMemoryBytes();

// Sets this thread's run deadline for its lifetime (limitMs 0: none). A nested run (a Loop's
// body) keeps an enclosing run's earlier deadline.
class RunDeadline {
 public:
  explicit RunDeadline(int64_t limitMs);
  ~RunDeadline();
  RunDeadline(const RunDeadline&) = delete;
  RunDeadline& operator=(const RunDeadline&) = delete;
  // Whether this thread's deadline has passed (a thread-local read when none is set), and the
  // error that says so, naming where the run stopped.
  static bool passed();
  static Status error(const std::string& where);

  // This thread's deadline as a value, for a kernel whose work depends on data (RoiAlign's
  // sampling grid grows with the box values): taken on the run's thread, checked by the pool's
  // workers, which have no deadline of their own.
  class Watch {
   public:
    bool passed() const { return set_ && std::chrono::steady_clock::now() >= at_; }

   private:
    friend class RunDeadline;
    std::chrono::steady_clock::time_point at_{};
    bool set_ = false;
  };
  static Watch watch();

 private:
  std::chrono::steady_clock::time_point saved_;
  int64_t savedLimitMs_;
};

// Sets this thread's run memory limit for its lifetime (BackendConfig::memoryLimit; 0: the
// machine's memory), for the ops that run between planned stages and whose working memory
// follows from values at run time (Unique sorts one index per slice of a computed tensor): they
// check it as the planner checks tensors, so the limit holds for them too.
class RunMemoryLimit {
 public:
  explicit RunMemoryLimit(uint64_t bytes);
  ~RunMemoryLimit();
  RunMemoryLimit(const RunMemoryLimit&) = delete;
  RunMemoryLimit& operator=(const RunMemoryLimit&) = delete;
  // An error naming `what` when `bytes` of working memory pass this thread's limit.
  static Status check(uint64_t bytes, const std::string& what);

 private:
  uint64_t saved_;
};

}  // namespace osprey
