// Signal processing: DFT (opset 20: axis and dft_length as inputs; forward, inverse, onesided
// real-to-complex and complex-to-real), STFT, the cosine-sum windows HannWindow, HammingWindow,
// BlackmanWindow, and MelWeightMatrix. Transforms are plain O(n^2) sums over a twiddle table,
// computed in double whatever the storage dtype (float16/bfloat16/float32/float64).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "core/run_limits.h"
#include "core/thread_pool.h"
#include "ops/compute_buffer.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

constexpr double kPi = 3.14159265358979323846;

// The DFT of one complex sequence: out[f] = scale * sum_k in[k] * exp(sign * 2*pi*i*f*k/n),
// f in [0, outLen); in holds n complex values (re, im interleaved).
class Twiddles {
 public:
  explicit Twiddles(int64_t n) : n_(n), cos_(static_cast<size_t>(n)), sin_(static_cast<size_t>(n)) {
    for (int64_t j = 0; j < n; ++j) {
      cos_[j] = std::cos(2 * kPi * static_cast<double>(j) / static_cast<double>(n));
      sin_[j] = std::sin(2 * kPi * static_cast<double>(j) / static_cast<double>(n));
    }
  }
  // False when the run's time limit passed first: the direct sum costs n per output, and n (a
  // dft_length input, a frame length) may come from values at run time.
  bool transform(const double* in, double* out, int64_t outLen, double sign, double scale,
                 const RunDeadline::Watch& deadline) const {
    for (int64_t f = 0; f < outLen; ++f) {
      if (f % 64 == 0 && deadline.passed()) return false;
      double re = 0, im = 0;
      int64_t idx = 0;  // (f * k) mod n, advanced by f each step
      for (int64_t k = 0; k < n_; ++k) {
        const double c = cos_[idx], s = sign * sin_[idx];
        re += in[2 * k] * c - in[2 * k + 1] * s;
        im += in[2 * k] * s + in[2 * k + 1] * c;
        idx += f % n_;
        if (idx >= n_) idx -= n_;
      }
      out[2 * f] = re * scale;
      out[2 * f + 1] = im * scale;
    }
    return true;
  }

 private:
  int64_t n_;
  std::vector<double> cos_, sin_;
};

Status readScalarInt(const TensorView& v, const char* what, int64_t* out) {
  std::vector<int64_t> vals;
  OSPREY_RETURN_IF_ERROR(v.readInts(&vals, what));
  if (vals.size() != 1) return Status::invalidModel(std::string(what) + " has shape " + shapeToString(v.shape) + "; expected a scalar");
  *out = vals[0];
  return Status::ok();
}

Status readScalarDouble(const TensorView& v, const char* what, double* out) {
  std::vector<float> vals;
  OSPREY_RETURN_IF_ERROR(v.readFloats(&vals, what));
  if (vals.size() != 1) return Status::invalidModel(std::string(what) + " has shape " + shapeToString(v.shape) + "; expected a scalar");
  *out = vals[0];
  return Status::ok();
}

// ---- DFT ----

struct DftSetup {
  int64_t axis = 0, n = 0;  // n: dft_length
  int64_t inLen = 0, outLen = 0, outer = 1, inner = 1, inComplex = 1, outComplex = 2;
  bool inverse = false, onesided = false;
  Shape outShape;
};

