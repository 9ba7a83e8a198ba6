// Weights packed for the CPU kernels, made once per runtime: every execution, plan and session of
// a runtime that packs the same constant the same way shares one block, so a new input shape (a
// new plan) or a second session of the model repacks nothing. The cache holds weak references:
// a block lives while some execution holds it, and the constant it was packed from lives as long
// (its model is held by the sessions whose executions hold the block), so a key's address cannot
// be reused for other bytes while the key is alive.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace osprey {

struct PackKey {
  const void* source = nullptr;  // the constant's bytes (the weights)
  const void* extra = nullptr;   // a second constant packed in (a bias), or null
  std::string kind;              // the packing and every dimension it depends on
  size_t bytes = 0;
  bool operator<(const PackKey& o) const {
    return std::tie(source, extra, kind, bytes) < std::tie(o.source, o.extra, o.kind, o.bytes);
  }
};

class PackedWeights {
 public:
  // The block packed for `key` if some execution still holds it, else null.
  std::shared_ptr<uint8_t> find(const PackKey& key);
  void keep(const PackKey& key, const std::shared_ptr<uint8_t>& block);

 private:
  std::mutex mutex_;
  std::map<PackKey, std::weak_ptr<uint8_t>> blocks_;
  size_t pruneAt_ = 64;
};

}  // namespace osprey
