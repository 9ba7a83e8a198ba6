// Conv on CUDA through cuDNN (2-D, and 1-D as 2-D of height 1), with the converter's optional
// residual input 3 added before the activation. Weights and bias arrive as the
// device mirrors of the constants, already in the backend's storage dtype and in KCRS order,
// which is what cuDNN's NCHW filter format reads. When the pipeline keeps x and y in NHWC
// (fp16 / bf16, CUDABackend::activationLayout), the convolution runs in NHWC on KRSC weights
// packed here from the model's constant. An NHWC fp16 input with a channel count off the
// tensor cores' grain (an image's 3) is padded with zero channels into scratch first, to 4:
// ResNet-50's first layer at batch 32 ran in 0.51 ms so, 0.77 ms padded to 8 and 0.50 ms
// unpadded on the H200, and the whole model was fastest with 4.
//
// fp32 convolutions (group 1, constant weights) run on TF32 tensor cores with split operands:
// x = xh + xl and w = wh + wl with xh, wh rounded to TF32
// and xl, wl the exact remainders, and one convolution over three times the input channels,
// [xh | xl | xh] against [wh | wh | wl], sums xh*wh + xl*wh + xh*wl in float. Only xl*wl
// (below 2^-22 of the product) is dropped, where TF32 alone loses 2^-11 of every operand: on
// ResNet-50 that alone misses the fp32 bound of 1e-3 by an order of magnitude.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/kernels/cuda_launch.h"

#include "backends/cuda/math/cudnn_conv.h"
#include "backends/cuda/math/math_executions.h"
#include "backends/cuda/math/math_util.h"
#include "core/dtype.h"
#include "ops/window.h"

namespace osprey::cuda {

namespace {

using cuda_math::ConvGeometry;
using cuda_math::CudnnConvolution;

// Channel multiple a thin NHWC fp16 input is padded to.
constexpr int64_t kChannelAlignment = 4;

bool isFloat(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::BFloat16; }

float roundToTf32(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits = (bits + 0x1000u) & 0xffffe000u;
  std::memcpy(&v, &bits, 4);
  return v;
}

// KCRS filter over 3C input channels: [wh | wh | wl] per output channel.
std::vector<float> splitFilterTf32(const float* kcrs, int64_t k, int64_t perOutput) {
  std::vector<float> out(static_cast<size_t>(k * perOutput * 3));
  for (int64_t o = 0; o < k; ++o) {
    const float* w = kcrs + o * perOutput;
    float* dst = out.data() + o * perOutput * 3;
    for (int64_t i = 0; i < perOutput; ++i) {
      const float hi = roundToTf32(w[i]);
      dst[i] = hi;
      dst[perOutput + i] = hi;
      dst[2 * perOutput + i] = w[i] - hi;
    }
  }
  return out;
}

class ConvExecution : public Execution {
 public:
  // `hostWeights`: the model's constant float filter (KCRS), null when the filter is computed.
  ConvExecution(CUDABackend* backend, const Node* node, FusedActivation act, const float* hostWeights)
      : Execution(backend), cuda_(backend), node_(node), act_(act), hostWeights_(hostWeights) {}

  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || (layout == Layout::NHWC && hostWeights_ && inputs[0]->shape.size() == 4);
  }

