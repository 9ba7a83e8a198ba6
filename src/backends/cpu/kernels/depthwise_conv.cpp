// CPU depthwise Conv (2-D, one input channel per group, float32): a direct kernel per channel
// plane from the function table, bias, the residual Z and Relu/Clip fused, other activations in
// a second pass.
#include <limits>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "ops/activation.h"

namespace osprey {

namespace {

class DepthwiseConvExecution : public Execution {
 public:
  DepthwiseConvExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
    Window g;
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &g));
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &act_));
    batch_ = x.shape[0];
    inChannels_ = x.shape[1];
    outChannels_ = w.shape[0];
    args_ = DepthwiseArgs();
    args_.inH = g.in[1], args_.inW = g.in[2], args_.outH = g.out[1], args_.outW = g.out[2];
    args_.kernelH = g.kernel[1], args_.kernelW = g.kernel[2];
    args_.strideH = g.stride[1], args_.strideW = g.stride[2];
    args_.padH = g.padBegin[1], args_.padW = g.padBegin[2];
    args_.dilationH = g.dilation[1], args_.dilationW = g.dilation[2];
    if (act_.kind == FusedActivation::Kind::Relu) {
      args_.reluMin = true, args_.clipLo = 0.f, args_.clipHi = std::numeric_limits<float>::infinity();
    } else if (act_.kind == FusedActivation::Kind::Clip) {
      args_.reluMin = true, args_.clipLo = act_.a, args_.clipHi = act_.b;
    }
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* w = reinterpret_cast<const float*>(inputs[1]->host());
    const float* bias = inputs.size() > 2 && inputs[2] ? reinterpret_cast<const float*>(inputs[2]->host()) : nullptr;
    const float* z = inputs.size() > 3 && inputs[3] ? reinterpret_cast<const float*>(inputs[3]->host()) : nullptr;
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const int64_t M = outChannels_, perGroup = outChannels_ / inChannels_;
    const int64_t inSize = args_.inH * args_.inW, outSize = args_.outH * args_.outW, kSize = args_.kernelH * args_.kernelW;
    const DepthwisePlaneKernel kernel = cpuFunctions().depthwisePlane;
    const bool separateActivation = !args_.reluMin && act_.kind != FusedActivation::Kind::None;
    parallelFor(static_cast<CPUBackend*>(backend())->threadPool(), batch_ * M, [&](int64_t begin, int64_t end) {
      for (int64_t nm = begin; nm < end; ++nm) {
        const int64_t n = nm / M, m = nm % M;
        float* yc = y + nm * outSize;
        DepthwiseArgs args = args_;
        args.residual = z ? z + nm * outSize : nullptr;
        kernel(args, x + (n * inChannels_ + m / perGroup) * inSize, w + m * kSize, bias ? bias[m] : 0.f, yc);
        if (separateActivation) applyActivation(cpuFunctions(), act_, yc, outSize);
      }
    });
    return Status::ok();
  }

 private:
  const Node& node_;
  FusedActivation act_;
  DepthwiseArgs args_;
  int64_t batch_ = 0, inChannels_ = 0, outChannels_ = 0;
};

}  // namespace

std::unique_ptr<Execution> createDepthwiseConvExecution(CPUBackend* backend, const OpRef& op,
                                                        const std::vector<RuntimeTensor*>& inputs,
                                                        const std::vector<RuntimeTensor*>& outputs) {
  if (inputs[0]->shape.size() != 4) return nullptr;  // 1-D and 3-D run the reference
  return std::make_unique<DepthwiseConvExecution>(backend, op);
}

}  // namespace osprey
