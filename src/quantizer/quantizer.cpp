// quantizeModel: calibration, the graph rewrite, and the comparison of the quantized model with
// the float one, tensor by tensor, on the first calibration input.
#include "quantizer/quantizer.h"

#include <cmath>
#include <memory>
#include <thread>

#include "osprey/interpreter.h"

namespace osprey {

namespace {

void compare(const float* want, const float* got, int64_t n, QuantizedTensorReport* r) {
  double dot = 0, ww = 0, gg = 0, worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += static_cast<double>(want[i]) * got[i];
    ww += static_cast<double>(want[i]) * want[i];
    gg += static_cast<double>(got[i]) * got[i];
    worst = std::max(worst, std::fabs(static_cast<double>(want[i]) - got[i]));
  }
  r->cosine = ww > 0 && gg > 0 ? dot / std::sqrt(ww * gg) : (ww == gg ? 1.0 : 0.0);
  r->maxError = worst;
}

// Runs `model` on `feed`, handing each op's output tensors whose names are in `wanted` to `take`.
Status observe(const Model& model, const FeedDict& feed, int threads, const std::map<std::string, int>& wanted,
               const std::function<void(const std::string&, const std::string&, const Tensor&)>& take,
               std::vector<Tensor>* outputs) {
  std::shared_ptr<Interpreter> interp;
  OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(std::make_shared<Model>(model), &interp));
  ScheduleConfig schedule;
  schedule.threads = threads;
  std::unique_ptr<Session> session;
  OSPREY_RETURN_IF_ERROR(interp->createSession(schedule, BackendConfig(), &session));
  RunCallbacks callbacks;
  callbacks.after = [&](const OpCallbackInfo& op, const OpTensors& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!wanted.count(tensors.name(i))) continue;
      Tensor t;
      if (tensors.read(i, &t).isOk()) take(tensors.name(i), op.type, t);
    }
    return true;
  };
  return session->run(feed, outputs, callbacks);
}

Status compareModels(const Model& floatModel, const Model& quantized, const FeedDict& feed, int threads,
                     QuantizeReport* report) {
  std::map<std::string, int> floatNames, byteNames;
  for (size_t i = 0; i < report->mapping.size(); ++i) {
    floatNames[report->mapping[i].floatName] = static_cast<int>(i);
    byteNames[report->mapping[i].byteName] = static_cast<int>(i);
  }
  std::map<std::string, Tensor> reference;
  std::vector<Tensor> floatOutputs, quantizedOutputs;
  OSPREY_RETURN_IF_ERROR(observe(
      floatModel, feed, threads, floatNames,
      [&](const std::string& name, const std::string&, const Tensor& t) { reference[name] = t; }, &floatOutputs));
  OSPREY_RETURN_IF_ERROR(observe(
      quantized, feed, threads, byteNames,
      [&](const std::string& name, const std::string& op, const Tensor& t) {
        const QuantizedTensorMapping& m = report->mapping[byteNames.at(name)];
        auto ref = reference.find(m.floatName);
        if (ref == reference.end() || ref->second.elements() != t.elements() || t.dtype() != DataType::UInt8) return;
        std::vector<float> values(static_cast<size_t>(t.elements()));
        const uint8_t* q = t.data<uint8_t>();
        for (size_t i = 0; i < values.size(); ++i) values[i] = (static_cast<int32_t>(q[i]) - m.zeroPoint) * m.scale;
        QuantizedTensorReport r;
        r.name = m.floatName;
        r.op = op;
        compare(ref->second.data<float>(), values.data(), t.elements(), &r);
        report->tensors.push_back(r);
      },
      &quantizedOutputs));
  for (size_t i = 0; i < floatOutputs.size() && i < quantizedOutputs.size(); ++i) {
    QuantizedTensorReport r;
    r.name = "output " + std::to_string(i);
    const Tensor &a = floatOutputs[i], &b = quantizedOutputs[i];
    if (a.dtype() == DataType::Float32 && b.dtype() == DataType::Float32 && a.elements() == b.elements())
      compare(a.data<float>(), b.data<float>(), a.elements(), &r);
    report->outputs.push_back(r);
  }
  return Status::ok();
}

}  // namespace

Status quantizeModel(const Model& model, const std::vector<FeedDict>& calibration, const QuantizeOptions& options,
                     Model* out, QuantizeReport* report) {
  QuantizeOptions opts = options;
  if (opts.threads <= 0) opts.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::map<std::string, TensorRange> ranges;
  const bool calibrate = !opts.dynamic && opts.weightBits == 0;
  if (calibrate) OSPREY_RETURN_IF_ERROR(calibrateRanges(model, calibration, opts, &ranges));
  QuantizeReport local;
  QuantizeReport* r = report ? report : &local;
  *r = QuantizeReport();
  *out = Model();
  out->formatVersion = model.formatVersion;
  out->producer = model.producer;
  if (opts.weightBits) OSPREY_RETURN_IF_ERROR(quantizeWeightsOnly(model.graph, opts, &out->graph, r));
  else OSPREY_RETURN_IF_ERROR(quantizeGraph(model.graph, ranges, opts, &out->graph, r));
  if (report && !calibration.empty()) OSPREY_RETURN_IF_ERROR(compareModels(model, *out, calibration[0], opts.threads, r));
  return Status::ok();
}

}  // namespace osprey
