// NC8HW8 pooling (MaxPool, AveragePool, GlobalAveragePool) and elementwise ops. The pools work
// on the 8 channels of a position at once, with the window rules of the NCHW kernels in
// pool.cpp (same tap order, tie and NaN rule, count_include_pad). Elementwise ops run their
// NCHW execution on 5-D views [N, C/8, H, W, 8] of the packed tensors, per-channel constants
// repacked once to [1, C/8, 1, 1, 8], so one broadcast rule serves both layouts.
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/nc8hw8.h"
#include "core/dtype.h"
#include "ops/window.h"

namespace osprey {

namespace {

int64_t blocksOf(int64_t channels) { return (channels + 7) / 8; }

template <bool kMax>
class Nc8hw8PoolExecution : public Execution {
 public:
  Nc8hw8PoolExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), node_(*op.node) {}

  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&,
                      const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NC8HW8;
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor& x = *inputs[0];
    if (x.layout != Layout::NC8HW8 || outputs[0]->layout != Layout::NC8HW8)
      return Status::internal("NC8HW8 pooling given tensors in another layout");
    OSPREY_RETURN_IF_ERROR(readWindow(node_, Shape(x.shape.begin() + 2, x.shape.end()), node_.getInts("kernel_shape"), &g_));
    OSPREY_RETURN_IF_ERROR(resolveForwardWindow(node_.getInt("ceil_mode", 0) != 0, &g_));
    countIncludePad_ = node_.getInt("count_include_pad", 0) != 0;
    batch_ = x.shape[0];
    channels_ = x.shape[1];
    kwRange_.resize(2 * g_.out[2]);
    for (int64_t ow = 0; ow < g_.out[2]; ++ow)
      validRange(ow * g_.stride[2] - g_.padBegin[2], g_.dilation[2], g_.in[2], g_.kernel[2], &kwRange_[2 * ow],
                 &kwRange_[2 * ow + 1]);
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    float* y = reinterpret_cast<float*>(outputs[0]->host());
    const Window& g = g_;
    const int64_t inH = g.in[1], inW = g.in[2], outH = g.out[1], outW = g.out[2], planes = batch_ * blocksOf(channels_);
    parallelFor(static_cast<CPUBackend*>(backend())->threadPool(), planes * outH, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t plane = task / outH, oh = task % outH;
        const float* xp = x + plane * inH * inW * 8;
        float* yr = y + (plane * outH + oh) * outW * 8;
        const int64_t h0 = oh * g.stride[1] - g.padBegin[1];
        int64_t khLo, khHi;
        validRange(h0, g.dilation[1], inH, g.kernel[1], &khLo, &khHi);
        for (int64_t ow = 0; ow < outW; ++ow) {
          const int64_t w0 = ow * g.stride[2] - g.padBegin[2], kwLo = kwRange_[2 * ow], kwHi = kwRange_[2 * ow + 1];
          float acc[8];
          if (kMax && khLo < khHi && kwLo < kwHi) {
            std::memcpy(acc, xp + ((h0 + khLo * g.dilation[1]) * inW + w0 + kwLo * g.dilation[2]) * 8, sizeof(acc));
          } else {
            std::fill(acc, acc + 8, kMax ? -std::numeric_limits<float>::infinity() : 0.f);
          }
          for (int64_t kh = khLo; kh < khHi; ++kh) {
            const float* row = xp + ((h0 + kh * g.dilation[1]) * inW + w0) * 8;
            for (int64_t kw = kwLo; kw < kwHi; ++kw) {
              const float* v = row + kw * g.dilation[2] * 8;
              for (int l = 0; l < 8; ++l) {
                if constexpr (kMax) {
                  acc[l] = v[l] > acc[l] ? v[l] : acc[l];
                } else {
                  acc[l] += v[l];
                }
              }
            }
          }
          if constexpr (!kMax) {
            int64_t count = (khHi - khLo) * (kwHi - kwLo);
            if (countIncludePad_) {
              const int64_t hLo = std::max(h0, -g.padBegin[1]), hHi = std::min(h0 + g.kernel[1], inH + g.padEnd[1]);
              const int64_t wLo = std::max(w0, -g.padBegin[2]), wHi = std::min(w0 + g.kernel[2], inW + g.padEnd[2]);
              count = (hHi - hLo) * (wHi - wLo);
            }
            const float scale = count ? 1.f / static_cast<float>(count) : std::numeric_limits<float>::quiet_NaN();
            for (int l = 0; l < 8; ++l) acc[l] = count ? acc[l] / static_cast<float>(count) : scale;
          }
          std::memcpy(yr + ow * 8, acc, sizeof(acc));
        }
      }
    });
    zeroNc8hw8Padding(y, batch_, channels_, outH * outW);
    return Status::ok();
  }

 private:
  const Node& node_;
  Window g_;
  bool countIncludePad_ = false;
  int64_t batch_ = 0, channels_ = 0;
  std::vector<int64_t> kwRange_;
};

