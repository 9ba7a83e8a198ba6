// Resize on Vulkan: the reference kernel's taps (resizeTaps, so every mode, coordinate
// transformation, antialiasing filter and tf_crop_and_resize extrapolation means what it means
// on the CPU), made on the host when the plan is made and read by resize.comp from a small
// host-visible table. Scales, sizes and roi must be constants; rank at most 4.
#include <cstring>

#include "backends/vulkan/kernels/vk_tables.h"
#include "backends/vulkan/vk_execution.h"
#include "ops/resize.h"

namespace osprey::vulkan {

namespace {

constexpr int kAxes = 4;

struct ResizePush {
  uint32_t xOff, yOff, n;
  int32_t inShape[kAxes], outShape[kAxes];
  int32_t firstOff[kAxes], tapOff[kAxes], outsideOff[kAxes];
  float extrapolation;
};

// Appends the taps of every axis to `table` (resize.comp's layout) and fills their offsets.
void buildTable(const std::vector<ResizeAxisTaps>& taps, std::vector<uint32_t>* table, ResizePush* p) {
  const int lead = kAxes - static_cast<int>(taps.size());
  for (int d = 0; d < kAxes; ++d) {
    ResizeAxisTaps identity;
    if (d < lead) {  // an added leading axis of size 1
      identity.first = {0, 1};
      identity.taps = {{0, 1.0}};
      identity.outside = {false};
    }
    const ResizeAxisTaps& t = d < lead ? identity : taps[d - lead];
    p->firstOff[d] = static_cast<int32_t>(table->size());
    for (size_t f : t.first) table->push_back(static_cast<uint32_t>(f));
    p->tapOff[d] = static_cast<int32_t>(table->size());
    for (const ResizeTap& tap : t.taps) {
      const float w = static_cast<float>(tap.weight);
      uint32_t bits;
      std::memcpy(&bits, &w, sizeof bits);
      table->push_back(static_cast<uint32_t>(tap.index));
      table->push_back(bits);
    }
    p->outsideOff[d] = static_cast<int32_t>(table->size());
    for (bool o : t.outside) table->push_back(o ? 1u : 0u);
  }
}

class ResizeExecution : public VkExecution {
 public:
  ResizeExecution(VulkanBackend* b, std::vector<uint32_t> table, const ResizePush& push)
      : VkExecution(b), table_(std::move(table)), push_(push) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    OSPREY_RETURN_IF_ERROR(uploadTable(vk(), table_, "the Resize taps", &tableBuffer_));
    return dispatch_.prepare(vk(), "resize", 3, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> offsets;
    OSPREY_RETURN_IF_ERROR(locate({in[0], out[0]}, &buffers, &offsets));
    ResizePush p = push_;
    p.xOff = offsets[0];
    p.yOff = offsets[1];
    OSPREY_RETURN_IF_ERROR(
        dispatch_.record({buffers[0], tableBuffer_->buffer(), buffers[1]}, p, elementwiseGroups(p.n)));
    return vk()->afterOp();
  }

 private:
  std::vector<uint32_t> table_;
  ResizePush push_;
  std::unique_ptr<DeviceBuffer> tableBuffer_;
  Dispatch dispatch_;
};

}  // namespace

std::unique_ptr<Execution> createResize(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.empty() || !in[0] || out.size() != 1 || !out[0] || !allFloat({in[0], out[0]})) return nullptr;
  const Shape& inShape = in[0]->shape;
  const Shape& outShape = out[0]->shape;
  if (inShape.empty() || inShape.size() > kAxes || outShape.size() != inShape.size()) return nullptr;
  if (out[0]->elements() == 0 || out[0]->elements() > INT32_MAX || in[0]->elements() > INT32_MAX) return nullptr;
  // The taps need roi, scales and sizes as values now.
  TensorViews views(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) {
      views[i].present = false;
      continue;
    }
    views[i].dtype = in[i]->dtype;
    views[i].shape = in[i]->shape;
    if (i == 0) continue;
    if (!in[i]->constData) return nullptr;
    views[i].data = const_cast<uint8_t*>(in[i]->constData);
  }
  std::vector<ResizeAxisTaps> taps;
  double extrapolation = 0;
  if (!resizeTaps(*op.node, views, &taps, &extrapolation) || taps.size() != inShape.size()) return nullptr;
  for (size_t d = 0; d < taps.size(); ++d)
    if (taps[d].first.size() != static_cast<size_t>(outShape[d]) + 1) return nullptr;  // not the planned shape
  ResizePush push{};
  push.n = static_cast<uint32_t>(out[0]->elements());
  const size_t lead = kAxes - inShape.size();
  for (size_t d = 0; d < kAxes; ++d) {
    push.inShape[d] = d < lead ? 1 : static_cast<int32_t>(inShape[d - lead]);
    push.outShape[d] = d < lead ? 1 : static_cast<int32_t>(outShape[d - lead]);
  }
  push.extrapolation = static_cast<float>(extrapolation);
  std::vector<uint32_t> table;
  buildTable(taps, &table, &push);
  return std::make_unique<ResizeExecution>(b, std::move(table), push);
}

}  // namespace osprey::vulkan
