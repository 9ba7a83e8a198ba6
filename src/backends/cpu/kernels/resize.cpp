// Resize of float32 NCHW images, and of int8 / uint8 codes rounded half up (integer_rounding),
// nearest, linear, cubic or antialiased, every coordinate mode:
// the reference kernel's taps (resizeTaps, made once per input shape when the scales or sizes
// are constants), applied plane by plane in float and separably: each input row resampled
// horizontally once, then each output row blends its vertical taps' rows. The reference instead
// visits every tap of every output element through N-d index arithmetic in double.
// Resizes of the batch or channel axes go to the reference kernel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "core/thread_pool.h"
#include "ops/resize.h"

namespace osprey {

namespace {

// One axis's taps in float, flattened: output x reads index[first[x] .. first[x+1]).
struct FloatTaps {
  std::vector<int32_t> first, index;
  std::vector<float> weight;
  std::vector<uint8_t> outside;
};

FloatTaps toFloat(const ResizeAxisTaps& t) {
  FloatTaps f;
  for (size_t x = 0; x + 1 < t.first.size(); ++x) {
    f.first.push_back(static_cast<int32_t>(f.index.size()));
    f.outside.push_back(t.outside[x]);
    for (size_t k = t.first[x]; k < t.first[x + 1]; ++k) {
      f.index.push_back(static_cast<int32_t>(t.taps[k].index));
      f.weight.push_back(static_cast<float>(t.taps[k].weight));
    }
  }
  f.first.push_back(static_cast<int32_t>(f.index.size()));
  return f;
}

// True when output x of the axis is input x alone: the axis is not resized.
bool identity(const ResizeAxisTaps& t) {
  for (size_t x = 0; x + 1 < t.first.size(); ++x)
    if (t.outside[x] || t.first[x + 1] != t.first[x] + 1 || t.taps[t.first[x]].index != static_cast<int64_t>(x) ||
        t.taps[t.first[x]].weight != 1.0)
      return false;
  return true;
}

// What the row loop needs of the taps, made with them (once per input shape when the scales are
// constants): columns of at most two taps (nearest, linear without antialiasing) as two uniform
// arrays, a missing second tap weighing 0, so the row loop has no inner loop of varying length;
// nearest 2x (each input column read twice in a row: stored twice instead of gathered); whether
// every output row is one input row, unweighted (or outside); the input rows some output row reads.
struct ColumnPlan {
  int32_t maxTaps = 0;
  bool gather = false, doubled = false, nearestRows = true;
  std::vector<int32_t> i0, i1;
  std::vector<float> w0, w1;
  std::vector<uint8_t> usedRows;
};

ColumnPlan planColumns(const FloatTaps& rows, const FloatTaps& cols, int64_t inH, int64_t inW) {
  ColumnPlan c;
  const int64_t outW = static_cast<int64_t>(cols.first.size()) - 1;
  bool unitWeights = true;
  for (int64_t ox = 0; ox < outW; ++ox) c.maxTaps = std::max(c.maxTaps, cols.first[ox + 1] - cols.first[ox]);
  for (float w : cols.weight) unitWeights = unitWeights && w == 1.f;
  c.i0.assign(outW, 0), c.i1.assign(outW, 0), c.w0.assign(outW, 0.f), c.w1.assign(outW, 0.f);
  if (c.maxTaps <= 2)
    for (int64_t ox = 0; ox < outW; ++ox) {
      const int32_t k = cols.first[ox], n = cols.first[ox + 1] - k;
      if (n > 0) c.i0[ox] = c.i1[ox] = cols.index[k], c.w0[ox] = cols.weight[k];
      if (n > 1) c.i1[ox] = cols.index[k + 1], c.w1[ox] = cols.weight[k + 1];
    }
  c.gather = c.maxTaps == 1 && unitWeights;
  c.doubled = c.gather && outW == 2 * inW;
  for (int64_t ox = 0; c.doubled && ox < outW; ++ox) c.doubled = c.i0[ox] == ox / 2 && !cols.outside[ox];
  c.usedRows.assign(inH, 0);
  for (size_t oy = 0; oy + 1 < rows.first.size(); ++oy) {
    if (rows.outside[oy]) continue;
    for (int32_t v = rows.first[oy]; v < rows.first[oy + 1]; ++v) c.usedRows[rows.index[v]] = 1;
    c.nearestRows = c.nearestRows && rows.first[oy + 1] == rows.first[oy] + 1 && rows.weight[rows.first[oy]] == 1.f;
  }
  return c;
}

// Whether the scales / sizes / roi inputs are constants, so the taps depend on the shapes alone.
bool constantParameters(const std::vector<RuntimeTensor*>& inputs) {
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i] && !inputs[i]->constData) return false;
  return true;
}

