// QLinearAdd and QLinearMul on the CPU (quantized_elementwise.h). The broadcast is collapsed
// into runs of the innermost span, along which each operand either steps or repeats one value;
// each run (or piece of a long one) is one call of a loop, vectorised where the CPU table allows.
// The float32 steps are the reference's (src/ops/qlinear_contrib.cpp, docs/quantization.md), so
// the bytes are identical: QLinearAdd's constant sums the zero-point terms in the reference's
// order, and a repeated operand is folded into it first, as ORT's "scalar" loops do.
#include "backends/cpu/kernels/quantized_elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/byte_lookup.h"
#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "core/layout.h"
#include "ops/fixed_point_add.h"
#include "ops/op_util.h"
#include "ops/qlinear_lookup.h"
#include "ops/quant_util.h"

namespace osprey {

namespace {

// ---- Scalar loops (any CPU, and the process-wide "scalar" ISA limit) ----

template <class T>
struct ScalarLoops {
  static float load(const uint8_t* p, int64_t i) { return static_cast<float>(reinterpret_cast<const T*>(p)[i]); }
  static int32_t loadInt(const uint8_t* p, int64_t i) { return reinterpret_cast<const T*>(p)[i]; }
  static void store(uint8_t* y, int64_t i, float v) {
    using Limits = std::numeric_limits<T>;
    reinterpret_cast<T*>(y)[i] = static_cast<T>(std::clamp<int32_t>(quant::cvtps(v), Limits::min(), Limits::max()));
  }
  static void add(const uint8_t* a, const uint8_t* b, int64_t n, float ratioA, float ratioB, float fixed, uint8_t* y) {
    for (int64_t i = 0; i < n; ++i) store(y, i, std::fmaf(load(a, i), ratioA, std::fmaf(load(b, i), ratioB, fixed)));
  }
  static void addRepeated(const uint8_t* x, int64_t n, float ratio, float constant, uint8_t* y) {
    for (int64_t i = 0; i < n; ++i) store(y, i, std::fmaf(load(x, i), ratio, constant));
  }
  static void mul(const uint8_t* a, const uint8_t* b, int64_t n, int32_t zeroA, int32_t zeroB, float ratio,
                  float zeroC, uint8_t* y) {
    for (int64_t i = 0; i < n; ++i) {
      const float scaled = static_cast<float>((loadInt(a, i) - zeroA) * (loadInt(b, i) - zeroB)) * ratio;
      store(y, i, scaled + zeroC);
    }
  }
  static void mulRepeated(const uint8_t* x, int64_t n, int32_t zeroX, int32_t factor, float ratio, float zeroC,
                          uint8_t* y) {
    for (int64_t i = 0; i < n; ++i) {
      const float scaled = static_cast<float>((loadInt(x, i) - zeroX) * factor) * ratio;
      store(y, i, scaled + zeroC);
    }
  }
  static void fixedPointAdd(const uint8_t* a, const uint8_t* b, int64_t n, int32_t bias, int32_t mA, int32_t mB,
                            int shift, int32_t zeroC, uint8_t* y) {
    using Limits = std::numeric_limits<T>;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t sum = static_cast<uint32_t>(bias) + static_cast<uint32_t>(loadInt(a, i) * mA);
      if (b) sum += static_cast<uint32_t>(loadInt(b, i) * mB);
      const int32_t v = (static_cast<int32_t>(sum) >> shift) + zeroC;
      reinterpret_cast<T*>(y)[i] = static_cast<T>(std::clamp<int32_t>(v, Limits::min(), Limits::max()));
    }
  }
  static QuantizedBinaryLoops table() { return {add, addRepeated, mul, mulRepeated, fixedPointAdd}; }
};

// The loops for one byte type, chosen once: vector ones unless the CPU table is the scalar one
// (no AVX2+FMA, or the process-wide ISA limit says scalar).
const QuantizedBinaryLoops& binaryLoops(bool isSigned) {
  static const auto choose = [](bool s) {
#if defined(__x86_64__) || defined(_M_X64)
    if (std::strcmp(cpuFunctions().isa, "scalar") != 0) return quantizedBinaryLoopsAvx2(s);
#endif
    return quantizedBinaryLoopsScalar(s);
  };
  static const QuantizedBinaryLoops unsignedLoops = choose(false), signedLoops = choose(true);
  return isSigned ? signedLoops : unsignedLoops;
}

// ---- The broadcast as runs ----

// The output as `runs` runs of `inner` elements. Run r's operands start at the offsets its index
// gives over the outer dims (collapsed, outermost first; stride 0 where an operand repeats);
// inside a run an operand steps by one or, when it repeats, stays on one value.
struct RunPlan {
  int64_t inner = 1, runs = 1;
  bool aRepeats = false, bRepeats = false;
  std::vector<int64_t> outerSizes, aStrides, bStrides;

