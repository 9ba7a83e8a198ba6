// QuantizeLinear (float32 to uint8 / int8) and DequantizeLinear (uint8 / int8 to float32) on
// the CPU, per tensor or per axis, over the function table's row kernels. They equal the
// reference kernels bit for bit: the quotient x / scale in float, rounded half to even, NaN to 0,
// saturated; and (x - zero point) * scale, whose exact product float rounds once as the
// reference's double product then float does. Blocked scales and other types run the reference.
#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "core/layout.h"
#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

// Rows of `inner` elements sharing one scale and zero point: per tensor, the whole tensor in
// slices; per axis, one row per (outer, axis) index.
struct QuantRows {
  int64_t rows = 1, inner = 1, axisLen = 1;
  bool perAxis = false;
};

bool quantRows(const Node& node, const RuntimeTensor& x, const RuntimeTensor& scale, QuantRows* r) {
  if (node.getInt("block_size", 0) != 0) return false;
  if (scale.elements() == 1 && scale.shape.size() <= 1) {
    r->inner = x.elements();
    return true;
  }
  int64_t axis = 0;
  if (!normalizeAxis(node.getInt("axis", 1), static_cast<int64_t>(x.shape.size()), &axis).isOk()) return false;
  if (scale.shape != Shape{x.shape[axis]}) return false;
  r->perAxis = true;
  r->axisLen = x.shape[axis];
  r->rows = 1, r->inner = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (static_cast<int64_t>(d) <= axis) r->rows *= x.shape[d];
    if (static_cast<int64_t>(d) > axis) r->inner *= x.shape[d];
  }
  return true;
}

class QuantizeLinearExecution : public Execution {
 public:
  QuantizeLinearExecution(CPUBackend* backend, const OpRef& op, bool dequantize, const QuantRows& rows)
      : Execution(backend), node_(*op.node), dequantize_(dequantize), rows_(rows) {}

  // Per tensor, the bytes may be stored channels-last while the floats stay NCHW: the floats are
  // converted through scratch in the bytes' layout.
  bool bridgesLayouts() const override { return !rows_.perAxis; }
  bool favorsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override { return false; }
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || (layout == Layout::NHWC && !rows_.perAxis);
  }

  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    quantRows(node_, *inputs[0], *inputs[1], &rows_);
    const RuntimeTensor &floats = *(dequantize_ ? outputs[0] : inputs[0]), &bytes = *(dequantize_ ? inputs[0] : outputs[0]);
    converts_ = floats.layout != bytes.layout;
    if (!converts_) return Status::ok();
    if (rows_.perAxis) return Status::internal("per-axis " + node_.name + " across layouts");
    std::unique_ptr<MemObj> memory;
    return acquireByteScratch(backend(), floats.elements() * 4, "layout scratch", node_.name, &scratch_, &memory);
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const CpuFunctions& fn = cpuFunctions();
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const RuntimeTensor* zero = inputs.size() > 2 ? inputs[2] : nullptr;
    const float* scale = reinterpret_cast<const float*>(inputs[1]->host());
    const uint8_t* in = inputs[0]->host();
    uint8_t* out = outputs[0]->host();
    const RuntimeTensor &floats = *(dequantize_ ? outputs[0] : inputs[0]), &bytes = *(dequantize_ ? inputs[0] : outputs[0]);
    if (converts_ && !dequantize_) {
      OSPREY_RETURN_IF_ERROR(convertLayout(in, floats.layout, scratch_.host(), bytes.layout, floats.shape, 4, pool));
      in = scratch_.host();
    }
    if (converts_ && dequantize_) out = scratch_.host();
    const bool signedBytes = (dequantize_ ? inputs[0] : outputs[0])->dtype == DataType::Int8;
    // Per tensor: slices of one row for the threads; per axis: whole rows.
    const int64_t chunk = rows_.perAxis ? rows_.inner : 16384;
    const int64_t total = rows_.rows * rows_.inner, pieces = (total + chunk - 1) / chunk;
    parallelFor(pool, pieces, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t begin = p * chunk, n = std::min(chunk, total - begin);
        const int64_t param = rows_.perAxis ? p % rows_.axisLen : 0;
        const int32_t zp = byteAt(zero, param);
        if (dequantize_)
          fn.dequantizeRow(in + begin, n, signedBytes, zp, scale[param], reinterpret_cast<float*>(out) + begin);
        else
          fn.quantizeRow(reinterpret_cast<const float*>(in) + begin, n, scale[param], zp, signedBytes, out + begin);
      }
    });
    if (converts_ && dequantize_)
      return convertLayout(out, bytes.layout, outputs[0]->host(), floats.layout, floats.shape, 4, pool);
    return Status::ok();
  }

 private:
  const Node& node_;
  bool dequantize_;
  QuantRows rows_;
  bool converts_ = false;
  RuntimeTensor scratch_;
};

