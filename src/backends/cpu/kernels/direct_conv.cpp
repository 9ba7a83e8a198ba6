// CPU Conv computed directly from the input rows for convolutions over few input channels (a
// network's stem: 3 channels of an image). im2col copies each input value once per tap (27 times
// for a 3x3 stem, 49 for ResNet's 7x7) into a matrix whose K is too short to keep the GEMM busy;
// here each output row reads its window's input rows in place, sixteen output channels at a time
// (the function table's directConvRow). Grouped convolutions of 16 or 32 output channels a group
// over up to 16 inputs (RegNet's group width 16) run here too, group by group: their GEMMs have too
// few rows to pay for the im2col copy (64 channels of 56x56 in 4 groups: 0.27 ms through im2col,
// 0.18 here). Weights are packed once at resize (STATIC).
#include <algorithm>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "core/thread_pool.h"
#include "ops/window.h"

namespace osprey {

namespace {

// Above this many input channels im2col's K is deep enough for the GEMM, which then wins; a
// group's GEMM has groupOut rows, which needs a deep K less.
constexpr int64_t kMaxInChannels = 4;
constexpr int64_t kMaxGroupInChannels = 16, kMaxGroupOutChannels = 32;
constexpr int64_t kMaxWindowRows = 64;  // input channels x kernel height: the kernel's row table
constexpr int64_t kMaxKernelW = 16;
constexpr int kRangesPerThread = 8;

class DirectConvExecution : public Execution {
 public:
  DirectConvExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
    OSPREY_RETURN_IF_ERROR(readConvWindow(node_, x.shape, w.shape, &window_));
    OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node_, &act_));
    batch_ = x.shape[0];
    inChannels_ = x.shape[1];
    outChannels_ = w.shape[0];
    group_ = node_.getInt("group", 1);
    groupIn_ = inChannels_ / group_;
    groupOut_ = outChannels_ / group_;
    args_.rowCount = groupIn_ * window_.kernel[1];
    args_.inW = window_.in[2];
    args_.kernelW = window_.kernel[2];
    args_.stride = window_.stride[2];
    args_.padW = window_.padBegin[2];
    args_.outW = window_.out[2];
    args_.outChannels = groupOut_;
    args_.outPlaneStride = window_.out[1] * window_.out[2];
    // Relu and Clip clamp in the kernel; any other activation runs on each finished row.
    rowActivation_ = !clampBounds(act_, &args_.lo, &args_.hi);
    if (!packedMem_) OSPREY_RETURN_IF_ERROR(packWeights(reinterpret_cast<const float*>(w.host())));
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const CpuFunctions& fn = cpuFunctions();
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const float* bias = optionalFloats(inputs, 2);
    const float* packed = reinterpret_cast<const float*>(packed_.host());
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const int64_t inH = window_.in[1], inW = window_.in[2], outH = window_.out[1], outW = window_.out[2];
    const int64_t kernelH = window_.kernel[1];
    // Usually a model's first op, which runs while a worker is still waking from the pause
    // before the run (a median 135 us here): in small ranges the caller keeps going meanwhile.
    const int64_t groupWeights = blocksPerGroup() * args_.rowCount * args_.kernelW * kDirectConvBlock;
    parallelFor(pool, batch_ * group_ * outH, [&](int64_t begin, int64_t end) {
      const float* rows[kMaxWindowRows];
      for (int64_t i = begin; i < end; ++i) {
        const int64_t n = i / (group_ * outH), g = i / outH % group_, oh = i % outH;
        const float* xg = x + (n * inChannels_ + g * groupIn_) * inH * inW;
        for (int64_t c = 0; c < groupIn_; ++c)
          for (int64_t kh = 0; kh < kernelH; ++kh) {
            const int64_t ih = oh * window_.stride[1] - window_.padBegin[1] + kh * window_.dilation[1];
            rows[c * kernelH + kh] = ih >= 0 && ih < inH ? xg + (c * inH + ih) * inW : nullptr;
          }
        float* yRow = y + (n * outChannels_ + g * groupOut_) * args_.outPlaneStride + oh * outW;
        fn.directConvRow(args_, rows, packed + g * groupWeights, bias ? bias + g * groupOut_ : nullptr, yRow);
        if (rowActivation_)
          for (int64_t o = 0; o < groupOut_; ++o) applyActivation(fn, act_, yRow + o * args_.outPlaneStride, outW);
      }
    }, kRangesPerThread);
    return Status::ok();
  }

 private:
  int64_t blocksPerGroup() const { return (groupOut_ + kDirectConvBlock - 1) / kDirectConvBlock; }

  // Per group: [groupOut / block][channel * kernelH + kh][kw][block]; past groupOut the memory
  // stays zero.
  Status packWeights(const float* w) {
    const int64_t blocks = group_ * blocksPerGroup();
    const int64_t taps = args_.rowCount * args_.kernelW;
    bool fresh = false;
    OSPREY_RETURN_IF_ERROR(acquirePackedWeights(backend(), blocks * taps * kDirectConvBlock, node_.name,
                                                packKey(w, nullptr, "direct-conv",
                                                        {outChannels_, taps, kDirectConvBlock, group_}),
                                                &packed_, &packedMem_, &fresh));
    if (!fresh) return Status::ok();
    float* dst = reinterpret_cast<float*>(packed_.host());
    for (int64_t o = 0; o < outChannels_; ++o) {
      const int64_t g = o / groupOut_, block = g * blocksPerGroup() + o % groupOut_ / kDirectConvBlock;
      for (int64_t t = 0; t < taps; ++t)  // w[o] is [channel][kh][kw]: tap t in this order
        dst[(block * taps + t) * kDirectConvBlock + o % groupOut_ % kDirectConvBlock] = w[o * taps + t];
    }
    return Status::ok();
  }

  const Node& node_;
  Window window_;
  FusedActivation act_;
  DirectConvRowArgs args_;
  bool rowActivation_ = false;
  int64_t batch_ = 0, inChannels_ = 0, outChannels_ = 0, group_ = 1, groupIn_ = 0, groupOut_ = 0;
  RuntimeTensor packed_;
  std::unique_ptr<MemObj> packedMem_;
};

}  // namespace

std::unique_ptr<Execution> createDirectConvExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs) {
  if (!cpuFunctions().directConvRow || !cpuKernelChoices().directConv) return nullptr;
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (x.shape.size() != 4 || w.shape.size() != 4) return nullptr;
  const int64_t group = op.node->getInt("group", 1), groupIn = w.shape[1], groupOut = w.shape[0] / group;
  const bool fewInputs = group == 1 && groupIn <= kMaxInChannels;
  const bool smallGroups = group > 1 && groupIn > 1 && groupIn <= kMaxGroupInChannels &&
                           groupOut % kDirectConvBlock == 0 && groupOut <= kMaxGroupOutChannels;
  if (!fewInputs && !smallGroups) return nullptr;
  if (inputs.size() > 3 && inputs[3]) return nullptr;  // a residual Z: the GEMM's epilogue adds it
  Window window;
  if (!readConvWindow(*op.node, x.shape, w.shape, &window)) return nullptr;
  if (window.dilation[2] != 1 || (window.stride[2] != 1 && window.stride[2] != 2)) return nullptr;
  if (window.kernel[2] > kMaxKernelW || groupIn * window.kernel[1] > kMaxWindowRows) return nullptr;
  if (window.outSize() == 0) return nullptr;
  return std::make_unique<DirectConvExecution>(backend, op);
}

}  // namespace osprey
