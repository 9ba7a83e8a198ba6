#include "backends/vulkan/vk_runtime.h"

#include <algorithm>
#include <cstdio>

#include "backends/vulkan/vk_memory.h"
#include "backends/vulkan/vk_shaders.h"
#include "core/files.h"

namespace osprey::vulkan {

namespace {
// Sets per descriptor pool; a pool that runs out is followed by another.
constexpr uint32_t kSetsPerPool = 512;
constexpr uint32_t kBuffersPerPool = kSetsPerPool * 6;
}  // namespace

RuntimeOptions RuntimeOptions::fromConfig(const VulkanOptions& options) {
  RuntimeOptions r;
  r.device = options.device;
  r.pipelineCachePath = options.pipelineCachePath;
  r.validation = options.validation;
  r.mappedWeights = options.mappedWeights;
  return r;
}

Status VulkanRuntime::create(const RuntimeOptions& options, std::unique_ptr<VulkanRuntime>* out) {
  std::unique_ptr<VulkanRuntime> rt(new VulkanRuntime());
  OSPREY_RETURN_IF_ERROR(rt->init(options));
  *out = std::move(rt);
  return Status::ok();
}

Status VulkanRuntime::init(const RuntimeOptions& options) {
  options_ = options;
  OSPREY_RETURN_IF_ERROR(processInstance(options.validation, &instance_));
  OSPREY_RETURN_IF_ERROR(selectDevice(instance_, options.device, &facts_));
  vkGetPhysicalDeviceMemoryProperties(facts_.physical, &memory_);

  const float priority = 1.f;
  VkDeviceQueueCreateInfo queueInfo{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queueInfo.queueFamilyIndex = facts_.computeQueueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  // 16-bit storage is what the _fp16 shader variants use (BackendConfig precision Low), and
  // shaderFloat16 what the _fp16a ones add (VulkanOptions::halfMath).
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  storage16.storageBuffer16BitAccess = facts_.storage16 ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceShaderFloat16Int8Features arithmetic{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  arithmetic.shaderFloat16 = facts_.fp16Arithmetic ? VK_TRUE : VK_FALSE;
  storage16.pNext = &arithmetic;
  VkDeviceCreateInfo deviceInfo{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  deviceInfo.pNext = &storage16;
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateDevice(facts_.physical, &deviceInfo, nullptr, &device_),
                                 "vkCreateDevice on " + facts_.name));
  vkGetDeviceQueue(device_, facts_.computeQueueFamily, 0, &queue_);
  staticPool_ = std::make_shared<StaticPool>(this, facts_.minStorageBufferOffsetAlignment, options.mappedWeights);

  VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = facts_.computeQueueFamily;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateCommandPool(device_, &poolInfo, nullptr, &commandPool_), "vkCreateCommandPool"));

  // A cache file from another device or driver: the driver's header check rejects its data (and
  // the pipelines it lists are built afresh); a missing, unreadable or corrupt one only means
  // pipelines are compiled afresh.
  PipelineCacheFile cached;
  std::vector<uint8_t> bytes;
  if (!options.pipelineCachePath.empty() && readFile(options.pipelineCachePath, &bytes) &&
      !parsePipelineCacheFile(bytes.data(), bytes.size(), &cached))
    cached = PipelineCacheFile();
  VkPipelineCacheCreateInfo cacheInfo{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  cacheInfo.initialDataSize = cached.driverData.size();
  cacheInfo.pInitialData = cached.driverData.empty() ? nullptr : cached.driverData.data();
  if (vkCreatePipelineCache(device_, &cacheInfo, nullptr, &pipelineCache_) != VK_SUCCESS) {
    cacheInfo.initialDataSize = 0;
    cacheInfo.pInitialData = nullptr;
    OSPREY_RETURN_IF_ERROR(vkCheck(vkCreatePipelineCache(device_, &cacheInfo, nullptr, &pipelineCache_),
                                   "vkCreatePipelineCache"));
  }
  OSPREY_RETURN_IF_ERROR(addDescriptorPool());
  prebuild(std::move(cached.pipelines));
  return Status::ok();
}

VulkanRuntime::~VulkanRuntime() {
  stopPrebuild_ = true;
  for (std::thread& t : prebuilders_) t.join();
  if (device_) {
    vkDeviceWaitIdle(device_);
    if (!options_.pipelineCachePath.empty()) (void)savePipelineCache();
    if (staticPool_) staticPool_->clear();
    for (auto& [name, e] : pipelines_) {
      if (!e->ready || !e->error.isOk()) continue;
      vkDestroyPipeline(device_, e->pipeline.pipeline, nullptr);
      vkDestroyPipelineLayout(device_, e->pipeline.layout, nullptr);
      vkDestroyDescriptorSetLayout(device_, e->pipeline.setLayout, nullptr);
    }
    for (VkDescriptorPool pool : descriptorPools_) vkDestroyDescriptorPool(device_, pool, nullptr);
    if (pipelineCache_) vkDestroyPipelineCache(device_, pipelineCache_, nullptr);
    if (commandPool_) vkDestroyCommandPool(device_, commandPool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
}

Status VulkanRuntime::savePipelineCache() {
  PipelineCacheFile file;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // In the order sessions asked for them, so that the next start builds them in the order its
    // plan needs them.
    std::vector<const PipelineEntry*> built;
    for (const auto& [id, e] : pipelines_)
      if (e->ready && e->error.isOk()) built.push_back(e.get());
    std::sort(built.begin(), built.end(), [](auto* a, auto* b) { return a->order < b->order; });
    for (const PipelineEntry* e : built) file.pipelines.push_back(e->key);
  }
  size_t size = 0;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkGetPipelineCacheData(device_, pipelineCache_, &size, nullptr), "vkGetPipelineCacheData"));
  file.driverData.resize(size);
  OSPREY_RETURN_IF_ERROR(
      vkCheck(vkGetPipelineCacheData(device_, pipelineCache_, &size, file.driverData.data()), "vkGetPipelineCacheData"));
  file.driverData.resize(size);
  return writeFileAtomically(options_.pipelineCachePath, serializePipelineCacheFile(file))
      .withContext("Vulkan pipeline cache");
}

