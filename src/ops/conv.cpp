// Conv and ConvTranspose (1-D to 3-D, groups, dilations, strides, pads, auto_pad, optional
// bias, fused activation). Conv takes an optional residual Z (input 3, the output's shape),
// added before the activation: Y = act(conv(X, W) + B + Z). Conv runs as im2col + GEMM per
// image and group; a convolution with one input channel per group (depthwise) runs a direct
// loop, where im2col would only copy.
// ConvTranspose runs as GEMM + col2im (a scatter-add of every kernel tap).
#include <atomic>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/run_limits.h"
#include "ops/activation.h"
#include "ops/gemm_kernel.h"
#include "ops/op_util.h"
#include "ops/window.h"

namespace osprey {

namespace {

struct ConvSetup {
  int64_t batch = 0, inChannels = 0, outChannels = 0, group = 1;
  Window window;
  FusedActivation act;
};

Status checkCommon(const Node& node, const TensorViews& inputs, int64_t* group) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(inputs[0], "X"));
  OSPREY_RETURN_IF_ERROR(requireSameDtype(inputs, 0, 2));
  const TensorView &x = inputs[0], &w = inputs[1];
  if (x.rank() < 3)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 3 or more (N, C, spatial...)");
  if (w.rank() != x.rank())
    return Status::invalidModel("W " + shapeToString(w.shape) + " must have the rank of X " + shapeToString(x.shape));
  *group = node.getInt("group", 1);
  if (*group < 1) return Status::invalidModel("group " + std::to_string(*group) + " must be at least 1");
  if (x.shape[1] % *group != 0)
    return Status::invalidModel("X channels " + std::to_string(x.shape[1]) + " are not divisible by group " +
                                std::to_string(*group));
  if (const Attribute* k = node.attr("kernel_shape"); k && k->ints != Shape(w.shape.begin() + 2, w.shape.end()))
    return Status::invalidModel("kernel_shape " + shapeToString(k->ints) + " does not match W " +
                                shapeToString(w.shape));
  return Status::ok();
}

Status checkBias(const TensorViews& inputs, int64_t outChannels) {
  if (inputs.size() > 2 && inputs[2].present && inputs[2].shape != Shape{outChannels})
    return Status::invalidModel("B " + shapeToString(inputs[2].shape) + " must have shape [" +
                                std::to_string(outChannels) + "]");
  return Status::ok();
}

Status setupConv(const Node& node, const TensorViews& inputs, ConvSetup* s) {
  OSPREY_RETURN_IF_ERROR(checkCommon(node, inputs, &s->group));
  const TensorView &x = inputs[0], &w = inputs[1];
  s->batch = x.shape[0];
  s->inChannels = x.shape[1];
  s->outChannels = w.shape[0];
  if (w.shape[1] * s->group != s->inChannels)
    return Status::invalidModel("W " + shapeToString(w.shape) + " needs X channels / group = " +
                                std::to_string(s->inChannels / s->group) + " in dimension 1");
  if (s->outChannels % s->group != 0)
    return Status::invalidModel("W output channels " + std::to_string(s->outChannels) + " are not divisible by group " +
                                std::to_string(s->group));
  OSPREY_RETURN_IF_ERROR(checkBias(inputs, s->outChannels));
  OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node, &s->act));
  return readConvWindow(node, x.shape, w.shape, &s->window);
}

int64_t floorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

