// VulkanRuntime: the per-device resources sessions share: instance, logical device, one compute
// queue, the command pool, descriptor pools, and compute pipelines built from the embedded
// SPIR-V (cached by shader name and specialization constants, through a VkPipelineCache that may be
// saved to a file).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/vulkan/vk_device.h"
#include "core/backend.h"

namespace osprey::vulkan {

// A runtime's settings, from the VulkanOptions of the session that creates it (docs/vulkan.md).
struct RuntimeOptions {
  std::string device;
  std::string pipelineCachePath;
  bool validation = false;
  static RuntimeOptions fromConfig(const VulkanOptions& options);
};

// Every shader binds its tensors as storage buffers 0..bindings-1 of set 0 and takes its
// element offsets and shape parameters as push constants (at most kPushConstantBytes).
constexpr uint32_t kPushConstantBytes = 128;

struct Pipeline {
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
};

// A descriptor set and the pool it came from (needed to free it).
struct DescriptorSet {
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
};

class StaticPool;

class VulkanRuntime : public Runtime {
 public:
  static Status create(const RuntimeOptions& options, std::unique_ptr<VulkanRuntime>* out);
  ~VulkanRuntime() override;
  std::unique_ptr<Backend> onCreate(const BackendConfig& config) override;

  const DeviceFacts& facts() const { return facts_; }
  VkDevice device() const { return device_; }
  // The memory type for `typeBits` with `wanted` properties (falling back to any of typeBits
  // when `wanted` is only a preference, as DEVICE_LOCAL is).
  Status memoryType(uint32_t typeBits, VkMemoryPropertyFlags wanted, bool required, uint32_t* out) const;

  // The pipeline of shader `name` (a shaders/*.comp file name, with its variant suffix) with
  // `bindings` storage buffers and `specialization` as its constants 0..n-1 (one pipeline per
  // distinct list: the shapes a shader folds in).
  Status pipeline(const std::string& name, uint32_t bindings, const std::vector<int32_t>& specialization,
                  const Pipeline** out);
  // Whether the build embeds shader `name` (a variant exists only for shaders that need it).
  static bool hasShader(const std::string& name);
  Status allocateSet(const Pipeline& pipeline, DescriptorSet* out);
  void freeSet(const DescriptorSet& set);
  Status allocateCommandBuffer(VkCommandBuffer* out);
  void freeCommandBuffer(VkCommandBuffer buffer);
  // Submits `buffer` and waits for it (through `fence`, reset afterwards).
  Status submitAndWait(VkCommandBuffer buffer, VkFence fence);

  // Where STATIC tensors live; their chunks hold it, since a chunk may outlive the runtime.
  const std::shared_ptr<StaticPool>& staticPool() const { return staticPool_; }

  Status savePipelineCache() const;
  int pipelinesBuilt() const { return static_cast<int>(pipelines_.size()); }

 private:
  VulkanRuntime() = default;
  Status init(const RuntimeOptions& options);
  Status addDescriptorPool();

  RuntimeOptions options_;
  DeviceFacts facts_;
  VkInstance instance_ = VK_NULL_HANDLE;  // the process's (processInstance), not this runtime's
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool commandPool_ = VK_NULL_HANDLE;
  VkPipelineCache pipelineCache_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  std::vector<VkDescriptorPool> descriptorPools_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::shared_ptr<StaticPool> staticPool_;
  std::mutex mutex_;  // pipelines, pools and the queue: backends of several sessions share them
};

}  // namespace osprey::vulkan
