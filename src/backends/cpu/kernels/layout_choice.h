// An op with one execution per layout its tensors may be stored in: the NCHW one, and one for
// the layout the pipeline may choose instead (NC8HW8 float activations, NHWC bytes). The choice
// is made per tensor group before onResize (SessionImpl::chooseLayouts), which then sees it.
#pragma once
#include <memory>
#include <vector>

#include "core/backend.h"

namespace osprey {

class LayoutChoiceExecution : public Execution {
 public:
  LayoutChoiceExecution(Backend* backend, Layout other, std::unique_ptr<Execution> nchw,
                        std::unique_ptr<Execution> otherExecution)
      : Execution(backend), other_(other), nchw_(std::move(nchw)), otherExecution_(std::move(otherExecution)) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    return layout == other_ ? otherExecution_->supportsLayout(layout, inputs, outputs)
                            : nchw_->supportsLayout(layout, inputs, outputs);
  }
  bool bridgesLayouts() const override { return otherExecution_->bridgesLayouts(); }
  bool joinsLayoutGroups(const std::vector<RuntimeTensor*>& inputs,
                         const std::vector<RuntimeTensor*>& outputs) const override {
    return otherExecution_->joinsLayoutGroups(inputs, outputs);
  }
  bool favorsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                    const std::vector<RuntimeTensor*>& outputs) const override {
    return layout == other_ ? otherExecution_->favorsLayout(layout, inputs, outputs)
                            : nchw_->favorsLayout(layout, inputs, outputs);
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    active_ = nchw_.get();
    for (const auto* list : {&inputs, &outputs})
      for (const RuntimeTensor* t : *list)
        if (t && t->layout == other_) active_ = otherExecution_.get();
    return active_->onResize(inputs, outputs);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    return active_->onExecute(inputs, outputs);
  }

 private:
  Layout other_;
  std::unique_ptr<Execution> nchw_, otherExecution_;
  Execution* active_ = nullptr;
};

}  // namespace osprey
