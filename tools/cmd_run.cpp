// osprey run MODEL [--input NAME=FILE]... [--save-outputs DIR] [--backend B] [--threads N] [--loops L]
//                  [--precision normal|high|low] [--memory-limit BYTES]
//                  [--time-limit-ms MS] [--dump-tensors DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli_common.h"

namespace osprey::cli {

namespace {
std::string fileSafe(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  // TFLite names join every fused op's name with ';': keep the file name under NAME_MAX (255),
  // its start and its end (the layout suffix); the NNNN_ prefix keeps it unique.
  constexpr size_t kKeep = 100;
  if (s.size() > 2 * kKeep) s = s.substr(0, kKeep) + "~" + s.substr(s.size() - kKeep);
  return s;
}

// Writes every op's outputs of a run as DIR/NNNN_<tensor>.npy, in the order the ops ran.
struct TensorDump {
  std::string dir;
  int count = 0;
  Status failure;
  RunCallbacks callbacks() {
    RunCallbacks c;
    c.after = [this](const OpCallbackInfo&, const OpTensors& outputs) {
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs.name(i).empty()) continue;
        Tensor t;
        Status st = outputs.read(i, &t);
        char number[16];
        std::snprintf(number, sizeof number, "%04d_", count++);
        if (st) st = saveNpy(dir + "/" + number + fileSafe(outputs.name(i)) + ".npy", t);
        if (!st) {
          failure = st.withContext("--dump-tensors, tensor '" + outputs.name(i) + "'");
          return false;
        }
      }
      return true;
    };
    return c;
  }
};

