// Minimal use of the C++ API: load a model (.onnx or .osp), run it on random input, print the
// top-scoring class of the first output.
#include <algorithm>
#include <cstdio>

#include "osprey/osprey.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL\n", argv[0]);
    return 2;
  }
  std::shared_ptr<osprey::Interpreter> interpreter;
  osprey::Status st = osprey::Interpreter::fromFile(argv[1], &interpreter);
  std::unique_ptr<osprey::Session> session;
  if (st) st = interpreter->createSession(osprey::ScheduleConfig{}, osprey::BackendConfig{}, &session);
  if (!st) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  std::map<std::string, osprey::Tensor> inputs;
  for (const auto& in : session->inputs()) {
    osprey::Shape shape = in.shape;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    osprey::Tensor t(in.dtype, shape);
    if (in.dtype == osprey::DataType::Float32)
      for (int64_t i = 0; i < t.elements(); ++i) t.data<float>()[i] = static_cast<float>((i * 7919) % 255) / 255.f;
    inputs[in.name] = t;
  }
  std::vector<osprey::Tensor> outputs;
  if (!(st = session->run(inputs, &outputs))) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 1;
  }
  const osprey::Tensor& scores = outputs.at(0);
  if (scores.dtype() == osprey::DataType::Float32 && scores.elements() > 0) {
    const float* p = scores.data<float>();
    int64_t best = std::max_element(p, p + scores.elements()) - p;
    std::printf("top class %lld (score %.4f) of %lld\n", static_cast<long long>(best), p[best],
                static_cast<long long>(scores.elements()));
  }
  return 0;
}
