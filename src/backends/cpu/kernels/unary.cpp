// CPU Sigmoid, Erf, Gelu, Swish, Softmax and the pointwise ops (Relu, Tanh, Exp, HardSwish, ...:
// pointwise.h) on float32 through the function table's vectorised kernels: the reference kernels
// call the scalar libm functions one element at a time.
#include <algorithm>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/pointwise.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

constexpr int64_t kChunk = 4096;  // elements per task: large enough to hide the pool's wake-up

// y = f(x) elementwise, the elements cut into chunks taken by whichever thread is free.
class ElementwiseExecution : public Execution {
 public:
  ElementwiseExecution(CPUBackend* backend, UnaryKernel kernel) : Execution(backend), unary_(kernel) {}
  ElementwiseExecution(CPUBackend* backend, const Pointwise& p) : Execution(backend), pointwise_(p) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const int64_t n = inputs[0]->elements();
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    ThreadPool* pool = chunks > 1 ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    const PointwiseKernel pointwise = cpuFunctions().pointwise;
    parallelFor(pool, chunks, [&](int64_t begin, int64_t end) {
      const int64_t lo = begin * kChunk, hi = std::min(n, end * kChunk);
      if (unary_) unary_(x + lo, y + lo, hi - lo);
      else pointwise(pointwise_, x + lo, y + lo, hi - lo);
    }, kFineRangesPerThread);
    return Status::ok();
  }

 private:
  UnaryKernel unary_ = nullptr;  // else the pointwise kernel with pointwise_
  Pointwise pointwise_;
};

// Softmax along the last axis: rows of `inner` contiguous values.
class SoftmaxExecution : public Execution {
 public:
  explicit SoftmaxExecution(CPUBackend* backend) : Execution(backend) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const int64_t inner = inputs[0]->shape.back();
    const int64_t rows = inner ? inputs[0]->elements() / inner : 0;
    const SoftmaxRowKernel softmaxRow = cpuFunctions().softmaxRow;
    ThreadPool* pool = rows * inner >= kChunk ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) softmaxRow(x + r * inner, y + r * inner, inner, 1.f);
    });
    return Status::ok();
  }
};

bool plainFloat(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) {
  return !inputs.empty() && inputs[0] && inputs[0]->dtype == DataType::Float32 && outputs[0] &&
         inputs[0]->layout == outputs[0]->layout;
}

}  // namespace

std::unique_ptr<Execution> createSigmoidExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs) {
  if (!plainFloat(inputs, outputs)) return nullptr;
  return std::make_unique<ElementwiseExecution>(backend, cpuFunctions().sigmoid);
}

std::unique_ptr<Execution> createErfExecution(CPUBackend* backend, const OpRef& op,
                                              const std::vector<RuntimeTensor*>& inputs,
                                              const std::vector<RuntimeTensor*>& outputs) {
  if (!plainFloat(inputs, outputs)) return nullptr;
  return std::make_unique<ElementwiseExecution>(backend, cpuFunctions().erf);
}

std::unique_ptr<Execution> createGeluExecution(CPUBackend* backend, const OpRef& op,
                                               const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || !plainFloat(inputs, outputs) || op.node->getString("approximate", "none") != "none") return nullptr;
  return std::make_unique<ElementwiseExecution>(backend, cpuFunctions().gelu);
}

std::unique_ptr<Execution> createSwishExecution(CPUBackend* backend, const OpRef& op,
                                                const std::vector<RuntimeTensor*>& inputs,
                                                const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || !plainFloat(inputs, outputs) || op.node->getFloat("alpha", 1.f) != 1.f) return nullptr;
  return std::make_unique<ElementwiseExecution>(backend, cpuFunctions().swish);
}

std::unique_ptr<Execution> createSoftmaxExecution(CPUBackend* backend, const OpRef& op,
                                                  const std::vector<RuntimeTensor*>& inputs,
                                                  const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || !plainFloat(inputs, outputs) || inputs[0]->shape.empty()) return nullptr;
  if (inputs[0]->layout != Layout::NCHW) return nullptr;
  const int64_t rank = static_cast<int64_t>(inputs[0]->shape.size());
  int64_t axis = op.node->getInt("axis", -1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1 || inputs[0]->shape.back() == 0) return nullptr;  // other axes: the reference
  return std::make_unique<SoftmaxExecution>(backend);
}

std::unique_ptr<Execution> createPointwiseExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs) {
  Pointwise p;
  if (!op.node || !plainFloat(inputs, outputs) || !pointwiseOfNode(*op.node, &p)) return nullptr;
  return std::make_unique<ElementwiseExecution>(backend, p);
}

}  // namespace osprey
