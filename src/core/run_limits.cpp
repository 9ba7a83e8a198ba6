#include "core/run_limits.h"

#include <unistd.h>

namespace osprey {

namespace {
using Clock = std::chrono::steady_clock;
// The innermost run on this thread: its deadline and the limit it came from (0: none).
thread_local Clock::time_point tDeadline = Clock::time_point::max();
thread_local int64_t tLimitMs = 0;
thread_local uint64_t tMemoryLimit = 0;  // 0: the machine's memory
}  // namespace

uint64_t physicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && pageSize > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize) : UINT64_MAX;
}

RunDeadline::RunDeadline(int64_t limitMs) : saved_(tDeadline), savedLimitMs_(tLimitMs) {
  if (limitMs <= 0) return;
  const Clock::time_point mine = Clock::now() + std::chrono::milliseconds(limitMs);
  if (mine < tDeadline) {
    tDeadline = mine;
    tLimitMs = limitMs;
  }
}

RunDeadline::~RunDeadline() {
  tDeadline = saved_;
  tLimitMs = savedLimitMs_;
}

bool RunDeadline::passed() { return tLimitMs != 0 && Clock::now() >= tDeadline; }

RunMemoryLimit::RunMemoryLimit(uint64_t bytes) : saved_(tMemoryLimit) {
  if (bytes != 0 && (tMemoryLimit == 0 || bytes < tMemoryLimit)) tMemoryLimit = bytes;
}

RunMemoryLimit::~RunMemoryLimit() { tMemoryLimit = saved_; }

Status RunMemoryLimit::check(uint64_t bytes, const std::string& what) {
  const uint64_t limit = tMemoryLimit != 0 ? tMemoryLimit : physicalMemoryBytes();
  if (bytes <= limit) return Status::ok();
  return Status::outOfMemory(what + " needs " + std::to_string(bytes) + " bytes of working memory, more than the limit of " +
                             std::to_string(limit) + " (BackendConfig::memoryLimit)");
}

RunDeadline::Watch RunDeadline::watch() {
  Watch w;
  w.at_ = tDeadline;
  w.set_ = tLimitMs != 0;
  return w;
}

Status RunDeadline::error(const std::string& where) {
  return Status::invalidArgument("the run took longer than its limit of " + std::to_string(tLimitMs) +
                                 " ms (ScheduleConfig::runTimeLimitMs); stopped at " + where);
}

}  // namespace osprey