Status setupDft(const Node& node, const TensorViews& in, DftSetup* s) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "input"));
  const int64_t r = x.rank();
  if (r < 2 || (x.shape[r - 1] != 1 && x.shape[r - 1] != 2))
    return Status::invalidModel("input has shape " + shapeToString(x.shape) + "; expected rank >= 2 with last dimension 1 (real) or 2 (complex)");
  int64_t axis = -2;
  if (in.size() > 2 && in[2].present) OSPREY_RETURN_IF_ERROR(readScalarInt(in[2], "axis", &axis));
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a > r - 2)
    return Status::invalidModel("axis " + std::to_string(axis) + " is out of range for input " + shapeToString(x.shape) +
                                " (the last dimension holds the complex parts)");
  s->axis = a;
  s->inverse = node.getInt("inverse", 0) != 0;
  s->onesided = node.getInt("onesided", 0) != 0;
  s->inLen = x.shape[a];
  s->inComplex = x.shape[r - 1];
  const bool complexToReal = s->inverse && s->onesided;
  if (in.size() > 1 && in[1].present) {
    OSPREY_RETURN_IF_ERROR(readScalarInt(in[1], "dft_length", &s->n));
    if (s->n <= 0) return Status::invalidModel("dft_length is " + std::to_string(s->n) + "; expected > 0");
  } else {
    s->n = complexToReal ? 2 * (s->inLen - 1) : s->inLen;
    if (s->n <= 0) return Status::invalidModel("the DFT axis of input " + shapeToString(x.shape) + " is too short");
  }
  s->outLen = (s->onesided && !s->inverse) ? s->n / 2 + 1 : s->n;
  s->outComplex = complexToReal ? 1 : 2;
  for (int64_t d = 0; d < a; ++d) s->outer *= x.shape[d];
  for (int64_t d = a + 1; d < r - 1; ++d) s->inner *= x.shape[d];
  s->outShape = x.shape;
  s->outShape[a] = s->outLen;
  s->outShape[r - 1] = s->outComplex;
  return Status::ok();
}

Status dftShape(const Node& node, const TensorViews& in, TensorViews& out) {
  DftSetup s;
  OSPREY_RETURN_IF_ERROR(setupDft(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = s.outShape;
  return Status::ok();
}

Status dftReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  DftSetup s;
  OSPREY_RETURN_IF_ERROR(setupDft(node, in, &s));
  const std::vector<double> x = toComputeBuffer<double>(in[0]);
  std::vector<double> y(static_cast<size_t>(out[0].elements()));
  const Twiddles tw(s.n);
  const bool complexToReal = s.inverse && s.onesided;
  // complex-to-real reads the n/2+1 stored bins and rebuilds the rest by conjugate symmetry.
  const int64_t used = complexToReal ? std::min(s.inLen, s.n / 2 + 1) : std::min(s.inLen, s.n);
  const double sign = s.inverse ? 1.0 : -1.0, scale = s.inverse ? 1.0 / static_cast<double>(s.n) : 1.0;
  const RunDeadline::Watch deadline = RunDeadline::watch();
  std::atomic<bool> stopped{false};
  parallelFor(pool, s.outer * s.inner, [&](int64_t begin, int64_t end) {
    std::vector<double> seq(static_cast<size_t>(2 * s.n)), res(static_cast<size_t>(2 * s.n));
    for (int64_t task = begin; task < end && !stopped.load(std::memory_order_relaxed); ++task) {
      const int64_t o = task / s.inner, i = task % s.inner;
      std::fill(seq.begin(), seq.end(), 0.0);
      for (int64_t k = 0; k < used; ++k) {
        const double* p = x.data() + ((o * s.inLen + k) * s.inner + i) * s.inComplex;
        seq[2 * k] = p[0];
        seq[2 * k + 1] = s.inComplex == 2 ? p[1] : 0.0;
      }
      if (complexToReal)
        for (int64_t k = s.n / 2 + 1; k < s.n; ++k) {
          seq[2 * k] = seq[2 * (s.n - k)];
          seq[2 * k + 1] = -seq[2 * (s.n - k) + 1];
        }
      if (!tw.transform(seq.data(), res.data(), s.outLen, sign, scale, deadline)) {
        stopped = true;
        return;
      }
      for (int64_t f = 0; f < s.outLen; ++f) {
        double* q = y.data() + ((o * s.outLen + f) * s.inner + i) * s.outComplex;
        q[0] = res[2 * f];
        if (s.outComplex == 2) q[1] = res[2 * f + 1];
      }
    }
  });
  if (stopped) return RunDeadline::error(node.describe());
  storeComputeBuffer(y.data(), out[0]);
  return Status::ok();
}

// ---- STFT ----

struct StftSetup {
  int64_t batch = 0, length = 0, channels = 1, step = 0, frameLength = 0, frames = 0, bins = 0;
};

Status setupStft(const Node& node, const TensorViews& in, StftSetup* s) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "signal"));
  if (x.rank() != 3 || (x.shape[2] != 1 && x.shape[2] != 2))
    return Status::invalidModel("signal has shape " + shapeToString(x.shape) + "; expected [batch, length, 1 or 2]");
  s->batch = x.shape[0];
  s->length = x.shape[1];
  s->channels = x.shape[2];
  OSPREY_RETURN_IF_ERROR(readScalarInt(in[1], "frame_step", &s->step));
  if (s->step <= 0) return Status::invalidModel("frame_step is " + std::to_string(s->step) + "; expected > 0");
  const bool hasWindow = in.size() > 2 && in[2].present;
  if (hasWindow) {
    if (in[2].rank() != 1) return Status::invalidModel("window has shape " + shapeToString(in[2].shape) + "; expected 1-D");
    OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[2], "window"));
    s->frameLength = in[2].shape[0];
  }
  if (in.size() > 3 && in[3].present) {
    int64_t fl = 0;
    OSPREY_RETURN_IF_ERROR(readScalarInt(in[3], "frame_length", &fl));
    if (hasWindow && fl != s->frameLength)
      return Status::invalidModel("frame_length " + std::to_string(fl) + " differs from the window length " +
                                  std::to_string(s->frameLength));
    s->frameLength = fl;
  } else if (!hasWindow) {
    s->frameLength = s->length;
  }
  if (s->frameLength <= 0 || s->frameLength > s->length)
    return Status::invalidModel("frame length " + std::to_string(s->frameLength) + " must be in 1.." + std::to_string(s->length));
  s->frames = (s->length - s->frameLength) / s->step + 1;
  s->bins = node.getInt("onesided", 1) != 0 ? s->frameLength / 2 + 1 : s->frameLength;
  return Status::ok();
}

