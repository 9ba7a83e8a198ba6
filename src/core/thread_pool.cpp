#include "core/thread_pool.h"

#include <algorithm>

namespace osprey {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

static void runShare(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int index, int count) {
  int64_t begin = n * index / count, end = n * (index + 1) / count;
  if (begin < end) fn(begin, end);
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  int count = threads();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    jobSize_ = n;
    pending_ = count - 1;
    ++generation_;
  }
  wake_.notify_all();
  runShare(fn, n, 0, count);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = jobSize_;
    }
    runShare(*job, n, index, threads());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace osprey
