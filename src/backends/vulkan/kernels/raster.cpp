// Raster: the strided region copies geometry lowers data movement to (Reshape, Flatten,
// Transpose, Concat, Slice, Split, Pad, Tile, ...). One dispatch per region (each has its own
// descriptor set: a set may not change between dispatches of one command buffer), moving
// elements as 32-bit words, so float32, int32 and int64 tensors all move here.
#include "backends/vulkan/vk_execution.h"

namespace osprey::vulkan {

namespace {

struct RegionPush {
  uint32_t srcOff, dstOff;
  int32_t srcStride[3], srcStart;
  int32_t dstStride[3], dstStart;
  int32_t size[3];
  uint32_t words;
};

struct FillPush {
  uint32_t yOff, n;
  float value;
};

class RasterExecution : public VkExecution {
 public:
  RasterExecution(VulkanBackend* b, std::shared_ptr<const RasterPlan> plan) : VkExecution(b), plan_(std::move(plan)) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    copies_.clear();
    for (size_t i = 0; i < plan_->regions.size(); ++i) {
      copies_.push_back(std::make_unique<Dispatch>());
      OSPREY_RETURN_IF_ERROR(copies_.back()->prepare(vk(), "raster", 2, out[0]));
    }
    return plan_->fill ? fill_.prepare(vk(), "fill", 1, out[0]) : Status::ok();
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    // 32-bit words per element; a float16_t element is one word of the fp16 variant.
    const uint32_t words = vk()->halfStorage(out[0]) ? 1 : static_cast<uint32_t>(dataTypeSize(out[0]->dtype) / 4);
    if (plan_->fill) {
      std::vector<VkBuffer> buffers;
      std::vector<uint32_t> o;
      OSPREY_RETURN_IF_ERROR(locate({out[0]}, &buffers, &o));
      const int64_t n = out[0]->elements();
      FillPush p{o[0], static_cast<uint32_t>(n), static_cast<float>(plan_->fillValue)};
      OSPREY_RETURN_IF_ERROR(fill_.record(buffers, p, elementwiseGroups(n)));
    }
    for (size_t k = 0; k < plan_->regions.size(); ++k) {
      const RasterRegion& r = plan_->regions[k];
      if (r.count() <= 0) continue;
      std::vector<VkBuffer> buffers;
      std::vector<uint32_t> o;
      OSPREY_RETURN_IF_ERROR(locate({in[r.input], out[0]}, &buffers, &o));
      RegionPush p{};
      p.srcOff = o[0] * words;
      p.dstOff = o[1] * words;
      for (int i = 0; i < 3; ++i) {
        p.srcStride[i] = static_cast<int32_t>(r.src.stride[i]);
        p.dstStride[i] = static_cast<int32_t>(r.dst.stride[i]);
        p.size[i] = static_cast<int32_t>(r.size[i]);
      }
      p.srcStart = static_cast<int32_t>(r.src.offset);
      p.dstStart = static_cast<int32_t>(r.dst.offset);
      p.words = words;
      OSPREY_RETURN_IF_ERROR(copies_[k]->record(buffers, p, elementwiseGroups(r.count())));
    }
    return vk()->afterOp();
  }

 private:
  std::shared_ptr<const RasterPlan> plan_;
  std::vector<std::unique_ptr<Dispatch>> copies_;
  Dispatch fill_;
};

}  // namespace

std::unique_ptr<Execution> createRaster(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.raster || out.size() != 1 || !out[0]) return nullptr;
  const DataType dtype = out[0]->dtype;
  const size_t size = dataTypeSize(dtype);
  if (dtype == DataType::String || size == 0 || size % 4 != 0) return nullptr;
  if (op.raster->fill && dtype != DataType::Float32) return nullptr;  // fill writes a float
  if (out[0]->elements() > INT32_MAX / static_cast<int64_t>(size / 4)) return nullptr;
  for (const RasterRegion& r : op.raster->regions) {
    if (r.input < 0 || r.input >= static_cast<int>(in.size()) || !in[r.input]) return nullptr;
    if (in[r.input]->dtype != dtype) return nullptr;
  }
  return std::make_unique<RasterExecution>(b, op.raster);
}

}  // namespace osprey::vulkan
