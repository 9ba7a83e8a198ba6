// MaxPool / AveragePool, Gather (with indices computed at run time) and Resize on the device.
#include "backends/cuda/kernels/cuda_executions.h"
#include "backends/cuda/kernels/cuda_launch.h"
#include "ops/op_util.h"
#include "core/dtype.h"
#include "ops/window.h"

namespace osprey::cuda {

namespace {

class PoolExecution : public Execution {
 public:
  PoolExecution(CUDABackend* backend, bool isMax, PoolGeometry g) : Execution(backend), isMax_(isMax), g_(g) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || (layout == Layout::NHWC && inputs[0]->shape.size() == 4);
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (inputs[0]->layout != outputs[0]->layout) return Status::internal("CUDA pooling between layouts");
    g_.channelsLast = inputs[0]->layout == Layout::NHWC;
    return Status::ok();
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(pool(isMax_, cuda->devicePtr(inputs[0]), cuda->devicePtr(outputs[0]), g_,
                                     cuda->storageType(outputs[0]), cuda->stream()),
                                "pool kernel");
    return Status::ok();
  }

 private:
  bool isMax_;
  PoolGeometry g_;
};

class GatherExecution : public Execution {
 public:
  GatherExecution(CUDABackend* backend, int64_t outer, int64_t axisSize, int64_t inner)
      : Execution(backend), outer_(outer), axisSize_(axisSize), inner_(inner) {}
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    const int size = static_cast<int>(dataTypeSize(cuda->storageType(outputs[0])));
    OSPREY_CUDA_RETURN_IF_ERROR(gather(cuda->devicePtr(inputs[0]), cuda->devicePtr(inputs[1]), inputs[1]->dtype == DataType::Int64,
                                       cuda->devicePtr(outputs[0]), outer_, axisSize_, inner_, inputs[1]->elements(), size,
                                       cuda->stream()),
                                "Gather kernel");
    return Status::ok();
  }

 private:
  int64_t outer_, axisSize_, inner_;
};

class ResizeExecution : public Execution {
 public:
  ResizeExecution(CUDABackend* backend, ResizeGeometry g) : Execution(backend), g_(g) {}
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(resize2d(cuda->devicePtr(inputs[0]), cuda->devicePtr(outputs[0]), g_, cuda->storageType(outputs[0]),
                                         cuda->stream()),
                                "Resize kernel");
    return Status::ok();
  }

 private:
  ResizeGeometry g_;
};

int indexOf(const std::string& value, std::initializer_list<const char*> names) {
  int i = 0;
  for (const char* n : names) {
    if (value == n) return i;
    ++i;
  }
  return -1;
}

}  // namespace

std::unique_ptr<Execution> createPoolExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.empty() || !inputs[0] || outputs.empty() || !outputs[0]) return nullptr;
  if (outputs.size() > 1 && outputs[1]) return nullptr;  // MaxPool's Indices stay on the CPU
  const RuntimeTensor* x = inputs[0];
  const DataType t = x->dtype;
  if (t != DataType::Float32 && t != DataType::Float16 && t != DataType::BFloat16) return nullptr;
  if (x->shape.size() < 3 || x->shape.size() > 5 || !op.node->hasAttr("kernel_shape")) return nullptr;
  if (op.node->getInt("storage_order", 0) != 0) return nullptr;
  Window w;
  if (!readWindow(*op.node, Shape(x->shape.begin() + 2, x->shape.end()), op.node->getInts("kernel_shape"), &w).isOk()) return nullptr;
  if (!resolveForwardWindow(op.node->getInt("ceil_mode", 0) != 0, &w).isOk()) return nullptr;
  PoolGeometry g{};
  g.planes = x->shape[0] * x->shape[1];
  g.channels = x->shape[1];
  for (int s = 0; s < 3; ++s) {
    g.in[s] = w.in[s];
    g.out[s] = w.out[s];
    g.kernel[s] = w.kernel[s];
    g.stride[s] = w.stride[s];
    g.dilation[s] = w.dilation[s];
    g.padBegin[s] = w.padBegin[s];
    g.padEnd[s] = w.padEnd[s];
  }
  g.countIncludePad = op.node->getInt("count_include_pad", 0) != 0;
  if (g.planes * w.outSize() != outputs[0]->elements()) return nullptr;
  return std::make_unique<PoolExecution>(backend, op.type == OpType::MaxPool, g);
}

