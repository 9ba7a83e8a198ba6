// CPU ReduceSum, ReduceMean, ReduceMax and ReduceMin (float32, NCHW) over axes that form one
// block once size-1 dims are dropped: the input is [outer, n, inner] and n is reduced. The axes
// are read once at creation, and a run allocates nothing (the reference reads its axes and
// allocates its accumulators at every run). Sums over contiguous rows (inner 1: ShuffleNetV2's
// spatial mean) take GlobalAveragePool's float partial sums; strided ones accumulate in double in
// the reference's order, in chunks of columns kept on the stack.
#include <algorithm>
#include <limits>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class ReduceKind { Sum, Mean, Max, Min };

constexpr int64_t kColumnChunk = 256;

// The reference's rule: a NaN wins, and then stays (no comparison with it is true).
template <ReduceKind K>
inline float extreme(float a, float v) {
  if constexpr (K == ReduceKind::Max)
    return (v > a || v != v) ? v : a;
  else
    return (v < a || v != v) ? v : a;
}

template <ReduceKind K>
class ReduceExecution : public Execution {
 public:
  ReduceExecution(CPUBackend* backend, int64_t outer, int64_t n, int64_t inner)
      : Execution(backend), outer_(outer), n_(n), inner_(inner) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    constexpr bool kSum = K == ReduceKind::Sum || K == ReduceKind::Mean;
    if (kSum && inner_ == 1) {
      planeSumsDivided(pool, x, outer_, n_, K == ReduceKind::Mean ? static_cast<float>(n_) : 1.f, y);
      return Status::ok();
    }
    const int64_t chunks = (inner_ + kColumnChunk - 1) / kColumnChunk;
    if (outer_ * n_ * inner_ < 4096) pool = nullptr;
    parallelFor(pool, outer_ * chunks, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t o = task / chunks, j0 = task % chunks * kColumnChunk;
        const int64_t cols = std::min(kColumnChunk, inner_ - j0);
        const float* xs = x + o * n_ * inner_ + j0;
        float* ys = y + o * inner_ + j0;
        if constexpr (kSum) {
          double acc[kColumnChunk] = {};
          for (int64_t r = 0; r < n_; ++r)
            for (int64_t j = 0; j < cols; ++j) acc[j] += static_cast<double>(xs[r * inner_ + j]);
          const double divisor = K == ReduceKind::Mean ? static_cast<double>(n_) : 1.0;
          for (int64_t j = 0; j < cols; ++j) ys[j] = static_cast<float>(acc[j] / divisor);
        } else {
          float acc[kColumnChunk];
          std::fill(acc, acc + cols, K == ReduceKind::Max ? -std::numeric_limits<float>::infinity()
                                                          : std::numeric_limits<float>::infinity());
          for (int64_t r = 0; r < n_; ++r)
            for (int64_t j = 0; j < cols; ++j) acc[j] = extreme<K>(acc[j], xs[r * inner_ + j]);
          std::copy(acc, acc + cols, ys);
        }
      }
    });
    return Status::ok();
  }

 private:
  int64_t outer_, n_, inner_;
};

template <ReduceKind K>
std::unique_ptr<Execution> createFor(CPUBackend* backend, const Node& node, const std::vector<RuntimeTensor*>& inputs,
                                     const std::vector<RuntimeTensor*>& outputs) {
  const RuntimeTensor* x = inputs[0];
  if (x->dtype != DataType::Float32 || x->layout != Layout::NCHW || x->elements() == 0) return nullptr;
  if (!outputs[0] || outputs[0]->layout != Layout::NCHW) return nullptr;
  // Axes unknown until run time or invalid: the reference runs (and reports what is wrong).
  if (inputs.size() > 1 && inputs[1] && !inputs[1]->constData) return nullptr;
  TensorViews views(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i])
      views[i] = inputs[i]->view();
    else
      views[i].present = false;
  }
  std::vector<bool> reduced;
  bool noop = false;
  if (!reducedAxes(node, views, &reduced, &noop).isOk() || noop) return nullptr;
  // [outer, n, inner]: every reduced dim of size > 1 must lie between the kept ones' blocks.
  int64_t outer = 1, n = 1, inner = 1;
  int phase = 0;  // 0: before the reduced block, 1: inside it, 2: after it
  for (size_t d = 0; d < reduced.size(); ++d) {
    const int64_t size = x->shape[d];
    if (size == 1) continue;
    if (reduced[d]) {
      if (phase == 2) return nullptr;  // a second reduced block
      phase = 1;
      n *= size;
    } else {
      if (phase == 1) phase = 2;
      (phase == 0 ? outer : inner) *= size;
    }
  }
  if (phase == 0) return nullptr;  // nothing of size > 1 reduced: the reference copies
  return std::make_unique<ReduceExecution<K>>(backend, outer, n, inner);
}

}  // namespace

std::unique_ptr<Execution> createReduceExecution(CPUBackend* backend, const OpRef& op,
                                                 const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  if (inputs.empty() || !inputs[0] || outputs.empty()) return nullptr;
  const Node& node = *op.node;
  switch (node.type) {
    case OpType::ReduceSum: return createFor<ReduceKind::Sum>(backend, node, inputs, outputs);
    case OpType::ReduceMean: return createFor<ReduceKind::Mean>(backend, node, inputs, outputs);
    case OpType::ReduceMax: return createFor<ReduceKind::Max>(backend, node, inputs, outputs);
    case OpType::ReduceMin: return createFor<ReduceKind::Min>(backend, node, inputs, outputs);
    default: return nullptr;
  }
}

}  // namespace osprey
