// ConvTranspose 2-D (groups, strides, pads or auto_pad / output_shape, output_padding,
// dilations, bias, a fused activation): conv_transpose2d.comp, one invocation per output
// gathering the taps that scatter onto it. Its constants are Conv's (conv_params.glsl).
#include "backends/vulkan/kernels/conv_push.h"
#include "backends/vulkan/vk_execution.h"
#include "ops/activation.h"
#include "ops/window.h"

namespace osprey::vulkan {

namespace {

class ConvTransposeExecution : public VkExecution {
 public:
  ConvTransposeExecution(VulkanBackend* b, const Window& w, int64_t group, FusedActivation act)
      : VkExecution(b), w_(w), group_(group), act_(act) {}

  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const bool hasBias = in.size() > 2 && in[2];
    return dispatch_.prepare(vk(), "conv_transpose2d", 5, out[0],
                             convSpecialization(in[0]->shape, out[0]->shape, w_, group_, hasBias, false, act_));
  }

  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const bool hasBias = in.size() > 2 && in[2];
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    // No residual here: binding 3 gets X, which the shader does not read as Z (hasZ = 0).
    OSPREY_RETURN_IF_ERROR(locate({in[0], in[1], hasBias ? in[2] : in[1], in[0], out[0]}, &buffers, &o));
    const ConvPush p{o[0], o[1], o[2], o[3], o[4], 0, static_cast<int32_t>(in[0]->shape[0]), act_.a, act_.b};
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, elementwiseGroups(out[0]->elements())));
    return vk()->afterOp();
  }

 private:
  Window w_;
  int64_t group_;
  FusedActivation act_;
  Dispatch dispatch_;
};

int64_t floorHalf(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

}  // namespace

std::unique_ptr<Execution> createConvTranspose(VulkanBackend* b, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& in,
                                               const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() < 2 || in.size() > 3 || !in[0] || !in[1] || out.size() != 1 || !out[0] || !allFloat(in) ||
      !allFloat(out))
    return nullptr;
  const Shape& x = in[0]->shape;
  const Shape& w = in[1]->shape;
  const Shape& y = out[0]->shape;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return nullptr;  // 2-D only
  const int64_t group = op.node->getInt("group", 1);
  if (group < 1 || x[1] % group != 0 || w[0] != x[1] || y[1] != w[1] * group) return nullptr;
  Window win;
  FusedActivation act;
  if (!readWindow(*op.node, {x[2], x[3]}, {w[2], w[3]}, &win) || !FusedActivation::fromNode(*op.node, &act))
    return nullptr;
  // The begin pads as the reference resolves them: explicit pads as given; with output_shape or
  // SAME auto_pad the full result is cut to the planned output, the odd pad at the end for
  // SAME_UPPER and at the beginning otherwise.
  const bool same = win.autoPad == AutoPad::SameUpper || win.autoPad == AutoPad::SameLower;
  const std::vector<int64_t> outPadding = op.node->getInts("output_padding", {0, 0});
  if (outPadding.size() != 2) return nullptr;
  for (int d = 0; d < 2; ++d) {
    const int s = 1 + d;
    if (!op.node->getInts("output_shape").empty() || same) {
      const int64_t full = win.stride[s] * (x[2 + d] - 1) + outPadding[d] + win.extent(s);
      const int64_t total = full - y[2 + d];
      win.padBegin[s] = win.autoPad == AutoPad::SameUpper ? floorHalf(total) : total - floorHalf(total);
    }
  }
  return std::make_unique<ConvTransposeExecution>(b, win, group, act);
}

}  // namespace osprey::vulkan
