// The Runtime's thread pool: every index of every job runs exactly once, whichever thread
// claims its range, over many short jobs back to back (the spin-then-sleep hand-over) and
// after idle gaps long enough for the workers to fall asleep.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace osprey {
namespace {

void checkJobs(ThreadPool& pool, int jobs, int64_t maxN) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(maxN));
  for (int j = 0; j < jobs; ++j) {
    const int64_t n = 1 + (j * 7919) % maxN;
    for (int64_t i = 0; i < n; ++i) hits[i].store(0);
    pool.parallelFor(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "job " << j << " index " << i << " of " << n;
  }
}

TEST(CpuThreadPool, EveryIndexOnceOverManyJobs) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    checkJobs(pool, 5000, 37);
  }
}

TEST(CpuThreadPool, JobsAfterWorkersFellAsleep) {
  ThreadPool pool(3);
  for (int round = 0; round < 5; ++round) {
    checkJobs(pool, 20, 101);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // past the spin: workers block
  }
}

TEST(CpuThreadPool, OneRangePerThreadWhenNEqualsThreads) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> calls(4);
  pool.parallelFor(4, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(end, begin + 1);
    calls[begin].fetch_add(1);
  });
  for (auto& c : calls) EXPECT_EQ(c.load(), 1);
}

}  // namespace
}  // namespace osprey
