#include "backends/vulkan/vk_memory.h"

#include <algorithm>

namespace osprey::vulkan {

Status DeviceBuffer::create(VulkanRuntime* runtime, size_t bytes, Kind kind, const std::string& what,
                            std::unique_ptr<DeviceBuffer>* out) {
  const bool hostVisible = kind != Kind::Device;
  std::unique_ptr<DeviceBuffer> b(new DeviceBuffer());
  b->device_ = runtime->device();
  b->size_ = std::max<size_t>(bytes, 16);  // Vulkan forbids empty buffers
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = b->size_;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateBuffer(b->device_, &info, nullptr, &b->buffer_), "vkCreateBuffer for " + what));
  VkMemoryRequirements needs;
  vkGetBufferMemoryRequirements(b->device_, b->buffer_, &needs);
  uint32_t type = 0;
  const VkMemoryPropertyFlags hostFlags = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags flags = kind == Kind::Device    ? VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                                      : kind == Kind::Staging ? hostFlags
                                                              : hostFlags | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  OSPREY_RETURN_IF_ERROR(runtime->memoryType(needs.memoryTypeBits, flags, hostVisible, &type));
  if (kind == Kind::MappedDevice && runtime->heapBytes(type) < StaticPool::kMappedHeapBytes)
    return Status::unsupported("Vulkan: " + runtime->facts().name + " has no large mapped device-local heap");
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = type;
  const VkResult allocated = vkAllocateMemory(b->device_, &alloc, nullptr, &b->memory_);
  if (allocated != VK_SUCCESS)
    return Status::outOfMemory("Vulkan: vkAllocateMemory of " + std::to_string(needs.size) + " bytes for " + what +
                               " failed: " + vkResultName(allocated));
  OSPREY_RETURN_IF_ERROR(vkCheck(vkBindBufferMemory(b->device_, b->buffer_, b->memory_, 0), "vkBindBufferMemory for " + what));
  if (hostVisible) {
    void* p = nullptr;
    OSPREY_RETURN_IF_ERROR(vkCheck(vkMapMemory(b->device_, b->memory_, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory for " + what));
    b->mapped_ = static_cast<uint8_t*>(p);
  }
  *out = std::move(b);
  return Status::ok();
}

DeviceBuffer::~DeviceBuffer() {
  if (mapped_) vkUnmapMemory(device_, memory_);
  if (buffer_) vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_) vkFreeMemory(device_, memory_, nullptr);
}

StaticPool::StaticPool(VulkanRuntime* runtime, size_t alignment, bool mapped)
    : runtime_(runtime),
      alignment_(std::max<size_t>(alignment, 64)),
      largest_(std::min<size_t>(kLargestBlock, runtime->facts().maxStorageBufferRange)),
      mapped_(mapped) {
  nextBlock_ = std::min(nextBlock_, largest_);
}

void StaticPool::addFree(int block, size_t offset, size_t bytes) {
  blocks_[block].free[offset] = bytes;
  bySize_.emplace(bytes, std::make_pair(block, offset));
}

void StaticPool::dropFree(int block, size_t offset, size_t bytes) {
  blocks_[block].free.erase(offset);
  auto [first, last] = bySize_.equal_range(bytes);
  for (auto it = first; it != last; ++it)
    if (it->second == std::make_pair(block, offset)) {
      bySize_.erase(it);
      return;
    }
}

Status StaticPool::acquire(size_t bytes, const std::string& what, Range* out) {
  const size_t need = std::max<size_t>((bytes + alignment_ - 1) / alignment_ * alignment_, alignment_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto fit = bySize_.lower_bound(need);
  if (fit == bySize_.end()) {
    const size_t size = need > nextBlock_ / 2 ? need : nextBlock_;
    if (size == nextBlock_) nextBlock_ = std::min(nextBlock_ * 2, largest_);
    const int id = nextId_++;
    Block& block = blocks_[id];
    const std::string name = "the weights '" + what + "'";
    Status made = Status::unsupported("");
    if (mapped_ && !(made = DeviceBuffer::create(runtime_, size, DeviceBuffer::Kind::MappedDevice, name, &block.memory)))
      mapped_ = false;  // none, or that heap is full: device memory from now on
    if (!made) made = DeviceBuffer::create(runtime_, size, DeviceBuffer::Kind::Device, name, &block.memory);
    if (!made) {
      blocks_.erase(id);
      return made;
    }
    addFree(id, 0, size);
    fit = bySize_.lower_bound(need);
  }
  const size_t have = fit->first;
  const auto [id, offset] = fit->second;
  dropFree(id, offset, have);
  if (have > need) addFree(id, offset + need, have - need);
  Block& block = blocks_[id];
  block.used += need;
  *out = Range{block.memory->buffer(), block.memory->mapped(), offset, need, id};
  return Status::ok();
}

void StaticPool::release(const Range& range) {
  if (range.block < 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = blocks_.find(range.block);
  if (found == blocks_.end()) return;
  Block& block = found->second;
  size_t offset = range.offset, bytes = range.bytes;
  auto after = block.free.lower_bound(offset);
  if (after != block.free.end() && after->first == offset + bytes) {
    const size_t more = after->second;
    dropFree(range.block, after->first, more);
    bytes += more;
  }
  auto before = block.free.lower_bound(offset);
  if (before != block.free.begin()) {
    --before;
    if (before->first + before->second == offset) {
      const size_t start = before->first, more = before->second;
      dropFree(range.block, start, more);
      offset = start;
      bytes += more;
    }
  }
  block.used -= range.bytes;
  if (block.used == 0) {  // its free ranges, all merged into this one, are no longer listed
    blocks_.erase(found);
    return;
  }
  addFree(range.block, offset, bytes);
}

void StaticPool::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  bySize_.clear();
  blocks_.clear();
}

int StaticPool::blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(blocks_.size());
}

size_t StaticPool::heldBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const auto& [id, block] : blocks_) total += block.memory->size();
  return total;
}

}  // namespace osprey::vulkan
