// Convolutions the CPU runs through a view of the same bytes with another shape, where its
// kernels tile the view better:
// - a k x 1 convolution over maps one column wide (CRNN's k x 1 kernels over W = 1) as 1 x k over
//   maps one row high: the tap and im2col kernels take the output positions of a row as the
//   GEMM's rows, so with W = 1 each tile held one row (a 3 x 1 kernel over 256 channels of 64 x 1
//   ran at a fifth of the micro-kernel's pace);
// - a 1-D convolution as 2-D over maps one row high, which the implicit-GEMM tap kernel takes
//   (256 channels of 400, kernel 3: 0.377 -> 0.340 ms without its im2col copy).
#include <utility>

#include "backends/cpu/kernels/cpu_kernels.h"

namespace osprey {

namespace {

enum class ConvView {
  SwapHW,  // [N, C, H, 1] as [N, C, 1, H]
  AddH,    // [N, C, L] as [N, C, 1, L]
};

// The node's window attributes for the view.
Node viewNode(const Node& node, ConvView view) {
  Node viewed = node;
  for (const char* name : {"kernel_shape", "strides", "dilations"}) {
    const std::vector<int64_t> v = viewed.getInts(name);
    if (view == ConvView::SwapHW && v.size() == 2) viewed.setInts(name, {v[1], v[0]});
    if (view == ConvView::AddH && v.size() == 1) viewed.setInts(name, {1, v[0]});
  }
  const std::vector<int64_t> pads = viewed.getInts("pads");
  if (view == ConvView::SwapHW && pads.size() == 4) viewed.setInts("pads", {pads[1], pads[0], pads[3], pads[2]});
  if (view == ConvView::AddH && pads.size() == 2) viewed.setInts("pads", {0, pads[0], 0, pads[1]});
  return viewed;
}

// Whether t (x, w, y or the residual) is reshaped by the view; the bias is not.
bool viewed(const RuntimeTensor& t, ConvView view) { return t.shape.size() == (view == ConvView::SwapHW ? 4u : 3u); }

RuntimeTensor viewOf(const RuntimeTensor& t, ConvView view) {
  RuntimeTensor v = t;
  if (view == ConvView::SwapHW) std::swap(v.shape[2], v.shape[3]);
  else v.shape.insert(v.shape.begin() + 2, 1);
  return v;
}

class ViewedConvExecution : public Execution {
 public:
  ViewedConvExecution(CPUBackend* backend, const Node& node, ConvView view)
      : Execution(backend), view_(view), node_(viewNode(node, view)) {}

  Status create(const OpRef& op, const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
    original_ = op;
    op_ = op;
    op_.node = &node_;
    refreshViews(inputs, outputs);
    inner_ = createConvExecution(static_cast<CPUBackend*>(backend()), op_, inPtrs_, outPtrs_);
    return inner_ ? Status::ok() : Status::unsupported("Conv '" + node_.name + "' has no CPU kernel for its view");
  }

  // Shapes that are no longer one column wide (a dynamic axis) run the model's own convolution.
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    viewing_ = view_ == ConvView::AddH || (inputs[0]->shape.size() == 4 && inputs[0]->shape[3] == 1 &&
                                           outputs[0]->shape.size() == 4);
    if (!viewing_) {
      if (!plain_) plain_ = createConvExecution(static_cast<CPUBackend*>(backend()), original_, inputs, outputs);
      if (!plain_) return Status::unsupported("Conv '" + node_.name + "' has no CPU kernel for x " +
                                              shapeToString(inputs[0]->shape));
      return plain_->onResize(inputs, outputs);
    }
    refreshViews(inputs, outputs);
    return inner_->onResize(inPtrs_, outPtrs_);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    return viewing_ ? inner_->onExecute(inPtrs_, outPtrs_) : plain_->onExecute(inputs, outputs);
  }

 private:
  void refreshViews(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
    ins_.clear(), outs_.clear(), inPtrs_.clear(), outPtrs_.clear();
    ins_.reserve(inputs.size()), outs_.reserve(outputs.size());
    for (RuntimeTensor* t : inputs) {
      ins_.push_back(t ? (viewed(*t, view_) ? viewOf(*t, view_) : *t) : RuntimeTensor());
      inPtrs_.push_back(t ? &ins_.back() : nullptr);
    }
    for (RuntimeTensor* t : outputs) {
      outs_.push_back(viewOf(*t, view_));
      outPtrs_.push_back(&outs_.back());
    }
  }

  ConvView view_;
  Node node_;
  OpRef op_, original_;
  bool viewing_ = true;
  std::unique_ptr<Execution> inner_, plain_;
  std::vector<RuntimeTensor> ins_, outs_;
  std::vector<RuntimeTensor*> inPtrs_, outPtrs_;
};

bool columnConv(const RuntimeTensor& x, const RuntimeTensor& w, const RuntimeTensor& y, const Node& node) {
  if (x.shape.size() != 4 || x.shape[3] != 1 || x.shape[2] < 2 || w.shape[2] < 2 || w.shape[3] != 1) return false;
  const std::vector<int64_t> pads = node.getInts("pads");
  if (pads.size() == 4 && (pads[1] != 0 || pads[3] != 0)) return false;
  const std::string autoPad = node.getString("auto_pad", "NOTSET");
  return (autoPad == "NOTSET" || autoPad == "VALID") && y.shape.size() == 4 && y.shape[3] == 1;
}

}  // namespace

std::unique_ptr<Execution> createViewedConvExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs) {
  const RuntimeTensor &x = *inputs[0], &w = *inputs[1];
  if (outputs.size() != 1 || w.shape.size() != x.shape.size()) return nullptr;
  ConvView view;
  if (columnConv(x, w, *outputs[0], *op.node)) view = ConvView::SwapHW;
  else if (x.shape.size() == 3 && outputs[0]->shape.size() == 3) view = ConvView::AddH;
  else return nullptr;
  auto viewedConv = std::make_unique<ViewedConvExecution>(backend, *op.node, view);
  if (!viewedConv->create(op, inputs, outputs).isOk()) return nullptr;
  return viewedConv;
}

}  // namespace osprey
