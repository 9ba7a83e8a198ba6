// Conv (2-D: implicit GEMM for general, grouped and 1x1 convolutions, a direct shader for
// depthwise; strides, dilations, pads, bias, the residual Z added before the fused activation)
// and the pools (max / average windows, global max / average).
#include "backends/vulkan/kernels/conv_push.h"
#include "backends/vulkan/vk_execution.h"
#include "ops/activation.h"
#include "ops/window.h"

namespace osprey::vulkan {

namespace {

class ConvExecution : public VkExecution {
 public:
  ConvExecution(VulkanBackend* b, const Window& w, int64_t group, FusedActivation act)
      : VkExecution(b), w_(w), group_(group), act_(act) {}

  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const Shape& x = in[0]->shape;
    const Shape& y = out[0]->shape;
    const int64_t C = x[1], OC = y[1];
    depthwise_ = group_ == C && OC % C == 0;
    wide_ = !depthwise_ && ceilDiv(y[2] * y[3], kWideTile) * ceilDiv(OC / group_, kWideTile) * y[0] * group_ >=
                               kWideMinWorkgroups;
    splits_ = depthwise_ || wide_ ? 1 : chooseSplits(y, in[1]->shape);
    const bool hasBias = in.size() > 2 && in[2], hasZ = in.size() > 3 && in[3];
    const auto constants = convSpecialization(x, y, w_, depthwise_ ? OC / C : group_, hasBias, hasZ, act_, splits_);
    if (splits_ > 1) {
      // The slices' partial sums: fp32 scratch in the arena, free again for the ops after this one.
      partial_ = RuntimeTensor();
      partial_.name = out[0]->name + " (partial sums)";
      partial_.dtype = DataType::Float32;
      partial_.fullPrecision = true;
      partial_.shape = {splits_, y[0], y[1], y[2] * y[3]};
      if (!vk()->onAcquire(&partial_, StorageType::DYNAMIC))
        return Status::outOfMemory("Vulkan: no memory for the partial sums of '" + out[0]->name + "'");
      OSPREY_RETURN_IF_ERROR(sum_.prepare(vk(), "conv_split_sum", 6, out[0], constants));
    }
    return dispatch_.prepare(vk(), depthwise_ ? "conv2d_depthwise" : wide_ ? "conv2d_gemm_wide" : "conv2d_gemm",
                             depthwise_ || wide_ ? 5 : 6, out[0], constants);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const bool hasBias = in.size() > 2 && in[2], hasZ = in.size() > 3 && in[3];
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    // An absent bias or residual binds a tensor the shader never reads, so every binding has a
    // buffer; so does the partial sums' binding of an unsplit conv2d_gemm.
    std::vector<const RuntimeTensor*> tensors{in[0], in[1], hasBias ? in[2] : in[1], hasZ ? in[3] : in[0], out[0]};
    if (!depthwise_ && !wide_) tensors.push_back(splits_ > 1 ? &partial_ : out[0]);
    OSPREY_RETURN_IF_ERROR(locate(tensors, &buffers, &o));
    const Shape& x = in[0]->shape;
    const Shape& y = out[0]->shape;
    const ConvPush p{o[0], o[1], o[2], o[3], o[4], splits_ > 1 ? o[5] : 0, static_cast<int32_t>(x[0]), act_.a, act_.b};
    std::array<uint32_t, 3> groups;
    if (depthwise_)
      groups = elementwiseGroups(out[0]->elements());
    else {
      const int64_t tile = wide_ ? kWideTile : 16;
      groups = {ceilDiv(y[2] * y[3], tile), ceilDiv(y[1] / group_, tile), static_cast<uint32_t>(x[0] * group_ * splits_)};
    }
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, groups));
    if (splits_ > 1) OSPREY_RETURN_IF_ERROR(sum_.record(buffers, p, elementwiseGroups(out[0]->elements())));
    return vk()->afterOp();
  }

 private:
  // Slices of the reduction for conv2d_gemm.comp: where its 16x16 tiles are too few to keep a
  // large GPU busy (under kSplitTargetWorkgroups), the reduction is cut into slices of at least
  // kMinSliceTiles tiles, each summed by workgroups of its own, so that more of them run at once.
  int64_t chooseSplits(const Shape& y, const Shape& w) const {
    const int64_t images = y[0] * group_, tiles = ceilDiv(y[2] * y[3], 16) * ceilDiv(y[1] / group_, 16) * images;
    const int64_t reductionTiles = ceilDiv(w[1] * w[2] * w[3], 16);
    int64_t splits = std::min<int64_t>(ceilDiv(kSplitTargetWorkgroups, tiles), reductionTiles / kMinSliceTiles);
    splits = std::min<int64_t>(splits, 65535 / images);
    return std::max<int64_t>(splits, 1);
  }

  Window w_;
  int64_t group_;
  FusedActivation act_;
  // conv2d_gemm_wide.comp's 64x64 tiles, where there are enough of them to keep a GPU's compute
  // units busy (128 workgroups: a large GPU has about as many units); 16x16 tiles otherwise.
  static constexpr int64_t kWideTile = 64, kWideMinWorkgroups = 128;
  static constexpr int64_t kSplitTargetWorkgroups = 512, kMinSliceTiles = 8;
  bool depthwise_ = false, wide_ = false;
  int64_t splits_ = 1;
  RuntimeTensor partial_;
  Dispatch dispatch_, sum_;
};

