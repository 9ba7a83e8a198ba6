// Integer matrix products on the integer GEMM (qgemm.h): QLinearMatMul, QGemm, MatMulInteger,
// MatMulIntegerToFloat and DynamicQuantizeMatMul. A's rows (every leading dimension) are packed
// per run; a constant 2-D B is packed once, any other B (an ONNX test's input, or one matrix per
// batch of A) at each run. Scales and zero points of A and Y are read at each run (a
// DynamicQuantizeLinear may compute them); B's must be constants. The requantisation is ONNX
// Runtime's, so outputs equal its kernels'; other cases run the reference kernels.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

// Where each op keeps its operands (-1: it has no such input).
struct Operands {
  int a = 0, aScale = -1, aZero = -1, b = -1, bScale = -1, bZero = -1, bias32 = -1, yScale = -1, yZero = -1,
      floatBias = -1;
  bool floatA = false;  // DynamicQuantizeMatMul quantises a float A itself
  bool int32Out = false;  // MatMulInteger: the int32 sums themselves
};

Operands operandsOf(OpType type) {
  Operands o;
  switch (type) {
    case OpType::QLinearMatMul:
      o.aScale = 1, o.aZero = 2, o.b = 3, o.bScale = 4, o.bZero = 5, o.yScale = 6, o.yZero = 7;
      break;
    case OpType::QGemm:
      o.aScale = 1, o.aZero = 2, o.b = 3, o.bScale = 4, o.bZero = 5, o.bias32 = 6, o.yScale = 7, o.yZero = 8;
      break;
    case OpType::MatMulIntegerToFloat:
      o.b = 1, o.aScale = 2, o.bScale = 3, o.aZero = 4, o.bZero = 5, o.floatBias = 6;
      break;
    case OpType::DynamicQuantizeMatMul:
      o.b = 1, o.bScale = 2, o.bZero = 3, o.floatBias = 4, o.floatA = true;
      break;
    case OpType::MatMulInteger:
      o.b = 1, o.aZero = 2, o.bZero = 3, o.int32Out = true;
      break;
    default: break;
  }
  return o;
}

// ONNX Runtime's dynamic uint8 parameters for a range holding 0: scale = range / 255 (1 when
// empty), zero point = round(clamp(-min / scale, 0, 255)).
void dynamicParameters(float lo, float hi, float* scale, int32_t* zeroPoint) {
  *scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  *zeroPoint = static_cast<int32_t>(std::nearbyint(std::max(0.0f, std::min(255.0f, 0.0f - lo / *scale))));
}

