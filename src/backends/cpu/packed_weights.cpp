#include "backends/cpu/packed_weights.h"

namespace osprey {

std::shared_ptr<uint8_t> PackedWeights::find(const PackKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(key);
  return it == blocks_.end() ? nullptr : it->second.lock();
}

void PackedWeights::keep(const PackKey& key, const std::shared_ptr<uint8_t>& block) {
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_[key] = block;
  if (blocks_.size() < pruneAt_) return;
  for (auto it = blocks_.begin(); it != blocks_.end();) it = it->second.expired() ? blocks_.erase(it) : std::next(it);
  pruneAt_ = 2 * blocks_.size() + 64;
}

}  // namespace osprey