  void offsetsOf(int64_t run, int64_t* a, int64_t* b) const {
    *a = *b = 0;
    for (size_t d = outerSizes.size(); d-- > 0;) {
      const int64_t i = run % outerSizes[d];
      run /= outerSizes[d];
      *a += i * aStrides[d];
      *b += i * bStrides[d];
    }
  }
};

// Dims of size 1 in the output are dropped; neighbours where each operand steps (or repeats) in
// both merge, so the innermost merged dim is the reference's innermost span.
RunPlan planRuns(const Shape& a, const Shape& b, const Shape& out) {
  const std::vector<int64_t> sa = broadcastStrides(a, out.size(), out), sb = broadcastStrides(b, out.size(), out);
  std::vector<int64_t> sizes, aStrides, bStrides;  // merged dims, outermost first
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    const bool mergeable =
        !sizes.empty() && (aStrides.back() == 0) == (sa[d] == 0) && (bStrides.back() == 0) == (sb[d] == 0);
    if (mergeable) {
      sizes.back() *= out[d];
      aStrides.back() = sa[d];
      bStrides.back() = sb[d];
    } else {
      sizes.push_back(out[d]);
      aStrides.push_back(sa[d]);
      bStrides.push_back(sb[d]);
    }
  }
  RunPlan plan;
  if (sizes.empty()) return plan;  // one element: both operands "step", as the reference's span
  plan.inner = sizes.back();
  plan.aRepeats = aStrides.back() == 0;
  plan.bRepeats = bStrides.back() == 0;
  sizes.pop_back(), aStrides.pop_back(), bStrides.pop_back();
  plan.runs = shapeElements(sizes);
  plan.outerSizes = std::move(sizes), plan.aStrides = std::move(aStrides), plan.bStrides = std::move(bStrides);
  return plan;
}

// A long run is cut into pieces so that a same-shape tensor (one run) still spreads over threads.
constexpr int64_t kPiece = 16384;
constexpr int64_t kParallelMin = 32768;  // fewer output elements run on the calling thread

// A rank-4 output's operand as stored channels-last: its shape padded to rank 4, in [N, H, W, C]
// order. Its bytes are that shape's when it is stored NHWC itself, or when NHWC and NCHW store it
// alike (a pooled [N, C, 1, 1] vector, a per-channel [C, 1, 1] constant).
Shape channelsLastOf(const Shape& shape) {
  Shape padded(4 - std::min<size_t>(4, shape.size()), 1);
  padded.insert(padded.end(), shape.begin(), shape.end());
  return {padded[0], padded[2], padded[3], padded[1]};
}

bool storedAlikeInNhwc(const RuntimeTensor* t) {
  Shape padded(4 - std::min<size_t>(4, t->shape.size()), 1);
  padded.insert(padded.end(), t->shape.begin(), t->shape.end());
  return !layoutMatters(padded, Layout::NHWC);
}

class QuantizedBinaryExecution : public Execution {
 public:
  QuantizedBinaryExecution(CPUBackend* backend, bool isAdd, bool isSigned, bool fixedPoint)
      : Execution(backend), isAdd_(isAdd), fixedPoint_(fixedPoint), loops_(binaryLoops(isSigned)) {}

