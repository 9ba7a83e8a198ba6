// osprey bench MODEL [--input NAME=FILE]... [--backend B] [--threads N] [--warmup W] [--loops L]
//                    [--per-op] [--json] [--trace FILE] [--step] [--gap-ms G] [--precision P] [--batch N]
//                    [--shape NAME=DIMS]
// Latency (min/median/max over L timed runs after W warm-up runs) and the process's peak RSS; the
// time to first result (load, session, plan, first run; not the making of random inputs) says
// whether --vulkan-cache had a file to load.
// --per-op and --trace profile extra runs afterwards, so profiling never touches the latencies.
// --step lets another process pace the timed runs (bench/compare_ort.py alternates engines):
// "ready" after warm-up, then one run per line read from stdin, its time printed, until EOF.
// --gap-ms idles before each timed and profiled run, as bench/compare_ort.py does: after a pause
// the caches are cold and the workers asleep, and --per-op then shows which ops pay for that.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli_common.h"

namespace osprey::cli {

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// What --vulkan-cache holds before the runtime reads it: " (pipeline cache: N bytes to load)", or
// " (pipeline cache: cold)" when the file is missing or empty; empty without the option.
std::string pipelineCacheNote(const Args& args) {
  if (!args.has("vulkan-cache")) return "";
  std::ifstream file(args.get("vulkan-cache"), std::ios::binary | std::ios::ate);
  const std::streamoff bytes = file ? static_cast<std::streamoff>(file.tellg()) : 0;
  return bytes > 0 ? " (pipeline cache: " + std::to_string(bytes) + " bytes to load)" : " (pipeline cache: cold)";
}

// VmHWM is this process's own peak; getrusage's ru_maxrss keeps the peak of the process that
// exec'd it (a 700 MB Python launching `osprey bench` would report 700 MB for any model).
size_t peakRssBytes() {
  if (FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    size_t kb = 0;
    while (std::fgets(line, sizeof line, status))
      if (std::sscanf(line, "VmHWM: %zu kB", &kb) == 1) break;
    std::fclose(status);
    if (kb) return kb * 1024;
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string shapesText(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& shape : shapes) s += (s.empty() ? "" : " ") + shapeToString(shape);
  return s;
}

// `generatingMs`: the time spent making random inputs (the benchmark's stand-in for a user's
// data, so not counted in the time to the first result).
Status loadInputs(const Args& args, const Interpreter& interp, Session* session, std::map<std::string, Tensor>* inputs,
                  double* generatingMs) {
  const auto infos = interp.inputs();
  for (const std::string& spec : args.all("input")) {
    size_t eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    if (eq == std::string::npos) {
      if (infos.size() != 1) return Status::invalidArgument("--input FILE needs a model with one input; use NAME=FILE");
      name = infos[0].name;
    }
    Tensor t;
    OSPREY_RETURN_IF_ERROR(loadTensorFile(spec.substr(eq == std::string::npos ? 0 : eq + 1), &t));
    (*inputs)[name] = std::move(t);
  }
  std::map<std::string, Shape> generated;
  for (const auto& info : infos)
    if (!inputs->count(info.name)) OSPREY_RETURN_IF_ERROR(generatedInputShape(args, info, &generated[info.name]));
  OSPREY_RETURN_IF_ERROR(planBeforeGenerating(session, *inputs, generated));
  const auto t0 = std::chrono::steady_clock::now();
  uint32_t seed = 0;
  for (const auto& info : infos)
    if (generated.count(info.name)) (*inputs)[info.name] = randomInput(info.dtype, generated[info.name], seed++);
  *generatingMs = msSince(t0);
  return Status::ok();
}

// Mean time of each command over the profiled runs, and the same summed per op type.
void printPerOp(const std::vector<std::vector<OpTiming>>& runs, double medianMs) {
  const std::vector<OpTiming>& first = runs.front();
  std::vector<double> meanUs(first.size(), 0.0);
  for (const auto& run : runs)
    for (size_t i = 0; i < run.size() && i < meanUs.size(); ++i) meanUs[i] += run[i].durationUs / runs.size();
  std::map<std::string, std::pair<double, int>> byType;
  double total = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    auto& slot = byType[first[i].backend + ":" + first[i].opType];
    slot.first += meanUs[i];
    slot.second += 1;
    total += meanUs[i];
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> types(byType.begin(), byType.end());
  std::sort(types.begin(), types.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  std::printf("\nper op type (mean of %zu profiled runs; ops add up to %.2f ms, run median %.2f ms)\n", runs.size(),
              total / 1000.0, medianMs);
  std::printf("  %-28s %10s %7s %6s\n", "backend:op", "ms", "%", "count");
  for (auto& [name, v] : types)
    std::printf("  %-28s %10.3f %6.1f%% %6d\n", name.c_str(), v.first / 1000.0, total > 0 ? 100.0 * v.first / total : 0.0,
                v.second);
  std::vector<size_t> order(first.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return meanUs[a] > meanUs[b]; });
  std::printf("\nslowest executions\n");
  for (size_t r = 0; r < std::min<size_t>(order.size(), 15); ++r) {
    const OpTiming& t = first[order[r]];
    std::printf("  %9.3f ms  %-12s %-28s %s -> %s\n", meanUs[order[r]] / 1000.0, t.opType.c_str(), t.name.c_str(),
                shapesText(t.inputShapes).c_str(), shapesText(t.outputShapes).c_str());
  }
}

Status writeTrace(const std::string& path, const std::vector<OpTiming>& run, const SessionStats& stats) {
  std::ostringstream os;
  os << "{\"traceEvents\":[\n";
  os << "{\"name\":\"arena_bytes\",\"ph\":\"C\",\"ts\":0,\"pid\":1,\"tid\":1,\"args\":{\"arena_peak\":"
     << stats.arenaPeakBytes << "}}";
  for (const OpTiming& t : run) {
    os << ",\n{\"name\":" << jsonString(t.opType + (t.name.empty() ? "" : " " + t.name))
       << ",\"cat\":" << jsonString(t.backend) << ",\"ph\":\"X\",\"ts\":" << t.startUs << ",\"dur\":" << t.durationUs
       << ",\"pid\":1,\"tid\":1,\"args\":{\"op_type\":" << jsonString(t.opType) << ",\"name\":" << jsonString(t.name)
       << ",\"backend\":" << jsonString(t.backend) << ",\"inputs\":" << jsonString(shapesText(t.inputShapes))
       << ",\"outputs\":" << jsonString(shapesText(t.outputShapes)) << "}}";
  }
  os << "\n],\"displayTimeUnit\":\"ms\"}\n";
  std::ofstream f(path);
  if (!f || !(f << os.str())) return Status::invalidArgument("cannot write trace file '" + path + "'");
  return Status::ok();
}

}  // namespace

int cmdBench(int argc, char** argv) {
  Args args;
  Status st = parseArgs(argc, argv, 2, withConfigOptions({"input", "warmup", "loops", "trace", "gap-ms", "batch", "shape"}), {"per-op", "json", "step", "device-io"},
                        &args);
  if (!st) return fail(st);
  ScheduleConfig schedule;
  if (!(st = scheduleFromArgs(args, &schedule))) return fail(st);
  int warmup = 3, loops = 20, gapMs = 0;
  if (args.has("warmup") && !(st = parseInt(args.get("warmup"), "--warmup", &warmup))) return fail(st);
  if (args.has("loops") && !(st = parseInt(args.get("loops"), "--loops", &loops))) return fail(st);
  if (args.has("gap-ms") && !(st = parseInt(args.get("gap-ms"), "--gap-ms", &gapMs))) return fail(st);
  if (warmup < 0 || loops < 1) return fail(Status::invalidArgument("--warmup must be >= 0 and --loops >= 1"));
  const auto pause = [gapMs] {
    if (gapMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gapMs));
  };

