// A convolution along H alone over maps one column wide (CRNN's k x 1 kernels over W = 1, 1-D
// convolutions exported as 2-D) runs as the same convolution along W over maps one row high: the
// bytes of x, w and y are the same, and the tap and im2col kernels take the output positions of a
// row as the GEMM's rows, so with W = 1 each tile held one row (a 3 x 1 kernel over 256 channels
// of 64 x 1 ran at a fifth of the micro-kernel's pace).
#include <utility>

#include "backends/cpu/kernels/cpu_kernels.h"

namespace osprey {

namespace {

// [a, b] -> [b, a] for a two-axis attribute; pads [hb, wb, he, we] -> [wb, hb, we, he].
void swapAxes(Node* node) {
  for (const char* name : {"kernel_shape", "strides", "dilations"}) {
    std::vector<int64_t> v = node->getInts(name);
    if (v.size() == 2) node->setInts(name, {v[1], v[0]});
  }
  std::vector<int64_t> pads = node->getInts("pads");
  if (pads.size() == 4) node->setInts("pads", {pads[1], pads[0], pads[3], pads[2]});
}

// t's view with its last two axes swapped (one of them has extent 1: same bytes).
RuntimeTensor swapped(const RuntimeTensor& t) {
  RuntimeTensor v = t;
  std::swap(v.shape[2], v.shape[3]);
  return v;
}

class ColumnConvExecution : public Execution {
 public:
  ColumnConvExecution(CPUBackend* backend, const Node& node) : Execution(backend), node_(node) { swapAxes(&node_); }

  Status create(const OpRef& op, const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
    original_ = op;
    op_ = op;
    op_.node = &node_;
    refreshViews(inputs, outputs);
    inner_ = createConvExecution(static_cast<CPUBackend*>(backend()), op_, inPtrs_, outPtrs_);
    return inner_ ? Status::ok() : Status::unsupported("Conv '" + node_.name + "' along W has no CPU kernel");
  }

  // Shapes that are no longer one column wide (a dynamic axis) run the model's own convolution.
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    columns_ = inputs[0]->shape.size() == 4 && inputs[0]->shape[3] == 1 && outputs[0]->shape.size() == 4;
    if (!columns_) {
      if (!plain_) plain_ = createConvExecution(static_cast<CPUBackend*>(backend()), original_, inputs, outputs);
      if (!plain_) return Status::unsupported("Conv '" + node_.name + "' has no CPU kernel for x " +
                                              shapeToString(inputs[0]->shape));
      return plain_->onResize(inputs, outputs);
    }
    refreshViews(inputs, outputs);
    return inner_->onResize(inPtrs_, outPtrs_);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    return columns_ ? inner_->onExecute(inPtrs_, outPtrs_) : plain_->onExecute(inputs, outputs);
  }

 private:
  void refreshViews(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
    ins_.clear(), outs_.clear(), inPtrs_.clear(), outPtrs_.clear();
    ins_.reserve(inputs.size()), outs_.reserve(outputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      // x, w and the residual are 4-D; the bias is not.
      const bool fourD = inputs[i] && inputs[i]->shape.size() == 4;
      ins_.push_back(inputs[i] ? (fourD ? swapped(*inputs[i]) : *inputs[i]) : RuntimeTensor());
      inPtrs_.push_back(inputs[i] ? &ins_.back() : nullptr);
    }
    for (RuntimeTensor* t : outputs) {
      outs_.push_back(swapped(*t));
      outPtrs_.push_back(&outs_.back());
    }
  }

  Node node_;
  OpRef op_, original_;
  bool columns_ = true;
  std::unique_ptr<Execution> inner_, plain_;
  std::vector<RuntimeTensor> ins_, outs_;
  std::vector<RuntimeTensor*> inPtrs_, outPtrs_;
};

}  // namespace

std::unique_ptr<Execution> createColumnConvExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs) {
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (x.shape.size() != 4 || x.shape[3] != 1 || x.shape[2] < 2 || w.shape[2] < 2 || w.shape[3] != 1) return nullptr;
  const std::vector<int64_t> pads = op.node->getInts("pads");
  if (pads.size() == 4 && (pads[1] != 0 || pads[3] != 0)) return nullptr;
  const std::string autoPad = op.node->getString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID") return nullptr;
  if (outputs.size() != 1 || outputs[0]->shape.size() != 4 || outputs[0]->shape[3] != 1) return nullptr;
  auto column = std::make_unique<ColumnConvExecution>(backend, *op.node);
  if (!column->create(op, inputs, outputs).isOk()) return nullptr;
  return column;
}

}  // namespace osprey