  // Packs the constant float weights as KRSC in the storage dtype, for the NHWC convolution.
  Status packChannelsLast(const RuntimeTensor& w, int64_t paddedChannels) {
    const Shape& s = w.shape;
    std::vector<float> krsc = cuda_math::filterToChannelsLast(hostWeights_, s[0], s[1], s[2] * s[3], paddedChannels);
    std::vector<uint8_t> packed =
        cuda_math::packFloats(krsc.data(), static_cast<int64_t>(krsc.size()), cuda_->storageType(&w));
    return cuda_->uploadStatic(packed.data(), packed.size(), &channelsLastWeights_);
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1], &y = *outputs[0];
    Window win;
    OSPREY_RETURN_IF_ERROR(readConvWindow(*node_, x.shape, w.shape, &win));
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
    const bool channelsLast = y.layout == Layout::NHWC;
    if (x.layout != y.layout || (hasResidual && inputs[3]->layout != y.layout))
      return Status::internal("CUDA convolution with tensors in different layouts");
    realChannels_ = g.inChannels;
    const size_t element = dataTypeSize(cuda_->storageType(&x));
    const int64_t align = kChannelAlignment;
    if (channelsLast && g.group == 1 && element == 2 && g.inChannels % align != 0)
      g.inChannels = (g.inChannels + align - 1) / align * align;
    if (channelsLast && !channelsLastWeights_.get()) OSPREY_RETURN_IF_ERROR(packChannelsLast(w, g.inChannels / g.group));
    channelsLast_ = channelsLast;
    // At Low precision the fp32 convolutions are the stem's, run at the large batches people
    // run fp16 at, where the split's tripled input costs more than FMA (ResNet-50 batch 32:
    // 7.38 ms with split operands against 6.37 ms with FMA).
    // At High precision plain FMA: the split drops the xl*wl term.
    split_ = !channelsLast && g.group == 1 && hostWeights_ && cuda_->storageType(&y) == DataType::Float32 &&
             !cuda_->lowPrecision() && cuda_->config().precision != BackendConfig::Precision::High;
    if (split_ && !splitWeights_.get()) {
      std::vector<float> w3 = splitFilterTf32(hostWeights_, w.shape[0], shapeElements(w.shape) / w.shape[0]);
      OSPREY_RETURN_IF_ERROR(cuda_->uploadStatic(w3.data(), w3.size() * sizeof(float), &splitWeights_));
    }
    geometry_ = g;
    ConvGeometry prepared = g;
    if (split_) prepared.inChannels *= 3;
    OSPREY_RETURN_IF_ERROR(conv_.prepare(cuda_->cudnn(), prepared, cuda_->storageType(&y), channelsLast, act_, hasBias,
                                         hasResidual, split_, cuda_->tuningRequest()));
    workspace_.reset();
    padded_.reset();
    if (conv_.workspaceBytes() > 0) workspace_ = cuda_->acquireScratch(conv_.workspaceBytes());
    if (g.inChannels != realChannels_)
      padded_ = cuda_->acquireScratch(static_cast<size_t>(g.batch * g.inH * g.inW * g.inChannels) * element);
    if (split_) padded_ = cuda_->acquireScratch(static_cast<size_t>(g.batch * g.inH * g.inW * g.inChannels * 3) * 4);
    if (workspace_) cuda_->releaseScratch(workspace_);
    if (padded_) cuda_->releaseScratch(padded_);
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const void* bias = inputs.size() > 2 && inputs[2] ? cuda_->devicePtr(inputs[2]) : nullptr;
    const void* residual = inputs.size() > 3 && inputs[3] ? cuda_->devicePtr(inputs[3]) : nullptr;
    void* workspace = workspace_ ? cuda_->scratchPtr(*workspace_) : nullptr;
    const void* weights = channelsLast_ ? channelsLastWeights_.get()
                          : split_      ? splitWeights_.get()
                                        : cuda_->devicePtr(inputs[1]);
    const void* x = cuda_->devicePtr(inputs[0]);
    if (split_) {
      float* to = static_cast<float*>(cuda_->scratchPtr(*padded_));
      const ConvGeometry& g = geometry_;
      OSPREY_CUDA_RETURN_IF_ERROR(cuda::splitTf32(static_cast<const float*>(x), to, g.batch,
                                                  g.inChannels * g.inH * g.inW, cuda_->stream()),
                                  "TF32 operand split");
      x = to;
    } else if (padded_) {
      void* to = cuda_->scratchPtr(*padded_);
      const ConvGeometry& g = geometry_;
      OSPREY_CUDA_RETURN_IF_ERROR(cuda::padChannels(x, to, g.batch * g.inH * g.inW, realChannels_, g.inChannels,
                                                    static_cast<int>(dataTypeSize(cuda_->storageType(inputs[0]))),
                                                    cuda_->stream()),
                                  "channel padding");
      x = to;
    }
    return conv_.run(cuda_->cudnn(), cuda_->stream(), x, weights, bias, residual, cuda_->devicePtr(outputs[0]), workspace);
  }

 private:
  CUDABackend* cuda_;
  const Node* node_;
  FusedActivation act_;
  const float* hostWeights_;
  bool channelsLast_ = false;
  bool split_ = false;  // fp32 on TF32 tensor cores with split operands (see the top of this file)
  int64_t realChannels_ = 0;  // x's channels; geometry_.inChannels may be padded beyond them
  ConvGeometry geometry_;
  CudnnConvolution conv_;
  std::shared_ptr<MemChunk> workspace_, padded_;
  DeviceBuffer channelsLastWeights_, splitWeights_;
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
  // The residual (input 3) is added in place of y: it must be y's exact shape and dtype.
  const bool hasResidual = inputs.size() > 3 && inputs[3];
  if (hasResidual && (inputs[3]->dtype != x.dtype || inputs[3]->shape != outputs[0]->shape)) return nullptr;
  // The pipeline hands over NCHW tensors; NHWC is granted later through supportsLayout.
  if (x.layout != Layout::NCHW || outputs[0]->layout != Layout::NCHW) return nullptr;
  if (!backend->cudnn()) return nullptr;
  FusedActivation act;
  if (!FusedActivation::fromNode(*op.node, &act).isOk()) return nullptr;
  // cuDNN pads both sides alike: asymmetric (SAME_*) padding stays on the CPU.
  Window win;
  if (!readConvWindow(*op.node, x.shape, w.shape, &win).isOk()) return nullptr;
  for (int s = 0; s < 3; ++s)
    if (win.padBegin[s] != win.padEnd[s]) return nullptr;
  const float* hostWeights =
      w.constData && w.dtype == DataType::Float32 ? reinterpret_cast<const float*>(w.constData) : nullptr;
  return std::make_unique<ConvExecution>(backend, op.node, act, hostWeights);
}

}  // namespace osprey::cuda
