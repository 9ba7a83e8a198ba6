// Elementwise ops on the device: unary activations and math, binary arithmetic / comparison /
// logic with numpy broadcasting, Where, Cast and Not.
#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cuda/kernels/cuda_executions.h"
#include "backends/cuda/kernels/cuda_launch.h"
#include "core/dtype.h"
#include "core/layout.h"

namespace osprey::cuda {

bool makeBroadcastIndex(const Shape& out, const std::vector<Shape>& operands, BroadcastIndex* ix) {
  const size_t rank = out.size();
  const size_t count = operands.size();
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(count);
  std::vector<int64_t> running(count, 1);
  std::vector<std::vector<int64_t>> full(count, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < count; ++k) {
    const Shape& s = operands[k];
    if (s.size() > rank) return false;
    for (size_t d = s.size(); d-- > 0;) {
      const size_t od = rank - s.size() + d;
      full[k][od] = s[d] == 1 ? 0 : running[k];
      running[k] *= s[d];
    }
  }
  // Keep non-unit dims, merging a dim into the next when every operand is contiguous across both.
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < count && merge; ++k) merge = strides[k].back() == full[k][d] * out[d];
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < count; ++k) strides[k].back() = full[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < count; ++k) strides[k].push_back(full[k][d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (size_t k = 0; k < count; ++k) strides[k].push_back(0);
  }
  if (dims.size() > static_cast<size_t>(kMaxRank) || count > 3) return false;
  ix->rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    ix->shape[d] = dims[d];
    for (size_t k = 0; k < count; ++k) ix->stride[k][d] = strides[k][d];
  }
  return true;
}

namespace {

bool isFloatType(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::BFloat16; }

// Same-shape elementwise work is indifferent to layout; broadcasting works on NHWC tensors when
// every operand's shape is seen in storage order (rank-4 shapes permuted to N, H, W, C; lower
// ranks first padded to rank 4). That holds for operands whose layout matters (they are NHWC
// with the output) and for those where it does not; a constant whose layout matters stays NCHW
// and rules NHWC out.
bool constantLayoutMatters(const std::vector<RuntimeTensor*>& inputs) {
  for (const RuntimeTensor* t : inputs)
    if (t && t->constData && layoutMatters(t->shape, Layout::NHWC)) return true;
  return false;
}

Shape storedNhwc(const Shape& logical) {
  Shape padded(4 - std::min<size_t>(4, logical.size()), 1);
  padded.insert(padded.end(), logical.begin(), logical.end());
  return storedShape(padded, Layout::NHWC);
}

// The layouts a broadcasting execution (Binary, Where) runs in.
bool broadcastSupports(Layout layout, bool constantLayoutMatters, const RuntimeTensor& output) {
  return layout == Layout::NCHW || (layout == Layout::NHWC && !constantLayoutMatters && output.shape.size() <= 4);
}

bool broadcastIndexFor(const std::vector<RuntimeTensor*>& inputs, const RuntimeTensor& output, BroadcastIndex* index) {
  std::vector<Shape> operands;
  const bool nhwc = output.layout == Layout::NHWC;
  for (const RuntimeTensor* t : inputs) operands.push_back(nhwc ? storedNhwc(t->shape) : t->shape);
  return makeBroadcastIndex(nhwc ? storedNhwc(output.shape) : output.shape, operands, index);
}

class UnaryExecution : public Execution {
 public:
  UnaryExecution(CUDABackend* backend, UnaryKind kind, float a, float b) : Execution(backend), kind_(kind), a_(a), b_(b) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || layout == Layout::NHWC;
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(unaryFloat(kind_, a_, b_, cuda->devicePtr(inputs[0]), cuda->devicePtr(outputs[0]),
                                           outputs[0]->elements(), cuda->storageType(outputs[0]), cuda->stream()),
                                "unary kernel");
    return Status::ok();
  }

 private:
  UnaryKind kind_;
  float a_, b_;
};

