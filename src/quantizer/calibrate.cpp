// Calibration: run the float model on each calibration input and watch every float tensor an op
// produces (Session::run with an `after` callback). MinMax keeps the extremes; Percentile and
// Entropy take a second pass that fills a histogram per tensor over the first pass's range and
// cut the range where it keeps `percentile` of the values, or where the 128-level quantized
// histogram diverges least from the full one (Kullback-Leibler, as TensorRT's calibrator).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "osprey/interpreter.h"
#include "quantizer/quantizer.h"

namespace osprey {

namespace {

constexpr int kBins = 2048;
// Quantized levels the entropy method compares against: the 256 of uint8 for a tensor that is
// never negative, else the 128 of each sign.
constexpr int kLevelsSigned = 128, kLevelsUnsigned = 256;

struct Observation {
  float lo = std::numeric_limits<float>::infinity(), hi = -std::numeric_limits<float>::infinity();
  std::vector<double> bins;  // second pass: counts over [lo, hi] (Percentile) or [0, max|x|] (Entropy)
};

using Visitor = std::function<void(const std::string& name, const float* v, int64_t n)>;

Status runAll(const Model& model, const std::vector<FeedDict>& calibration, const QuantizeOptions& options,
              const char* pass, const Visitor& visit) {
  auto copy = std::make_shared<Model>(model);
  std::shared_ptr<Interpreter> interp;
  OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(copy, &interp));
  ScheduleConfig schedule;
  schedule.threads = options.threads > 0 ? options.threads : 1;
  std::unique_ptr<Session> session;
  OSPREY_RETURN_IF_ERROR(interp->createSession(schedule, BackendConfig(), &session));
  RunCallbacks callbacks;
  Status readError;
  callbacks.after = [&](const OpCallbackInfo&, const OpTensors& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors.dtype(i) != DataType::Float32) continue;
      Tensor t;
      Status st = tensors.read(i, &t);
      if (!st) {
        readError = st;
        return false;
      }
      visit(tensors.name(i), t.data<float>(), t.elements());
    }
    return true;
  };
  for (size_t c = 0; c < calibration.size(); ++c) {
    for (const auto& [name, t] : calibration[c])
      if (t.dtype() == DataType::Float32) visit(name, t.data<float>(), t.elements());
    std::vector<Tensor> outputs;
    Status st = session->run(calibration[c], &outputs, callbacks);
    if (!readError.isOk()) return readError;
    if (!st) return st.withContext("calibration input " + std::to_string(c));
    if (options.progress) options.progress(pass, static_cast<int>(c + 1), static_cast<int>(calibration.size()));
  }
  return Status::ok();
}

// The threshold whose `levels`-level histogram loses the least information against the full one.
float entropyThreshold(const std::vector<double>& bins, float binWidth, int kLevels) {
  double bestDivergence = std::numeric_limits<double>::infinity();
  int best = kBins;
  for (int i = kLevels; i <= kBins; ++i) {
    std::vector<double> p(bins.begin(), bins.begin() + i);
    double outliers = 0;
    for (int j = i; j < kBins; ++j) outliers += bins[j];
    p[i - 1] += outliers;
    // Merge into kLevels levels, then spread each level back over its non-empty bins.
    std::vector<double> q(static_cast<size_t>(i), 0.0);
    const double merge = static_cast<double>(i) / kLevels;
    for (int level = 0; level < kLevels; ++level) {
      const int b0 = static_cast<int>(std::floor(level * merge)), b1 = static_cast<int>(std::floor((level + 1) * merge));
      double sum = 0;
      int nonEmpty = 0;
      for (int j = b0; j < std::max(b1, b0 + 1) && j < i; ++j) {
        sum += bins[j];
        nonEmpty += bins[j] > 0;
      }
      for (int j = b0; j < std::max(b1, b0 + 1) && j < i; ++j) q[j] = bins[j] > 0 ? sum / nonEmpty : 0.0;
    }
    double pSum = 0, qSum = 0;
    for (int j = 0; j < i; ++j) pSum += p[j], qSum += q[j];
    if (pSum <= 0 || qSum <= 0) continue;
    double divergence = 0;
    for (int j = 0; j < i; ++j) {
      if (p[j] <= 0) continue;
      const double pj = p[j] / pSum, qj = q[j] / qSum;
      divergence += qj > 0 ? pj * std::log(pj / qj) : pj * std::log(pj / 1e-12);
    }
    if (divergence < bestDivergence) bestDivergence = divergence, best = i;
  }
  return (static_cast<float>(best) + 0.5f) * binWidth;
}