  // Channels-last: the broadcast planned over the stored shapes, where every operand that the
  // pipeline does not store NHWC (constants, lower ranks) has the same bytes in both layouts.
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    if (layout == Layout::NCHW) return true;
    if (layout != Layout::NHWC || outputs[0]->shape.size() != 4) return false;
    for (const RuntimeTensor* t : {inputs[0], inputs[3]})
      if (t->shape.size() > 4 || ((t->constData || t->shape.size() != 4) && !storedAlikeInNhwc(t))) return false;
    return true;
  }

  bool favorsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override { return false; }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (outputs[0]->layout == Layout::NHWC)
      plan_ = planRuns(channelsLastOf(inputs[0]->shape), channelsLastOf(inputs[3]->shape),
                       channelsLastOf(outputs[0]->shape));
    else
      plan_ = planRuns(inputs[0]->shape, inputs[3]->shape, outputs[0]->shape);
    return Status::ok();
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RunPlan& p = plan_;
    if (p.runs * p.inner == 0) return Status::ok();
    const uint8_t *a = inputs[0]->host(), *b = inputs[3]->host();
    uint8_t* y = outputs[0]->host();
    const float sA = scaleOf(inputs[1]), sB = scaleOf(inputs[4]), sC = scaleOf(inputs[6]);
    const int32_t zA = byteAt(inputs[2], 0), zB = byteAt(inputs[5], 0);
    const int32_t zC = inputs.size() > 7 ? byteAt(inputs[7], 0) : 0;
    // Add: the reference's ratios and constant (which sums its two zero-point terms B first when
    // A repeats, as ORT does; a float sum of two terms is the same either way).
    const float rA = sA / sC, rB = sB / sC;
    const float fixed = static_cast<float>(zC) - (rA * static_cast<float>(zA) + rB * static_cast<float>(zB));
    // Mul: one ratio and the output zero point, added after the product is scaled.
    const float mulRatio = sA * sB / sC, zCf = static_cast<float>(zC);
    const bool isSigned = inputs[0]->dtype == DataType::Int8;
    FixedPointAdd fixedPoint, swapped;
    if (fixedPoint_) {
      fixedPoint = fixedPointAdd(sA, sB, sC, zA, zB);
      swapped = fixedPoint;
      std::swap(swapped.multiplierA, swapped.multiplierB);
    }
    auto value = [isSigned](const uint8_t* x) {
      return isSigned ? static_cast<int32_t>(static_cast<int8_t>(*x)) : static_cast<int32_t>(*x);
    };
    const int64_t pieces = (p.inner + kPiece - 1) / kPiece;
    ThreadPool* pool = p.runs * p.inner >= kParallelMin ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, p.runs * pieces, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t run = t / pieces, begin = (t % pieces) * kPiece, n = std::min(kPiece, p.inner - begin);
        int64_t oa, ob;
        p.offsetsOf(run, &oa, &ob);
        const uint8_t* as = a + oa + (p.aRepeats ? 0 : begin);
        const uint8_t* bs = b + ob + (p.bRepeats ? 0 : begin);
        uint8_t* ys = y + run * p.inner + begin;
        if (isAdd_ && fixedPoint.valid) {
          // A repeated A is B's partner: swap so that the repeated operand is always the second.
          const bool swap = p.aRepeats && !p.bRepeats;
          const FixedPointAdd& q = swap ? swapped : fixedPoint;
          const uint8_t *first = swap ? bs : as, *second = swap ? as : bs;
          const bool repeats = p.bRepeats || p.aRepeats;
          const int64_t bias = q.bias + (repeats ? value(second) * q.multiplierB : 0);
          loops_.fixedPointAdd(first, repeats ? nullptr : second, n, static_cast<int32_t>(static_cast<uint32_t>(bias)),
                               static_cast<int32_t>(q.multiplierA), static_cast<int32_t>(q.multiplierB), q.shift, zC, ys);
        } else if (isAdd_) {
          // The repeated value folded into the constant: fixed + x * ratio, rounded twice.
          if (p.bRepeats) {
            loops_.addRepeated(as, n, rA, fixed + static_cast<float>(value(bs)) * rB, ys);
          } else if (p.aRepeats) {
            loops_.addRepeated(bs, n, rB, fixed + static_cast<float>(value(as)) * rA, ys);
          } else {
            loops_.add(as, bs, n, rA, rB, fixed, ys);
          }
        } else if (p.bRepeats) {
          loops_.mulRepeated(as, n, zA, value(bs) - zB, mulRatio, zCf, ys);
        } else if (p.aRepeats) {
          loops_.mulRepeated(bs, n, zB, value(as) - zA, mulRatio, zCf, ys);
        } else {
          loops_.mul(as, bs, n, zA, zB, mulRatio, zCf, ys);
        }
      }
    });
    return Status::ok();
  }

 private:
  static float scaleOf(const RuntimeTensor* t) { return reinterpret_cast<const float*>(t->host())[0]; }

  bool isAdd_, fixedPoint_;
  const QuantizedBinaryLoops& loops_;
  RunPlan plan_;
};