Status setupConvTranspose(const Node& node, const TensorViews& inputs, ConvSetup* s) {
  OSPREY_RETURN_IF_ERROR(checkCommon(node, inputs, &s->group));
  const TensorView &x = inputs[0], &w = inputs[1];
  s->batch = x.shape[0];
  s->inChannels = x.shape[1];
  s->outChannels = w.shape[1] * s->group;
  if (w.shape[0] != s->inChannels)
    return Status::invalidModel("W " + shapeToString(w.shape) + " must have X's " + std::to_string(s->inChannels) +
                                " channels in dimension 0");
  OSPREY_RETURN_IF_ERROR(checkBias(inputs, s->outChannels));
  OSPREY_RETURN_IF_ERROR(FusedActivation::fromNode(node, &s->act));
  Window& win = s->window;
  OSPREY_RETURN_IF_ERROR(
      readWindow(node, Shape(x.shape.begin() + 2, x.shape.end()), Shape(w.shape.begin() + 2, w.shape.end()), &win));
  const int rank = win.rank;
  std::vector<int64_t> outputPadding = node.getInts("output_padding", std::vector<int64_t>(rank, 0));
  if (static_cast<int>(outputPadding.size()) != rank)
    return Status::invalidModel("output_padding " + shapeToString(outputPadding) + " must have " +
                                std::to_string(rank) + " values");
  std::vector<int64_t> outputShape = node.getInts("output_shape");
  if (static_cast<int>(outputShape.size()) == rank + 2)  // some exporters include N and C
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (!outputShape.empty() && static_cast<int>(outputShape.size()) != rank)
    return Status::invalidModel("output_shape " + shapeToString(node.getInts("output_shape")) + " must have " +
                                std::to_string(rank) + " values");
  for (int d = 0; d < rank; ++d) {
    const int s3 = 3 - rank + d;
    if (outputPadding[d] < 0 || outputPadding[d] > kMaxWindowValue)
      return Status::invalidModel("output_padding " + shapeToString(outputPadding) + " must be in [0, " +
                                  std::to_string(kMaxWindowValue) + "]");
    if (!outputShape.empty() && (outputShape[d] < 1 || outputShape[d] > kMaxWindowValue))
      return Status::invalidModel("output_shape " + shapeToString(outputShape) + " must be in [1, " +
                                  std::to_string(kMaxWindowValue) + "]");
    const int64_t full = win.stride[s3] * (win.in[s3] - 1) + outputPadding[d] + win.extent(s3);
    const bool same = win.autoPad == AutoPad::SameUpper || win.autoPad == AutoPad::SameLower;
    if (!outputShape.empty() || same) {
      // The spec's rule: pad the full result down to the requested size, the odd pad at the end
      // for SAME_UPPER and at the beginning otherwise.
      win.out[s3] = outputShape.empty() ? win.in[s3] * win.stride[s3] : outputShape[d];
      const int64_t total = full - win.out[s3];
      win.padBegin[s3] = win.autoPad == AutoPad::SameUpper ? floorDiv2(total) : total - floorDiv2(total);
      win.padEnd[s3] = total - win.padBegin[s3];
    } else {
      win.out[s3] = full - win.padBegin[s3] - win.padEnd[s3];
    }
    if (win.out[s3] < 1)
      return Status::invalidModel("output spatial dimension " + std::to_string(d) + " would be " +
                                  std::to_string(win.out[s3]) + " for X " + shapeToString(x.shape));
  }
  return Status::ok();
}

Status setOutput(const ConvSetup& s, const TensorViews& inputs, TensorViews& outputs) {
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = {s.batch, s.outChannels};
  for (int64_t d : s.window.outShape()) outputs[0].shape.push_back(d);
  return Status::ok();
}

bool hasResidual(const TensorViews& inputs) { return inputs.size() > 3 && inputs[3].present; }

// The residual Z must match the output exactly (no broadcasting).
Status checkResidual(const TensorViews& inputs, const TensorView& out) {
  if (!hasResidual(inputs)) return Status::ok();
  const TensorView& z = inputs[3];
  if (z.dtype != out.dtype)
    return Status::invalidModel("residual Z has dtype " + std::string(dataTypeName(z.dtype)) + " but the output has " +
                                dataTypeName(out.dtype));
  if (z.shape != out.shape)
    return Status::invalidModel("residual Z " + shapeToString(z.shape) + " must have the output's shape " +
                                shapeToString(out.shape));
  return Status::ok();
}

Status convShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  ConvSetup s;
  OSPREY_RETURN_IF_ERROR(setupConv(node, inputs, &s));
  OSPREY_RETURN_IF_ERROR(setOutput(s, inputs, outputs));
  return checkResidual(inputs, outputs[0]);
}

Status convTransposeShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  ConvSetup s;
  OSPREY_RETURN_IF_ERROR(setupConvTranspose(node, inputs, &s));
  return setOutput(s, inputs, outputs);
}

