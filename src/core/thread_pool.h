// The Runtime's worker threads. Workers sleep on a condition variable between jobs (no
// spinning), and parallelFor allocates nothing per call.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace osprey {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Splits [0, n) into contiguous ranges, one per thread (the caller runs one of them).
  void parallelFor(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void workerLoop(int index);
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t jobSize_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Runs fn over [0, n) on the pool, or inline when pool is null.
inline void parallelFor(ThreadPool* pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool && pool->threads() > 1 && n > 1) {
    pool->parallelFor(n, fn);
  } else if (n > 0) {
    fn(0, n);
  }
}

}  // namespace osprey