// The mean of each channel over the plane, 8 channels at a time with 4 partial sums per channel.
class Nc8hw8GlobalAveragePoolExecution : public Execution {
 public:
  explicit Nc8hw8GlobalAveragePoolExecution(CPUBackend* backend) : Execution(backend) {}

  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&,
                      const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NC8HW8;
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (inputs[0]->layout != Layout::NC8HW8 || outputs[0]->layout != Layout::NC8HW8)
      return Status::internal("NC8HW8 GlobalAveragePool given tensors in another layout");
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor& x = *inputs[0];
    const float* xs = reinterpret_cast<const float*>(x.host());
    float* ys = reinterpret_cast<float*>(outputs[0]->host());
    const int64_t planes = x.shape[0] * blocksOf(x.shape[1]), size = x.shape[2] * x.shape[3];
    ThreadPool* pool = planes * size * 8 >= 16384 ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, planes, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const float* xp = xs + p * size * 8;
        float sums[4][8] = {};
        int64_t s = 0;
        for (; s + 4 <= size; s += 4)
          for (int k = 0; k < 4; ++k)
            for (int l = 0; l < 8; ++l) sums[k][l] += xp[(s + k) * 8 + l];
        for (; s < size; ++s)
          for (int l = 0; l < 8; ++l) sums[0][l] += xp[s * 8 + l];
        for (int l = 0; l < 8; ++l)
          ys[p * 8 + l] = ((sums[0][l] + sums[1][l]) + (sums[2][l] + sums[3][l])) / static_cast<float>(size);
      }
    });
    return Status::ok();
  }
};

bool isElementwiseUnary(OpType type) {
  switch (type) {
    case OpType::Relu: case OpType::Clip: case OpType::Sigmoid: case OpType::Swish: case OpType::HardSwish:
    case OpType::HardSigmoid: case OpType::LeakyRelu: case OpType::Tanh: case OpType::Elu: case OpType::Gelu:
    case OpType::Erf: case OpType::Exp: case OpType::Abs: case OpType::Neg: case OpType::Sqrt: case OpType::Softplus:
    case OpType::Mish: case OpType::Selu: case OpType::Celu:
      return true;
    default: return false;
  }
}

bool isElementwiseBinary(OpType type) {
  switch (type) {
    case OpType::Add: case OpType::Sub: case OpType::Mul: case OpType::Div: case OpType::Max: case OpType::Min:
      return true;
    default: return false;
  }
}

// How one operand of a packed elementwise op is read.
enum class Operand { Packed, AsIs, PerChannelConstant };

enum class Arithmetic { None, Add, Sub, Mul, Div };

Arithmetic arithmeticOf(OpType type) {
  switch (type) {
    case OpType::Add: return Arithmetic::Add;
    case OpType::Sub: return Arithmetic::Sub;
    case OpType::Mul: return Arithmetic::Mul;
    case OpType::Div: return Arithmetic::Div;
    default: return Arithmetic::None;
  }
}