class QuantizedMatMulExecution : public Execution {
 public:
  QuantizedMatMulExecution(CPUBackend* backend, const OpRef& op, Operands operands)
      : Execution(backend), node_(*op.node), ops_(operands) {}

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    const RuntimeTensor& b = *inputs[ops_.b];
    const bool transB = node_.getInt("transB", 0) != 0;
    const size_t rank = b.shape.size();
    K_ = b.shape[transB ? rank - 1 : rank - 2];
    N_ = b.shape[transB ? rank - 2 : rank - 1];
    // A batched B (as many matrices as A has, no broadcasting) multiplies each of A's in turn.
    batches_ = K_ * N_ > 0 ? b.elements() / (K_ * N_) : 1;
    rows_ = K_ > 0 ? inputs[ops_.a]->elements() / K_ : 0;
    M_ = batches_ > 0 ? rows_ / batches_ : 0;
    bStrides_[0] = transB ? 1 : N_, bStrides_[1] = transB ? K_ : 1;
    // Constant weights are packed once; others (an activation, as attention's products have,
    // or an ONNX test's input) at each run, each thread packing the matrices it multiplies.
    perRunB_ = !b.constData || batches_ > 1;
    if (!perRunB_)
      OSPREY_RETURN_IF_ERROR(weights_.pack(backend(), node_.name, false, b.host(), b.dtype, b.host(), "matmul",
                                           bStrides_[0], bStrides_[1], K_, N_, inputAt(inputs, ops_.bZero)));
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const int64_t threads = pool ? pool->threads() : 1;
    const int64_t np = qgemmPaddedN(f, N_);
    slots_.resize(static_cast<size_t>(perRunB_ ? std::max<int64_t>(1, std::min(threads, batches_)) : 1));
    for (BatchSlot& slot : slots_) slot.columnOffset.assign(static_cast<size_t>(np), 0);
    bScale_.assign(static_cast<size_t>(np), 0.f);
    scale_.assign(static_cast<size_t>(np), 0.f);
    bias_.assign(static_cast<size_t>(np), 0);
    floatBias_.assign(static_cast<size_t>(np), 0.f);
    rowBytes_ = static_cast<int64_t>(qgemmPackedARowBytes(f, K_));
    rowSumsOffset_ = (rows_ * rowBytes_ + 3) / 4 * 4;
    quantizedAOffset_ = rowSumsOffset_ + rows_ * 4;
    packedBOffset_ = (quantizedAOffset_ + (ops_.floatA ? rows_ * K_ : 0) + 63) / 64 * 64;
    packedBBytes_ = (static_cast<int64_t>(QuantizedWeights::packedBytes(false, K_, N_)) + 63) / 64 * 64;
    const int64_t bytes = packedBOffset_ + (perRunB_ ? static_cast<int64_t>(slots_.size()) * packedBBytes_ : 0);
    std::unique_ptr<MemObj> memory;
    return acquireByteScratch(backend(), bytes, "packed rows of A", node_.name, &scratch_, &memory);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const QGemmFunctions& f = cpuFunctions().qgemm;
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    uint8_t* packedA = scratch_.host();
    const RuntimeTensor& b = *inputs[ops_.b];
    // Batch i's B into thread slot `slot` (batch 0 into slot 0 first: its zero points say
    // whether A's row sums are needed, before A is packed).
    const auto packB = [&](int64_t i, size_t slot) {
      slots_[slot].weights.packInto(false, b.host() + i * K_ * N_, b.dtype, bStrides_[0], bStrides_[1], K_, N_,
                                    inputAt(inputs, ops_.bZero), packedA + packedBOffset_ + slot * packedBBytes_);
    };
    if (perRunB_) packB(0, 0);
    const QuantizedWeights& firstB = perRunB_ ? slots_[0].weights : weights_;
    int32_t* rowSums = firstB.needsActivationSums() ? reinterpret_cast<int32_t*>(packedA + rowSumsOffset_) : nullptr;
    const RuntimeTensor& a = *inputs[ops_.a];
    const uint8_t* aBytes = a.host();
    float aScale = 1.f;
    int32_t za = 0;
    bool aSigned = a.dtype == DataType::Int8;
    if (ops_.floatA) {
      uint8_t* quantized = packedA + quantizedAOffset_;
      const float* x = reinterpret_cast<const float*>(a.host());
      float lo = 0.f, hi = 0.f;
      rangeWithZero(pool, x, rows_ * K_, &lo, &hi);
      dynamicParameters(lo, hi, &aScale, &za);
      // MlasQuantizeLinear (clamp, round, + zp) equals the row kernel's (round, + zp, clamp; NaN to 0).
      const QuantizeRowKernel quantize = cpuFunctions().quantizeRow;
      parallelFor(pool, rows_, [&](int64_t r0, int64_t r1) {
        quantize(x + r0 * K_, (r1 - r0) * K_, aScale, za, false, quantized + r0 * K_);
      });
      aBytes = quantized;
      aSigned = false;
    } else {
      if (ops_.aScale >= 0) aScale = reinterpret_cast<const float*>(inputs[ops_.aScale]->host())[0];
      za = activationZeroPoint(a.dtype, byteAt(inputAt(inputs, ops_.aZero), 0));
    }
    QGemmOperandBytes bytes;
    bytes.flip = aSigned;
    bytes.zeroPoints = &za;
    parallelFor(pool, rows_, [&](int64_t r0, int64_t r1) {
      qgemmPackA(f, aBytes + r0 * K_, K_, r1 - r0, K_, bytes, packedA + r0 * rowBytes_, rowSums ? rowSums + r0 : nullptr);
    });
    const int64_t elementBytes = static_cast<int64_t>(dataTypeSize(outputs[0]->dtype));
    QGemmOutputStage common;
    prepareStage(inputs, *outputs[0], aScale, &common);
    const RuntimeTensor* bias32 = inputAt(inputs, ops_.bias32);
    const auto multiply = [&](int64_t i, size_t slot, ThreadPool* gemmPool) {
      if (perRunB_ && i > 0) packB(i, slot);
      const QuantizedWeights& w = perRunB_ ? slots_[slot].weights : weights_;
      std::vector<int32_t>& offsets = slots_[slot].columnOffset;
      qgemmZeroPointOffsets(f, K_, N_, static_cast<int64_t>(offsets.size()), bias32 ? bias_.data() : nullptr, za,
                            w.sums(), w.zeroPoints(), offsets.data());
      QGemmOutputStage stage = common;
      stage.columnOffset = offsets.data();
      stage.columnZeroPoints = w.zeroPoints();
      stage.rowSums = rowSums ? rowSums + i * M_ : nullptr;
      qgemm(gemmPool, f, M_, N_, K_, packedA + i * M_ * rowBytes_, w.data(), stage,
            outputs[0]->host() + i * M_ * N_ * elementBytes, N_);
    };
    const auto slots = static_cast<int64_t>(slots_.size());
    if (slots > 1) {  // whole matrices per thread: batch 0 (packed above) falls to slot 0
      parallelFor(pool, slots, [&](int64_t s0, int64_t s1) {
        for (int64_t s = s0; s < s1; ++s)
          for (int64_t i = s * batches_ / slots; i < (s + 1) * batches_ / slots; ++i)
            multiply(i, static_cast<size_t>(s), nullptr);
      });
    } else {
      for (int64_t i = 0; i < batches_; ++i) multiply(i, 0, pool);
    }
    return Status::ok();
  }

 private:
  // The stage's part that every batch shares (the column offsets depend on each batch's B).
  void prepareStage(const std::vector<RuntimeTensor*>& inputs, const RuntimeTensor& y, float aScale,
                    QGemmOutputStage* stage) {
    const float alpha = node_.getFloat("alpha", 1.0f);
    const RuntimeTensor* yScale = inputAt(inputs, ops_.yScale);
    const bool quantizedOut = yScale != nullptr;
    const float ys = quantizedOut ? reinterpret_cast<const float*>(yScale->host())[0] : 1.f;
    if (const RuntimeTensor* bScale = inputAt(inputs, ops_.bScale)) {
      const float* bs = reinterpret_cast<const float*>(bScale->host());
      for (int64_t n = 0; n < N_; ++n) bScale_[n] = bs[bScale->elements() == 1 ? 0 : n];
    }
    for (int64_t n = 0; n < N_; ++n) {
      // The order ONNX Runtime multiplies in: QGemm alpha * a * b, then / y.
      float s = ops_.bias32 >= 0 ? alpha * aScale * bScale_[n] : aScale * bScale_[n];
      scale_[n] = quantizedOut ? s / ys : s;
    }
    const RuntimeTensor* bias32 = inputAt(inputs, ops_.bias32);
    if (bias32) std::memcpy(bias_.data(), bias32->host(), static_cast<size_t>(N_) * sizeof(int32_t));
    stage->scale = scale_.data();
    const RuntimeTensor* floatBias = inputAt(inputs, ops_.floatBias);
    if (floatBias) {
      std::memcpy(floatBias_.data(), floatBias->host(), static_cast<size_t>(N_) * sizeof(float));
      stage->floatBias = floatBias_.data();
    }
    stage->int32Output = ops_.int32Out;
    stage->floatOutput = !quantizedOut && !ops_.int32Out;
    if (quantizedOut) {
      stage->signedOutput = y.dtype == DataType::Int8;
      stage->lo = stage->signedOutput ? -128 : 0;
      stage->hi = stage->signedOutput ? 127 : 255;
      stage->zeroPoint = byteAt(inputAt(inputs, ops_.yZero), 0);
    }
  }

  const Node& node_;
  Operands ops_;
  int64_t M_ = 0, N_ = 0, K_ = 0, rowBytes_ = 0, batches_ = 1, rows_ = 0;
  int64_t bStrides_[2] = {0, 0};
  bool perRunB_ = false;
  int64_t rowSumsOffset_ = 0, quantizedAOffset_ = 0, packedBOffset_ = 0;
  int64_t packedBBytes_ = 0;
  QuantizedWeights weights_;  // a constant B
  // A B packed at each run: one per thread, each with its batch's column offsets (slot 0 also
  // holds the constant B's).
  struct BatchSlot {
    QuantizedWeights weights;
    std::vector<int32_t> columnOffset;
  };
  std::vector<BatchSlot> slots_;
  std::vector<float> bScale_, scale_, floatBias_;
  std::vector<int32_t> bias_;
  RuntimeTensor scratch_;
};

}  // namespace