struct PoolPush {
  uint32_t xOff, yOff;
  int32_t H, W, padEndH, padEndW;
  int32_t OH, OW, rows;
  int32_t KH, KW, SH, SW;
  int32_t DH, DW, PH, PW;
  int32_t isMax, countIncludePad;
};

struct GlobalPoolPush {
  uint32_t xOff, yOff;
  int32_t rows, size, isMax;
};

class PoolExecution : public VkExecution {
 public:
  PoolExecution(VulkanBackend* b, const Window& w, bool isMax, bool global, bool countIncludePad)
      : VkExecution(b), w_(w), isMax_(isMax), global_(global), countIncludePad_(countIncludePad) {}

  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    if (!global_) return dispatch_.prepare(vk(), "pool2d", 2, out[0]);
    const Shape& x = in[0]->shape;
    const int64_t size = in[0]->elements() / std::max<int64_t>(x[0] * x[1], 1);
    return dispatch_.prepare(vk(), "global_pool", 2, out[0], {reductionGroup(size, vk()->runtime()->facts())});
  }

  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    OSPREY_RETURN_IF_ERROR(locate({in[0], out[0]}, &buffers, &o));
    const Shape& x = in[0]->shape;
    auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
    if (global_) {
      const int64_t rows = x[0] * x[1], size = in[0]->elements() / std::max<int64_t>(rows, 1);
      GlobalPoolPush p{o[0], o[1], i32(rows), i32(size), isMax_};
      const uint32_t gx = static_cast<uint32_t>(std::min<int64_t>(rows, 65535));
      OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, {gx, gx ? ceilDiv(rows, gx) : 0, 1}));
      return vk()->afterOp();
    }
    const Shape& y = out[0]->shape;
    PoolPush p{o[0], o[1], i32(x[2]), i32(x[3]), i32(w_.padEnd[1]), i32(w_.padEnd[2]),
               i32(y[2]), i32(y[3]), i32(y[0] * y[1]),
               i32(w_.kernel[1]), i32(w_.kernel[2]), i32(w_.stride[1]), i32(w_.stride[2]),
               i32(w_.dilation[1]), i32(w_.dilation[2]), i32(w_.padBegin[1]), i32(w_.padBegin[2]),
               isMax_, countIncludePad_};
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, elementwiseGroups(out[0]->elements())));
    return vk()->afterOp();
  }

 private:
  Window w_;
  bool isMax_, global_, countIncludePad_;
  Dispatch dispatch_;
};

}  // namespace

std::unique_ptr<Execution> createConv(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                      const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() < 2 || !in[0] || !in[1] || out.size() != 1 || !out[0] || !allFloat(in) || !allFloat(out))
    return nullptr;
  const Shape& x = in[0]->shape;
  const Shape& w = in[1]->shape;
  if (x.size() != 4 || w.size() != 4) return nullptr;  // 2-D convolution only
  if (in.size() > 3 && in[3] && in[3]->shape != out[0]->shape) return nullptr;  // the shape fn reports it
  const int64_t group = op.node->getInt("group", 1);
  Window win;
  FusedActivation act;
  if (!readConvWindow(*op.node, x, w, &win) || !FusedActivation::fromNode(*op.node, &act)) return nullptr;
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1]) return nullptr;
  if (x[0] * group > 65535) return nullptr;  // the grid's z dimension
  return std::make_unique<ConvExecution>(b, win, group, act);
}

std::unique_ptr<Execution> createPool(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                      const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.empty() || !in[0] || !allFloat(in) || out.empty() || !out[0]) return nullptr;
  if (out.size() > 1 && out[1]) return nullptr;  // MaxPool's Indices output: the CPU has it
  if (out[0]->dtype != DataType::Float32) return nullptr;
  const Shape& x = in[0]->shape;
  const bool global = op.type == OpType::GlobalAveragePool || op.type == OpType::GlobalMaxPool;
  const bool isMax = op.type == OpType::MaxPool || op.type == OpType::GlobalMaxPool;
  if (global) return x.size() >= 3 ? std::make_unique<PoolExecution>(b, Window(), isMax, true, false) : nullptr;
  if (x.size() != 4) return nullptr;
  Window win;
  const bool ceilMode = op.node->getInt("ceil_mode", 0) == 1;
  if (!readWindow(*op.node, Shape(x.begin() + 2, x.end()), op.node->getInts("kernel_shape"), &win) ||
      !resolveForwardWindow(ceilMode, &win))
    return nullptr;
  return std::make_unique<PoolExecution>(b, win, isMax, false, op.node->getInt("count_include_pad", 0) == 1);
}

}  // namespace osprey::vulkan