// QLinearSigmoid, QLinearLeakyRelu: the reference's table (ops/qlinear_lookup.h), built when
// the scales or zero points change, then one byte load per element.
class QuantizedLookupExecution : public Execution {
 public:
  QuantizedLookupExecution(CPUBackend* backend, const Node& node)
      : Execution(backend), node_(node), lookup_(byteLookupKernel(cpuFunctions().isa)) {}
  // Byte by byte: any layout its input and output share.
  bool supportsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return true;
  }
  bool favorsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override { return false; }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor* x = inputs[0];
    const float sX = reinterpret_cast<const float*>(inputs[1]->host())[0];
    const float sY = reinterpret_cast<const float*>(inputs[3]->host())[0];
    const int32_t zX = byteAt(inputAt(inputs, 2), 0), zY = byteAt(inputAt(inputs, 4), 0);
    if (!built_ || sX != sX_ || sY != sY_ || zX != zX_ || zY != zY_) {
      int32_t table[256];
      qlinearLookupTable(node_, x->dtype, sX, zX, sY, zY, table);
      for (int i = 0; i < 256; ++i) table_[i] = static_cast<uint8_t>(table[i]);
      sX_ = sX, sY_ = sY, zX_ = zX, zY_ = zY, built_ = true;
    }
    const uint8_t* in = x->host();
    uint8_t* out = outputs[0]->host();
    const int64_t n = x->elements();
    lookupBytes(static_cast<CPUBackend*>(backend())->threadPool(), lookup_, table_, in, n, out);
    return Status::ok();
  }

 private:
  Node node_;
  ByteLookupKernel lookup_;
  uint8_t table_[256] = {};
  float sX_ = 0, sY_ = 0;
  int32_t zX_ = 0, zY_ = 0;
  bool built_ = false;
};

// A per-tensor zero point of `dtype`, or none.
bool isZeroPointOf(const std::vector<RuntimeTensor*>& inputs, size_t i, DataType dtype) {
  const RuntimeTensor* z = i < inputs.size() ? inputs[i] : nullptr;
  return !z || (z->dtype == dtype && z->elements() == 1);
}

}  // namespace

std::unique_ptr<Execution> createQuantizedLookupExecution(CPUBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || (op.type != OpType::QLinearSigmoid && op.type != OpType::QLinearLeakyRelu)) return nullptr;
  if (inputs.size() < 4 || inputs.size() > 5 || outputs.size() != 1 || !outputs[0]) return nullptr;
  const RuntimeTensor *x = inputs[0], *y = outputs[0];
  if (!isByteType(x) || y->dtype != x->dtype || y->shape != x->shape || y->layout != x->layout) return nullptr;
  if (!isFloatScalar(inputs[1]) || !isFloatScalar(inputs[3])) return nullptr;
  if (!isZeroPointOf(inputs, 2, x->dtype) || !isZeroPointOf(inputs, 4, x->dtype)) return nullptr;
  return std::make_unique<QuantizedLookupExecution>(backend, *op.node);
}

QuantizedBinaryLoops quantizedBinaryLoopsScalar(bool isSigned) {
  return isSigned ? ScalarLoops<int8_t>::table() : ScalarLoops<uint8_t>::table();
}

std::unique_ptr<Execution> createQuantizedBinaryExecution(CPUBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || (op.type != OpType::QLinearAdd && op.type != OpType::QLinearMul)) return nullptr;
  if (inputs.size() < 7 || inputs.size() > 8 || outputs.size() != 1 || !outputs[0]) return nullptr;
  const RuntimeTensor *a = inputs[0], *b = inputs[3], *y = outputs[0];
  if (!isByteType(a) || !b || b->dtype != a->dtype || y->dtype != a->dtype) return nullptr;
  for (const RuntimeTensor* t : {a, b, y})
    if (t->layout != Layout::NCHW) return nullptr;
  for (size_t i : {1, 4, 6})
    if (!isFloatScalar(inputs[i])) return nullptr;
  for (size_t i : {2, 5, 7})
    if (!isZeroPointOf(inputs, i, a->dtype)) return nullptr;
  Shape shape;
  if (!broadcastShapes(a->shape, b->shape, &shape).isOk() || shape != y->shape) return nullptr;
  const bool fixedPoint = op.node->getString("requantize", "") == "fixed_point";
  return std::make_unique<QuantizedBinaryExecution>(backend, op.type == OpType::QLinearAdd, a->dtype == DataType::Int8,
                                                    fixedPoint);
}

}  // namespace osprey