  auto t0 = std::chrono::steady_clock::now();
  const auto started = t0;  // time to first result: load, session (device), plan (pipelines, weights), first run
  const std::string cacheNote = pipelineCacheNote(args);
  BackendConfig config;
  if (!(st = backendConfigFromArgs(args, &config))) return fail(st);
  RuntimeMadeWhileLoading runtime(schedule, config);
  std::shared_ptr<Interpreter> interp;
  if (!(st = loadModel(args, "bench", &interp))) return fail(st);
  const double loadMs = msSince(t0);
  std::unique_ptr<Session> session;
  t0 = std::chrono::steady_clock::now();
  // What the runtime still needed after the load, then the session.
  if (!(st = runtime.createSession(*interp, &session))) return fail(st);
  const double sessionMs = msSince(t0);
  std::map<std::string, Tensor> inputs;
  double generatingMs = 0;
  t0 = std::chrono::steady_clock::now();
  if (!(st = loadInputs(args, *interp, session.get(), &inputs, &generatingMs))) return fail(st);
  const double planMs = msSince(t0) - generatingMs;  // input files read, the session planned

  std::vector<Tensor> outputs;
  t0 = std::chrono::steady_clock::now();
  if (!(st = session->run(inputs, &outputs))) return fail(st);  // plans memory and packs weights
  const double firstMs = msSince(t0);
  const double firstResultMs = msSince(started) - generatingMs;
  // --device-io: inputs and outputs stay in the device's memory (IoBinding), as a server keeps
  // them: the runs below copy nothing between host and device.
  IoBinding io;
  const bool deviceIo = args.has("device-io");
  if (deviceIo) {
    if (schedule.backend == ForwardType::CPU) return fail(Status::invalidArgument("--device-io needs a device backend (--backend cuda)"));
    for (auto& [name, t] : inputs) {
      DeviceTensor d;
      if (!(st = session->allocateDevice(t.dtype(), t.shape(), &d)) || !(st = session->copyToDevice(t, d))) return fail(st);
      io.bindInput(name, d);
    }
    const auto infos = session->outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      DeviceTensor d;
      if (!(st = session->allocateDevice(outputs[i].dtype(), outputs[i].shape(), &d))) return fail(st);
      io.bindOutput(infos[i].name, d);
    }
  }
  auto runOnce = [&] { return deviceIo ? session->run(io) : session->run(inputs, &outputs); };
  for (int i = 1; i < warmup + (deviceIo ? 1 : 0); ++i)
    if (!(st = runOnce())) return fail(st);
  std::vector<double> times;
  const bool step = args.has("step");
  if (step) std::printf("ready\n"), std::fflush(stdout);
  char line[256];
  for (int i = 0; step || i < loops; ++i) {
    if (step && !std::fgets(line, sizeof(line), stdin)) break;
    pause();
    auto r0 = std::chrono::steady_clock::now();
    if (!(st = runOnce())) return fail(st);
    times.push_back(msSince(r0));
    if (step) std::printf("%.4f\n", times.back()), std::fflush(stdout);
  }
  if (times.empty()) return fail(Status::invalidArgument("no timed runs"));
  loops = static_cast<int>(times.size());
  std::sort(times.begin(), times.end());
  const double minMs = times.front(), maxMs = times.back(), medianMs = times[times.size() / 2];
  const size_t rss = peakRssBytes();

  std::vector<std::vector<OpTiming>> profiled;
  const bool perOp = args.has("per-op"), trace = args.has("trace");
  if (perOp || trace) {
    session->setProfiling(true);
    for (int i = 0; i < std::min(loops, 10); ++i) {
      pause();
      if (!(st = runOnce())) return fail(st);
      profiled.push_back(session->lastRunProfile());
    }
    session->setProfiling(false);
  }
  const SessionStats& stats = session->stats();
  if (trace && !(st = writeTrace(args.get("trace"), profiled.back(), stats))) return fail(st);

  if (args.has("json")) {
    std::printf("{\"model\":%s,\"backend\":%s,\"threads\":%d,\"warmup\":%d,\"loops\":%d,\"load_ms\":%.3f,"
                "\"session_ms\":%.3f,\"first_run_ms\":%.3f,\"min_ms\":%.4f,\"median_ms\":%.4f,\"max_ms\":%.4f,\"peak_rss_bytes\":%zu,"
                "\"arena_peak_bytes\":%zu,\"executions\":%d,\"precision\":%s,\"first_result_ms\":%.3f,\"plan_ms\":%.3f}\n",
                jsonString(args.positional[0]).c_str(), jsonString(forwardTypeName(schedule.backend)).c_str(),
                schedule.threads, warmup, loops, loadMs, sessionMs, firstMs, minMs, medianMs, maxMs, rss, stats.arenaPeakBytes,
                stats.executions, jsonString(args.get("precision", "normal")).c_str(), firstResultMs, planMs);
  } else {
    std::printf("%s: backend %s, %d thread(s), %d warm-up + %d timed runs\n", args.positional[0].c_str(),
                forwardTypeName(schedule.backend), schedule.threads, warmup, loops);
    std::printf("load %.1f ms, first run %.2f ms; min %.3f / median %.3f / max %.3f ms\n", loadMs, firstMs, minMs,
                medianMs, maxMs);
    std::printf("time to first result: %.1f ms (load %.1f, session %.1f, plan %.1f, first run %.1f)%s\n", firstResultMs,
                loadMs, sessionMs, planMs, firstMs, cacheNote.c_str());
    std::printf("peak RSS %.1f MB, arena peak %.2f MB, %d executions", rss / 1048576.0,
                stats.arenaPeakBytes / 1048576.0, stats.executions);
    if (stats.hostOps > 0) std::printf(" in %d stages (%d data-dependent ops on the host)", stats.stages, stats.hostOps);
    std::printf("\n");
  }
  if (perOp && !args.has("json")) printPerOp(profiled, medianMs);
  return 0;
}

}  // namespace osprey::cli
