// The file `--vulkan-cache` names: the driver's VkPipelineCache data and the keys of the
// pipelines the runtime that wrote it built, so that the next process builds them again at its
// start, on several threads, while its session is planned (a pipeline found in the driver's
// cache still costs a driver call of about 0.4 ms on NVIDIA's). No Vulkan header here: the
// fuzz target builds without one.
//
// Layout, little-endian: "OSPVKPC1"; u32 pipeline count; per pipeline u32 bindings, u32 shader
// name length, the name, u32 constant count, i32 constants; u64 driver data length, the data.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace osprey::vulkan {

struct PipelineKey {
  std::string shader;  // an embedded shader's name, with its variant suffix
  uint32_t bindings = 0;
  std::vector<int32_t> specialization;
  // The runtime's map key: the shader and its constants (bindings are checked, not keyed).
  std::string id() const;
};

struct PipelineCacheFile {
  std::vector<PipelineKey> pipelines;
  std::vector<uint8_t> driverData;
};

// False when `data` is not such a file (another format, a truncated or corrupt one): the start
// is then a cold one. Never reads past `size`.
bool parsePipelineCacheFile(const uint8_t* data, size_t size, PipelineCacheFile* out);
std::vector<uint8_t> serializePipelineCacheFile(const PipelineCacheFile& file);

}  // namespace osprey::vulkan
