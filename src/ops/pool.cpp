// MaxPool (with the optional Indices output), AveragePool, GlobalAveragePool and
// GlobalMaxPool, over 1 to 3 spatial dimensions. Windows are placed as in PyTorch and ONNX
// Runtime: window o starts at o*stride - pad_begin; padding never wins a max and counts in an
// average only with count_include_pad (and then only the explicit padding, not the extra room
// ceil_mode adds at the end).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "ops/op_util.h"
#include "ops/window.h"

namespace osprey {

namespace {

enum class PoolKind { Max, Average };

struct PoolSetup {
  int64_t batch = 0, channels = 0;
  Window window;
  bool countIncludePad = false;
  bool columnMajorIndices = false;  // storage_order = 1
};

Status readFlag(const Node& node, const char* name, bool* out) {
  int64_t v = node.getInt(name, 0);
  if (v != 0 && v != 1) return Status::invalidModel(std::string(name) + " must be 0 or 1, got " + std::to_string(v));
  *out = v == 1;
  return Status::ok();
}

Status setupPool(const Node& node, const TensorViews& inputs, PoolKind kind, PoolSetup* s) {
  const TensorView& x = inputs[0];
  const DataType t = x.dtype;
  const bool floatType =
      t == DataType::Float32 || t == DataType::Float64 || t == DataType::Float16 || t == DataType::BFloat16;
  const bool byteType = t == DataType::Int8 || t == DataType::UInt8;
  if (!floatType && !(kind == PoolKind::Max && byteType)) return Status::unsupported(dtypeError(x, "X"));
  if (x.rank() < 3)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 3 or more (N, C, spatial...)");
  if (!node.hasAttr("kernel_shape")) return Status::invalidModel("kernel_shape is required");
  s->batch = x.shape[0];
  s->channels = x.shape[1];
  bool ceilMode = false;
  OSPREY_RETURN_IF_ERROR(readFlag(node, "ceil_mode", &ceilMode));
  OSPREY_RETURN_IF_ERROR(readFlag(node, "count_include_pad", &s->countIncludePad));
  OSPREY_RETURN_IF_ERROR(readFlag(node, "storage_order", &s->columnMajorIndices));
  OSPREY_RETURN_IF_ERROR(
      readWindow(node, Shape(x.shape.begin() + 2, x.shape.end()), node.getInts("kernel_shape"), &s->window));
  return resolveForwardWindow(ceilMode, &s->window);
}

template <PoolKind kKind>
Status poolShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  PoolSetup s;
  OSPREY_RETURN_IF_ERROR(setupPool(node, inputs, kKind, &s));
  Shape shape{s.batch, s.channels};
  for (int64_t d : s.window.outShape()) shape.push_back(d);
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = shape;
  if (outputs.size() > 1) {
    outputs[1].dtype = DataType::Int64;
    outputs[1].shape = shape;
  }
  return Status::ok();
}

// Pools every (n, c) plane: y[plane][o] over the taps of window o that fall inside the input.
template <class T>
void poolPlanes(const PoolSetup& s, PoolKind kind, const T* x, T* y, int64_t* indices, ThreadPool* pool) {
  using C = ComputeType<T>;
  const Window& g = s.window;
  const int64_t inSize = g.inSize(), outSize = g.outSize();
  parallelFor(pool, s.batch * s.channels, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* xp = x + plane * inSize;
      for (int64_t o = 0; o < outSize; ++o) {
        const int64_t oPos[3] = {o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
        int64_t start[3];
        for (int sl = 0; sl < 3; ++sl) start[sl] = oPos[sl] * g.stride[sl] - g.padBegin[sl];
        C best = std::numeric_limits<C>::lowest();
        int64_t bestIndex = -1;
        double sum = 0;
        int64_t valid = 0, padded = 0;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
          const int64_t id = start[0] + kd * g.dilation[0];
          for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
            const int64_t ih = start[1] + kh * g.dilation[1];
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              const int64_t iw = start[2] + kw * g.dilation[2];
              const int64_t pos[3] = {id, ih, iw};
              bool inside = true, inPadded = true;
              for (int sl = 0; sl < 3; ++sl) {
                inside = inside && pos[sl] >= 0 && pos[sl] < g.in[sl];
                inPadded = inPadded && pos[sl] >= -g.padBegin[sl] && pos[sl] < g.in[sl] + g.padEnd[sl];
              }
              padded += inPadded;
              if (!inside) continue;
              const int64_t at = (id * g.in[1] + ih) * g.in[2] + iw;
              const C v = static_cast<C>(xp[at]);
              // The first value always counts, later ones only when strictly greater: ties keep
              // the first index and a leading NaN propagates, as in the ONNX reference.
              if (kind == PoolKind::Max && (valid == 0 || v > best)) {
                best = v;
                bestIndex = s.columnMajorIndices ? id + g.in[0] * (ih + g.in[1] * iw) : at;
              }
              sum += static_cast<double>(v);
              ++valid;
            }
          }
        }
        if (kind == PoolKind::Max) {
          y[plane * outSize + o] = static_cast<T>(best);
          if (indices) indices[plane * outSize + o] = bestIndex < 0 ? -1 : plane * inSize + bestIndex;
        } else {
          const int64_t count = s.countIncludePad ? padded : valid;
          y[plane * outSize + o] = static_cast<T>(static_cast<C>(count ? sum / count : std::nan("")));
        }
      }
    }
  });
}

