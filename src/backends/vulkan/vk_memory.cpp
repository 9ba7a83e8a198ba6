#include "backends/vulkan/vk_memory.h"

namespace osprey::vulkan {

Status DeviceBuffer::create(VulkanRuntime* runtime, size_t bytes, bool hostVisible, const std::string& what,
                            std::unique_ptr<DeviceBuffer>* out) {
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
  const VkMemoryPropertyFlags flags = hostVisible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                                  : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  OSPREY_RETURN_IF_ERROR(runtime->memoryType(needs.memoryTypeBits, flags, hostVisible, &type));
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

}  // namespace osprey::vulkan
