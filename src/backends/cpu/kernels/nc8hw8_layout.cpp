// How CPU executions take part in the NC8HW8 layout: the choice between an op's NCHW execution
// and its native NC8HW8 one, and for some ops without a native one, conversion around the NCHW
// execution. The pipeline keeps one layout per connected group of tensors, so a single refusing
// execution keeps a whole CNN in NCHW. Converting around an op costs two passes over its
// operands: worth it for pooled vectors (the Flatten after GlobalAveragePool in every
// classifier), not for whole feature maps (SqueezeNet's Concat, ShuffleNet's channel shuffle
// ran 1.5x and 1.9x slower that way than in NCHW), so those ops refuse and their group keeps NCHW.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/layout_choice.h"
#include "backends/cpu/kernels/nc8hw8.h"
#include "core/layout.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

bool isPacked(const RuntimeTensor* t) { return t && t->layout == Layout::NC8HW8; }

bool isPackable(const RuntimeTensor* t) {
  return t && !t->constData && t->dtype == DataType::Float32 && t->shape.size() == 4;
}

bool touchesPacked(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
  for (const auto* list : {&inputs, &outputs})
    for (const RuntimeTensor* t : *list)
      if (isPackable(t)) return true;
  return false;
}

// Whether converting around the op is cheap: every tensor it would convert is a pooled vector.
bool onlyPooledVectors(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
  for (const auto* list : {&inputs, &outputs})
    for (const RuntimeTensor* t : *list)
      if (isPackable(t) && t->shape[2] * t->shape[3] != 1) return false;
  return true;
}

// An op with no packed kernel: its packed operands are unpacked into NCHW scratch, the NCHW
// execution runs on those, and its packed results are packed back.
class ConvertingExecution : public Execution {
 public:
  ConvertingExecution(CPUBackend* backend, std::unique_ptr<Execution> inner) : Execution(backend), inner_(std::move(inner)) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    return layout == Layout::NC8HW8 || inner_->supportsLayout(layout, inputs, outputs);
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ins_ = inputs, outs_ = outputs;
    shadows_.clear();
    shadows_.reserve(inputs.size() + outputs.size());  // stable addresses for ins_ / outs_
    std::vector<std::unique_ptr<MemObj>> scratch;      // released on return: live during this op only
    for (auto* list : {&ins_, &outs_}) {
      for (RuntimeTensor*& t : *list) {
        if (!isPacked(t)) continue;
        if (t->dtype != DataType::Float32) return Status::internal("NC8HW8 tensor of a type other than float32: " + t->name);
        RuntimeTensor shadow;
        shadow.name = t->name;
        shadow.dtype = t->dtype;
        shadow.shape = t->shape;
        shadows_.push_back({t, std::move(shadow), list == &ins_});
        auto mem = backend()->onAcquire(&shadows_.back().nchw, StorageType::DYNAMIC);
        if (!mem) return Status::outOfMemory("cannot allocate NCHW scratch for '" + t->name + "'");
        scratch.push_back(std::move(mem));
        t = &shadows_.back().nchw;
      }
    }
    return inner_->onResize(ins_, outs_);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    (void)inputs, (void)outputs;
    for (Shadow& s : shadows_)
      if (s.isInput)
        unpackNc8hw8(reinterpret_cast<const float*>(s.packed->host()), s.packed->shape[0], s.packed->shape[1],
                     s.packed->shape[2] * s.packed->shape[3], reinterpret_cast<float*>(s.nchw.host()));
    OSPREY_RETURN_IF_ERROR(inner_->onExecute(ins_, outs_));
    for (Shadow& s : shadows_)
      if (!s.isInput)
        packNc8hw8(reinterpret_cast<const float*>(s.nchw.host()), s.packed->shape[0], s.packed->shape[1],
                   s.packed->shape[2] * s.packed->shape[3], reinterpret_cast<float*>(s.packed->host()));
    return Status::ok();
  }

 private:
  struct Shadow {
    RuntimeTensor* packed;
    RuntimeTensor nchw;
    bool isInput;
  };
  std::unique_ptr<Execution> inner_;
  std::vector<Shadow> shadows_;
  std::vector<RuntimeTensor*> ins_, outs_;
};

}  // namespace

bool cpuPackedLayoutWanted(const BackendConfig& config) { return config.cpu.layout == CpuOptions::Layout::NC8HW8; }

std::unique_ptr<Execution> wrapForPackedLayout(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs,
                                               std::unique_ptr<Execution> nchw) {
  if (!nchw || !touchesPacked(inputs, outputs)) return nchw;
  std::unique_ptr<Execution> packed;
  if (op.type == OpType::Conv) packed = createNc8hw8ConvExecution(backend, op, inputs, outputs);
  if (op.type == OpType::MaxPool || op.type == OpType::AveragePool || op.type == OpType::GlobalAveragePool)
    packed = createNc8hw8PoolExecution(backend, op, inputs, outputs);
  if (packed) return std::make_unique<LayoutChoiceExecution>(backend, Layout::NC8HW8, std::move(nchw), std::move(packed));
  if (auto elementwise = createNc8hw8ElementwiseExecution(backend, op, inputs, outputs, &nchw)) return elementwise;
  if (onlyPooledVectors(inputs, outputs)) return std::make_unique<ConvertingExecution>(backend, std::move(nchw));
  return nchw;  // refuses NC8HW8: its group stays NCHW
}

void packNc8hw8(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst) {
  const int64_t blocks = (c + 7) / 8;
  for (int64_t b = 0; b < n * blocks; ++b) {
    const int64_t batch = b / blocks, c0 = (b % blocks) * 8;
    cpuFunctions().nc8Interleave(src + (batch * c + c0) * spatial, spatial, std::min<int64_t>(8, c - c0), spatial, 1,
                                 spatial, dst + b * spatial * 8);
  }
}

void unpackNc8hw8(const float* src, int64_t n, int64_t c, int64_t spatial, float* dst) {
  const int64_t blocks = (c + 7) / 8;
  for (int64_t b = 0; b < n * blocks; ++b) {
    const int64_t batch = b / blocks, c0 = (b % blocks) * 8;
    cpuFunctions().nc8Deinterleave(src + b * spatial * 8, spatial, std::min<int64_t>(8, c - c0),
                                   dst + (batch * c + c0) * spatial, spatial);
  }
}

void packLaneDepthwiseWeights(const float* w, const float* bias, int64_t channels, int64_t taps, int64_t lanes,
                              float* dst) {
  const int64_t blocks = (channels + lanes - 1) / lanes;
  std::fill(dst, dst + blocks * (taps + 1) * lanes, 0.f);
  for (int64_t m = 0; m < channels; ++m)
    for (int64_t t = 0; t < taps; ++t) dst[((m / lanes) * taps + t) * lanes + m % lanes] = w[m * taps + t];
  if (bias) std::copy_n(bias, channels, dst + blocks * taps * lanes);
}

void zeroNc8hw8Padding(float* data, int64_t n, int64_t c, int64_t spatial) {
  const int64_t blocks = (c + 7) / 8, real = c - (blocks - 1) * 8;
  if (real == 8) return;
  for (int64_t batch = 0; batch < n; ++batch) {
    float* last = data + ((batch * blocks) + blocks - 1) * spatial * 8;
    for (int64_t s = 0; s < spatial; ++s) std::fill(last + s * 8 + real, last + s * 8 + 8, 0.f);
  }
}

}  // namespace osprey
