// What Vulkan executions share: Dispatch (a pipeline, its descriptor set and the recording of
// one dispatch) and the creators of the kernel files.
#pragma once
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "backends/vulkan/vk_backend.h"

namespace osprey::vulkan {

// Elementwise shaders run 256 invocations per workgroup over a 2-D grid of workgroups (one
// dimension alone is limited to 65535 groups on many devices).
constexpr uint32_t kElementwiseGroup = 256;

// One dispatch of one shader: its tensors bind as storage buffers 0..n-1 (whole buffers; the
// shader adds each tensor's element offset from the push constants).
class Dispatch {
 public:
  Dispatch() = default;
  Dispatch(const Dispatch&) = delete;
  Dispatch& operator=(const Dispatch&) = delete;
  ~Dispatch() {
    if (backend_) backend_->runtime()->freeSet(set_);
  }
  // `storageOf`: the tensor whose storage picks the shader's variant, fp32 or fp16 (the pipeline
  // gives a command all its float tensors in one precision); fp16 storage takes the variant with
  // fp16 arithmetic (_fp16a) where the shader has one and the backend computes in fp16; a
  // shader's subgroup variant (_sg) is taken where the device's subgroups do arithmetic.
  // `specialization`: the shader's specialization constants, in constant_id order. The pipeline
  // and the descriptor set are taken at the first record, so that a plan writes its weights
  // while the runtime builds the pipelines its cache file lists.
  Status prepare(VulkanBackend* backend, const std::string& shader, uint32_t bindings, const RuntimeTensor* storageOf,
                 const std::vector<int32_t>& specialization = {}) {
    if (backend_) backend_->runtime()->freeSet(set_);
    backend_ = backend;
    shader_ = shader;
    if (backend->halfStorage(storageOf))
      shader_ += backend->halfMath() && VulkanRuntime::hasShader(shader + "_fp16a") ? "_fp16a" : "_fp16";
    if (backend->runtime()->facts().subgroupArithmetic && VulkanRuntime::hasShader(shader_ + "_sg")) shader_ += "_sg";
    set_ = {};
    pipeline_ = nullptr;
    specialization_ = specialization;
    bound_.assign(bindings, VK_NULL_HANDLE);
    return Status::ok();
  }
  // Records the dispatch of `groups` workgroups over `buffers` with `push` (at most
  // kPushConstantBytes), then a barrier.
  template <class Push>
  Status record(const std::vector<VkBuffer>& buffers, const Push& push, std::array<uint32_t, 3> groups) {
    static_assert(sizeof(Push) <= kPushConstantBytes, "push constants too large");
    if (buffers.size() != bound_.size())
      return Status::internal("Vulkan: shader '" + shader_ + "' given " + std::to_string(buffers.size()) + " buffers");
    const DeviceFacts& f = backend_->runtime()->facts();
    for (int i = 0; i < 3; ++i)
      if (groups[i] > f.maxWorkGroupCount[i])
        return Status::unsupported("Vulkan: shader '" + shader_ + "' needs " + std::to_string(groups[i]) +
                                   " workgroups in dimension " + std::to_string(i) + "; the device allows " +
                                   std::to_string(f.maxWorkGroupCount[i]));
    if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return Status::ok();
    if (!pipeline_) {
      VulkanRuntime* rt = backend_->runtime();
      const Pipeline* pipeline = nullptr;
      OSPREY_RETURN_IF_ERROR(rt->pipeline(shader_, static_cast<uint32_t>(bound_.size()), specialization_, &pipeline));
      OSPREY_RETURN_IF_ERROR(rt->allocateSet(*pipeline, &set_));
      pipeline_ = pipeline;
    }
    VkCommandBuffer cmd;
    OSPREY_RETURN_IF_ERROR(backend_->recording(&cmd));
    if (backend_->replaying()) return Status::ok();  // recorded in the captured run, sets unchanged
    // A set may be rewritten only while no submitted work uses it: every run ends with a
    // flush, so rewriting happens only when a buffer changed since the last run (a new arena).
    if (buffers != bound_ || generation_ != backend_->memoryGeneration()) {
      std::vector<VkDescriptorBufferInfo> infos(buffers.size());
      std::vector<VkWriteDescriptorSet> writes(buffers.size());
      for (size_t i = 0; i < buffers.size(); ++i) {
        infos[i] = {buffers[i], 0, VK_WHOLE_SIZE};
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set_.set;
        writes[i].dstBinding = static_cast<uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
      }
      vkUpdateDescriptorSets(backend_->runtime()->device(), static_cast<uint32_t>(writes.size()), writes.data(), 0,
                             nullptr);
      bound_ = buffers;
      generation_ = backend_->memoryGeneration();
    }
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_->layout, 0, 1, &set_.set, 0, nullptr);
    vkCmdPushConstants(cmd, pipeline_->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push), &push);
    vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
    backend_->barrier();
    return Status::ok();
  }

 private:
  VulkanBackend* backend_ = nullptr;
  std::string shader_;
  std::vector<int32_t> specialization_;
  const Pipeline* pipeline_ = nullptr;
  DescriptorSet set_;
  std::vector<VkBuffer> bound_;
  uint64_t generation_ = 0;
};