Status VulkanRuntime::memoryType(uint32_t typeBits, VkMemoryPropertyFlags wanted, bool required, uint32_t* out) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((typeBits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & wanted) == wanted) {
      *out = i;
      return Status::ok();
    }
  if (!required)
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
      if (typeBits & (1u << i)) {
        *out = i;
        return Status::ok();
      }
  return Status::unsupported("Vulkan: " + facts_.name + " has no memory type with properties " + std::to_string(wanted));
}

Status VulkanRuntime::addDescriptorPool() {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kBuffersPerPool};
  VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  info.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT;
  info.maxSets = kSetsPerPool;
  info.poolSizeCount = 1;
  info.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateDescriptorPool(device_, &info, nullptr, &pool), "vkCreateDescriptorPool"));
  descriptorPools_.push_back(pool);
  return Status::ok();
}

bool VulkanRuntime::hasShader(const std::string& name) {
  for (const EmbeddedShader& s : embeddedShaders())
    if (name == s.name) return true;
  return false;
}

Status VulkanRuntime::pipeline(const std::string& name, uint32_t bindings, const std::vector<int32_t>& specialization,
                               const Pipeline** out) {
  PipelineKey key{name, bindings, specialization};
  const std::string id = key.id();
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = pipelines_.find(id);
  if (it != pipelines_.end()) {
    std::shared_ptr<PipelineEntry> e = it->second;
    pipelineReady_.wait(lock, [&] { return e->ready; });
    OSPREY_RETURN_IF_ERROR(e->error);
    if (e->key.bindings != bindings)
      return Status::internal("Vulkan: shader '" + name + "' asked for with " + std::to_string(bindings) +
                              " bindings, built with " + std::to_string(e->key.bindings));
    *out = &e->pipeline;
    return Status::ok();
  }
  auto e = std::make_shared<PipelineEntry>();
  e->key = std::move(key);
  e->order = pipelinesAsked_++;
  pipelines_[id] = e;
  lock.unlock();
  Status built = build(e->key, &e->pipeline);
  lock.lock();
  e->ready = true;
  e->error = built;
  if (!built) pipelines_.erase(id);  // the next asker tries again
  pipelineReady_.notify_all();
  OSPREY_RETURN_IF_ERROR(built);
  *out = &e->pipeline;
  return Status::ok();
}

ThreadPool* VulkanRuntime::hostThreads(std::unique_lock<std::mutex>* lock) {
  *lock = std::unique_lock<std::mutex>(hostThreadsMutex_);
  if (!hostThreads_)
    hostThreads_ = std::make_unique<ThreadPool>(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)));
  return hostThreads_.get();
}

size_t VulkanRuntime::readyPipelines() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& [id, e] : pipelines_) n += e->ready && e->error.isOk();
  return n;
}

void VulkanRuntime::prebuild(std::vector<PipelineKey> keys) {
  if (keys.empty()) return;
  auto shared = std::make_shared<std::vector<PipelineKey>>(std::move(keys));
  auto next = std::make_shared<std::atomic<size_t>>(0);
  // Four threads at most, half the cores: NVIDIA's driver makes pipelines several times slower
  // each on more threads at once (8 threads took longer than 4 on an H200), and the session
  // plans on the other cores meanwhile.
  const size_t threads = std::min<size_t>({shared->size(), std::max(1u, std::thread::hardware_concurrency() / 2), 4});
  for (size_t t = 0; t < threads; ++t)
    prebuilders_.emplace_back([this, shared, next] {
      for (size_t i = (*next)++; i < shared->size() && !stopPrebuild_; i = (*next)++) {
        const PipelineKey& k = (*shared)[i];
        const Pipeline* p = nullptr;
        // A shader this build lacks, or bindings that changed: left to the session to report.
        if (hasShader(k.shader)) (void)pipeline(k.shader, k.bindings, k.specialization, &p);
      }
    });
}

