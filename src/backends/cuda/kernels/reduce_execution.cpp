// Reductions on the device: Reduce* over a block of adjacent axes, global pools, Softmax /
// LogSoftmax, LayerNormalization and RMSNormalization.
#include <algorithm>

#include "backends/cuda/kernels/cuda_executions.h"
#include "backends/cuda/kernels/cuda_launch.h"
#include "ops/op_util.h"

namespace osprey::cuda {

namespace {

bool isFloatType(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::BFloat16; }

// The input seen as [outer, n, inner] around an axis block, as every kernel here wants it.
struct Split3 {
  int64_t outer = 1, n = 1, inner = 1;
};

bool splitAroundAxes(const Shape& shape, const std::vector<int64_t>& axes, Split3* s);

// NHWC storage of a 4-D tensor: stored axis k holds logical axis kNhwcAxes[k].
constexpr int64_t kNhwcAxes[4] = {0, 2, 3, 1};

// The reduction seen on the NHWC-stored input. False when the reduced axes are not one block
// there, or when a rank-reducing output would come out in another order than its own.
bool splitChannelsLast(const Shape& logical, const std::vector<int64_t>& axes, size_t outputRank, Split3* split) {
  if (logical.size() != 4) return false;
  Shape stored(4);
  std::vector<int64_t> storedAxes;
  int64_t lastKept = -1;
  bool keptInOrder = true;
  for (int64_t k = 0; k < 4; ++k) {
    const int64_t a = kNhwcAxes[k];
    stored[static_cast<size_t>(k)] = logical[static_cast<size_t>(a)];
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) {
      storedAxes.push_back(k);
    } else if (logical[static_cast<size_t>(a)] != 1) {
      keptInOrder = keptInOrder && a > lastKept;
      lastKept = a;
    }
  }
  if (outputRank != 4 && !keptInOrder) return false;
  return splitAroundAxes(stored, storedAxes, split);
}

class ReduceExecution : public Execution {
 public:
  ReduceExecution(CUDABackend* backend, ReduceKind kind, Split3 split, std::vector<int64_t> axes)
      : Execution(backend), kind_(kind), split_(split), axes_(std::move(axes)) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    Split3 unused;
    return layout == Layout::NCHW ||
           (layout == Layout::NHWC && splitChannelsLast(inputs[0]->shape, axes_, outputs[0]->shape.size(), &unused));
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (inputs[0]->layout == Layout::NHWC &&
        !splitChannelsLast(inputs[0]->shape, axes_, outputs[0]->shape.size(), &split_))
      return Status::internal("CUDA reduction cannot run on this NHWC tensor");
    return Status::ok();
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(reduceAxis(kind_, cuda->devicePtr(inputs[0]), cuda->devicePtr(outputs[0]), split_.outer, split_.n,
                                           split_.inner, cuda->storageType(outputs[0]), cuda->stream()),
                                "reduce kernel");
    return Status::ok();
  }

 private:
  ReduceKind kind_;
  Split3 split_;
  std::vector<int64_t> axes_;  // logical (NCHW) axes
};

bool reduceKindOf(OpType type, ReduceKind* kind) {
  switch (type) {
    case OpType::ReduceSum: *kind = ReduceKind::Sum; return true;
    case OpType::ReduceMean: case OpType::GlobalAveragePool: *kind = ReduceKind::Mean; return true;
    case OpType::ReduceMax: case OpType::GlobalMaxPool: *kind = ReduceKind::Max; return true;
    case OpType::ReduceMin: *kind = ReduceKind::Min; return true;
    case OpType::ReduceProd: *kind = ReduceKind::Prod; return true;
    case OpType::ReduceSumSquare: *kind = ReduceKind::SumSquare; return true;
    case OpType::ReduceL1: *kind = ReduceKind::L1; return true;
    case OpType::ReduceL2: *kind = ReduceKind::L2; return true;
    case OpType::ReduceLogSum: *kind = ReduceKind::LogSum; return true;
    case OpType::ReduceLogSumExp: *kind = ReduceKind::LogSumExp; return true;
    default: return false;
  }
}

// Splits `shape` around the reduced axes; false when they are not one block (size-1 axes in
// between do not count).
bool splitAroundAxes(const Shape& shape, const std::vector<int64_t>& axes, Split3* s) {
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  int first = -1, last = -1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d] && shape[d] != 1) {
      if (first < 0) first = static_cast<int>(d);
      last = static_cast<int>(d);
    }
  if (first < 0) first = last = 0;
  for (int d = first; d <= last; ++d)
    if (!reduced[static_cast<size_t>(d)] && shape[static_cast<size_t>(d)] != 1) return false;
  *s = Split3();
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t v = shape[d];
    if (reduced[d]) s->n *= v;
    else if (static_cast<int>(d) < first) s->outer *= v;
    else s->inner *= v;
  }
  return true;
}