// DynamicQuantizeLinear: the range of x widened to hold 0, scale = range / 255, zero point =
// rint(clamp(-min / scale, 0, 255)) in float32 as the reference computes them, then x quantized
// by the row kernel (which the reference's formula equals, NaN to 0 included).
class DynamicQuantizeLinearExecution : public Execution {
 public:
  explicit DynamicQuantizeLinearExecution(CPUBackend* backend) : Execution(backend) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const float* x = reinterpret_cast<const float*>(inputs[0]->host());
    const int64_t n = inputs[0]->elements();
    constexpr int64_t kChunk = 16384;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    float mn = 0.f, mx = 0.f;
    rangeWithZero(pool, x, n, &mn, &mx);
    const float scale = (mx - mn) / 255.f;
    float zero = 0.f;
    if (scale != 0.f) zero = std::nearbyint(std::min(255.f, std::max(0.f, 0.f - mn / scale)));
    uint8_t* y = outputs[0]->host();
    if (scale == 0.f) {
      std::fill(y, y + n, static_cast<uint8_t>(zero));
    } else {
      const CpuFunctions& fn = cpuFunctions();
      parallelFor(pool, chunks, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c)
          fn.quantizeRow(x + c * kChunk, std::min(kChunk, n - c * kChunk), scale, static_cast<int32_t>(zero), false,
                         y + c * kChunk);
      });
    }
    if (outputs.size() > 1 && outputs[1]) reinterpret_cast<float*>(outputs[1]->host())[0] = scale;
    if (outputs.size() > 2 && outputs[2]) outputs[2]->host()[0] = static_cast<uint8_t>(zero);
    return Status::ok();
  }
};

}  // namespace

void quantize_row__scalar(const float* x, int64_t n, float scale, int32_t zp, bool signedOut, uint8_t* y) {
  const float lo = signedOut ? -128.f : 0.f, hi = signedOut ? 127.f : 255.f;
  for (int64_t i = 0; i < n; ++i) {
    float r = std::nearbyint(x[i] / scale) + static_cast<float>(zp);
    r = std::isnan(r) ? 0.f : std::min(hi, std::max(lo, r));
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(r));
  }
}

void dequantize_row__scalar(const uint8_t* x, int64_t n, bool signedIn, int32_t zp, float scale, float* y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>((signedIn ? static_cast<int32_t>(static_cast<int8_t>(x[i])) : x[i]) - zp) * scale;
}

std::unique_ptr<Execution> createQuantizeLinearExecution(CPUBackend* backend, const OpRef& op,
                                                         const std::vector<RuntimeTensor*>& inputs,
                                                         const std::vector<RuntimeTensor*>& outputs) {
  if (op.node && op.node->type == OpType::DynamicQuantizeLinear) {
    if (inputs.empty() || !inputs[0] || inputs[0]->dtype != DataType::Float32) return nullptr;
    return std::make_unique<DynamicQuantizeLinearExecution>(backend);
  }
  if (!op.node || inputs.size() < 2 || outputs.size() != 1 || !inputs[0] || !inputs[1]) return nullptr;
  const bool dequantize = op.node->type == OpType::DequantizeLinear;
  const RuntimeTensor &x = *inputs[0], &scale = *inputs[1];
  const RuntimeTensor* zero = inputs.size() > 2 ? inputs[2] : nullptr;
  if (scale.dtype != DataType::Float32) return nullptr;
  if (dequantize) {
    if (!isByteType(&x) || outputs[0]->dtype != DataType::Float32) return nullptr;
    if (zero && zero->dtype != x.dtype) return nullptr;
  } else {
    if (x.dtype != DataType::Float32 || !isByteType(outputs[0]) || op.node->getInt("precision", 0) != 0) return nullptr;
    if (zero && zero->dtype != outputs[0]->dtype) return nullptr;
  }
  if (zero && zero->shape != scale.shape && !(zero->elements() == 1 && scale.elements() == 1)) return nullptr;
  QuantRows rows;
  if (!quantRows(*op.node, x, scale, &rows)) return nullptr;
  return std::make_unique<QuantizeLinearExecution>(backend, op, dequantize, rows);
}

}  // namespace osprey