Status stftShape(const Node& node, const TensorViews& in, TensorViews& out) {
  StftSetup s;
  OSPREY_RETURN_IF_ERROR(setupStft(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = {s.batch, s.frames, s.bins, 2};
  return Status::ok();
}

Status stftReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  StftSetup s;
  OSPREY_RETURN_IF_ERROR(setupStft(node, in, &s));
  const std::vector<double> x = toComputeBuffer<double>(in[0]);
  std::vector<double> window(static_cast<size_t>(s.frameLength), 1.0);
  if (in.size() > 2 && in[2].present) window = toComputeBuffer<double>(in[2]);
  std::vector<double> y(static_cast<size_t>(out[0].elements()));
  const Twiddles tw(s.frameLength);
  const RunDeadline::Watch deadline = RunDeadline::watch();
  std::atomic<bool> stopped{false};
  parallelFor(pool, s.batch * s.frames, [&](int64_t begin, int64_t end) {
    std::vector<double> seq(static_cast<size_t>(2 * s.frameLength));
    for (int64_t task = begin; task < end && !stopped.load(std::memory_order_relaxed); ++task) {
      const int64_t b = task / s.frames, f = task % s.frames;
      for (int64_t k = 0; k < s.frameLength; ++k) {
        const double* p = x.data() + (b * s.length + f * s.step + k) * s.channels;
        seq[2 * k] = p[0] * window[k];
        seq[2 * k + 1] = s.channels == 2 ? p[1] * window[k] : 0.0;
      }
      if (!tw.transform(seq.data(), y.data() + task * s.bins * 2, s.bins, -1.0, 1.0, deadline)) stopped = true;
    }
  });
  if (stopped) return RunDeadline::error(node.describe());
  storeComputeBuffer(y.data(), out[0]);
  return Status::ok();
}

// ---- Output dtype of the generators ----

Status outputDatatype(const Node& node, DataType* out) {
  const int64_t v = node.getInt("output_datatype", static_cast<int64_t>(DataType::Float32));
  const bool numeric = v > 0 && v <= 64 && isKnownDataType(static_cast<int32_t>(v)) &&
                       dispatchNumeric(static_cast<DataType>(v), [](auto) {});
  if (!numeric || static_cast<DataType>(v) == DataType::Bool)
    return Status::invalidModel("attribute output_datatype is " + std::to_string(v) + ", which is not a numeric dtype");
  *out = static_cast<DataType>(v);
  return Status::ok();
}

// ---- Windows: w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) ----

struct CosineSum {
  double a0, a1, a2;
};

CosineSum cosineSumOf(OpType t) {
  if (t == OpType::HammingWindow) return {25.0 / 46.0, 21.0 / 46.0, 0.0};
  if (t == OpType::BlackmanWindow) return {0.42, 0.5, 0.08};
  return {0.5, 0.5, 0.0};
}

Status windowSetup(const Node& node, const TensorViews& in, int64_t* size, DataType* dtype) {
  OSPREY_RETURN_IF_ERROR(readScalarInt(in[0], "size", size));
  if (*size < 0) return Status::invalidModel("size is " + std::to_string(*size) + "; expected >= 0");
  const int64_t periodic = node.getInt("periodic", 1);
  if (periodic != 0 && periodic != 1) return Status::invalidModel("attribute periodic is " + std::to_string(periodic) + "; expected 0 or 1");
  return outputDatatype(node, dtype);
}

Status windowShape(const Node& node, const TensorViews& in, TensorViews& out) {
  int64_t size = 0;
  OSPREY_RETURN_IF_ERROR(windowSetup(node, in, &size, &out[0].dtype));
  out[0].shape = {size};
  return Status::ok();
}

Status windowReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t size = 0;
  DataType dtype;
  OSPREY_RETURN_IF_ERROR(windowSetup(node, in, &size, &dtype));
  const CosineSum c = cosineSumOf(node.type);
  const int64_t period = node.getInt("periodic", 1) != 0 ? size : size - 1;
  for (int64_t i = 0; i < size; ++i) {
    // A symmetric window of one sample has no period; it is 1, as in numpy and scipy.
    double w = 1.0;
    if (period > 0) {
      const double angle = 2 * kPi * static_cast<double>(i) / static_cast<double>(period);
      w = c.a0 - c.a1 * std::cos(angle) + c.a2 * std::cos(2 * angle);
    }
    storeFromDouble(out[0].dtype, out[0].data, i, w);
  }
  return Status::ok();
}