// Unpacks a kernel-tap index into (kd, kh, kw).
void tapCoords(const Window& g, int64_t tap, int64_t* kd, int64_t* kh, int64_t* kw) {
  *kw = tap % g.kernel[2];
  *kh = (tap / g.kernel[2]) % g.kernel[1];
  *kd = tap / (g.kernel[2] * g.kernel[1]);
}

// Position along spatial slot s read by output position o through kernel tap k.
inline int64_t inPos(const Window& g, int s, int64_t o, int64_t k) {
  return o * g.stride[s] - g.padBegin[s] + k * g.dilation[s];
}

// col[c*kernelSize + tap][outPos] = the input value that tap reads for outPos (0 in padding).
template <class T>
void im2col(const Window& g, const T* x, int64_t channels, T* col, ThreadPool* pool) {
  const int64_t kSize = g.kernelSize(), outSize = g.outSize(), inSize = g.inSize();
  parallelFor(pool, channels * kSize, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t kd, kh, kw;
      tapCoords(g, r % kSize, &kd, &kh, &kw);
      const T* xc = x + (r / kSize) * inSize;
      T* dst = col + r * outSize;
      const int64_t offW = kw * g.dilation[2] - g.padBegin[2];
      int64_t lo, hi;
      validRange(offW, g.stride[2], g.in[2], g.out[2], &lo, &hi);
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const int64_t id = inPos(g, 0, od, kd);
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const int64_t ih = inPos(g, 1, oh, kh);
          T* row = dst + (od * g.out[1] + oh) * g.out[2];
          if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) {
            std::fill(row, row + g.out[2], T(0));
            continue;
          }
          const int64_t base = (id * g.in[1] + ih) * g.in[2] + offW;
          std::fill(row, row + lo, T(0));
          for (int64_t ow = lo; ow < hi; ++ow) row[ow] = xc[base + ow * g.stride[2]];
          std::fill(row + hi, row + g.out[2], T(0));
        }
      }
    }
  });
}

// One input channel per group: each output channel is a direct sum of kernel taps over one
// input plane, accumulated tap by tap along contiguous output rows.
template <class T>
void convDirect(const ConvSetup& s, const T* x, const T* w, const T* bias, const T* z, T* y, ThreadPool* pool) {
  const Window& g = s.window;
  const int64_t M = s.outChannels, perGroup = M / s.group, kSize = g.kernelSize();
  const int64_t inSize = g.inSize(), outSize = g.outSize();
  parallelFor(pool, s.batch * M, [&](int64_t begin, int64_t end) {
    for (int64_t nm = begin; nm < end; ++nm) {
      const int64_t n = nm / M, m = nm % M;
      const T* xc = x + (n * s.inChannels + m / perGroup) * inSize;
      const T* wm = w + m * kSize;
      T* yc = y + nm * outSize;
      std::fill(yc, yc + outSize, bias ? bias[m] : T(0));
      for (int64_t tap = 0; tap < kSize; ++tap) {
        int64_t kd, kh, kw;
        tapCoords(g, tap, &kd, &kh, &kw);
        const T wv = wm[tap];
        const int64_t offW = kw * g.dilation[2] - g.padBegin[2];
        int64_t lo, hi;
        validRange(offW, g.stride[2], g.in[2], g.out[2], &lo, &hi);
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = inPos(g, 0, od, kd);
          if (id < 0 || id >= g.in[0]) continue;
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            const int64_t ih = inPos(g, 1, oh, kh);
            if (ih < 0 || ih >= g.in[1]) continue;
            const int64_t base = (id * g.in[1] + ih) * g.in[2] + offW;
            T* row = yc + (od * g.out[1] + oh) * g.out[2];
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] += wv * xc[base + ow * g.stride[2]];
          }
        }
      }
      if (z)
        for (int64_t i = 0; i < outSize; ++i) yc[i] += z[nm * outSize + i];
      if (s.act.kind != FusedActivation::Kind::None)
        for (int64_t i = 0; i < outSize; ++i) yc[i] = applyActivation(s.act, yc[i]);
    }
  });
}

