// Softmax / LogSoftmax and the reductions (Sum, Mean, Max, Min over a contiguous run of axes), each
// over an (outer, axis, inner) view, and LayerNormalization over trailing axes.
#include "backends/vulkan/vk_execution.h"

namespace osprey::vulkan {

namespace {

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// The axis attribute normalised to [0, rank), or -1 when out of range.
int64_t axisOf(const Node& node, size_t rank) {
  int64_t axis = node.getInt("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(rank);
  return axis >= 0 && axis < static_cast<int64_t>(rank) ? axis : -1;
}

// softmax.comp and reduce.comp: `code` is the LogSoftmax flag or the reduction.
struct LinePush {
  uint32_t xOff, yOff;
  int32_t outer, axis, inner, code;
};

class LineExecution : public VkExecution {
 public:
  LineExecution(VulkanBackend* b, const char* shader, int64_t outer, int64_t axis, int64_t inner, int code)
      : VkExecution(b), shader_(shader), outer_(outer), axis_(axis), inner_(inner), code_(code) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), shader_, 2, out[0]);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    OSPREY_RETURN_IF_ERROR(locate({in[0], out[0]}, &buffers, &o));
    LinePush p{o[0], o[1], static_cast<int32_t>(outer_), static_cast<int32_t>(axis_), static_cast<int32_t>(inner_), code_};
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, elementwiseGroups(outer_ * inner_)));
    return vk()->afterOp();
  }

 private:
  const char* shader_;
  int64_t outer_, axis_, inner_;
  int code_;
  Dispatch dispatch_;
};

struct LayerNormPush {
  uint32_t xOff, scaleOff, biasOff, yOff;
  int32_t rows, size, hasBias;
  float eps;
};

class LayerNormExecution : public VkExecution {
 public:
  LayerNormExecution(VulkanBackend* b, int64_t rows, int64_t size, float eps)
      : VkExecution(b), rows_(rows), size_(size), eps_(eps) {}
  Status onResize(const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& out) override {
    return dispatch_.prepare(vk(), "layer_norm", 4, out[0], {reductionGroup(size_, vk()->runtime()->facts())});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const bool hasBias = in.size() > 2 && in[2];
    std::vector<VkBuffer> buffers;
    std::vector<uint32_t> o;
    OSPREY_RETURN_IF_ERROR(locate({in[0], in[1], hasBias ? in[2] : in[1], out[0]}, &buffers, &o));
    LayerNormPush p{o[0], o[1], o[2], o[3], static_cast<int32_t>(rows_), static_cast<int32_t>(size_), hasBias, eps_};
    const uint32_t gx = static_cast<uint32_t>(std::min<int64_t>(rows_, 65535));
    OSPREY_RETURN_IF_ERROR(dispatch_.record(buffers, p, {gx, gx ? ceilDiv(rows_, gx) : 0, 1}));
    return vk()->afterOp();
  }

 private:
  int64_t rows_, size_;
  float eps_;
  Dispatch dispatch_;
};

}  // namespace

std::unique_ptr<Execution> createSoftmax(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                         const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() != 1 || !in[0] || out.size() != 1 || !out[0] || !allFloat(in) || !allFloat(out))
    return nullptr;
  const Shape& s = in[0]->shape;
  if (s.empty()) return nullptr;
  const int64_t axis = axisOf(*op.node, s.size());
  if (axis < 0) return nullptr;
  return std::make_unique<LineExecution>(b, "softmax", product(s, 0, axis), s[axis], product(s, axis + 1, s.size()),
                                         op.type == OpType::LogSoftmax ? 1 : 0);
}

std::unique_ptr<Execution> createLayerNorm(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                           const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.size() < 2 || !in[0] || !in[1] || out.empty() || !out[0] || !allFloat(in) || !allFloat(out))
    return nullptr;
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i]) return nullptr;  // Mean / InvStdDev outputs
  const Shape& s = in[0]->shape;
  if (s.empty()) return nullptr;
  const int64_t axis = axisOf(*op.node, s.size());
  if (axis < 0) return nullptr;
  const int64_t size = product(s, axis, s.size());
  if (in[1]->elements() != size || (in.size() > 2 && in[2] && in[2]->elements() != size)) return nullptr;
  return std::make_unique<LayerNormExecution>(b, product(s, 0, axis), size, op.node->getFloat("epsilon", 1e-5f));
}

std::unique_ptr<Execution> createReduce(VulkanBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.empty() || !in[0] || in[0]->dtype != DataType::Float32 || out.size() != 1 || !out[0] ||
      !allFloat(out))
    return nullptr;
  int code = 0;  // as reduce.comp numbers them
  switch (op.type) {
    case OpType::ReduceSum: code = 0; break;
    case OpType::ReduceMean: code = 1; break;
    case OpType::ReduceMax: code = 2; break;
    case OpType::ReduceMin: code = 3; break;
    default: return nullptr;
  }
  const Shape& s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> axes;
  if (in.size() > 1 && in[1]) {
    if (!in[1]->constData || in[1]->dtype != DataType::Int64) return nullptr;
    const auto* v = reinterpret_cast<const int64_t*>(in[1]->constData);
    axes.assign(v, v + in[1]->elements());
  } else {
    axes = op.node->getInts("axes");
  }
  if (axes.empty()) {
    if (op.node->getInt("noop_with_empty_axes", 0) != 0) return nullptr;  // identity: the CPU copies it
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<bool> reduced(s.size(), false);
  for (int64_t a : axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return nullptr;
    reduced[a] = true;
  }
  // One contiguous run of reduced axes (size-1 axes may sit anywhere).
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d] && s[d] != 1) {
      if (first < 0) first = d;
      last = d;
    }
  if (first < 0) return std::make_unique<LineExecution>(b, "reduce", in[0]->elements(), 1, 1, code);  // only size-1 axes
  for (int64_t d = first; d <= last; ++d)
    if (!reduced[d] && s[d] != 1) return nullptr;
  return std::make_unique<LineExecution>(b, "reduce", product(s, 0, first), product(s, first, last + 1),
                                         product(s, last + 1, s.size()), code);
}

}  // namespace osprey::vulkan