// ---- MelWeightMatrix: triangular filters on the mel scale, bins from the ONNX reference ----

struct MelSetup {
  int64_t melBins = 0, dftLength = 0, sampleRate = 0, spectrogramBins = 0;
  double lower = 0, upper = 0;
  DataType dtype = DataType::Float32;
};

Status setupMel(const Node& node, const TensorViews& in, MelSetup* s) {
  OSPREY_RETURN_IF_ERROR(readScalarInt(in[0], "num_mel_bins", &s->melBins));
  OSPREY_RETURN_IF_ERROR(readScalarInt(in[1], "dft_length", &s->dftLength));
  OSPREY_RETURN_IF_ERROR(readScalarInt(in[2], "sample_rate", &s->sampleRate));
  OSPREY_RETURN_IF_ERROR(readScalarDouble(in[3], "lower_edge_hertz", &s->lower));
  OSPREY_RETURN_IF_ERROR(readScalarDouble(in[4], "upper_edge_hertz", &s->upper));
  if (s->melBins <= 0) return Status::invalidModel("num_mel_bins must be > 0");
  if (s->dftLength <= 0) return Status::invalidModel("dft_length must be > 0");
  if (s->sampleRate <= 0) return Status::invalidModel("sample_rate must be > 0");
  if (!(s->lower >= 0) || !(s->upper > s->lower))
    return Status::invalidModel("edge frequencies must satisfy 0 <= lower_edge_hertz < upper_edge_hertz");
  s->spectrogramBins = s->dftLength / 2 + 1;
  return outputDatatype(node, &s->dtype);
}