template <PoolKind kKind>
Status poolReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool* pool) {
  PoolSetup s;
  OSPREY_RETURN_IF_ERROR(setupPool(node, inputs, kKind, &s));
  int64_t* indices = outputs.size() > 1 && outputs[1].present ? outputs[1].as<int64_t>() : nullptr;
  bool ok = dispatchNumeric(inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatLike<T> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)
      poolPlanes(s, kKind, inputs[0].as<const T>(), outputs[0].as<T>(), indices, pool);
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(inputs[0], "X"));
}

Status globalPoolShape(const Node&, const TensorViews& inputs, TensorViews& outputs) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(inputs[0], "X"));
  const TensorView& x = inputs[0];
  if (x.rank() < 2)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 2 or more (N, C, spatial...)");
  outputs[0].dtype = x.dtype;
  outputs[0].shape = Shape(x.shape.size(), 1);
  outputs[0].shape[0] = x.shape[0];
  outputs[0].shape[1] = x.shape[1];
  return Status::ok();
}

template <PoolKind kKind>
Status globalPoolReference(const Node&, const TensorViews& inputs, TensorViews& outputs, ThreadPool* pool) {
  const TensorView& x = inputs[0];
  const int64_t planes = x.shape[0] * x.shape[1];
  const int64_t size = planes ? x.elements() / planes : 0;
  bool ok = dispatchFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xs = x.as<const T>();
    T* ys = outputs[0].as<T>();
    parallelFor(pool, planes, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* xp = xs + p * size;
        if (kKind == PoolKind::Max) {
          C best = size ? static_cast<C>(xp[0]) : std::numeric_limits<C>::lowest();
          for (int64_t i = 1; i < size; ++i) best = static_cast<C>(xp[i]) > best ? static_cast<C>(xp[i]) : best;
          ys[p] = static_cast<T>(best);
        } else {
          double sum = 0;
          for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(static_cast<C>(xp[i]));
          ys[p] = static_cast<T>(static_cast<C>(size ? sum / size : std::nan("")));
        }
      }
    });
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(x, "X"));
}

}  // namespace

const OpDef kOpDef_MaxPool = {
    OpType::MaxPool, "MaxPool", 1, 1, 1, 2, poolShape<PoolKind::Max>, poolReference<PoolKind::Max>, nullptr, 0, false};
const OpDef kOpDef_AveragePool = {OpType::AveragePool,
                                  "AveragePool",
                                  1,
                                  1,
                                  1,
                                  1,
                                  poolShape<PoolKind::Average>,
                                  poolReference<PoolKind::Average>,
                                  nullptr,
                                  0,
                                  false};
const OpDef kOpDef_GlobalAveragePool = {OpType::GlobalAveragePool,
                                        "GlobalAveragePool",
                                        1,
                                        1,
                                        1,
                                        1,
                                        globalPoolShape,
                                        globalPoolReference<PoolKind::Average>,
                                        nullptr,
                                        0,
                                        false};
const OpDef kOpDef_GlobalMaxPool = {OpType::GlobalMaxPool,
                                    "GlobalMaxPool",
                                    1,
                                    1,
                                    1,
                                    1,
                                    globalPoolShape,
                                    globalPoolReference<PoolKind::Max>,
                                    nullptr,
                                    0,
                                    false};

}  // namespace osprey
