// Conversion around executions without a channels-last kernel (channels_last_bytes.h).
#include "backends/cpu/kernels/channels_last_bytes.h"

#include "core/layout.h"

namespace osprey {

namespace {

bool isChannelsLastCandidate(const RuntimeTensor* t) {
  return t && !t->constData && (t->dtype == DataType::Int8 || t->dtype == DataType::UInt8) && t->shape.size() == 4 &&
         layoutMatters(t->shape, Layout::NHWC);
}

// Where the execution runs on channels-last bytes itself (a question that may need the
// constants, which the pipeline has when it asks), it takes part in the layout groups as it is.
// Otherwise it joins none: each of its tensors takes the layout its other executions give it,
// and the NHWC ones are copied into NCHW scratch before it runs (inputs) and back after
// (outputs), so that it sees only the scratch.
class ConvertingAroundExecution : public Execution {
 public:
  ConvertingAroundExecution(Backend* backend, const OpRef& op, std::unique_ptr<Execution> inner)
      : Execution(backend), inner_(std::move(inner)), transposePerm_(transposePermOf(op)) {}
  bool joinsLayoutGroups(const std::vector<RuntimeTensor*>& inputs,
                         const std::vector<RuntimeTensor*>& outputs) const override {
    return inner_->supportsLayout(Layout::NHWC, inputs, outputs) || inner_->bridgesLayouts();
  }
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    return inner_->supportsLayout(layout, inputs, outputs);
  }
  bool favorsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                    const std::vector<RuntimeTensor*>& outputs) const override {
    return inner_->favorsLayout(layout, inputs, outputs);
  }
  bool bridgesLayouts() const override { return inner_->bridgesLayouts(); }
  bool isReference() const override { return inner_->isReference(); }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ins_ = inputs, outs_ = outputs;
    shadows_.clear();
    // A member of the groups got the layouts it agreed to.
    if (joinsLayoutGroups(inputs, outputs)) return inner_->onResize(ins_, outs_);
    copiesBytes_ = movesChannelsOnly(inputs, outputs);
    if (copiesBytes_) return Status::ok();
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
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    if (copiesBytes_)
      return convertLayout(inputs[0]->host(), Layout::NCHW, outputs[0]->host(), Layout::NCHW, {inputs[0]->elements()},
                           dataTypeSize(inputs[0]->dtype), pool);
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
  static std::vector<int64_t> transposePermOf(const OpRef& op) {
    if (!op.node || op.node->type != OpType::Transpose) return {};
    return op.node->getInts("perm");
  }

  // A Transpose between a TFLite model's NHWC bytes and their NCHW view, where the view is stored
  // channels-last (or the source was): the stored bytes are the same, so it is a copy.
  bool movesChannelsOnly(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) const {
    if (inputs.size() != 1 || outputs.size() != 1 || !inputs[0] || !outputs[0]) return false;
    const RuntimeTensor &x = *inputs[0], &y = *outputs[0];
    if (x.dtype != y.dtype || x.shape.size() != 4) return false;
    const bool toChannelsLast = transposePerm_ == std::vector<int64_t>{0, 3, 1, 2} && x.layout == Layout::NCHW &&
                                y.layout == Layout::NHWC;
    const bool fromChannelsLast = transposePerm_ == std::vector<int64_t>{0, 2, 3, 1} && x.layout == Layout::NHWC &&
                                  y.layout == Layout::NCHW;
    return toChannelsLast || fromChannelsLast;
  }

  struct Shadow {
    RuntimeTensor* stored;
    RuntimeTensor nchw;
    bool isInput;
  };
  std::unique_ptr<Execution> inner_;
  std::vector<int64_t> transposePerm_;
  bool copiesBytes_ = false;
  std::vector<Shadow> shadows_;
  std::vector<RuntimeTensor*> ins_, outs_;
};

}  // namespace

std::unique_ptr<Execution> wrapForChannelsLastBytes(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs,
                                                    std::unique_ptr<Execution> execution) {
  bool touches = false;
  for (const auto* list : {&inputs, &outputs})
    for (const RuntimeTensor* t : *list) touches |= isChannelsLastCandidate(t);
  if (!touches) return execution;
  return std::make_unique<ConvertingAroundExecution>(backend, op, std::move(execution));
}

}  // namespace osprey
