// --vulkan-cache file bytes -> parsePipelineCacheFile. What it accepts must write back to the
// very same bytes (every length it read was inside the file and nothing was skipped).
#include <cstdlib>
#include <cstring>

#include "backends/vulkan/pipeline_cache_file.h"
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  osprey::vulkan::PipelineCacheFile file;
  if (!osprey::vulkan::parsePipelineCacheFile(data, size, &file)) return 0;
  const std::vector<uint8_t> again = osprey::vulkan::serializePipelineCacheFile(file);
  if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  return 0;
}