template <class T>
void convForward(const ConvSetup& s, const T* x, const T* w, const T* bias, const T* z, T* y, ThreadPool* pool) {
  const Window& g = s.window;
  const int64_t groupIn = s.inChannels / s.group, groupOut = s.outChannels / s.group;
  if (groupIn == 1) return convDirect(s, x, w, bias, z, y, pool);
  const int64_t inSize = g.inSize(), outSize = g.outSize(), K = groupIn * g.kernelSize();
  bool pointwise = g.kernelSize() == 1;
  for (int sl = 0; sl < 3; ++sl) pointwise = pointwise && g.stride[sl] == 1 && g.padBegin[sl] == 0 && g.padEnd[sl] == 0;
  std::vector<T> col(pointwise ? 0 : K * outSize);
  const std::vector<int64_t> zero{0};
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t grp = 0; grp < s.group; ++grp) {
      const T* xg = x + (n * s.inChannels + grp * groupIn) * inSize;
      if (!pointwise) im2col(g, xg, groupIn, col.data(), pool);
      const T* biasG = bias ? bias + grp * groupOut : nullptr;
      const int64_t yOffset = (n * s.outChannels + grp * groupOut) * outSize;
      const T* zG = z ? z + yOffset : nullptr;
      batchedGemm(pool, 1, groupOut, outSize, K, w + grp * groupOut * K, zero, pointwise ? xg : col.data(), zero,
                  y + yOffset, [&](int64_t, int64_t r, T* row) {
                    const T b = biasG ? biasG[r] : T(0);
                    const T* zRow = zG ? zG + r * outSize : nullptr;
                    for (int64_t i = 0; i < outSize; ++i)
                      row[i] = applyActivation(s.act, row[i] + b + (zRow ? zRow[i] : T(0)));
                  });
    }
  }
}

// False when the run's deadline passed first (the output is then incomplete).
template <class T>
bool convTransposeForward(const ConvSetup& s, const T* x, const T* w, const T* bias, T* y, ThreadPool* pool,
                          const RunDeadline::Watch& deadline) {
  std::atomic<bool> stopped{false};
  const Window& g = s.window;
  const int64_t groupIn = s.inChannels / s.group, groupOut = s.outChannels / s.group;
  const int64_t kSize = g.kernelSize(), inSize = g.inSize(), outSize = g.outSize();
  const int64_t rows = groupOut * kSize;  // one row of col per (output channel, tap)
  // W's block for a group is [groupIn x rows]; the GEMM wants its transpose [rows x groupIn].
  std::vector<T> wt(s.group * rows * groupIn);
  for (int64_t grp = 0; grp < s.group; ++grp)
    for (int64_t c = 0; c < groupIn; ++c)
      for (int64_t r = 0; r < rows; ++r) wt[(grp * rows + r) * groupIn + c] = w[(grp * groupIn + c) * rows + r];
  std::vector<T> col(rows * inSize);
  const std::vector<int64_t> zero{0};
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t grp = 0; grp < s.group; ++grp) {
      batchedGemm(pool, 1, rows, inSize, groupIn, wt.data() + grp * rows * groupIn, zero,
                  x + (n * s.inChannels + grp * groupIn) * inSize, zero, col.data(), [](int64_t, int64_t, T*) {});
      parallelFor(pool, groupOut, [&](int64_t begin, int64_t end) {
        for (int64_t m = begin; m < end; ++m) {
          const int64_t channel = grp * groupOut + m;
          T* yc = y + (n * s.outChannels + channel) * outSize;
          std::fill(yc, yc + outSize, bias ? bias[channel] : T(0));
          for (int64_t tap = 0; tap < kSize; ++tap) {
            // A window of billions of taps on few values runs for minutes: a run's time limit stops it.
            if (stopped.load(std::memory_order_relaxed)) return;
            if (deadline.passed()) {
              stopped = true;
              return;
            }
            int64_t kd, kh, kw;
            tapCoords(g, tap, &kd, &kh, &kw);
            const T* src = col.data() + (m * kSize + tap) * inSize;
            // Input position i lands on output i*stride - pad + k*dilation, when inside.
            // Only the input rows and planes whose output lands inside (visiting the others, a
            // huge input of a tiny output spent seconds on each tap).
            const int64_t offW = kw * g.dilation[2] - g.padBegin[2];
            int64_t lo, hi, loH, hiH, loD, hiD;
            validRange(offW, g.stride[2], g.out[2], g.in[2], &lo, &hi);
            validRange(kh * g.dilation[1] - g.padBegin[1], g.stride[1], g.out[1], g.in[1], &loH, &hiH);
            validRange(kd * g.dilation[0] - g.padBegin[0], g.stride[0], g.out[0], g.in[0], &loD, &hiD);
            for (int64_t id = loD; id < hiD; ++id) {
              const int64_t od = inPos(g, 0, id, kd);
              for (int64_t ih = loH; ih < hiH; ++ih) {
                const int64_t oh = inPos(g, 1, ih, kh);
                const T* srcRow = src + (id * g.in[1] + ih) * g.in[2];
                const int64_t base = (od * g.out[1] + oh) * g.out[2] + offW;
                for (int64_t iw = lo; iw < hi; ++iw) yc[base + iw * g.stride[2]] += srcRow[iw];
              }
            }
          }
          if (s.act.kind != FusedActivation::Kind::None)
            for (int64_t i = 0; i < outSize; ++i) yc[i] = applyActivation(s.act, yc[i]);
        }
      });
      if (stopped) return false;
    }
  }
  return true;
}

