#include "backends/vulkan/pipeline_cache_file.h"

#include <cstring>

namespace osprey::vulkan {

namespace {
constexpr char kMagic[8] = {'O', 'S', 'P', 'V', 'K', 'P', 'C', '1'};
// Bounds no real file comes near; past them the file is taken as corrupt.
constexpr uint32_t kMaxPipelines = 1u << 20, kMaxNameBytes = 256, kMaxConstants = 256;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool bytes(void* out, size_t n) {
    if (n == 0) return true;
    if (n > size_ - at_) return false;
    std::memcpy(out, data_ + at_, n);
    at_ += n;
    return true;
  }
  template <class T>
  bool value(T* out) {
    return bytes(out, sizeof(T));
  }
  size_t left() const { return size_ - at_; }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

template <class T>
void put(std::vector<uint8_t>* out, const T& v) {
  const size_t at = out->size();
  out->resize(at + sizeof(T));
  std::memcpy(out->data() + at, &v, sizeof(T));
}
}  // namespace

std::string PipelineKey::id() const {
  std::string key = shader;
  for (int32_t v : specialization) {
    key += ',';
    key += std::to_string(v);
  }
  return key;
}

bool parsePipelineCacheFile(const uint8_t* data, size_t size, PipelineCacheFile* out) {
  Reader in(data, size);
  char magic[sizeof(kMagic)];
  uint32_t count = 0;
  if (!in.bytes(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) return false;
  if (!in.value(&count) || count > kMaxPipelines) return false;
  PipelineCacheFile file;
  for (uint32_t i = 0; i < count; ++i) {
    PipelineKey key;
    uint32_t nameBytes = 0, constants = 0;
    if (!in.value(&key.bindings) || !in.value(&nameBytes) || nameBytes == 0 || nameBytes > kMaxNameBytes) return false;
    key.shader.resize(nameBytes);
    if (!in.bytes(key.shader.data(), nameBytes) || !in.value(&constants) || constants > kMaxConstants) return false;
    key.specialization.resize(constants);
    if (!in.bytes(key.specialization.data(), constants * sizeof(int32_t))) return false;
    file.pipelines.push_back(std::move(key));
  }
  uint64_t driverBytes = 0;
  if (!in.value(&driverBytes) || driverBytes != in.left()) return false;
  file.driverData.resize(driverBytes);
  if (!in.bytes(file.driverData.data(), driverBytes)) return false;
  *out = std::move(file);
  return true;
}

std::vector<uint8_t> serializePipelineCacheFile(const PipelineCacheFile& file) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof(kMagic));
  put(&out, static_cast<uint32_t>(file.pipelines.size()));
  for (const PipelineKey& key : file.pipelines) {
    put(&out, key.bindings);
    put(&out, static_cast<uint32_t>(key.shader.size()));
    out.insert(out.end(), key.shader.begin(), key.shader.end());
    put(&out, static_cast<uint32_t>(key.specialization.size()));
    for (int32_t v : key.specialization) put(&out, v);
  }
  put(&out, static_cast<uint64_t>(file.driverData.size()));
  out.insert(out.end(), file.driverData.begin(), file.driverData.end());
  return out;
}

}  // namespace osprey::vulkan