class VkExecution : public Execution {
 public:
  explicit VkExecution(VulkanBackend* backend) : Execution(backend) {}
  VulkanBackend* vk() const { return static_cast<VulkanBackend*>(backend()); }
  // Buffers and element offsets of `tensors`, in order.
  Status locate(const std::vector<const RuntimeTensor*>& tensors, std::vector<VkBuffer>* buffers,
                std::vector<uint32_t>* offsets) const {
    buffers->resize(tensors.size());
    offsets->resize(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) OSPREY_RETURN_IF_ERROR(vk()->locate(tensors[i], &(*buffers)[i], &(*offsets)[i]));
    return Status::ok();
  }
};

inline uint32_t ceilDiv(int64_t n, int64_t d) { return static_cast<uint32_t>((n + d - 1) / d); }

// The workgroup size of a shader that reduces rows of `length` elements (group_reduce.glsl's
// specialization constant 0): a power of two near length / 4, so each invocation reads about
// four, between 64 (or the subgroup size) and 256 (or the device's limit).
inline int32_t reductionGroup(int64_t length, const DeviceFacts& f) {
  const int64_t most = std::min<int64_t>(256, f.maxWorkGroupInvocations);
  int64_t group = std::max<int64_t>(64, f.subgroupSize);
  while (group * 2 <= most && group * 4 < length) group *= 2;
  return static_cast<int32_t>(std::min(group, most));
}

// Workgroups for `n` elements at kElementwiseGroup per group, folded into x and y.
inline std::array<uint32_t, 3> elementwiseGroups(int64_t n) {
  const uint32_t groups = ceilDiv(n, kElementwiseGroup);
  const uint32_t x = std::min<uint32_t>(groups, 65535);
  return {x, x ? ceilDiv(groups, x) : 0, 1};
}

// True when every present tensor of `ts` is float32 (what the float shaders handle).
inline bool allFloat(const std::vector<RuntimeTensor*>& ts) {
  for (auto* t : ts)
    if (t && t->dtype != DataType::Float32) return false;
  return true;
}

// The creators, one per kernel file.
#define OSPREY_VK_CREATOR(name)                                                           \
  std::unique_ptr<Execution> name(VulkanBackend*, const OpRef&, const std::vector<RuntimeTensor*>&, \
                                  const std::vector<RuntimeTensor*>&)
OSPREY_VK_CREATOR(createUnary);
OSPREY_VK_CREATOR(createBinary);
OSPREY_VK_CREATOR(createMatMul);
OSPREY_VK_CREATOR(createConv);
OSPREY_VK_CREATOR(createPool);
OSPREY_VK_CREATOR(createSoftmax);
OSPREY_VK_CREATOR(createLayerNorm);
OSPREY_VK_CREATOR(createRaster);
OSPREY_VK_CREATOR(createReduce);
OSPREY_VK_CREATOR(createBatchNorm);
OSPREY_VK_CREATOR(createAttention);
OSPREY_VK_CREATOR(createResize);
OSPREY_VK_CREATOR(createConvTranspose);
OSPREY_VK_CREATOR(createGather);
#undef OSPREY_VK_CREATOR

}  // namespace osprey::vulkan