std::unique_ptr<Execution> createQuantizedMatMulExecution(CPUBackend* backend, const OpRef& op,
                                                          const std::vector<RuntimeTensor*>& inputs,
                                                          const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || outputs.size() != 1) return nullptr;
  const Operands o = operandsOf(op.node->type);
  if (o.b < 0) return nullptr;
  // TFLite's fixed-point requantization (ops/fixed_point_requantize.h) runs in the reference kernel.
  if (op.node->getString("requantize", "") == "fixed_point") return nullptr;
  const RuntimeTensor *a = inputAt(inputs, o.a), *b = inputAt(inputs, o.b);
  if (!a || !b || !isByteType(b) || b->shape.size() < 2) return nullptr;
  // B of rank > 2: as many matrices as A's, batch dimensions equal (no broadcasting).
  if (b->shape.size() > 2 && (a->shape.size() != b->shape.size() || o.floatA ||
                              !std::equal(b->shape.begin(), b->shape.end() - 2, a->shape.begin())))
    return nullptr;
  if (o.floatA ? a->dtype != DataType::Float32 : !isByteType(a)) return nullptr;
  if (a->shape.size() < 2 || (op.node->type == OpType::QGemm && a->shape.size() != 2)) return nullptr;
  if (op.node->getInt("transA", 0) != 0) return nullptr;
  const bool transB = op.node->getInt("transB", 0) != 0;
  const size_t rank = b->shape.size();
  const int64_t K = b->shape[transB ? rank - 1 : rank - 2], N = b->shape[transB ? rank - 2 : rank - 1];
  if (a->shape.back() != K || K <= 0 || N <= 0) return nullptr;
  if (o.aScale >= 0 && !isFloatScalar(inputAt(inputs, o.aScale))) return nullptr;
  const RuntimeTensor* bScale = inputAt(inputs, o.bScale);
  if (o.bScale >= 0 && (!bScale || bScale->dtype != DataType::Float32 || !hasOneOr(bScale, N))) return nullptr;
  const RuntimeTensor* bZero = inputAt(inputs, o.bZero);
  if (bZero && (bZero->dtype != b->dtype || !hasOneOr(bZero, N))) return nullptr;
  const RuntimeTensor* aZero = inputAt(inputs, o.aZero);
  if (aZero && (aZero->dtype != a->dtype || aZero->elements() != 1)) return nullptr;
  const RuntimeTensor* yScale = inputAt(inputs, o.yScale);
  if (yScale && !isFloatScalar(yScale)) return nullptr;
  const RuntimeTensor* yZero = inputAt(inputs, o.yZero);
  if (yZero && (!isByteType(yZero) || yZero->elements() != 1 || yZero->dtype != outputs[0]->dtype)) return nullptr;
  const DataType out = outputs[0]->dtype;
  if (o.int32Out ? out != DataType::Int32 : yScale ? !isByteType(outputs[0]) : out != DataType::Float32) return nullptr;
  const RuntimeTensor* bias32 = inputAt(inputs, o.bias32);
  if (bias32 && (bias32->dtype != DataType::Int32 || bias32->elements() != N || bias32->shape.back() != N))
    return nullptr;
  const RuntimeTensor* floatBias = inputAt(inputs, o.floatBias);
  if (floatBias && (floatBias->dtype != DataType::Float32 || floatBias->shape != Shape{N})) return nullptr;
  return std::make_unique<QuantizedMatMulExecution>(backend, op, o);
}

}  // namespace osprey