Status makeDirectory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::invalidArgument("cannot create directory '" + dir + "': " + ec.message());
  return Status::ok();
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int cmdRun(int argc, char** argv) {
  Args args;
  Status st = parseArgs(argc, argv, 2, withConfigOptions({"input", "save-outputs", "loops", "seed", "dump-tensors"}), {"quiet"}, &args);
  if (!st) return fail(st);
  ScheduleConfig schedule;
  if (!(st = scheduleFromArgs(args, &schedule))) return fail(st);
  int loops = 1, seed = 0;
  if (args.has("loops") && !(st = parseInt(args.get("loops"), "--loops", &loops))) return fail(st);
  if (args.has("seed") && !(st = parseInt(args.get("seed"), "--seed", &seed))) return fail(st);
  loops = std::max(loops, 1);

  BackendConfig config;
  if (!(st = backendConfigFromArgs(args, &config))) return fail(st);
  RuntimeMadeWhileLoading runtime(schedule, config);
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<Interpreter> interp;
  if (!(st = loadModel(args, "run", &interp))) return fail(st);
  double loadMs = msSince(t0);

  std::map<std::string, Tensor> inputs;
  for (const std::string& spec : args.all("input")) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return fail(Status::invalidArgument("--input expects NAME=FILE, got '" + spec + "'"));
    Tensor t;
    const std::string name = spec.substr(0, eq);
    TensorInfoPublic declared;
    for (const auto& info : interp->inputs())
      if (info.name == name) declared = info;
    if (!(st = loadInputFile(spec.substr(eq + 1), declared, &t))) return fail(st);
    inputs[name] = std::move(t);
  }
  std::map<std::string, Shape> generated;
  for (const auto& info : interp->inputs()) {
    if (inputs.count(info.name)) continue;
    if (info.optional) {  // left out: it holds no value
      inputs[info.name] = Tensor();
      std::printf("input '%s': no value (optional)\n", info.name.c_str());
      continue;
    }
    if (info.dtype == DataType::Sequence)
      return fail(Status::invalidArgument("input '" + info.name + "' is a sequence: give it with --input " + info.name +
                                          "=FILE.pb (an ONNX SequenceProto)"));
    Shape& shape = generated[info.name] = info.shape;
    for (auto& d : shape)
      if (d < 0) d = 1;  // symbolic dimensions default to 1
  }

  std::unique_ptr<Session> session;
  if (!(st = runtime.createSession(*interp, &session))) return fail(st);
  if (!(st = planBeforeGenerating(session.get(), inputs, generated))) return fail(st);
  uint32_t inputSeed = static_cast<uint32_t>(seed);
  for (const auto& info : interp->inputs()) {
    auto it = generated.find(info.name);
    if (it == generated.end()) continue;
    inputs[info.name] = randomInput(info.dtype, it->second, inputSeed++);
    std::printf("input '%s': random %s %s (seed %u)\n", info.name.c_str(), dataTypeName(info.dtype),
                shapeToString(it->second).c_str(), inputSeed - 1);
  }
  TensorDump dump;
  dump.dir = args.get("dump-tensors");
  if (!dump.dir.empty() && !(st = makeDirectory(dump.dir))) return fail(st);
  std::vector<Tensor> outputs;
  std::vector<double> times;
  for (int i = 0; i < loops; ++i) {
    auto r0 = std::chrono::steady_clock::now();
    // The first run is dumped; the rest are timed as usual.
    st = i == 0 && !dump.dir.empty() ? session->run(inputs, &outputs, dump.callbacks()) : session->run(inputs, &outputs);
    if (!st) return fail(dump.failure ? st : dump.failure);
    times.push_back(msSince(r0));
  }
  if (!dump.dir.empty()) std::printf("%d intermediate tensors written to %s\n", dump.count, dump.dir.c_str());
  auto names = session->outputs();
  std::string dir = args.get("save-outputs");
  if (!dir.empty() && !(st = makeDirectory(dir))) return fail(st);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    std::printf("output %zu '%s': %s\n", i, names[i].name.c_str(), describeValue(t, 8).c_str());
    if (!dir.empty()) {
      // A sequence's items go to files of their own (NAME.K.npy); an absent optional to none.
      const std::string stem = dir + "/" + std::to_string(i) + "_" + fileSafe(names[i].name);
      if (t.isSequence()) {
        for (size_t k = 0; k < t.items().size(); ++k)
          if (!(st = saveNpy(stem + "." + std::to_string(k) + ".npy", t.items()[k]))) return fail(st);
      } else if (!t.empty() && !(st = saveNpy(stem + ".npy", t))) {
        return fail(st);
      }
    }
  }
  const SessionStats& stats = session->stats();
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  std::printf("backend %s, %d thread(s): load %.1f ms, first run %.2f ms (includes planning)", forwardTypeName(schedule.backend),
              schedule.threads, loadMs, times[0]);
  if (loops > 1)
    std::printf(", then min %.2f / median %.2f ms over %d runs", *std::min_element(times.begin() + 1, times.end()),
                [&] {
                  std::vector<double> rest(times.begin() + 1, times.end());
                  std::sort(rest.begin(), rest.end());
                  return rest[rest.size() / 2];
                }(),
                loops - 1);
  std::printf("\narena peak %.2f MB (activations add up to %.2f MB), static %.2f MB, %d executions, %d ops folded, "
              "%d lowered to raster (%d of them views of their input)\n",
              stats.arenaPeakBytes / 1048576.0, stats.activationBytesSum / 1048576.0, stats.staticBytes / 1048576.0,
              stats.executions, stats.foldedOps, stats.loweredOps, stats.views);
  if (stats.hostOps > 0)
    std::printf("%d planned stage(s): %d op(s) whose output shapes depend on data run on the host between them\n",
                stats.stages, stats.hostOps);
  if (stats.relaidTensors > 0)
    std::printf("%d activations kept in the backend's own layout (converted at its edges)\n", stats.relaidTensors);
  if (stats.fullPrecisionOps > 0)
    std::printf("%d commands of the model's stem kept in fp32 at low precision (OSPREY_FP32_STEM)\n", stats.fullPrecisionOps);
  if (schedule.backend != ForwardType::CPU) {
    // Ops the device declined run on the CPU backup, with copies around them.
    std::string fallback, onDevice;
    const std::string devicePrefix = std::string(forwardTypeName(schedule.backend)) + ":";
    for (const auto& [key, count] : stats.opsByBackend) {
      if (key.rfind("cpu:", 0) == 0) fallback += " " + key.substr(4) + " x" + std::to_string(count);
      if (key.rfind(devicePrefix, 0) == 0) onDevice += " " + key.substr(devicePrefix.size()) + " x" + std::to_string(count);
    }
    std::printf("on %s:%s\n", forwardTypeName(schedule.backend), onDevice.empty() ? " none" : onDevice.c_str());
    std::printf("on the cpu backup:%s\n", fallback.empty() ? " none" : fallback.c_str());
  }
  return 0;
}

}  // namespace osprey::cli