bool constantScalar(const RuntimeTensor* t, float* out) {
  if (!t) return true;  // omitted: keep the default
  if (!t->constData || t->elements() != 1) return false;
  *out = static_cast<float>(loadAsDouble(t->dtype, t->constData, 0));
  return true;
}

bool unaryKindOf(const Node& node, const std::vector<RuntimeTensor*>& inputs, UnaryKind* kind, float* a, float* b) {
  *a = 0.f;
  *b = 0.f;
  switch (node.type) {
    case OpType::Relu: *kind = UnaryKind::Relu; return true;
    case OpType::Sigmoid: *kind = UnaryKind::Sigmoid; return true;
    case OpType::Tanh: *kind = UnaryKind::Tanh; return true;
    case OpType::Erf: *kind = UnaryKind::Erf; return true;
    case OpType::Gelu: *kind = node.getString("approximate", "none") == "tanh" ? UnaryKind::GeluTanh : UnaryKind::Gelu; return true;
    case OpType::Exp: *kind = UnaryKind::Exp; return true;
    case OpType::Log: *kind = UnaryKind::Log; return true;
    case OpType::Sqrt: *kind = UnaryKind::Sqrt; return true;
    case OpType::Reciprocal: *kind = UnaryKind::Reciprocal; return true;
    case OpType::Neg: *kind = UnaryKind::Neg; return true;
    case OpType::Abs: *kind = UnaryKind::Abs; return true;
    case OpType::Sin: *kind = UnaryKind::Sin; return true;
    case OpType::Cos: *kind = UnaryKind::Cos; return true;
    case OpType::Floor: *kind = UnaryKind::Floor; return true;
    case OpType::Ceil: *kind = UnaryKind::Ceil; return true;
    case OpType::Round: *kind = UnaryKind::Round; return true;
    case OpType::Sign: *kind = UnaryKind::Sign; return true;
    case OpType::Softplus: *kind = UnaryKind::Softplus; return true;
    case OpType::Softsign: *kind = UnaryKind::Softsign; return true;
    case OpType::Mish: *kind = UnaryKind::Mish; return true;
    case OpType::HardSwish: *kind = UnaryKind::HardSwish; return true;
    case OpType::Identity:
    case OpType::Dropout: *kind = UnaryKind::Identity; return true;
    case OpType::LeakyRelu: *kind = UnaryKind::LeakyRelu; *a = node.getFloat("alpha", 0.01f); return true;
    case OpType::Elu: *kind = UnaryKind::Elu; *a = node.getFloat("alpha", 1.f); return true;
    case OpType::Celu: *kind = UnaryKind::Celu; *a = node.getFloat("alpha", 1.f); return true;
    case OpType::ThresholdedRelu: *kind = UnaryKind::ThresholdedRelu; *a = node.getFloat("alpha", 1.f); return true;
    case OpType::Swish: *kind = UnaryKind::Swish; *a = node.getFloat("alpha", 1.f); return true;
    case OpType::HardSigmoid:
      *kind = UnaryKind::HardSigmoid;
      *a = node.getFloat("alpha", 0.2f);
      *b = node.getFloat("beta", 0.5f);
      return true;
    case OpType::Selu:
      *kind = UnaryKind::Selu;
      *a = node.getFloat("alpha", 1.67326319217681884765625f);
      *b = node.getFloat("gamma", 1.05070102214813232421875f);
      return true;
    case OpType::Clip:
      *kind = UnaryKind::Clip;
      *a = -INFINITY;
      *b = INFINITY;
      return constantScalar(inputs.size() > 1 ? inputs[1] : nullptr, a) && constantScalar(inputs.size() > 2 ? inputs[2] : nullptr, b);
    default: return false;
  }
}