Status melShape(const Node& node, const TensorViews& in, TensorViews& out) {
  MelSetup s;
  OSPREY_RETURN_IF_ERROR(setupMel(node, in, &s));
  out[0].dtype = s.dtype;
  out[0].shape = {s.spectrogramBins, s.melBins};
  return Status::ok();
}

Status melReference(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  MelSetup s;
  OSPREY_RETURN_IF_ERROR(setupMel(node, in, &s));
  // The edges are float scalars, so their mel values are float as in the reference.
  const float lowMel = 2595.f * std::log10(1.f + static_cast<float>(s.lower) / 700.f);
  const float highMel = 2595.f * std::log10(1.f + static_cast<float>(s.upper) / 700.f);
  const double step = (static_cast<double>(highMel) - lowMel) / static_cast<double>(s.melBins + 2);
  std::vector<int64_t> edges(static_cast<size_t>(s.melBins + 2));
  for (int64_t i = 0; i < s.melBins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lowMel) / 2595.0) - 1.0);
    const double bin = std::floor(static_cast<double>(s.dftLength + 1) * hz / static_cast<double>(s.sampleRate));
    if (!std::isfinite(bin)) return Status::invalidArgument("the mel filter edges are not finite");
    constexpr double kLimit = 1e15;  // far past any spectrogram, safely inside int64
    edges[i] = static_cast<int64_t>(std::max(-kLimit, std::min(kLimit, bin)));
  }
  const int64_t rows = s.spectrogramBins, cols = s.melBins;
  std::vector<double> w(static_cast<size_t>(rows * cols), 0.0);
  // Edges past the spectrogram (odd edge frequencies) only lose the bins that do not exist.
  auto first = [&](int64_t j) { return std::max<int64_t>(j, 0); };
  auto last = [&](int64_t j) { return std::min<int64_t>(j, rows - 1); };
  for (int64_t i = 0; i < cols; ++i) {
    const int64_t lo = edges[i], center = edges[i + 1], hi = edges[i + 2];
    if (center == lo) {
      if (center >= 0 && center < rows) w[center * cols + i] = 1.0;
    } else {
      for (int64_t j = first(lo); j <= last(center); ++j)
        w[j * cols + i] = static_cast<double>(j - lo) / static_cast<double>(center - lo);
    }
    for (int64_t j = first(center); j <= last(hi - 1); ++j)
      w[j * cols + i] = static_cast<double>(hi - j) / static_cast<double>(hi - center);
  }
  for (int64_t k = 0; k < rows * cols; ++k) storeFromDouble(out[0].dtype, out[0].data, k, w[k]);
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_DFT = {OpType::DFT, "DFT", 1, 3, 1, 1, dftShape, dftReference, nullptr, (1u << 1) | (1u << 2), false};
const OpDef kOpDef_STFT = {OpType::STFT, "STFT", 2, 4, 1, 1, stftShape, stftReference, nullptr, (1u << 1) | (1u << 3), false};
const OpDef kOpDef_HannWindow = {OpType::HannWindow, "HannWindow", 1, 1, 1, 1, windowShape, windowReference, nullptr, 1u, false};
const OpDef kOpDef_HammingWindow = {OpType::HammingWindow, "HammingWindow", 1, 1, 1, 1, windowShape, windowReference, nullptr, 1u, false};
const OpDef kOpDef_BlackmanWindow = {OpType::BlackmanWindow, "BlackmanWindow", 1, 1, 1, 1, windowShape, windowReference, nullptr, 1u, false};
const OpDef kOpDef_MelWeightMatrix = {OpType::MelWeightMatrix, "MelWeightMatrix", 5, 5, 1, 1, melShape, melReference, nullptr, 0x1fu, false};

}  // namespace osprey