// The value below which `share` of the histogram's mass lies.
float histogramQuantile(const std::vector<double>& bins, float lo, float hi, double share) {
  double total = 0;
  for (double b : bins) total += b;
  double seen = 0;
  for (int j = 0; j < kBins; ++j) {
    seen += bins[j];
    if (seen >= share * total) return lo + (hi - lo) * static_cast<float>(j + 1) / kBins;
  }
  return hi;
}

}  // namespace

Status calibrateRanges(const Model& model, const std::vector<FeedDict>& calibration, const QuantizeOptions& options,
                       std::map<std::string, TensorRange>* ranges) {
  if (calibration.empty()) return Status::invalidArgument("static quantization needs at least one calibration input");
  std::map<std::string, Observation> seen;
  OSPREY_RETURN_IF_ERROR(runAll(model, calibration, options, "ranges", [&](const std::string& name, const float* v, int64_t n) {
    Observation& o = seen[name];
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(v[i])) continue;
      o.lo = std::min(o.lo, v[i]);
      o.hi = std::max(o.hi, v[i]);
    }
  }));
  if (options.method != CalibrationMethod::MinMax) {
    const bool entropy = options.method == CalibrationMethod::Entropy;
    for (auto& [name, o] : seen) o.bins.assign(kBins, 0.0);
    OSPREY_RETURN_IF_ERROR(runAll(model, calibration, options, "histograms",
                                  [&](const std::string& name, const float* v, int64_t n) {
      Observation& o = seen[name];
      if (!(o.hi > o.lo)) return;
      const float base = entropy ? 0.f : o.lo;
      const float top = entropy ? std::max(std::fabs(o.lo), std::fabs(o.hi)) : o.hi;
      const float perBin = kBins / (top - base);
      for (int64_t i = 0; i < n; ++i) {
        // Entropy skips exact zeros (what a Relu writes for half its inputs): zero is exact at
        // any threshold, and their spike in the first bin would outweigh the tail the threshold cuts.
        if (!std::isfinite(v[i]) || (entropy && v[i] == 0.f)) continue;
        const float x = entropy ? std::fabs(v[i]) : v[i];
        o.bins[std::min(kBins - 1, std::max(0, static_cast<int>((x - base) * perBin)))] += 1;
      }
    }));
  }
  ranges->clear();
  for (auto& [name, o] : seen) {
    TensorRange r;
    if (o.hi >= o.lo) r.lo = o.lo, r.hi = o.hi;
    if (options.method == CalibrationMethod::Percentile && o.hi > o.lo) {
      const double tail = (100.0 - options.percentile) / 100.0;
      r.lo = o.lo < 0 ? histogramQuantile(o.bins, o.lo, o.hi, tail) : o.lo;
      r.hi = histogramQuantile(o.bins, o.lo, o.hi, 1.0 - tail);
    } else if (options.method == CalibrationMethod::Entropy && o.hi > o.lo) {
      const float top = std::max(std::fabs(o.lo), std::fabs(o.hi));
      const float threshold = entropyThreshold(o.bins, top / kBins, o.lo >= 0 ? kLevelsUnsigned : kLevelsSigned);
      r.lo = std::max(o.lo, -threshold);
      r.hi = std::min(o.hi, threshold);
    }
    (*ranges)[name] = r;
  }
  return Status::ok();
}

void activationParameters(TensorRange range, float* scale, uint8_t* zeroPoint) {
  const float lo = std::min(range.lo, 0.f), hi = std::max(range.hi, 0.f);
  if (!(hi > lo)) {
    *scale = 1.f, *zeroPoint = 0;
    return;
  }
  *scale = (hi - lo) / 255.f;
  const float zp = std::nearbyint(-lo / *scale);
  *zeroPoint = static_cast<uint8_t>(std::min(255.f, std::max(0.f, zp)));
}

}  // namespace osprey
