// The file `--cuda-cache` names: the algorithm choices the CUDA runtime timed, so that the next
// process starts with them. No CUDA header here: the fuzz target builds without one.
//
// Text, one record per line, each ending in '\n':
//   osprey-cuda-tuning 1
//   <identity: the device, its compute capability and the library versions the choices hold for>
//   <key> <value as lowercase hex>      (keys unique, in ascending byte order)
// A file whose identity differs from the runtime's is not read: its choices were timed on other
// hardware or name another library's algorithms.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace osprey::cuda {

struct TuningCacheFile {
  std::string identity;
  std::map<std::string, std::vector<uint8_t>> entries;
};

// False when `data` is not such a file (another format, a truncated or corrupt one): the start
// is then an untuned one. Never reads past `size`.
bool parseTuningCacheFile(const uint8_t* data, size_t size, TuningCacheFile* out);
std::vector<uint8_t> serializeTuningCacheFile(const TuningCacheFile& file);
// Whether `text` can be a key or an identity: 1..512 printable ASCII bytes, no space in a key.
bool validTuningCacheText(const std::string& text, bool key);

}  // namespace osprey::cuda
