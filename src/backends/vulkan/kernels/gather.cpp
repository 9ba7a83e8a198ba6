// Gather on one axis with indices computed on the device (constant indices lower to Raster in
// geometry and never reach here): float32 (fp16 storage at precision Low), int32 and int64 data,
// int32 or int64 indices, negative indices from the end.
#include "backends/vulkan/vk_execution.h"

namespace osprey::vulkan {

namespace {

struct GatherPush {
  uint32_t dataOff, idxOff, yOff, n;
  int32_t axisDim, inner, count;
  uint32_t idxWords, words;
};

class GatherExecution : public VkExecution {
 public:
  GatherExecution(VulkanBackend* b, int64_t axisDim, int64_t inner)
      : VkExecution(b), axisDim_(axisDim), inner_(inner) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), "gather", 3, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    OSPREY_RETURN_IF_ERROR(locate({in[0], in[1], out[0]}, &buffers, &o));
    // Words per element: one float16_t in the fp16 variant, else 32-bit words.
    const uint32_t words =
        vk()->halfStorage(out[0]) ? 1 : static_cast<uint32_t>(dataTypeSize(out[0]->dtype) / sizeof(uint32_t));
    const uint32_t idxWords = static_cast<uint32_t>(dataTypeSize(in[1]->dtype) / sizeof(uint32_t));
    const int64_t n = out[0]->elements();
    GatherPush p{o[0] * words, o[1] * idxWords, o[2] * words, static_cast<uint32_t>(n), static_cast<int32_t>(axisDim_),
                 static_cast<int32_t>(inner_), static_cast<int32_t>(in[1]->elements()), idxWords, words};
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, elementwiseGroups(n)));
    return vk()->afterOp();
  }

 private:
  int64_t axisDim_, inner_;
  Dispatch dispatch_;
};

}  // namespace

std::unique_ptr<Execution> createGather(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() != 2 || !in[0] || !in[1] || out.size() != 1 || !out[0]) return nullptr;
  const DataType dtype = in[0]->dtype;
  if ((dtype != DataType::Float32 && dtype != DataType::Int32 && dtype != DataType::Int64) || out[0]->dtype != dtype)
    return nullptr;
  if (in[1]->dtype != DataType::Int32 && in[1]->dtype != DataType::Int64) return nullptr;
  const Shape& s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = op.node->getInt("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return nullptr;
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= s[d];
  const int64_t words = static_cast<int64_t>(dataTypeSize(dtype) / sizeof(uint32_t));
  if (out[0]->elements() == 0 || inner == 0 || out[0]->elements() > INT32_MAX / words ||
      in[0]->elements() > INT32_MAX / words)
    return nullptr;
  return std::make_unique<GatherExecution>(b, s[axis], inner);
}

}  // namespace osprey::vulkan
