// VulkanRuntime: the per-device resources sessions share: instance, logical device, one compute
// queue, the command pool, descriptor pools, and compute pipelines built from the embedded
// SPIR-V (cached by shader name and specialization constants, through a VkPipelineCache that may be
// saved to a file).
#pragma once
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/vulkan/pipeline_cache_file.h"
#include "backends/vulkan/vk_device.h"
#include "core/backend.h"
#include "core/thread_pool.h"

namespace osprey::vulkan {

// A runtime's settings, from the VulkanOptions of the session that creates it (docs/vulkan.md).
struct RuntimeOptions {
  std::string device;
  std::string pipelineCachePath;
  bool validation = false;
  bool mappedWeights = true;  // VulkanOptions::mappedWeights: StaticPool blocks in mapped device memory
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
  // The size of the heap memory type `type` belongs to.
  uint64_t heapBytes(uint32_t type) const { return memory_.memoryHeaps[memory_.memoryTypes[type].heapIndex].size; }

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

  // Writes the pipeline cache file: the driver's data and the keys of the pipelines built.
  Status savePipelineCache();
  // Threads for large host-side copies (weights into the staging buffer at resize): made on
  // first use, as many as the cores up to 8. One caller at a time uses them: `lock` is held
  // until the caller is done.
  ThreadPool* hostThreads(std::unique_lock<std::mutex>* lock);
  // Pipelines built so far (by sessions, or from the cache file's list).
  size_t readyPipelines();

 private:
  // A pipeline being built or built: the thread that builds it holds no lock meanwhile, so
  // pipelines build in parallel; a second asker waits for `ready`.
  struct PipelineEntry {
    PipelineKey key;
    uint64_t order = 0;  // when it was first asked for: the cache file lists pipelines so
    Pipeline pipeline;
    bool ready = false;
    Status error;
  };
  VulkanRuntime() = default;
  Status init(const RuntimeOptions& options);
  Status addDescriptorPool();
  Status build(const PipelineKey& key, Pipeline* out);
  // Builds the pipelines the cache file lists on worker threads (prebuilt_), while sessions plan.
  void prebuild(std::vector<PipelineKey> keys);

  RuntimeOptions options_;
  DeviceFacts facts_;
  VkInstance instance_ = VK_NULL_HANDLE;  // the process's (processInstance), not this runtime's
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool commandPool_ = VK_NULL_HANDLE;
  VkPipelineCache pipelineCache_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  std::vector<VkDescriptorPool> descriptorPools_;
  std::map<std::string, std::shared_ptr<PipelineEntry>> pipelines_;
  uint64_t pipelinesAsked_ = 0;
  std::condition_variable pipelineReady_;
  std::vector<std::thread> prebuilders_;
  std::atomic<bool> stopPrebuild_{false};
  std::shared_ptr<StaticPool> staticPool_;
  std::unique_ptr<ThreadPool> hostThreads_;
  std::mutex hostThreadsMutex_;
  std::mutex mutex_;  // pipelines, pools and the queue: backends of several sessions share them
};

}  // namespace osprey::vulkan
