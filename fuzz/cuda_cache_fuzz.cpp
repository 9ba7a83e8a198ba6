// --cuda-cache file bytes -> parseTuningCacheFile. What it accepts must write back to the very
// same bytes (every record it read was whole and nothing was skipped).
#include <cstdlib>
#include <cstring>

#include "backends/cuda/tuning_cache_file.h"
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  osprey::cuda::TuningCacheFile file;
  if (!osprey::cuda::parseTuningCacheFile(data, size, &file)) return 0;
  const std::vector<uint8_t> again = osprey::cuda::serializeTuningCacheFile(file);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  return 0;
}
