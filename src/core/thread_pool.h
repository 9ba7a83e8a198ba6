// The Runtime's worker threads. A job is cut into one contiguous range per thread (or more, for
// kernels that ask); each thread owns a contiguous run of the ranges and takes them in order,
// then takes the ranges not yet claimed from the far end of the others' runs: when a worker is
// descheduled or its core slowed (a busy machine) the others run its ranges instead of waiting,
// and when none is, each thread walks contiguous memory as with one range per thread.
// Between the ops of a run a worker spins briefly for the next job (a futex wake-up per op costs
// more than many small ops), and for the whole of a run bracketed by beginRun/endRun; otherwise
// it sleeps on a condition variable, so an idle session burns no CPU.
// A pool that takes every core the process may use binds each thread to its own core (the caller
// to the first during a run): after an idle gap the kernel often wakes a worker on the caller's
// core and takes milliseconds to move it, so the run goes at one core's speed or worse.
// parallelFor allocates nothing per call: it takes the job as a RangeFn, a reference to the
// caller's lambda, where a std::function would copy a lambda of more than two captures to the heap.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace osprey {

// A non-owning reference to a callable run on a range [begin, end). It refers to the callable
// it was made from, which must outlive it: made from a parallelFor argument, it lives for the call.
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& fn)  // NOLINT(google-explicit-constructor): built at each call site from a lambda
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(fn)))),
        call_([](void* object, int64_t begin, int64_t end) {
          (*static_cast<std::remove_reference_t<F>*>(object))(begin, end);
        }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t);
};

class ThreadPool {
 public:
  // pin: bind threads to cores (see above); Auto does so when threads == the usable cores.
  enum class Pinning { Auto, On, Off };
  explicit ThreadPool(int threads, Pinning pin = Pinning::Off);
  ~ThreadPool();
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  bool pinned() const { return !cores_.empty(); }
  // Brackets a run: workers woken here keep polling for jobs until endRun, so a worker that
  // slept between runs is awake by the first ops instead of waking late for each of them.
  void beginRun();
  void endRun();
  // Splits [0, n) into `ranges` contiguous ranges (threads() when 0, at most kMaxRanges) and
  // runs each once, on whichever thread claims it first. With more ranges than threads a thread
  // that starts late (a worker waking after an idle pause) takes only what is left when it
  // arrives, so fn must not use the range as a thread slot.
  void parallelFor(int64_t n, RangeFn fn, int ranges = 0);
  static constexpr int kMaxRanges = 0xffff;

 private:
  void workerLoop(int self);
  // Claims and runs ranges of job `generation` until none is left unclaimed; `self` is the
  // thread's slot (the caller's is 0).
  void runRanges(uint64_t generation, int self);
  int64_t claim(uint64_t generation, int slot, bool fromFront);
  // A thread's unclaimed ranges of a job: generation << 32 | first << 16 | end.
  struct alignas(64) Slot {
    std::atomic<uint64_t> word{0};
  };
  std::vector<std::thread> workers_;
  std::vector<int> cores_;  // when pinned: the core of each thread, the caller's first
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const RangeFn* job_ = nullptr;
  int64_t jobSize_ = 0;
  int jobRanges_ = 1;
  std::atomic<uint64_t> generation_{0};  // bumped (under mutex_) for each job
  std::unique_ptr<Slot[]> slots_;         // one per thread
  std::atomic<int> completed_{0};        // ranges of the current job finished
  int sleepers_ = 0;                     // workers blocked on wake_ (under mutex_)
  std::atomic<int> activeRuns_{0};       // runs between beginRun and endRun
  std::atomic<bool> stop_{false};
};

// Whether the calling thread runs every parallelFor inline (a run whose work is too small for
// the workers' wake-up to pay for itself: CPUBackend::onPlannedWork). Returns the previous value.
bool exchangeSerialRun(bool serial);
bool serialRun();

// Ranges per thread for work cut into pieces of equal cost: a core slowed by another tenant (or
// a worker that wakes late) then takes fewer pieces instead of holding up the op.
inline constexpr int kFineRangesPerThread = 4;

// Runs fn over [0, n) on the pool, or inline when pool is null or the thread runs serially
// (above). rangesPerThread above 1 cuts
// the job into that many ranges per thread (at most n), each claimed by whichever thread is
// free: for work whose pieces cost the same however it is cut (rows of a direct convolution),
// so a worker that joins late leaves the caller less waiting; fn must then not use the range
// as a thread slot.
inline void parallelFor(ThreadPool* pool, int64_t n, RangeFn fn, int rangesPerThread = 1) {
  if (pool && pool->threads() > 1 && n > 1 && !serialRun()) {
    const int64_t ranges = rangesPerThread > 1 ? std::min<int64_t>(n, int64_t{pool->threads()} * rangesPerThread) : 0;
    pool->parallelFor(n, fn, static_cast<int>(ranges));
  } else if (n > 0) {
    fn(0, n);
  }
}

}  // namespace osprey
