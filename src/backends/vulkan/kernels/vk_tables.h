// Small tables an execution makes on the host when its plan is made (Resize's taps) and its
// shader reads: a host-visible buffer of their own, written once, read in place by the device.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include <algorithm>

#include "backends/vulkan/vk_backend.h"
#include "backends/vulkan/vk_memory.h"

namespace osprey::vulkan {

// Makes `*out` (replacing it; the descriptor sets that pointed at the old one are rewritten when
// the caller prepares its Dispatch again, as onResize does) and copies `words` into it. The
// backend has flushed before a resize, so no submitted work still reads the old buffer.
inline Status uploadTable(VulkanBackend* backend, const std::vector<uint32_t>& words, const std::string& what,
                          std::unique_ptr<DeviceBuffer>* out) {
  out->reset();
  const size_t bytes = std::max<size_t>(4, words.size() * sizeof(uint32_t));
  OSPREY_RETURN_IF_ERROR(DeviceBuffer::create(backend->runtime(), bytes, DeviceBuffer::Kind::Staging, what, out));
  std::memcpy((*out)->mapped(), words.data(), words.size() * sizeof(uint32_t));
  return Status::ok();
}

}  // namespace osprey::vulkan