// y[s][l] = a[s * kStrideA + l] op b[s * kStrideB + l] over `positions` positions of one block
// (stride 8: a full operand, 0: one vector per channel block); plain loops the compiler vectorises.
template <Arithmetic kOp, int kStrideA, int kStrideB>
void arithmeticBlock(const float* a, const float* b, int64_t positions, float* y) {
  for (int64_t s = 0; s < positions; ++s)
    for (int l = 0; l < 8; ++l) {
      const float u = a[s * kStrideA + l], v = b[s * kStrideB + l];
      y[s * 8 + l] = kOp == Arithmetic::Add ? u + v : kOp == Arithmetic::Sub ? u - v : kOp == Arithmetic::Mul ? u * v : u / v;
    }
}

template <Arithmetic kOp>
void arithmeticBlock(const float* a, bool fullA, const float* b, bool fullB, int64_t positions, float* y) {
  if (fullA && fullB) return arithmeticBlock<kOp, 8, 8>(a, b, positions, y);
  if (fullA) return arithmeticBlock<kOp, 8, 0>(a, b, positions, y);
  if (fullB) return arithmeticBlock<kOp, 0, 8>(a, b, positions, y);
  arithmeticBlock<kOp, 0, 0>(a, b, positions, y);
}

class Nc8hw8ElementwiseExecution : public Execution {
 public:
  Nc8hw8ElementwiseExecution(CPUBackend* backend, std::unique_ptr<Execution> inner, std::vector<Operand> operands,
                             Arithmetic arithmetic)
      : Execution(backend), inner_(std::move(inner)), operands_(std::move(operands)), arithmetic_(arithmetic) {}

  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    return layout == Layout::NC8HW8 || inner_->supportsLayout(layout, inputs, outputs);
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    packed_ = outputs[0]->layout == Layout::NC8HW8;
    if (!packed_) return inner_->onResize(inputs, outputs);
    views_.assign(inputs.size() + 1, RuntimeTensor());
    ins_.assign(inputs.size(), nullptr);
    constants_.resize(inputs.size());  // before any address of one is taken
    for (size_t i = 0; i < inputs.size(); ++i) {
      RuntimeTensor* t = inputs[i];
      if (!t || operands_[i] == Operand::AsIs) {
        ins_[i] = t;
      } else if (operands_[i] == Operand::Packed) {
        if (t->layout != Layout::NC8HW8) return Status::internal("packed elementwise op given an NCHW operand: " + t->name);
        ins_[i] = packedView(*t, &views_[i]);
      } else {
        OSPREY_RETURN_IF_ERROR(repackConstant(*t, outputs[0]->shape[1], i));
        ins_[i] = &constants_[i].tensor;
      }
    }
    outs_ = {packedView(*outputs[0], &views_.back())};
    return inner_->onResize(ins_, outs_);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (!packed_) return inner_->onExecute(inputs, outputs);
    if (arithmetic_ != Arithmetic::None && ins_.size() == 2) {
      runArithmetic(*outputs[0]);
    } else {
      OSPREY_RETURN_IF_ERROR(inner_->onExecute(ins_, outs_));
    }
    const Shape& s = outputs[0]->shape;
    zeroNc8hw8Padding(reinterpret_cast<float*>(outputs[0]->host()), s[0], s[1], s[2] * s[3]);
    return Status::ok();
  }

 private:
  struct PackedConstant {
    RuntimeTensor tensor;
    std::unique_ptr<MemObj> mem;
  };

  // Add / Sub / Mul / Div straight on the blocks: the reference's broadcast walk over the 5-D
  // views would step through rows of 8 against a per-channel operand.
  void runArithmetic(const RuntimeTensor& y) const {
    const int64_t batch = y.shape[0], blocks = blocksOf(y.shape[1]), positions = y.shape[2] * y.shape[3];
    float* out = reinterpret_cast<float*>(y.host());
    struct Source {
      const float* data;
      bool full;          // one vector per position, else one per channel block
      int64_t batchStep;  // floats from one image to the next (0: shared by the batch)
      float splat[8];     // a scalar operand, repeated
    } src[2];
    for (int i = 0; i < 2; ++i) {
      const RuntimeTensor* t = ins_[i];
      Source& s = src[i];
      if (operands_[i] == Operand::AsIs) {  // a scalar
        std::fill(s.splat, s.splat + 8, static_cast<float>(loadAsDouble(t->dtype, t->host(), 0)));
        s.data = s.splat, s.full = false, s.batchStep = 0;
        continue;
      }
      const Shape& shape = t->shape;  // [n, blocks, h, w, 8]
      s.data = reinterpret_cast<const float*>(t->host());
      s.full = shape[2] * shape[3] == positions && positions > 1;
      s.batchStep = shape[0] == 1 ? 0 : blocks * shape[2] * shape[3] * 8;
    }
    const int64_t perBlock = positions * 8;
    ThreadPool* pool = batch * blocks * perBlock >= 16384 ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, batch * blocks, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / blocks, b = task % blocks;
        const float* ptr[2];
        for (int i = 0; i < 2; ++i) {
          const Source& s = src[i];
          ptr[i] = s.data == s.splat ? s.splat : s.data + n * s.batchStep + b * (s.full ? perBlock : 8);
        }
        float* yb = out + task * perBlock;
        switch (arithmetic_) {
          case Arithmetic::Add: arithmeticBlock<Arithmetic::Add>(ptr[0], src[0].full, ptr[1], src[1].full, positions, yb); break;
          case Arithmetic::Sub: arithmeticBlock<Arithmetic::Sub>(ptr[0], src[0].full, ptr[1], src[1].full, positions, yb); break;
          case Arithmetic::Mul: arithmeticBlock<Arithmetic::Mul>(ptr[0], src[0].full, ptr[1], src[1].full, positions, yb); break;
          case Arithmetic::Div: arithmeticBlock<Arithmetic::Div>(ptr[0], src[0].full, ptr[1], src[1].full, positions, yb); break;
          case Arithmetic::None: break;
        }
      }
    });
  }

  static RuntimeTensor* packedView(const RuntimeTensor& t, RuntimeTensor* view) {
    view->name = t.name;
    view->dtype = t.dtype;
    view->shape = {t.shape[0], blocksOf(t.shape[1]), t.shape[2], t.shape[3], 8};
    view->chunk = t.chunk;
    view->backend = t.backend;
    return view;
  }

  // A constant with one value per channel, as [1, C/8, 1, 1, 8] with zero padding.
  Status repackConstant(const RuntimeTensor& t, int64_t channels, size_t index) {
    PackedConstant& c = constants_[index];
    if (c.mem) return Status::ok();
    c.tensor.name = t.name;
    c.tensor.dtype = DataType::Float32;
    c.tensor.shape = {1, blocksOf(channels), 1, 1, 8};
    c.mem = backend()->onAcquire(&c.tensor, StorageType::STATIC);  // zero-filled
    if (!c.mem) return Status::outOfMemory("cannot allocate a packed per-channel constant");
    std::memcpy(c.tensor.host(), t.host(), static_cast<size_t>(channels) * sizeof(float));
    return Status::ok();
  }

  std::unique_ptr<Execution> inner_;
  std::vector<Operand> operands_;
  Arithmetic arithmetic_;
  bool packed_ = false;
  std::vector<RuntimeTensor> views_;
  std::vector<PackedConstant> constants_;
  std::vector<RuntimeTensor*> ins_, outs_;
};

