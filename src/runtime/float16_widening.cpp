#include "runtime/float16_widening.h"

#include "converter/converter.h"
#include "converter/passes/passes.h"
#include "converter/passes/widen_float16.h"

namespace osprey {

namespace {

bool mentionsFloat16(const Graph& g) {
  for (const TensorInfo& t : g.tensors)
    if (t.dtype == DataType::Float16) return true;
  for (const Node& node : g.nodes)
    for (const Attribute& a : node.attrs)
      if ((a.tensor && a.tensor->dtype == DataType::Float16) ||
          (a.kind == Attribute::Kind::Int && a.i == static_cast<int64_t>(DataType::Float16) &&
           (a.name == "to" || a.name == "dtype" || a.name == "output_datatype" || a.name == "output_dtype")))
        return true;
  return false;
}

}  // namespace

std::shared_ptr<const Model> Float16Widening::widened() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (nothingToWiden_) return model_;
  if (auto kept = widened_.lock()) return kept;
  nothingToWiden_ = !mentionsFloat16(model_->graph);
  if (nothingToWiden_) return model_;
  auto model = std::make_shared<Model>(*model_);
  if (passes::widenFloat16(model->graph) == 0) {
    nothingToWiden_ = true;
    return model_;
  }
  // The converter's fusions, which it ran on the graph when it was float16: those of float32
  // weights (BatchNorm into Conv, MatMul bias) and of float32 tensors (activations into MatMul)
  // match now. Constants were folded then; quantized patterns have no float16 to gain. GELU's
  // 1/sqrt(2) is float16's, off by up to half its last place (2^-11).
  passes::fuseGelu(model->graph, 1.0 / 2048);
  ConvertOptions options;
  options.foldConstants = false;
  options.fuseQuantized = false;
  // A graph the passes refuse runs as written, as it did before widening existed.
  if (!optimizeGraph(model->graph, options).isOk()) {
    nothingToWiden_ = true;
    return model_;
  }
  widened_ = model;
  return model;
}

}  // namespace osprey