// Runs fn(x, w, bias, z, y) in float or double (bias and the residual z null when absent);
// float16/bfloat16 go through float copies.
template <class Fn>
Status runInFloat(const TensorViews& inputs, TensorView& out, Fn&& fn) {
  const bool hasBias = inputs.size() > 2 && inputs[2].present, hasZ = hasResidual(inputs);
  if (out.dtype == DataType::Float32 || out.dtype == DataType::Float64) {
    dispatchFloat(out.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        fn(inputs[0].as<const T>(), inputs[1].as<const T>(), hasBias ? inputs[2].as<const T>() : nullptr,
           hasZ ? inputs[3].as<const T>() : nullptr, out.as<T>());
    });
    return Status::ok();
  }
  const bool ok = dispatchFloat(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto widen = [](const TensorView& v) {
      std::vector<float> f(static_cast<size_t>(v.elements()));
      for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(v.as<const T>()[i]);
      return f;
    };
    std::vector<float> x = widen(inputs[0]), w = widen(inputs[1]),
                       b = hasBias ? widen(inputs[2]) : std::vector<float>(),
                       z = hasZ ? widen(inputs[3]) : std::vector<float>();
    std::vector<float> y(static_cast<size_t>(out.elements()));
    fn(x.data(), w.data(), hasBias ? b.data() : nullptr, hasZ ? z.data() : nullptr, y.data());
    for (size_t i = 0; i < y.size(); ++i) out.as<T>()[i] = T(y[i]);
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(out, "X"));
}

Status convReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool* pool) {
  ConvSetup s;
  OSPREY_RETURN_IF_ERROR(setupConv(node, inputs, &s));
  OSPREY_RETURN_IF_ERROR(checkResidual(inputs, outputs[0]));
  return runInFloat(inputs, outputs[0], [&](const auto* x, const auto* w, const auto* b, const auto* z, auto* y) {
    convForward(s, x, w, b, z, y, pool);
  });
}

Status convTransposeReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool* pool) {
  ConvSetup s;
  OSPREY_RETURN_IF_ERROR(setupConvTranspose(node, inputs, &s));
  const RunDeadline::Watch deadline = RunDeadline::watch();
  bool finished = true;
  OSPREY_RETURN_IF_ERROR(
      runInFloat(inputs, outputs[0], [&](const auto* x, const auto* w, const auto* b, const auto*, auto* y) {
        finished = convTransposeForward(s, x, w, b, y, pool, deadline);
      }));
  return finished ? Status::ok() : RunDeadline::error(node.describe());
}

}  // namespace

const OpDef kOpDef_Conv = {OpType::Conv, "Conv", 2, 4, 1, 1, convShape, convReference, nullptr, 0, false};
const OpDef kOpDef_ConvTranspose = {OpType::ConvTranspose, "ConvTranspose",        2,       3, 1,    1,
                                    convTransposeShape,    convTransposeReference, nullptr, 0, false};

}  // namespace osprey