class ResizeExecution : public Execution {
 public:
  ResizeExecution(CPUBackend* backend, const OpRef& op) : Execution(backend), op_(op) {}

  // Codes may be channels-last where only the map is resized (the batch and channel taps are
  // the identity): each position's channels are then one run of the row.
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    if (layout == Layout::NCHW) return true;
    const RuntimeTensor &x = *inputs[0], &y = *outputs[0];
    return layout == Layout::NHWC && x.dtype != DataType::Float32 && y.shape.size() == 4 &&
           x.shape[0] == y.shape[0] && x.shape[1] == y.shape[1] &&
           op_.node->getString("coordinate_transformation_mode", "half_pixel") != "tf_crop_and_resize";
  }
  bool favorsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return false;
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    TensorViews in(inputs.size()), out(1);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]) inputs[i]->viewInto(&in[i]);
      else in[i].present = false;
    }
    outputs[0]->viewInto(&out[0]);
    if (out[0].elements() == 0) return Status::ok();
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const bool reuse = tapsReady_ && constantParameters(inputs) && tapsFor_ == inputs[0]->shape;
    if (!reuse) {
      std::vector<ResizeAxisTaps> taps;
      OSPREY_RETURN_IF_ERROR(resizeTaps(*op_.node, in, &taps, &extrapolation_));
      planar_ = identity(taps[0]) && identity(taps[1]);
      if (planar_) {
        rows_ = toFloat(taps[2]), cols_ = toFloat(taps[3]);
        columns_ = planColumns(rows_, cols_, inputs[0]->shape[2], inputs[0]->shape[3]);
      }
      tapsFor_ = inputs[0]->shape;
      tapsReady_ = true;
    }
    const bool channelsLast = inputs[0]->layout == Layout::NHWC;
    if (!planar_ && channelsLast) return Status::internal("Resize '" + op_.node->name + "' of channels-last codes across channels");
    if (!planar_) return opDef(OpType::Resize).reference(*op_.node, in, out, pool);
    // Channels last, a position's C codes are one element of a [N][H][W * C] image resampled as
    // N planes of C-wide columns.
    const int64_t C = channelsLast ? inputs[0]->shape[1] : 1;
    if (channelsLast) {
      in[0].shape = {inputs[0]->shape[0], 1, inputs[0]->shape[2], inputs[0]->shape[3]};
      out[0].shape = {outputs[0]->shape[0], 1, outputs[0]->shape[2], outputs[0]->shape[3]};
    }
    if (in[0].dtype == DataType::Int8) resample<int8_t>(in[0], static_cast<float>(extrapolation_), out[0], pool, C);
    else if (in[0].dtype == DataType::UInt8)
      resample<uint8_t>(in[0], static_cast<float>(extrapolation_), out[0], pool, C);
    else resample<float>(in[0], static_cast<float>(extrapolation_), out[0], pool);
    return Status::ok();
  }

 private:
  // Plane by plane: each input row that some output row reads is resampled horizontally once,
  // then every output row blends its rows' resampled copies (a copy when it has one tap).
  // T: float, or int8 / uint8 codes blended in float and rounded half up (integer_rounding).
  // C > 1: every column holds C consecutive values (channels-last codes), each resampled alike.
  template <class T>
  void resample(const TensorView& x, float outsideValue, TensorView& y, ThreadPool* pool, int64_t C = 1) const {
    const int64_t planes = y.shape[0] * y.shape[1], inH = x.shape[2], inW = x.shape[3] * C;
    const int64_t outH = y.shape[2], outW = y.shape[3] * C, mapOutW = y.shape[3];
    const T* src = x.as<const T>();
    T* out = y.as<T>();
    constexpr bool kCodes = !std::is_same_v<T, float>;
    // Codes: each output row is blended in a float row, then rounded into the output.
    auto store = [&](const float* v, T* yr) {
      if constexpr (kCodes) {
        // floor(v + 1/2) clamped; the bounds are integers, so clamping first changes nothing, and
        // truncation then a step down for negative fractions is the floor (no libm call).
        constexpr float lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
        for (int64_t ox = 0; ox < outW; ++ox) {
          const float t = std::min(hi, std::max(lo, v[ox] + 0.5f));
          const int i = static_cast<int>(t);
          yr[ox] = static_cast<T>(i - (t < static_cast<float>(i)));
        }
      }
    };
    const ColumnPlan& c = columns_;
    const int32_t maxTaps = c.maxTaps;
    const bool gather = c.gather, doubled = c.doubled;
    const std::vector<int32_t>&i0 = c.i0, &i1 = c.i1;
    const std::vector<float>&w0 = c.w0, &w1 = c.w1;
    const std::vector<uint8_t>& used = c.usedRows;
    auto horizontal = [&](const T* xr, float* h) {
      auto at = [xr](int64_t i) { return static_cast<float>(xr[i]); };
      if (C > 1) {
        for (int64_t ox = 0; ox < mapOutW; ++ox) {
          float* hv = h + ox * C;
          if (cols_.outside[ox]) {
            std::fill(hv, hv + C, outsideValue);
          } else if (maxTaps <= 2) {
            const int64_t a = i0[ox] * C, b = i1[ox] * C;
            for (int64_t ch = 0; ch < C; ++ch) hv[ch] = w0[ox] * at(a + ch) + w1[ox] * at(b + ch);
          } else {
            for (int64_t ch = 0; ch < C; ++ch) {
              float v = 0.f;
              for (int32_t k = cols_.first[ox]; k < cols_.first[ox + 1]; ++k) v += cols_.weight[k] * at(cols_.index[k] * C + ch);
              hv[ch] = v;
            }
          }
        }
        return;
      }
      if (doubled) {
        for (int64_t ix = 0; ix < inW; ++ix) h[2 * ix] = h[2 * ix + 1] = at(ix);
      } else if (gather) {
        for (int64_t ox = 0; ox < outW; ++ox) h[ox] = at(i0[ox]);
      } else if (maxTaps <= 2) {
        for (int64_t ox = 0; ox < outW; ++ox) h[ox] = w0[ox] * at(i0[ox]) + w1[ox] * at(i1[ox]);
      } else {
        for (int64_t ox = 0; ox < outW; ++ox) {
          float v = 0.f;
          for (int32_t k = cols_.first[ox]; k < cols_.first[ox + 1]; ++k) v += cols_.weight[k] * at(cols_.index[k]);
          h[ox] = v;
        }
      }
      for (int64_t ox = 0; ox < outW; ++ox)
        if (cols_.outside[ox]) h[ox] = outsideValue;
    };
    if (planes * outH * outW < 4096) pool = nullptr;
    if constexpr (!kCodes) {
      if (doubled && c.nearestRows) {
        // Nearest with columns doubled (2x upsampling): each output row is written once, straight
        // from its input row, or copied from the output row before it when both read the same
        // input row; no row buffer between.
        parallelFor(pool, planes, [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane)
            for (int64_t oy = 0; oy < outH; ++oy) {
              float* yr = out + (plane * outH + oy) * outW;
              if (rows_.outside[oy]) {
                std::fill(yr, yr + outW, outsideValue);
                continue;
              }
              const int32_t iy = rows_.index[rows_.first[oy]];
              if (oy > 0 && !rows_.outside[oy - 1] && rows_.index[rows_.first[oy - 1]] == iy) {
                std::copy(yr - outW, yr, yr);
                continue;
              }
              const float* xr = src + (plane * inH + iy) * inW;
              for (int64_t ix = 0; ix < inW; ++ix) yr[2 * ix] = yr[2 * ix + 1] = xr[ix];
            }
        });
        return;
      }
    }
    parallelFor(pool, planes, [&](int64_t begin, int64_t end) {
      std::vector<float> rowsOfPlane(static_cast<size_t>(inH * outW)), blended(kCodes ? outW : 0);
      for (int64_t plane = begin; plane < end; ++plane) {
        for (int64_t iy = 0; iy < inH; ++iy)
          if (used[iy]) horizontal(src + (plane * inH + iy) * inW, rowsOfPlane.data() + iy * outW);
        for (int64_t oy = 0; oy < outH; ++oy) {
          T* outRow = out + (plane * outH + oy) * outW;
          float* yr = kCodes ? blended.data() : reinterpret_cast<float*>(outRow);
          const int32_t firstTap = rows_.first[oy], taps = rows_.first[oy + 1] - firstTap;
          if (rows_.outside[oy] || taps == 0) {
            std::fill(yr, yr + outW, outsideValue);
            store(yr, outRow);
            continue;
          }
          const float* h0 = rowsOfPlane.data() + rows_.index[firstTap] * outW;
          const float wa = rows_.weight[firstTap];
          if (taps == 1 && wa == 1.f) {
            std::copy(h0, h0 + outW, yr);
          } else if (taps <= 2) {
            const float* h1 = rowsOfPlane.data() + rows_.index[firstTap + taps - 1] * outW;
            const float wb = taps == 2 ? rows_.weight[firstTap + 1] : 0.f;
            for (int64_t ox = 0; ox < outW; ++ox) yr[ox] = wa * h0[ox] + wb * h1[ox];
          } else {
            for (int64_t ox = 0; ox < outW; ++ox) yr[ox] = wa * h0[ox];
            for (int32_t v = firstTap + 1; v < firstTap + taps; ++v) {
              const float* h = rowsOfPlane.data() + rows_.index[v] * outW;
              const float w = rows_.weight[v];
              for (int64_t ox = 0; ox < outW; ++ox) yr[ox] += w * h[ox];
            }
          }
          store(yr, outRow);
        }
      }
    });
  }

  OpRef op_;
  bool tapsReady_ = false, planar_ = false;
  Shape tapsFor_;
  double extrapolation_ = 0;
  FloatTaps rows_, cols_;
  ColumnPlan columns_;
};

}  // namespace

std::unique_ptr<Execution> createResizeExecution(CPUBackend* backend, const OpRef& op,
                                                 const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || inputs.empty() || !inputs[0]) return nullptr;
  const DataType dtype = inputs[0]->dtype;
  const bool codes = (dtype == DataType::Int8 || dtype == DataType::UInt8) && resizeRoundsHalfUp(*op.node);
  if (dtype != DataType::Float32 && !codes) return nullptr;
  if (inputs[0]->shape.size() != 4 || inputs[0]->layout != Layout::NCHW) return nullptr;
  if (outputs.empty() || !outputs[0] || outputs[0]->layout != Layout::NCHW) return nullptr;
  const int64_t kMaxIndex = int64_t{1} << 31;  // taps hold int32 indices
  if (inputs[0]->shape[2] >= kMaxIndex || inputs[0]->shape[3] >= kMaxIndex) return nullptr;
  return std::make_unique<ResizeExecution>(backend, op);
}

}  // namespace osprey