// The operand kinds of a packed elementwise op whose output is [N, C, H, W], or false where the
// packing would change what broadcasts against what.
bool classifyOperands(const std::vector<RuntimeTensor*>& inputs, const RuntimeTensor& y, std::vector<Operand>* kinds) {
  const Shape& out = y.shape;
  for (const RuntimeTensor* t : inputs) {
    if (!t) {
      kinds->push_back(Operand::AsIs);
      continue;
    }
    if (t->dtype != DataType::Float32 && t->elements() != 1) return false;
    if (t->elements() == 1 && t->shape.size() <= 4) {  // scalars broadcast in any layout
      if (!t->constData && t->shape.size() == 4) return false;  // but a 4-D activation would be packed
      kinds->push_back(Operand::AsIs);
      continue;
    }
    if (t->dtype != DataType::Float32) return false;
    if (!t->constData) {  // joins the output's group: [N, C, H, W] or a per-channel [N|1, C, 1, 1]
      if (t->shape.size() != 4 || t->shape[1] != out[1]) return false;
      const bool same = t->shape == out;
      const bool perChannel = (t->shape[0] == out[0] || t->shape[0] == 1) && t->shape[2] == 1 && t->shape[3] == 1;
      if (!same && !perChannel) return false;
      kinds->push_back(Operand::Packed);
      continue;
    }
    // A constant: one value per channel, [C], [C, 1, 1] or [1, C, 1, 1].
    const Shape& s = t->shape;
    const size_t r = s.size();
    const bool perChannel = r >= 3 && r <= 4 && s[r - 3] == out[1] && s[r - 2] == 1 && s[r - 1] == 1 && (r == 3 || s[0] == 1);
    if (!perChannel) return false;
    kinds->push_back(Operand::PerChannelConstant);
  }
  return true;
}

}  // namespace

