// Deferred memory planning: during resize a backend records when each chunk is acquired and
// released; plan() then places every chunk in one arena so that chunks whose lifetimes overlap
// never overlap in memory, and reports the arena's peak.
#pragma once
#include <memory>
#include <vector>

#include "core/runtime_tensor.h"

namespace osprey {

class MemoryPlanner {
 public:
  explicit MemoryPlanner(size_t alignment = 64) : alignment_(alignment) {}
  // Starts a new plan; chunks of the previous plan keep their offsets until plan() runs again.
  void reset();
  // A chunk alive from now until release(); its address is known after plan().
  std::shared_ptr<MemChunk> acquire(size_t bytes);
  void release(const std::shared_ptr<MemChunk>& chunk);
  // Places chunks (largest first, each into the best-fitting gap among the chunks whose
  // lifetimes it overlaps) and returns the arena size needed.
  size_t plan();
  size_t peakBytes() const { return peak_; }
  size_t sumBytes() const;  // every chunk's size added up: the cost without reuse
  uint8_t* const* basePointer() const { return &base_; }
  void setBase(uint8_t* base) { base_ = base; }

 private:
  struct Interval {
    std::shared_ptr<MemChunk> chunk;
    size_t size;
    int64_t begin, end;  // event clock; end = INT64_MAX while alive
  };
  size_t alignment_;
  int64_t clock_ = 0;
  std::vector<Interval> intervals_;
  size_t peak_ = 0;
  uint8_t* base_ = nullptr;
};

}  // namespace osprey
