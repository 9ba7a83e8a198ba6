// Algorithm choices of cuBLASLt products and cuDNN convolutions timed on the device, once per
// problem, and kept for the runtime's life; with CudaOptions::tuningCachePath also on disk (read
// when the runtime starts, written when it ends if it learned something), so the next process
// starts tuned. Without autotune the libraries' heuristic choices serve, as they do for any
// problem the cache lacks.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "osprey/backend_options.h"
#include "osprey/status.h"

namespace osprey::cuda {

class Tuning {
 public:
  // identity: what the choices hold for (device, compute capability, library versions); a cache
  // file of another identity is not read.
  Tuning(const CudaOptions& options, std::string identity);
  ~Tuning();  // writes the cache file if it learned something
  Tuning(const Tuning&) = delete;
  Tuning& operator=(const Tuning&) = delete;

  // Whether problems the cache lacks are timed (CudaOptions::autotune).
  bool timesCandidates() const { return autotune_; }
  bool find(const std::string& key, std::vector<uint8_t>* value) const;
  void record(const std::string& key, std::vector<uint8_t> value);
  // Held while candidates are timed: two sessions timing at once would time each other too.
  std::mutex& trialMutex() { return trialMutex_; }

 private:
  Status save() const;
  bool autotune_;
  std::string path_, identity_;
  mutable std::mutex mutex_;
  std::mutex trialMutex_;
  std::map<std::string, std::vector<uint8_t>> entries_;
  bool dirty_ = false;
};

// What one trial of candidates runs on: device buffers (filled with a nonzero pattern) and a
// stream of its own, freed when the trial ends.
class Trial {
 public:
  Trial() = default;
  ~Trial();
  Trial(const Trial&) = delete;
  Trial& operator=(const Trial&) = delete;
  Status buffer(size_t bytes, void** out);  // bytes 0: *out = nullptr
  Status stream(cudaStream_t* out);

 private:
  std::vector<void*> buffers_;
  cudaStream_t stream_ = nullptr;
};

// What a product or convolution is tuned with: the tuning (null: heuristic choices), and whether
// the session's runs are captured into CUDA graphs (CudaOptions::graphs), which decides what a
// trial times: the device's time of a replayed graph, or eager launches with the host's share.
struct TuningRequest {
  Tuning* tuning = nullptr;
  bool capturedRuns = true;
  // `key` with the run mode, as the cache records it.
  std::string keyOf(const std::string& key) const { return capturedRuns ? key : key + ",eager"; }
};

// Milliseconds of one `launch` on `stream`: two warm-up launches, then the best mean of three
// rounds of five, launched eagerly or, `captured`, as a replayed graph of five; negative when a
// launch or the capture fails.
float timeLaunches(cudaStream_t stream, const std::function<bool()>& launch, bool captured);

// A candidate index is taken over the first (the library's heuristic choice) only when it is
// faster by more than the trial's noise.
int fastestCandidate(const std::vector<float>& ms);

}  // namespace osprey::cuda
