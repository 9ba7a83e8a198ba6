// The Runtime's thread pool: every index of every job runs exactly once, whichever thread
// claims its range, over many short jobs back to back (the spin-then-sleep hand-over) and
// after idle gaps long enough for the workers to fall asleep; and the binding of threads to cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "core/thread_pool.h"

namespace osprey {
namespace {

// ranges 0: one per thread; otherwise that many (parallelFor's third argument).
void checkJobs(ThreadPool& pool, int jobs, int64_t maxN, int ranges = 0) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(maxN));
  for (int j = 0; j < jobs; ++j) {
    const int64_t n = 1 + (j * 7919) % maxN;
    for (int64_t i = 0; i < n; ++i) hits[i].store(0);
    pool.parallelFor(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    }, ranges);
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

TEST(CpuThreadPool, MoreRangesThanThreads) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int ranges : {1, 5, 16, 64}) checkJobs(pool, 500, 53, ranges);  // n below ranges too
  }
  // The ranges are n's even cut, each run once, whichever thread claims it.
  ThreadPool pool(2);
  std::mutex mutex;
  std::map<int64_t, int64_t> seen;
  pool.parallelFor(100, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_TRUE(seen.emplace(begin, end).second) << "range from " << begin << " ran twice";
  }, 8);
  ASSERT_EQ(seen.size(), 8u);
  int64_t next = 0;
  for (auto [begin, end] : seen) {
    EXPECT_EQ(begin, next);
    EXPECT_TRUE(end - begin == 12 || end - begin == 13) << begin << ".." << end;
    next = end;
  }
  EXPECT_EQ(next, 100);
}

TEST(CpuThreadPool, FineRangesGoToTheThreadThatIsFree) {
  // The first thread to claim a range holds it until the other has run all the rest (or 10 s
  // pass): the fine ranges do not wait for a thread that is busy elsewhere.
  ThreadPool pool(2);
  std::atomic<int> finished{0};
  std::atomic<bool> holding{false};
  std::mutex mutex;
  std::map<std::thread::id, int> perThread;
  parallelFor(&pool, 64, [&](int64_t, int64_t) {
    if (!holding.exchange(true)) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (finished.load() < 15 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard<std::mutex> lock(mutex);
    ++perThread[std::this_thread::get_id()];
    finished.fetch_add(1);
  }, 8);
  EXPECT_EQ(finished.load(), 16);  // 2 threads x 8 ranges
  ASSERT_EQ(perThread.size(), 2u);
  int least = 16;
  for (auto& [id, count] : perThread) least = std::min(least, count);
  EXPECT_EQ(least, 1);  // the holding thread ran only the range it held
}

TEST(CpuThreadPool, EachThreadRunsItsOwnRangesInOrderBeforeOthersTakeTheRest) {
  // Two threads, 8 ranges: the caller owns ranges 0-3 and the worker 4-7. Each takes its own from
  // the front; a thread that runs out takes the other's from the back. So what each thread runs of
  // its own ranges is a prefix of them, in order, and what it takes of the other's is a suffix.
  ThreadPool pool(2);
  for (int job = 0; job < 300; ++job) {
    std::mutex mutex;
    std::map<std::thread::id, std::vector<int64_t>> order;
    const std::thread::id caller = std::this_thread::get_id();
    pool.parallelFor(8, [&](int64_t begin, int64_t) {
      std::lock_guard<std::mutex> lock(mutex);
      order[std::this_thread::get_id()].push_back(begin);
    }, 8);
    for (auto& [id, ranges] : order) {
      const int64_t ownFirst = id == caller ? 0 : 4;
      int64_t nextOwn = ownFirst, nextOther = id == caller ? 7 : 3;
      for (int64_t r : ranges) {
        if (r >= ownFirst && r < ownFirst + 4) {
          ASSERT_EQ(r, nextOwn++) << "job " << job;
        } else {
          ASSERT_EQ(r, nextOther--) << "job " << job;
        }
      }
    }
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

#if defined(__linux__)
int usableCoreCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

TEST(CpuThreadPool, AutoPinsOnlyWhenThePoolTakesEveryCore) {
  const int cores = usableCoreCount();
  if (cores < 2) GTEST_SKIP() << "needs 2 usable cores, the process has " << cores;
  EXPECT_TRUE(ThreadPool(cores, ThreadPool::Pinning::Auto).pinned());
  EXPECT_FALSE(ThreadPool(cores - 1 > 1 ? cores - 1 : 1, ThreadPool::Pinning::Auto).pinned());
  EXPECT_FALSE(ThreadPool(cores, ThreadPool::Pinning::Off).pinned());
  EXPECT_FALSE(ThreadPool(cores + 1, ThreadPool::Pinning::On).pinned());  // more threads than cores
}

// Pinned: during a run every thread that executes a range is bound to one core of its own, and
// after the run the caller has its own affinity back.
TEST(CpuThreadPool, PinnedThreadsRunOnCoresOfTheirOwnAndTheCallerIsReleased) {
  const int cores = usableCoreCount();
  if (cores < 2) GTEST_SKIP() << "needs 2 usable cores, the process has " << cores;
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  ThreadPool pool(2, ThreadPool::Pinning::On);
  ASSERT_TRUE(pool.pinned());
  std::mutex mutex;
  std::map<std::thread::id, std::vector<int>> coresOfThread;
  pool.beginRun();
  for (int job = 0; job < 200; ++job) {
    pool.parallelFor(64, [&](int64_t, int64_t) {
      cpu_set_t mine;
      CPU_ZERO(&mine);
      pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
      std::vector<int> list;
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &mine)) list.push_back(c);
      std::lock_guard<std::mutex> lock(mutex);
      coresOfThread[std::this_thread::get_id()] = list;
    });
  }
  pool.endRun();
  std::vector<int> seen;
  for (const auto& [id, list] : coresOfThread) {
    ASSERT_EQ(list.size(), 1u) << "a thread of a pinned pool may run on " << list.size() << " cores";
    seen.push_back(list[0]);
  }
  if (seen.size() == 2) {
    EXPECT_NE(seen[0], seen[1]);
  }
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "the caller's affinity was not restored after the run";
}
#endif

}  // namespace
}  // namespace osprey