class BinaryExecution : public Execution {
 public:
  BinaryExecution(CUDABackend* backend, BinaryKind kind, BroadcastIndex index, DataType operandType, bool constantLayoutMatters)
      : Execution(backend), kind_(kind), index_(index), operandType_(operandType), constantLayoutMatters_(constantLayoutMatters) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& outputs) const override {
    return broadcastSupports(layout, constantLayoutMatters_, *outputs[0]);
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (!broadcastIndexFor({inputs[0], inputs[1]}, *outputs[0], &index_))
      return Status::internal("binary op: no broadcast index for these shapes");
    return Status::ok();
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(binary(kind_, cuda->devicePtr(inputs[0]), cuda->devicePtr(inputs[1]), cuda->devicePtr(outputs[0]),
                                       operandType_, index_, cuda->stream()),
                                "binary kernel");
    return Status::ok();
  }

 private:
  BinaryKind kind_;
  BroadcastIndex index_;
  DataType operandType_;
  bool constantLayoutMatters_;
};

bool binaryKindOf(OpType type, BinaryKind* kind) {
  switch (type) {
    case OpType::Add: case OpType::Sum: *kind = BinaryKind::Add; return true;
    case OpType::Sub: *kind = BinaryKind::Sub; return true;
    case OpType::Mul: *kind = BinaryKind::Mul; return true;
    case OpType::Div: *kind = BinaryKind::Div; return true;
    case OpType::Pow: *kind = BinaryKind::Pow; return true;
    case OpType::Max: *kind = BinaryKind::Max; return true;
    case OpType::Min: *kind = BinaryKind::Min; return true;
    case OpType::PRelu: *kind = BinaryKind::PRelu; return true;
    case OpType::Equal: *kind = BinaryKind::Equal; return true;
    case OpType::Less: *kind = BinaryKind::Less; return true;
    case OpType::Greater: *kind = BinaryKind::Greater; return true;
    case OpType::LessOrEqual: *kind = BinaryKind::LessOrEqual; return true;
    case OpType::GreaterOrEqual: *kind = BinaryKind::GreaterOrEqual; return true;
    case OpType::And: *kind = BinaryKind::And; return true;
    case OpType::Or: *kind = BinaryKind::Or; return true;
    case OpType::Xor: *kind = BinaryKind::Xor; return true;
    case OpType::Mod: *kind = BinaryKind::Mod; return true;
    default: return false;
  }
}

class WhereExecution : public Execution {
 public:
  WhereExecution(CUDABackend* backend, BroadcastIndex index, bool constantLayoutMatters)
      : Execution(backend), index_(index), constantLayoutMatters_(constantLayoutMatters) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>& outputs) const override {
    return broadcastSupports(layout, constantLayoutMatters_, *outputs[0]);
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (!broadcastIndexFor({inputs[0], inputs[1], inputs[2]}, *outputs[0], &index_))
      return Status::internal("Where: no broadcast index for these shapes");
    return Status::ok();
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    const int size = static_cast<int>(dataTypeSize(cuda->storageType(outputs[0])));
    OSPREY_CUDA_RETURN_IF_ERROR(where(cuda->devicePtr(inputs[0]), cuda->devicePtr(inputs[1]), cuda->devicePtr(inputs[2]),
                                      cuda->devicePtr(outputs[0]), size, index_, cuda->stream()),
                                "Where kernel");
    return Status::ok();
  }

 private:
  BroadcastIndex index_;
  bool constantLayoutMatters_;
};

class CastExecution : public Execution {
 public:
  using Execution::Execution;
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || layout == Layout::NHWC;
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(cast(cuda->devicePtr(inputs[0]), cuda->storageType(inputs[0]), cuda->devicePtr(outputs[0]),
                                     cuda->storageType(outputs[0]), outputs[0]->elements(), cuda->stream()),
                                "Cast kernel");
    return Status::ok();
  }
};

class NotExecution : public Execution {
 public:
  using Execution::Execution;
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    OSPREY_CUDA_RETURN_IF_ERROR(logicalNot(cuda->devicePtr(inputs[0]), cuda->devicePtr(outputs[0]), outputs[0]->elements(), cuda->stream()),
                                "Not kernel");
    return Status::ok();
  }
};

bool allPresent(const std::vector<RuntimeTensor*>& ts, size_t n) {
  if (ts.size() < n) return false;
  for (size_t i = 0; i < n; ++i)
    if (!ts[i]) return false;
  return true;
}

}  // namespace

