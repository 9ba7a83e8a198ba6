// osprey_churn MODEL --shapes NAME=D0,D1,...[;NAME=...] --shapes ... [--runs N] [--sessions M] [--threads T]
//
// Churn that a long-lived server puts a session through: N runs cycling through the given input
// shape sets (every run re-plans), then M sessions created, run once and destroyed. Prints the
// resident set size (VmRSS) at checkpoints as "rss PHASE COUNT KIB" lines for bench/churn_rss.py.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "osprey/osprey.h"

namespace {

long residentKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

// "x=1,3,32,32;y=1,8" -> {x: [1,3,32,32], y: [1,8]}
bool parseShapeSet(const std::string& text, std::map<std::string, osprey::Shape>* out) {
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ';')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    osprey::Shape& shape = (*out)[item.substr(0, eq)];
    std::stringstream dims(item.substr(eq + 1));
    std::string d;
    while (std::getline(dims, d, ',')) {
      char* end = nullptr;
      const long v = std::strtol(d.c_str(), &end, 10);
      if (d.empty() || *end || v < 0) return false;
      shape.push_back(v);
    }
  }
  return !out->empty();
}

std::map<std::string, osprey::Tensor> inputsFor(const osprey::Interpreter& interp,
                                                const std::map<std::string, osprey::Shape>& shapes) {
  std::map<std::string, osprey::Tensor> inputs;
  for (const auto& info : interp.inputs()) {
    auto it = shapes.find(info.name);
    osprey::Tensor t(info.dtype, it != shapes.end() ? it->second : info.shape);
    if (info.dtype == osprey::DataType::Float32)
      for (int64_t i = 0; i < t.elements(); ++i) t.data<float>()[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
    inputs[info.name] = std::move(t);
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: osprey_churn MODEL --shapes NAME=D0,D1,... [--shapes ...] [--runs N] [--sessions M] [--threads T]");
  std::vector<std::map<std::string, osprey::Shape>> shapeSets;
  int runs = 2000, sessions = 500, threads = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--shapes") {
      shapeSets.emplace_back();
      if (!parseShapeSet(value, &shapeSets.back())) return fail("--shapes expects NAME=D0,D1,...[;NAME=...], got '" + value + "'");
    } else if (flag == "--runs") {
      runs = std::atoi(value.c_str());
    } else if (flag == "--sessions") {
      sessions = std::atoi(value.c_str());
    } else if (flag == "--threads") {
      threads = std::atoi(value.c_str());
    } else {
      return fail("unknown option '" + flag + "'");
    }
  }
  if (shapeSets.empty()) return fail("give at least one --shapes set");
  std::shared_ptr<osprey::Interpreter> interp;
  osprey::Status st = osprey::Interpreter::fromFile(argv[1], &interp);
  if (!st) return fail(st.message());
  std::vector<std::map<std::string, osprey::Tensor>> inputSets;
  for (const auto& shapes : shapeSets) inputSets.push_back(inputsFor(*interp, shapes));

  osprey::ScheduleConfig schedule;
  schedule.threads = threads;
  std::printf("rss start 0 %ld\n", residentKib());
  {
    std::unique_ptr<osprey::Session> session;
    if (!(st = interp->createSession(schedule, osprey::BackendConfig(), &session))) return fail(st.message());
    std::vector<osprey::Tensor> outputs;
    for (int r = 1; r <= runs; ++r) {
      if (!(st = session->run(inputSets[r % inputSets.size()], &outputs))) return fail(st.message());
      if (r % 100 == 0) std::printf("rss runs %d %ld\n", r, residentKib());
    }
  }
  for (int s = 1; s <= sessions; ++s) {
    std::unique_ptr<osprey::Session> session;
    if (!(st = interp->createSession(schedule, osprey::BackendConfig(), &session))) return fail(st.message());
    std::vector<osprey::Tensor> outputs;
    if (!(st = session->run(inputSets[s % inputSets.size()], &outputs))) return fail(st.message());
    if (s % 25 == 0) std::printf("rss sessions %d %ld\n", s, residentKib());
  }
  return 0;
}
