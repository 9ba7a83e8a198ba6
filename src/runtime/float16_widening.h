// A float16 model, as the sessions on a backend without float16 kernels (Backend::computesFloat16)
// run it: widened to float32 inside (converter/passes/widen_float16.h), with the float32 fusions
// that float16 had kept the converter from making (Conv + activation, MatMul + bias, BatchNorm
// folded into Conv ...). Its inputs and outputs keep their names and dtypes.
#pragma once
#include <memory>
#include <mutex>

#include "core/graph.h"

namespace osprey {

class Float16Widening {
 public:
  explicit Float16Widening(std::shared_ptr<const Model> model) : model_(std::move(model)) {}
  // The widened model, made at the first call and shared by the sessions that hold it (their
  // executions then share its packed weights); the model itself when nothing is widened.
  std::shared_ptr<const Model> widened();

 private:
  std::mutex mutex_;
  std::shared_ptr<const Model> model_;
  std::weak_ptr<const Model> widened_;  // freed with the last session that runs it
  bool nothingToWiden_ = false;
};

}  // namespace osprey
