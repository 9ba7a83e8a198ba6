#include "cli_common.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "converter/onnx/onnx_proto.h"
#include "core/dtype.h"
#include "core/npy.h"

namespace osprey::cli {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

std::vector<std::string> Args::all(const std::string& name) const {
  std::vector<std::string> v;
  auto range = options.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) v.push_back(it->second);
  return v;
}

Status parseArgs(int argc, char** argv, int first, const std::vector<std::string>& valued,
                 const std::vector<std::string>& flags, Args* out) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      out->positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    size_t eq = name.find('=');
    bool inlineValue = eq != std::string::npos;
    if (inlineValue) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    bool isFlag = std::find(flags.begin(), flags.end(), name) != flags.end();
    bool isValued = std::find(valued.begin(), valued.end(), name) != valued.end();
    if (!isFlag && !isValued) return Status::invalidArgument("unknown option --" + name);
    if (isValued && !inlineValue) {
      if (i + 1 >= argc) return Status::invalidArgument("option --" + name + " needs a value");
      value = argv[++i];
    }
    out->options.emplace(name, value);
  }
  return Status::ok();
}

Status parseInt(const std::string& text, const char* what, int* out) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v > 1 << 20)
    return Status::invalidArgument(std::string(what) + " must be a non-negative integer, got '" + text + "'");
  *out = static_cast<int>(v);
  return Status::ok();
}

Status loadTensorFile(const std::string& path, Tensor* out) {
  bool isPb = path.size() > 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
  if (isPb) {
    onnx::TensorProto tp;
    OSPREY_RETURN_IF_ERROR(onnx::loadTensorFile(path, &tp));
    if (tp.dtype == DataType::Undefined)
      return Status::unsupported("'" + path + "' holds ONNX data type " + std::to_string(tp.rawType));
    if (tp.external)  // its values are elsewhere: reading on would feed zeros
      return Status::unsupported("'" + path + "' keeps its data in an external file, which --input does not read");
    Tensor t(tp.dtype, tp.dims);
    if (tp.dtype == DataType::String) {
      t.strings() = tp.strings;
    } else if (!tp.data.empty()) {
      std::memcpy(t.data(), tp.data.data(), tp.data.size());
    }
    *out = std::move(t);
    return Status::ok();
  }
  NpyArray a;
  OSPREY_RETURN_IF_ERROR(readNpy(path, &a));
  Tensor t(a.dtype, a.shape);
  if (!a.data.empty()) std::memcpy(t.data(), a.data.data(), a.data.size());
  *out = std::move(t);
  return Status::ok();
}

Status saveNpy(const std::string& path, const Tensor& t) {
  if (t.dtype() == DataType::String) return Status::unsupported("cannot save string tensor to " + path);
  return writeNpy(path, t.dtype(), t.shape(), t.data());
}

Tensor randomInput(DataType dtype, const Shape& shape, uint32_t seed) {
  Tensor t(dtype, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < t.elements(); ++i) {
    switch (dtype) {
      case DataType::Float32:
      case DataType::Float64:
      case DataType::Float16:
      case DataType::BFloat16: storeFromDouble(dtype, t.data(), i, uniform(gen)); break;
      case DataType::Bool: storeFromDouble(dtype, t.data(), i, small(gen) & 1); break;
      case DataType::String: t.strings()[i] = "s" + std::to_string(small(gen)); break;
      default: storeFromDouble(dtype, t.data(), i, small(gen)); break;
    }
  }
  return t;
}

std::string previewValues(const Tensor& t, int count) {
  std::ostringstream os;
  int64_t n = std::min<int64_t>(count, t.elements());
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    if (t.dtype() == DataType::String) {
      os << '"' << t.strings()[i] << '"';
    } else {
      os << loadAsDouble(t.dtype(), t.data(), i);
    }
  }
  if (t.elements() > n) os << ", ...";
  os << "]";
  return os.str();
}

Status loadModel(const std::string& path, std::shared_ptr<Interpreter>* out) { return Interpreter::fromFile(path, out); }

