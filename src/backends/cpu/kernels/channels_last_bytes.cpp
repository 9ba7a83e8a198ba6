// Conversion around executions without a channels-last kernel (channels_last_bytes.h).
#include "backends/cpu/kernels/channels_last_bytes.h"

#include "core/layout.h"

namespace osprey {

namespace {

bool isChannelsLastCandidate(const RuntimeTensor* t) {
  return t && !t->constData && (t->dtype == DataType::Int8 || t->dtype == DataType::UInt8) && t->shape.size() == 4 &&
         layoutMatters(t->shape, Layout::NHWC);
}

// The execution's NHWC tensors are copied into NCHW scratch before it runs (inputs) and back
// after (outputs); it sees only the scratch.
class ConvertingAroundExecution : public Execution {
 public:
  ConvertingAroundExecution(Backend* backend, std::unique_ptr<Execution> inner)
      : Execution(backend), inner_(std::move(inner)) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    return layout == Layout::NHWC || inner_->supportsLayout(layout, inputs, outputs);
  }
  // Where the execution runs in NHWC itself (a question that may need the constants, which the
  // pipeline has by now), it runs unconverted and keeps its own say.
  bool favorsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                    const std::vector<RuntimeTensor*>& outputs) const override {
    for (const auto* list : {&inputs, &outputs})
      for (const RuntimeTensor* t : *list)
        if (t && !t->constData && layoutMatters(t->shape, layout) && !isChannelsLastCandidate(t)) return false;
    return inner_->supportsLayout(layout, inputs, outputs) && inner_->favorsLayout(layout, inputs, outputs);
  }
  bool isReference() const override { return inner_->isReference(); }
  // Its other tensors (a Cast's floats, a Shape's int64s) stay NCHW: only the bytes convert.
  bool bridgesLayouts() const override { return true; }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ins_ = inputs, outs_ = outputs;
    shadows_.clear();
    bool anyChannelsLast = false, allChannelsLast = true;
    for (const auto* list : {&inputs, &outputs})
      for (const RuntimeTensor* t : *list) {
        if (!t || !layoutMatters(t->shape, Layout::NHWC)) continue;
        anyChannelsLast |= t->layout == Layout::NHWC;
        allChannelsLast &= t->layout == Layout::NHWC;
      }
    if (!anyChannelsLast || (allChannelsLast && inner_->supportsLayout(Layout::NHWC, inputs, outputs)))
      return inner_->onResize(ins_, outs_);
    shadows_.reserve(inputs.size() + outputs.size());  // stable addresses for ins_ / outs_
    std::vector<std::unique_ptr<MemObj>> scratch;      // released on return: live during this op only
    for (auto* list : {&ins_, &outs_}) {
      for (RuntimeTensor*& t : *list) {
        if (!t || t->layout != Layout::NHWC) continue;
        RuntimeTensor shadow;
        shadow.name = t->name;
        shadow.dtype = t->dtype;
        shadow.shape = t->shape;
        shadows_.push_back({t, std::move(shadow), list == &ins_});
        auto memory = backend()->onAcquire(&shadows_.back().nchw, StorageType::DYNAMIC);
        if (!memory) return Status::outOfMemory("cannot allocate NCHW scratch for '" + t->name + "'");
        scratch.push_back(std::move(memory));
        t = &shadows_.back().nchw;
      }
    }
    return inner_->onResize(ins_, outs_);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    (void)inputs, (void)outputs;
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    for (Shadow& s : shadows_)
      if (s.isInput)
        OSPREY_RETURN_IF_ERROR(convertLayout(s.stored->host(), Layout::NHWC, s.nchw.host(), Layout::NCHW,
                                             s.stored->shape, dataTypeSize(s.stored->dtype), pool));
    OSPREY_RETURN_IF_ERROR(inner_->onExecute(ins_, outs_));
    for (Shadow& s : shadows_)
      if (!s.isInput)
        OSPREY_RETURN_IF_ERROR(convertLayout(s.nchw.host(), Layout::NCHW, s.stored->host(), Layout::NHWC,
                                             s.stored->shape, dataTypeSize(s.stored->dtype), pool));
    return Status::ok();
  }

 private:
  struct Shadow {
    RuntimeTensor* stored;
    RuntimeTensor nchw;
    bool isInput;
  };
  std::unique_ptr<Execution> inner_;
  std::vector<Shadow> shadows_;
  std::vector<RuntimeTensor*> ins_, outs_;
};

}  // namespace

std::unique_ptr<Execution> wrapForChannelsLastBytes(CPUBackend* backend, const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs,
                                                    std::unique_ptr<Execution> execution) {
  bool touches = false;
  for (const auto* list : {&inputs, &outputs})
    for (const RuntimeTensor* t : *list) touches |= isChannelsLastCandidate(t);
  if (!touches || execution->bridgesLayouts()) return execution;  // a bridge converts its bytes itself
  return std::make_unique<ConvertingAroundExecution>(backend, std::move(execution));
}

}  // namespace osprey