std::unique_ptr<Execution> createGatherExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() != 2 || !inputs[0] || !inputs[1] || outputs.empty() || !outputs[0]) return nullptr;
  const RuntimeTensor* data = inputs[0];
  if (inputs[1]->dtype != DataType::Int64 && inputs[1]->dtype != DataType::Int32) return nullptr;
  const size_t size = dataTypeSize(backend->storageType(data));
  if ((size != 1 && size != 2 && size != 4 && size != 8) || data->shape.empty()) return nullptr;
  int64_t axis;
  if (!normalizeAxis(op.node->getInt("axis", 0), static_cast<int64_t>(data->shape.size()), &axis).isOk()) return nullptr;
  AxisSplit s = splitAt(data->shape, axis);
  return std::make_unique<GatherExecution>(backend, s.outer, s.n, s.inner);
}

}  // namespace osprey::cuda

namespace osprey::cuda {

// 4-D NCHW resizes of H and W only (nearest or linear, no antialias) with constant scales or
// sizes; anything else (cubic, ROI crops, N/C scaling, aspect policies) runs on the CPU.
std::unique_ptr<Execution> createResizeExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.empty() || !inputs[0] || outputs.empty() || !outputs[0]) return nullptr;
  const Node& node = *op.node;
  const RuntimeTensor* x = inputs[0];
  const RuntimeTensor* y = outputs[0];
  const DataType t = x->dtype;
  if ((t != DataType::Float32 && t != DataType::Float16 && t != DataType::BFloat16) || x->shape.size() != 4) return nullptr;
  if (node.hasAttr("axes") || node.getInt("antialias", 0) != 0 || node.getString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return nullptr;
  const int mode = indexOf(node.getString("mode", "nearest"), {"nearest", "linear"});
  const int coordinate =
      indexOf(node.getString("coordinate_transformation_mode", "half_pixel"), {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"});
  const int rounding = indexOf(node.getString("nearest_mode", "round_prefer_floor"), {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"});
  if (mode < 0 || coordinate < 0 || rounding < 0) return nullptr;
  if (y->shape.size() != 4 || y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1]) return nullptr;
  auto constantInput = [&](size_t i) -> const RuntimeTensor* {
    return inputs.size() > i && inputs[i] && inputs[i]->elements() > 0 ? inputs[i] : nullptr;
  };
  ResizeGeometry g{};
  g.planes = x->shape[0] * x->shape[1];
  g.inH = x->shape[2];
  g.inW = x->shape[3];
  g.outH = y->shape[2];
  g.outW = y->shape[3];
  if (const RuntimeTensor* scales = constantInput(2)) {
    if (!scales->constData || scales->elements() != 4) return nullptr;
    double s[4];
    for (int i = 0; i < 4; ++i) s[i] = loadAsDouble(scales->dtype, scales->constData, i);
    if (s[0] != 1.0 || s[1] != 1.0) return nullptr;
    g.scaleH = s[2];
    g.scaleW = s[3];
    g.resizedH = s[2] * static_cast<double>(g.inH);
    g.resizedW = s[3] * static_cast<double>(g.inW);
  } else if (constantInput(3)) {
    if (g.inH == 0 || g.inW == 0) return nullptr;
    g.scaleH = static_cast<double>(g.outH) / static_cast<double>(g.inH);
    g.scaleW = static_cast<double>(g.outW) / static_cast<double>(g.inW);
    g.resizedH = static_cast<double>(g.outH);
    g.resizedW = static_cast<double>(g.outW);
  } else {
    return nullptr;
  }
  if (constantInput(1)) return nullptr;  // an ROI only matters for tf_crop_and_resize, which stays on the CPU
  g.coordinate = coordinate;
  g.nearestMode = rounding;
  g.linear = mode == 1;
  return std::make_unique<ResizeExecution>(backend, g);
}

}  // namespace osprey::cuda