Status scheduleFromArgs(const Args& args, ScheduleConfig* schedule) {
  std::string backend = args.get("backend", "cpu");
  if (!forwardTypeFromName(backend, &schedule->backend))
    return Status::invalidArgument("unknown backend '" + backend + "' (known: cpu, cuda, opencl, vulkan)");
  if (args.has("threads")) OSPREY_RETURN_IF_ERROR(parseInt(args.get("threads"), "--threads", &schedule->threads));
  if (schedule->threads < 1) return Status::invalidArgument("--threads must be at least 1");
  if (args.has("time-limit-ms")) {
    int ms = 0;
    OSPREY_RETURN_IF_ERROR(parseInt(args.get("time-limit-ms"), "--time-limit-ms", &ms));
    schedule->runTimeLimitMs = ms;
  }
  return Status::ok();
}

Status backendConfigFromArgs(const Args& args, BackendConfig* config) {
  const std::string precision = args.get("precision", "normal");
  if (precision == "normal") config->precision = BackendConfig::Precision::Normal;
  else if (precision == "high") config->precision = BackendConfig::Precision::High;
  else if (precision == "low") config->precision = BackendConfig::Precision::Low;
  else return Status::invalidArgument("--precision must be normal, high or low, got '" + precision + "'");
  if (args.has("memory-limit")) {
    const std::string text = args.get("memory-limit");
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    int shift = 0;
    if (end != text.c_str() && *end && !end[1]) {
      const char* units = "KMGT";
      const char* unit = std::strchr(units, std::toupper(static_cast<unsigned char>(*end)));
      if (unit) shift = 10 * static_cast<int>(unit - units + 1), ++end;
    }
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end || errno || v == 0 ||
        v > (UINT64_MAX >> shift))
      return Status::invalidArgument("--memory-limit must be a positive number of bytes (K, M, G or T suffix allowed), got '" +
                                     text + "'");
    config->memoryLimit = static_cast<uint64_t>(v) << shift;
  }
  if (args.has("plan-cache")) {
    OSPREY_RETURN_IF_ERROR(parseInt(args.get("plan-cache"), "--plan-cache", &config->planCacheSize));
    if (config->planCacheSize < 0) return Status::invalidArgument("--plan-cache must be 0 or more");
  }
  return Status::ok();
}

Status planBeforeGenerating(Session* session, const std::map<std::string, Tensor>& given,
                            const std::map<std::string, Shape>& generated) {
  std::map<std::string, Shape> shapes = generated;
  for (const auto& info : session->inputs()) {  // a wrong name is left for run() to report
    auto it = given.find(info.name);
    if (it != given.end()) shapes[info.name] = it->second.shape();
  }
  return session->resize(shapes);
}

Status generatedInputShape(const Args& args, const TensorInfoPublic& info, Shape* shape) {
  for (const std::string& spec : args.all("shape")) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || spec.substr(0, eq) != info.name) continue;
    shape->clear();
    std::string dims = spec.substr(eq + 1);
    size_t pos = 0;
    while (pos <= dims.size()) {
      size_t comma = dims.find(',', pos);
      std::string item = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      int d = 0;
      OSPREY_RETURN_IF_ERROR(parseInt(item, "--shape dimension", &d));
      if (d < 0) return Status::invalidArgument("--shape " + spec + ": dimensions must be >= 0");
      shape->push_back(d);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    return Status::ok();
  }
  *shape = info.shape;
  for (auto& d : *shape)
    if (d < 0) d = 1;  // symbolic dimensions default to 1
  if (args.has("batch") && !shape->empty()) {
    int batch = 0;
    OSPREY_RETURN_IF_ERROR(parseInt(args.get("batch"), "--batch", &batch));
    if (batch < 1) return Status::invalidArgument("--batch must be at least 1");
    (*shape)[0] = batch;
  }
  return Status::ok();
}

int fail(const Status& st) {
  std::string msg = st.message();
  for (char& c : msg)
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

}  // namespace osprey::cli