std::unique_ptr<Execution> createUnaryExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || !allPresent(inputs, 1) || !allPresent(outputs, 1) || !isFloatType(inputs[0]->dtype) ||
      outputs[0]->dtype != inputs[0]->dtype)
    return nullptr;
  for (size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i]) return nullptr;  // Dropout's mask
  UnaryKind kind;
  float a, b;
  if (!unaryKindOf(*op.node, inputs, &kind, &a, &b)) return nullptr;
  return std::make_unique<UnaryExecution>(backend, kind, a, b);
}

std::unique_ptr<Execution> createBinaryExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  BinaryKind kind;
  if (!op.node || inputs.size() != 2 || !allPresent(inputs, 2) || !allPresent(outputs, 1) || !binaryKindOf(op.type, &kind))
    return nullptr;
  const DataType t = inputs[0]->dtype;
  if (inputs[1]->dtype != t) return nullptr;
  const bool logical = kind == BinaryKind::And || kind == BinaryKind::Or || kind == BinaryKind::Xor;
  if (logical != (t == DataType::Bool)) return nullptr;
  if (!isFloatType(t) && t != DataType::Int32 && t != DataType::Int64 && t != DataType::Bool) return nullptr;
  // Float Mod is fmod (fmod=1 only); integer Mod is the Python-style remainder (fmod=0 only).
  if (op.type == OpType::Mod && (op.node->getInt("fmod", 0) != 0) != isFloatType(t)) return nullptr;
  BroadcastIndex index;
  if (!makeBroadcastIndex(outputs[0]->shape, {inputs[0]->shape, inputs[1]->shape}, &index)) return nullptr;
  return std::make_unique<BinaryExecution>(backend, kind, index, backend->operandType(t, op), constantLayoutMatters(inputs));
}

std::unique_ptr<Execution> createWhereExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                const std::vector<RuntimeTensor*>& outputs) {
  if (!allPresent(inputs, 3) || !allPresent(outputs, 1) || inputs[0]->dtype != DataType::Bool) return nullptr;
  if (inputs[1]->dtype != inputs[2]->dtype) return nullptr;
  BroadcastIndex index;
  if (!makeBroadcastIndex(outputs[0]->shape, {inputs[0]->shape, inputs[1]->shape, inputs[2]->shape}, &index)) return nullptr;
  const size_t size = dataTypeSize(backend->storageType(outputs[0]));
  if (size != 1 && size != 2 && size != 4 && size != 8) return nullptr;
  return std::make_unique<WhereExecution>(backend, index, constantLayoutMatters(inputs));
}

std::unique_ptr<Execution> createCastExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                               const std::vector<RuntimeTensor*>& outputs) {
  if (!allPresent(inputs, 1) || !allPresent(outputs, 1)) return nullptr;
  auto supported = [](DataType t) {
    switch (t) {
      case DataType::Float32: case DataType::Float16: case DataType::BFloat16: case DataType::Float64:
      case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
      case DataType::UInt8: case DataType::UInt16: case DataType::UInt32: case DataType::UInt64: case DataType::Bool:
        return true;
      default: return false;
    }
  };
  if (!supported(inputs[0]->dtype) || !supported(outputs[0]->dtype)) return nullptr;
  // Float to integer conversions of out-of-range values differ between host and device: keep
  // them on the CPU, where the reference semantics live.
  if (isFloatType(inputs[0]->dtype) && !isFloatType(outputs[0]->dtype) && outputs[0]->dtype != DataType::Bool) return nullptr;
  return std::make_unique<CastExecution>(backend);
}

std::unique_ptr<Execution> createNotExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                              const std::vector<RuntimeTensor*>& outputs) {
  if (!allPresent(inputs, 1) || !allPresent(outputs, 1) || inputs[0]->dtype != DataType::Bool) return nullptr;
  return std::make_unique<NotExecution>(backend);
}

}  // namespace osprey::cuda