std::unique_ptr<Execution> createNc8hw8PoolExecution(CPUBackend* backend, const OpRef& op,
                                                     const std::vector<RuntimeTensor*>& inputs,
                                                     const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.empty() || !inputs[0] || inputs[0]->dtype != DataType::Float32) return nullptr;
  if (inputs[0]->shape.size() != 4 || outputs.empty() || !outputs[0]) return nullptr;
  if (op.type == OpType::GlobalAveragePool) return std::make_unique<Nc8hw8GlobalAveragePoolExecution>(backend);
  if (outputs.size() > 1 && outputs[1]) return nullptr;  // Indices: computed in NCHW
  if (op.node->getInts("kernel_shape").size() != 2) return nullptr;
  if (op.type == OpType::MaxPool) return std::make_unique<Nc8hw8PoolExecution<true>>(backend, op);
  for (int64_t d : op.node->getInts("dilations"))  // the padded count assumes dilation 1
    if (d != 1) return nullptr;
  return std::make_unique<Nc8hw8PoolExecution<false>>(backend, op);
}

std::unique_ptr<Execution> createNc8hw8ElementwiseExecution(CPUBackend* backend, const OpRef& op,
                                                            const std::vector<RuntimeTensor*>& inputs,
                                                            const std::vector<RuntimeTensor*>& outputs,
                                                            std::unique_ptr<Execution>* nchw) {
  if (!isElementwiseUnary(op.type) && !isElementwiseBinary(op.type)) return nullptr;
  if (inputs.empty() || outputs.size() != 1 || !outputs[0]) return nullptr;
  const RuntimeTensor& y = *outputs[0];
  if (y.dtype != DataType::Float32 || y.shape.size() != 4) return nullptr;
  if (isElementwiseUnary(op.type) && (!inputs[0] || inputs[0]->shape != y.shape)) return nullptr;
  std::vector<Operand> kinds;
  if (!classifyOperands(inputs, y, &kinds)) return nullptr;
  return std::make_unique<Nc8hw8ElementwiseExecution>(backend, std::move(*nchw), std::move(kinds), arithmeticOf(op.type));
}

}  // namespace osprey
