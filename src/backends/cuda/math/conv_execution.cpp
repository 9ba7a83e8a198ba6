// Conv on CUDA through cuDNN (2-D, and 1-D as 2-D of height 1), with the converter's optional
// residual input 3 added before the activation. Weights and bias arrive as the
// device mirrors of the constants, already in the backend's storage dtype and in KCRS order,
// which is what cuDNN's NCHW filter format reads. With OSPREY_CUDA_CONV_NHWC=1 and fp16/bf16
// storage, the convolution runs in NHWC on KRSC weights packed here, transposing x and y
// around it (see CudnnConvolution::prepare).
#include <cstdlib>
#include <memory>

#include "backends/cuda/math/cudnn_conv.h"
#include "backends/cuda/math/math_executions.h"
#include "backends/cuda/math/math_util.h"
#include "ops/window.h"

namespace osprey::cuda {

namespace {

using cuda_math::ConvGeometry;
using cuda_math::CudnnConvolution;

bool isFloat(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::BFloat16; }

class ConvExecution : public Execution {
 public:
  ConvExecution(CUDABackend* backend, const Node* node, FusedActivation act)
      : Execution(backend), cuda_(backend), node_(node), act_(act) {}

  // Packs the constant float weights as KRSC in the storage dtype, for the NHWC convolution.
  Status packChannelsLast(const RuntimeTensor& w) {
    const Shape& s = w.shape;
    const int64_t spatial = s.size() == 4 ? s[2] * s[3] : s[2];
    std::vector<float> krsc =
        cuda_math::filterToChannelsLast(reinterpret_cast<const float*>(w.constData), s[0], s[1], spatial);
    std::vector<uint8_t> packed =
        cuda_math::packFloats(krsc.data(), static_cast<int64_t>(krsc.size()), cuda_->storageType(&w));
    OSPREY_RETURN_IF_ERROR(cuda_->uploadStatic(packed.data(), packed.size(), &channelsLastWeights_));
    return Status::ok();
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1], &y = *outputs[0];
    Window win;
    OSPREY_RETURN_IF_ERROR(readWindow(*node_, Shape(x.shape.begin() + 2, x.shape.end()),
                                      Shape(w.shape.begin() + 2, w.shape.end()), &win));
    OSPREY_RETURN_IF_ERROR(resolveForwardWindow(false, &win));
    for (int s = 1; s < 3; ++s)
      if (win.padBegin[s] != win.padEnd[s])
        return Status::unsupported("CUDA convolution needs symmetric padding");  // checked at create, too
    ConvGeometry g;
    g.batch = x.shape[0];
    g.inChannels = x.shape[1];
    g.outChannels = w.shape[0];
    g.group = node_->getInt("group", 1);
    // Window slots 1 and 2 hold H and W; a 1-D convolution has H = 1 in slot 1.
    g.inH = win.in[1];
    g.inW = win.in[2];
    g.kernelH = win.kernel[1];
    g.kernelW = win.kernel[2];
    g.padH = win.padBegin[1];
    g.padW = win.padBegin[2];
    g.strideH = win.stride[1];
    g.strideW = win.stride[2];
    g.dilationH = win.dilation[1];
    g.dilationW = win.dilation[2];
    g.outH = win.out[1];
    g.outW = win.out[2];
    const bool hasBias = inputs.size() > 2 && inputs[2];
    const bool hasResidual = inputs.size() > 3 && inputs[3];
    const bool channelsLast = channelsLastWeights_.get() != nullptr;
    OSPREY_RETURN_IF_ERROR(
        conv_.prepare(cuda_->cudnn(), g, cuda_->storageType(&y), channelsLast, act_, hasBias, hasResidual));
    workspace_.reset();
    staging_.reset();
    if (conv_.workspaceBytes() > 0) workspace_ = cuda_->acquireScratch(conv_.workspaceBytes());
    if (conv_.stagingBytes() > 0) staging_ = cuda_->acquireScratch(conv_.stagingBytes());
    if (workspace_) cuda_->releaseScratch(workspace_);
    if (staging_) cuda_->releaseScratch(staging_);
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const void* bias = inputs.size() > 2 && inputs[2] ? cuda_->devicePtr(inputs[2]) : nullptr;
    const void* residual = inputs.size() > 3 && inputs[3] ? cuda_->devicePtr(inputs[3]) : nullptr;
    void* workspace = workspace_ ? cuda_->scratchPtr(*workspace_) : nullptr;
    void* staging = staging_ ? cuda_->scratchPtr(*staging_) : nullptr;
    const void* weights = channelsLastWeights_.get() ? channelsLastWeights_.get() : cuda_->devicePtr(inputs[1]);
    return conv_.run(cuda_->cudnn(), cuda_->stream(), cuda_->devicePtr(inputs[0]), weights, bias, residual,
                     cuda_->devicePtr(outputs[0]), workspace, staging);
  }

 private:
  CUDABackend* cuda_;
  const Node* node_;
  FusedActivation act_;
  CudnnConvolution conv_;
  std::shared_ptr<MemChunk> workspace_, staging_;
  DeviceBuffer channelsLastWeights_;
};

}  // namespace

std::unique_ptr<Execution> createConvExecution(CUDABackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || !inputs[0] || !inputs[1] || outputs.empty() || !outputs[0]) return nullptr;
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (x.shape.size() != 4 && x.shape.size() != 3) return nullptr;  // 3-D convolution stays on the CPU
  if (!isFloat(x.dtype) || w.dtype != x.dtype || (inputs.size() > 2 && inputs[2] && inputs[2]->dtype != x.dtype))
    return nullptr;
  // The residual (input 3) is added in place of y: it must be y's exact shape, dtype and layout.
  const bool hasResidual = inputs.size() > 3 && inputs[3];
  if (hasResidual && (inputs[3]->dtype != x.dtype || inputs[3]->shape != outputs[0]->shape ||
                      inputs[3]->layout != Layout::NCHW))
    return nullptr;
  // Device activations are NCHW (cuda_backend.h); NHWC would also need KRSC weights, which the
  // constant mirrors are not.
  if (x.layout != Layout::NCHW || outputs[0]->layout != Layout::NCHW) return nullptr;
  if (!backend->cudnn()) return nullptr;
  FusedActivation act;
  if (!FusedActivation::fromNode(*op.node, &act).isOk()) return nullptr;
  // cuDNN pads both sides alike: asymmetric (SAME_*) padding stays on the CPU.
  Window win;
  if (!readWindow(*op.node, Shape(x.shape.begin() + 2, x.shape.end()), Shape(w.shape.begin() + 2, w.shape.end()),
                  &win)
           .isOk() ||
      !resolveForwardWindow(false, &win).isOk())
    return nullptr;
  for (int s = 0; s < 3; ++s)
    if (win.padBegin[s] != win.padEnd[s]) return nullptr;
  auto exe = std::make_unique<ConvExecution>(backend, op.node, act);
  const char* nhwc = std::getenv("OSPREY_CUDA_CONV_NHWC");
  if (nhwc && nhwc[0] == '1' && !hasResidual && backend->lowPrecision() && w.constData && w.dtype == DataType::Float32 &&
      x.shape.size() == 4 && !exe->packChannelsLast(w).isOk())
    return nullptr;
  return exe;
}

}  // namespace osprey::cuda
