#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define OSPREY_CPU_RELAX() _mm_pause()
#else
#define OSPREY_CPU_RELAX() std::this_thread::yield()
#endif

namespace osprey {

namespace {

// How long a thread polls before blocking: longer than the gap between two ops of a run,
// short enough that an idle pool is asleep almost at once.
constexpr auto kSpin = std::chrono::microseconds(150);

// Polls `ready` for up to kSpin; true when it became true.
template <class Ready>
bool spinUntil(const Ready& ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      OSPREY_CPU_RELAX();
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

constexpr uint64_t kIndexMask = 0xffffffffu;
constexpr uint64_t kFieldMask = 0xffffu;

uint64_t slotWord(uint64_t generation, int64_t first, int64_t end) {
  return (generation & kIndexMask) << 32 | static_cast<uint64_t>(first) << 16 | static_cast<uint64_t>(end);
}

#if defined(__linux__)
// The cores this thread may run on, in order.
std::vector<int> usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

bool bindTo(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The caller's own affinity, put back at the end of its run.
thread_local cpu_set_t tCallerMask;
thread_local bool tCallerBound = false;
#endif

}  // namespace

ThreadPool::ThreadPool(int threads, Pinning pin) {
  threads = std::max(1, threads);
#if defined(__linux__)
  if (threads > 1 && pin != Pinning::Off) {
    std::vector<int> cores = usableCores();
    const bool fits = static_cast<int>(cores.size()) >= threads;
    if (fits && (pin == Pinning::On || static_cast<int>(cores.size()) == threads)) {
      cores.resize(threads);
      cores_ = cores;
    }
  }
#endif
  slots_ = std::make_unique<Slot[]>(threads);
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this, i] {
#if defined(__linux__)
      if (pinned()) bindTo(cores_[i]);
#endif
      workerLoop(i);
    });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

// Takes the first unclaimed range of a slot (the thread's own run) or the last (another's); -1
// when none is left. The word's generation is checked first: a thread still looking at a finished
// job finds the slot rewritten or stale and leaves without reading anything of the job.
int64_t ThreadPool::claim(uint64_t generation, int slot, bool fromFront) {
  std::atomic<uint64_t>& word = slots_[slot].word;
  uint64_t v = word.load(std::memory_order_acquire);
  for (;;) {
    const int64_t first = static_cast<int64_t>(v >> 16 & kFieldMask), end = static_cast<int64_t>(v & kFieldMask);
    if ((v >> 32) != (generation & kIndexMask) || first >= end) return -1;
    const uint64_t rest = fromFront ? slotWord(generation, first + 1, end) : slotWord(generation, first, end - 1);
    if (word.compare_exchange_weak(v, rest, std::memory_order_acq_rel, std::memory_order_acquire))
      return fromFront ? first : end - 1;
  }
}

void ThreadPool::runRanges(uint64_t generation, int self) {
  for (;;) {
    int64_t i = claim(generation, self, true);
    for (int k = 1; i < 0 && k < threads(); ++k) i = claim(generation, (self + k) % threads(), false);
    if (i < 0) return;
    // Claimed a range of this job: the caller waits for it, so job_, jobSize_ and jobRanges_
    // hold still.
    const int64_t n = jobSize_, ranges = jobRanges_;
    const int64_t begin = n * i / ranges, end = n * (i + 1) / ranges;
    if (begin < end) (*job_)(begin, end);
    if (completed_.fetch_add(1, std::memory_order_acq_rel) + 1 == ranges) {
      std::lock_guard<std::mutex> lock(mutex_);  // pairs with the caller's predicate check
      done_.notify_one();
    }
  }
}

void ThreadPool::parallelFor(int64_t n, RangeFn fn, int ranges) {
  if (ranges <= 0) ranges = threads();
  ranges = std::min(ranges, kMaxRanges);
  const int threads = this->threads();
  uint64_t generation;
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    jobSize_ = n;
    jobRanges_ = ranges;
    completed_.store(0, std::memory_order_relaxed);
    generation = generation_.load(std::memory_order_relaxed) + 1;
    for (int t = 0; t < threads; ++t)
      slots_[t].word.store(slotWord(generation, int64_t{ranges} * t / threads, int64_t{ranges} * (t + 1) / threads),
                           std::memory_order_relaxed);
    generation_.store(generation, std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) wake_.notify_all();
  runRanges(generation, 0);
  auto finished = [&] { return completed_.load(std::memory_order_acquire) == ranges; };
  if (!spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, finished);
  }
}

void ThreadPool::beginRun() {
#if defined(__linux__)
  if (pinned() && !tCallerBound && sched_getaffinity(0, sizeof(tCallerMask), &tCallerMask) == 0)
    tCallerBound = bindTo(cores_[0]);
#endif
  activeRuns_.fetch_add(1, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mutex_);  // a worker checks activeRuns_ under it before sleeping
  if (sleepers_ > 0) wake_.notify_all();
}

void ThreadPool::endRun() {
  activeRuns_.fetch_sub(1, std::memory_order_release);
#if defined(__linux__)
  if (tCallerBound) {
    pthread_setaffinity_np(pthread_self(), sizeof(tCallerMask), &tCallerMask);
    tCallerBound = false;
  }
#endif
}

void ThreadPool::workerLoop(int self) {
  uint64_t seen = 0;
  for (;;) {
    auto newJob = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    bool got = spinUntil(newJob);
    while (!got && activeRuns_.load(std::memory_order_acquire) > 0) got = spinUntil(newJob);
    if (!got) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleepers_;
      wake_.wait(lock, [&] {
        return generation_.load(std::memory_order_relaxed) != seen || activeRuns_.load(std::memory_order_relaxed) > 0;
      });
      --sleepers_;
      if (generation_.load(std::memory_order_acquire) == seen) continue;  // woken for a run: poll for its jobs
    }
    // Generation first: stop_ is set before the destructor's bump, so a worker that has seen
    // that bump also sees stop_ (the other order could take the bump for a job and sleep on).
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_relaxed)) return;
    runRanges(seen, self);
  }
}

namespace {
thread_local bool tSerialRun = false;
}  // namespace

bool exchangeSerialRun(bool serial) {
  const bool previous = tSerialRun;
  tSerialRun = serial;
  return previous;
}

bool serialRun() { return tSerialRun; }

}  // namespace osprey