Status VulkanRuntime::build(const PipelineKey& key, Pipeline* p) {
  const std::string& name = key.shader;
  const uint32_t bindings = key.bindings;
  const std::vector<int32_t>& specialization = key.specialization;
  const EmbeddedShader* shader = nullptr;
  for (const EmbeddedShader& s : embeddedShaders())
    if (name == s.name) shader = &s;
  if (!shader) return Status::internal("Vulkan: no embedded shader '" + name + "'");

  p->bindings = bindings;
  // Destroys what was made so far if a later step fails.
  struct Cleanup {
    VkDevice device;
    Pipeline* p;
    VkShaderModule module = VK_NULL_HANDLE;
    bool keep = false;
    ~Cleanup() {
      if (module) vkDestroyShaderModule(device, module, nullptr);
      if (keep) return;
      if (p->layout) vkDestroyPipelineLayout(device, p->layout, nullptr);
      if (p->setLayout) vkDestroyDescriptorSetLayout(device, p->setLayout, nullptr);
    }
  } cleanup{device_, p};
  std::vector<VkDescriptorSetLayoutBinding> slots(bindings);
  for (uint32_t i = 0; i < bindings; ++i)
    slots[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo setInfo{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  setInfo.bindingCount = bindings;
  setInfo.pBindings = slots.data();
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateDescriptorSetLayout(device_, &setInfo, nullptr, &p->setLayout),
                                 "vkCreateDescriptorSetLayout for shader '" + name + "'"));
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo layoutInfo{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &p->setLayout;
  layoutInfo.pushConstantRangeCount = 1;
  layoutInfo.pPushConstantRanges = &push;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreatePipelineLayout(device_, &layoutInfo, nullptr, &p->layout),
                                 "vkCreatePipelineLayout for shader '" + name + "'"));
  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = shader->wordCount * sizeof(uint32_t);
  moduleInfo.pCode = shader->words;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateShaderModule(device_, &moduleInfo, nullptr, &cleanup.module),
                                 "vkCreateShaderModule for shader '" + name + "'"));
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = cleanup.module;
  info.stage.pName = "main";
  std::vector<VkSpecializationMapEntry> entries(specialization.size());
  for (size_t i = 0; i < entries.size(); ++i)
    entries[i] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i * sizeof(int32_t)), sizeof(int32_t)};
  VkSpecializationInfo constants{static_cast<uint32_t>(entries.size()), entries.data(),
                                 specialization.size() * sizeof(int32_t), specialization.data()};
  if (!specialization.empty()) info.stage.pSpecializationInfo = &constants;
  info.layout = p->layout;
  OSPREY_RETURN_IF_ERROR(vkCheck(vkCreateComputePipelines(device_, pipelineCache_, 1, &info, nullptr, &p->pipeline),
                                 "vkCreateComputePipelines for shader '" + name + "'"));
  cleanup.keep = true;
  return Status::ok();
}

Status VulkanRuntime::allocateSet(const Pipeline& pipeline, DescriptorSet* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorSetCount = 1;
  info.pSetLayouts = &pipeline.setLayout;
  for (VkDescriptorPool pool : descriptorPools_) {
    info.descriptorPool = pool;
    if (vkAllocateDescriptorSets(device_, &info, &out->set) == VK_SUCCESS) {
      out->pool = pool;
      return Status::ok();
    }
  }
  OSPREY_RETURN_IF_ERROR(addDescriptorPool());
  info.descriptorPool = descriptorPools_.back();
  out->pool = info.descriptorPool;
  return vkCheck(vkAllocateDescriptorSets(device_, &info, &out->set), "vkAllocateDescriptorSets");
}

void VulkanRuntime::freeSet(const DescriptorSet& set) {
  if (!set.set) return;
  std::lock_guard<std::mutex> lock(mutex_);
  vkFreeDescriptorSets(device_, set.pool, 1, &set.set);
}

Status VulkanRuntime::allocateCommandBuffer(VkCommandBuffer* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = commandPool_;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  return vkCheck(vkAllocateCommandBuffers(device_, &info, out), "vkAllocateCommandBuffers");
}

void VulkanRuntime::freeCommandBuffer(VkCommandBuffer buffer) {
  if (!buffer) return;
  std::lock_guard<std::mutex> lock(mutex_);
  vkFreeCommandBuffers(device_, commandPool_, 1, &buffer);
}

Status VulkanRuntime::submitAndWait(VkCommandBuffer buffer, VkFence fence) {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    OSPREY_RETURN_IF_ERROR(vkCheck(vkQueueSubmit(queue_, 1, &submit, fence), "vkQueueSubmit"));
  }
  OSPREY_RETURN_IF_ERROR(vkCheck(vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences"));
  return vkCheck(vkResetFences(device_, 1, &fence), "vkResetFences");
}

}  // namespace osprey::vulkan
