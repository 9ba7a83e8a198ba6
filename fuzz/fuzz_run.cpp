#include "fuzz_run.h"

#include <map>
#include <random>
#include <string>

#include "core/dtype.h"

namespace osprey::fuzz {

namespace {

uint32_t seedOf(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

void fill(Tensor* t, std::mt19937* gen) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < t->elements(); ++i) {
    switch (t->dtype()) {
      case DataType::Float32:
      case DataType::Float64:
      case DataType::Float16:
      case DataType::BFloat16: storeFromDouble(t->dtype(), t->data(), i, uniform(*gen)); break;
      case DataType::String: t->strings()[i] = std::to_string(small(*gen)); break;
      default: storeFromDouble(t->dtype(), t->data(), i, small(*gen)); break;
    }
  }
}

}  // namespace

void runWithInputsFrom(const Interpreter& interp, const uint8_t* data, size_t size) {
  std::mt19937 gen(seedOf(data, size));
  std::map<std::string, Tensor> inputs;
  size_t total = 0;
  for (const TensorInfoPublic& info : interp.inputs()) {
    Shape shape = info.shape;
    for (int64_t& d : shape)
      if (d < 0) d = 1;
    const int64_t elements = shapeElements(shape);
    constexpr size_t kBytesPerElement = 8;  // strings count as their size on the host too
    if (elements < 0 || static_cast<size_t>(elements) > (kMaxInputBytes - total) / kBytesPerElement) return;
    const size_t bytes = static_cast<size_t>(elements) * kBytesPerElement;
    total += bytes;
    Tensor t(info.dtype, shape);
    fill(&t, &gen);
    inputs[info.name] = std::move(t);
  }
  BackendConfig config;
  config.memoryLimit = kMaxSessionBytes;
  ScheduleConfig schedule;
  schedule.runTimeLimitMs = kRunTimeLimitMs;
  std::unique_ptr<Session> session;
  if (!interp.createSession(schedule, config, &session)) return;
  // The time limit is checked between ops; one op of legitimate but long work (a MaxPool over
  // 1.6 M outputs runs 0.2 s, 10 s under the sanitizers) is kept out by its planned work instead.
  std::map<std::string, Shape> shapes;
  for (auto& [name, t] : inputs) shapes[name] = t.shape();
  if (!session->resize(shapes) || session->stats().flops > kMaxRunFlops) return;
  std::vector<Tensor> outputs;
  (void)session->run(inputs, &outputs);
}

}  // namespace osprey::fuzz