class SoftmaxExecution : public Execution {
 public:
  SoftmaxExecution(CUDABackend* backend, Split3 split, bool logSoftmax) : Execution(backend), split_(split), log_(logSoftmax) {}
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(softmax(cuda->devicePtr(inputs[0]), cuda->devicePtr(outputs[0]), split_.outer, split_.n, split_.inner,
                                        log_, cuda->storageType(outputs[0]), cuda->stream()),
                                "softmax kernel");
    return Status::ok();
  }

 private:
  Split3 split_;
  bool log_;
};

class NormExecution : public Execution {
 public:
  NormExecution(CUDABackend* backend, int64_t rows, int64_t n, float eps, bool rms)
      : Execution(backend), rows_(rows), n_(n), eps_(eps), rms_(rms) {}
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    const void* bias = inputs.size() > 2 && inputs[2] ? cuda->devicePtr(inputs[2]) : nullptr;
    OSPREY_CUDA_RETURN_IF_ERROR(layerNorm(cuda->devicePtr(inputs[0]), cuda->devicePtr(inputs[1]), bias, cuda->devicePtr(outputs[0]),
                                          rows_, n_, eps_, rms_, cuda->storageType(outputs[0]), cuda->stream()),
                                "normalization kernel");
    return Status::ok();
  }

 private:
  int64_t rows_, n_;
  float eps_;
  bool rms_;
};

// Scale / bias must hold exactly the normalised elements (no broadcast over leading axes).
bool matchesNormalized(const RuntimeTensor* p, const Shape& x, int64_t axis) {
  if (!p || p->elements() != shapeElements(Shape(x.begin() + axis, x.end()))) return false;
  size_t lead = 0;
  while (lead < p->shape.size() && p->shape[lead] == 1) ++lead;
  return p->shape.size() - lead <= x.size() - static_cast<size_t>(axis);
}

bool singleOutput(const std::vector<RuntimeTensor*>& outputs) {
  if (outputs.empty() || !outputs[0]) return false;
  for (size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i]) return false;
  return true;
}

}  // namespace

std::unique_ptr<Execution> createReduceExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  ReduceKind kind;
  if (!op.node || inputs.empty() || !inputs[0] || !singleOutput(outputs) || !reduceKindOf(op.type, &kind)) return nullptr;
  const RuntimeTensor* x = inputs[0];
  if (!isFloatType(x->dtype) || x->elements() == 0) return nullptr;
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  std::vector<int64_t> axes;
  if (op.type == OpType::GlobalAveragePool || op.type == OpType::GlobalMaxPool) {
    if (rank < 3) return nullptr;
    for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
  } else {
    if (inputs.size() > 1 && inputs[1]) {
      if (!inputs[1]->constData || inputs[1]->dtype != DataType::Int64) return nullptr;
      const auto* v = reinterpret_cast<const int64_t*>(inputs[1]->constData);
      axes.assign(v, v + inputs[1]->elements());
    } else {
      axes = op.node->getInts("axes");
    }
    if (axes.empty()) {
      if (op.node->getInt("noop_with_empty_axes", 0) != 0) return nullptr;
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    std::vector<int64_t> norm;
    if (!normalizeAxes(axes, rank, &norm).isOk()) return nullptr;
    axes = norm;
  }
  Split3 split;
  if (!splitAroundAxes(x->shape, axes, &split)) return nullptr;
  return std::make_unique<ReduceExecution>(backend, kind, split, axes);
}

std::unique_ptr<Execution> createSoftmaxExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.empty() || !inputs[0] || !singleOutput(outputs) || !isFloatType(inputs[0]->dtype)) return nullptr;
  const Shape& shape = inputs[0]->shape;
  if (shape.empty()) return nullptr;
  int64_t axis;
  if (!normalizeAxis(op.node->getInt("axis", -1), static_cast<int64_t>(shape.size()), &axis).isOk()) return nullptr;
  AxisSplit s = splitAt(shape, axis);
  return std::make_unique<SoftmaxExecution>(backend, Split3{s.outer, s.n, s.inner}, op.type == OpType::LogSoftmax);
}

std::unique_ptr<Execution> createNormalizationExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                        const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.size() < 2 || !inputs[0] || !inputs[1] || !singleOutput(outputs)) return nullptr;
  const RuntimeTensor* x = inputs[0];
  if (!isFloatType(x->dtype) || x->shape.empty()) return nullptr;
  int64_t axis;
  if (!normalizeAxis(op.node->getInt("axis", -1), static_cast<int64_t>(x->shape.size()), &axis).isOk()) return nullptr;
  if (!matchesNormalized(inputs[1], x->shape, axis)) return nullptr;
  const bool hasBias = inputs.size() > 2 && inputs[2];
  if (hasBias && !matchesNormalized(inputs[2], x->shape, axis)) return nullptr;
  for (auto* in : inputs)
    if (in && in->dtype != x->dtype) return nullptr;
  const int64_t n = shapeElements(Shape(x->shape.begin() + axis, x->shape.end()));
  if (n == 0) return nullptr;
  const float eps = op.node->getFloat("epsilon", 1e-5f);
  return std::make_unique<NormExecution>(backend, x->elements() / n, n, eps, op.type == OpType::RMSNormalization);
}

}  // namespace osprey::cuda
