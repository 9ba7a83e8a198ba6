#include "cli_common.h"

#include "converter/converter.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <utility>

#include "converter/onnx/onnx_proto.h"
#include "core/dtype.h"
#include "core/files.h"
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

Status inputShapesFromArgs(const Args& args, std::map<std::string, Shape>* out) {
  for (const std::string& spec : args.all("input-shape")) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0)
      return Status::invalidArgument("--input-shape must be NAME=D,D,... (e.g. input=1,224,224,3), got '" + spec + "'");
    Shape shape;
    std::string dims = spec.substr(eq + 1);
    for (size_t pos = 0; !dims.empty() && pos <= dims.size();) {
      const size_t comma = std::min(dims.find(',', pos), dims.size());
      const std::string d = dims.substr(pos, comma - pos);
      int v = 0;
      if (d == "?" || d == "-1") v = -1;
      else OSPREY_RETURN_IF_ERROR(parseInt(d, "--input-shape dimension", &v));
      shape.push_back(v);
      pos = comma + 1;
    }
    (*out)[spec.substr(0, eq)] = shape;
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

Status loadInputFile(const std::string& path, const TensorInfoPublic& input, Tensor* out) {
  const bool isPb = path.size() > 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
  if (!isPb || (input.dtype != DataType::Sequence && !input.optional)) return loadTensorFile(path, out);
  std::vector<uint8_t> bytes;
  OSPREY_RETURN_IF_ERROR(readFile(path, &bytes));
  onnx::ValueProto v;
  const int kind = input.optional ? onnx::ValueProto::kOptional : onnx::ValueProto::kSequence;
  OSPREY_RETURN_IF_ERROR(onnx::parseValue(bytes.data(), bytes.size(), kind, &v).withContext(path));
  if (!v.hasValue) {
    *out = Tensor();
    return Status::ok();
  }
  std::vector<Tensor> items;
  for (const onnx::TensorProto& tp : v.tensors) {
    if (tp.dtype == DataType::Undefined || tp.external)
      return Status::unsupported("'" + path + "' holds a tensor of ONNX data type " + std::to_string(tp.rawType) +
                                 " or with external data, which --input does not read");
    Tensor t(tp.dtype, tp.dims);
    if (tp.dtype == DataType::String) {
      t.strings() = tp.strings;
    } else if (!tp.data.empty()) {
      std::memcpy(t.data(), tp.data.data(), tp.data.size());
    }
    items.push_back(std::move(t));
  }
  if (!v.isSequence) {
    *out = items.at(0);
    return Status::ok();
  }
  const DataType element = items.empty() ? input.elementDtype : items[0].dtype();
  *out = Tensor::sequence(element == DataType::Undefined ? DataType::Float32 : element, std::move(items));
  return Status::ok();
}

std::string describeValue(const Tensor& t, int count) {
  if (t.empty()) return "no value";
  if (!t.isSequence()) return std::string(dataTypeName(t.dtype())) + " " + shapeToString(t.shape()) + " " + previewValues(t, count);
  std::string s = "sequence of " + std::to_string(t.items().size()) + " " + dataTypeName(t.elementType());
  for (size_t i = 0; i < t.items().size(); ++i) {
    const Tensor& item = t.items()[i];
    s += (i ? ", " : ": ");
    s += item.isMap() ? "map of " + std::to_string(item.items().at(0).elements()) + " " + previewValues(item.items().at(1), count)
                      : shapeToString(item.shape()) + " " + previewValues(item, count);
  }
  return s;
}

std::string describeType(const TensorInfoPublic& t) {
  std::string type;
  if (t.dtype == DataType::Sequence) {
    type = std::string("sequence(") + dataTypeName(t.elementDtype) + ")";
  } else {
    type = std::string(dataTypeName(t.dtype)) + " [";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) type += ", ";
      type += t.shape[i] >= 0 ? std::to_string(t.shape[i]) : (i < t.dimNames.size() && !t.dimNames[i].empty() ? t.dimNames[i] : "?");
    }
    type += "]";
  }
  return t.optional ? "optional(" + type + ")" : type;
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

Status loadModel(const Args& args, const char* command, std::shared_ptr<Interpreter>* out) {
  const bool caffe = !args.positional.empty() && isCaffePrototxt(args.positional[0]);
  if (args.positional.size() != 1 && !(caffe && args.positional.size() == 2))
    return Status::invalidArgument(std::string(command) +
                                   " needs one MODEL (.onnx, .osp, .tflite, a TensorFlow .pb, or a Caffe deploy.prototxt "
                                   "and its .caffemodel)");
  // --memory low maps a .osp file, so its weights' pages can go back once packed.
  LoadOptions options;
  options.mapFile = args.get("memory", "normal") == "low";
  if (args.positional.size() == 2) options.weights = args.positional[1];
  options.signature = args.get("signature", "");
  if (!options.signature.empty() && !isTensorflowModel(args.positional[0]))
    return Status::invalidArgument("--signature applies to TensorFlow SavedModel directories");
  return Interpreter::fromFile(args.positional[0], options, out);
}

RuntimeMadeWhileLoading::RuntimeMadeWhileLoading(const ScheduleConfig& schedule, const BackendConfig& config)
    : schedule_(schedule), config_(config) {
  // Vulkan and OpenCL objects may be used from any thread; a CUDA runtime binds its device to
  // the thread that makes it, so it is made by the session, on the caller's thread, as the CPU's.
  if (schedule_.backend == ForwardType::Vulkan || schedule_.backend == ForwardType::OpenCL) {
    std::promise<Status> promise;
    made_ = promise.get_future();
    maker_ = std::thread([this, promise = std::move(promise)]() mutable {
      Status st = Interpreter::createRuntime(schedule_, config_, &runtime_);
      promise.set_value(st);
    });
  }
}

RuntimeMadeWhileLoading::~RuntimeMadeWhileLoading() {
  if (maker_.joinable()) maker_.join();
}

Status RuntimeMadeWhileLoading::createSession(const Interpreter& interp, std::unique_ptr<Session>* out) {
  if (made_.valid() && made_.get() && runtime_) return interp.createSession(runtime_, out);
  return interp.createSession(schedule_, config_, out);
}

Status scheduleFromArgs(const Args& args, ScheduleConfig* schedule) {
  std::string backend = args.get("backend", "cpu");
  if (!forwardTypeFromName(backend, &schedule->backend))
    return Status::invalidArgument("unknown backend '" + backend + "' (known: cpu, cuda, opencl, vulkan)");
  if (args.has("threads")) OSPREY_RETURN_IF_ERROR(parseInt(args.get("threads"), "--threads", &schedule->threads));
  if (schedule->threads < 1) return Status::invalidArgument("--threads must be at least 1");
  if (args.has("cpu-isa")) {
    CpuIsa isa;
    const std::string name = args.get("cpu-isa");
    if (!cpuIsaFromName(name, &isa))
      return Status::invalidArgument("--cpu-isa must be native, avx2 or scalar, got '" + name + "'");
    OSPREY_RETURN_IF_ERROR(setCpuIsaLimit(isa));
  }
  if (args.has("time-limit-ms")) {
    int ms = 0;
    OSPREY_RETURN_IF_ERROR(parseInt(args.get("time-limit-ms"), "--time-limit-ms", &ms));
    schedule->runTimeLimitMs = ms;
  }
  return Status::ok();
}

namespace {

// The value of option --`name` among `names` ("a|b|c") sets *out to the matching one of `values`;
// absent, *out stays. Anything else is an error naming the option and what it accepts.
template <class T>
Status choiceArg(const Args& args, const char* name, const std::vector<std::pair<const char*, T>>& choices, T* out) {
  if (!args.has(name)) return Status::ok();
  const std::string value = args.get(name);
  std::string known;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (value == choices[i].first) {
      *out = choices[i].second;
      return Status::ok();
    }
    known += std::string(i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i].first;
  }
  return Status::invalidArgument(std::string("--") + name + " must be " + known + ", got '" + value + "'");
}

Status onOffArg(const Args& args, const char* name, bool* out) {
  return choiceArg<bool>(args, name, {{"on", true}, {"off", false}}, out);
}

Status perBackendOptionsFromArgs(const Args& args, BackendConfig* config) {
  using Pin = CpuOptions::Pinning;
  OSPREY_RETURN_IF_ERROR(
      choiceArg<Pin>(args, "cpu-pinning", {{"auto", Pin::Auto}, {"on", Pin::On}, {"off", Pin::Off}}, &config->cpu.pinning));
  using CpuLayout = CpuOptions::Layout;
  OSPREY_RETURN_IF_ERROR(choiceArg<CpuLayout>(args, "cpu-layout", {{"nchw", CpuLayout::NCHW}, {"nc8hw8", CpuLayout::NC8HW8}},
                                              &config->cpu.layout));
  using QLayout = CpuOptions::QuantizedLayout;
  OSPREY_RETURN_IF_ERROR(choiceArg<QLayout>(args, "cpu-quantized-layout",
                                            {{"auto", QLayout::Auto}, {"nchw", QLayout::NCHW}, {"nhwc", QLayout::NHWC}},
                                            &config->cpu.quantizedLayout));
  using Low = CudaOptions::LowPrecision;
  OSPREY_RETURN_IF_ERROR(choiceArg<Low>(args, "cuda-low-precision", {{"fp16", Low::Float16}, {"bf16", Low::BFloat16}},
                                        &config->cuda.lowPrecision));
  using CudaLayout = CudaOptions::Layout;
  OSPREY_RETURN_IF_ERROR(choiceArg<CudaLayout>(
      args, "cuda-layout", {{"auto", CudaLayout::Auto}, {"nchw", CudaLayout::NCHW}, {"nhwc", CudaLayout::NHWC}},
      &config->cuda.layout));
  OSPREY_RETURN_IF_ERROR(onOffArg(args, "cuda-graphs", &config->cuda.graphs));
  OSPREY_RETURN_IF_ERROR(onOffArg(args, "cuda-autotune", &config->cuda.autotune));
  if (args.has("cuda-cache")) config->cuda.tuningCachePath = args.get("cuda-cache");
  if (args.has("opencl-platform")) config->opencl.platform = args.get("opencl-platform");
  if (args.has("opencl-device")) config->opencl.device = args.get("opencl-device");
  using Tuning = OpenCLOptions::Tuning;
  OSPREY_RETURN_IF_ERROR(choiceArg<Tuning>(
      args, "opencl-tune", {{"none", Tuning::None}, {"fast", Tuning::Fast}, {"wide", Tuning::Wide}}, &config->opencl.tuning));
  if (args.has("opencl-cache")) config->opencl.tuningCachePath = args.get("opencl-cache");
  using Mem = OpenCLOptions::Memory;
  OSPREY_RETURN_IF_ERROR(choiceArg<Mem>(
      args, "opencl-memory", {{"auto", Mem::Auto}, {"buffer", Mem::Buffer}, {"image", Mem::Image}}, &config->opencl.memory));
  OSPREY_RETURN_IF_ERROR(onOffArg(args, "opencl-fp16-math", &config->opencl.halfMath));
  OSPREY_RETURN_IF_ERROR(onOffArg(args, "opencl-profile", &config->opencl.profile));
  if (args.has("vulkan-device")) config->vulkan.device = args.get("vulkan-device");
  if (args.has("vulkan-cache")) config->vulkan.pipelineCachePath = args.get("vulkan-cache");
  OSPREY_RETURN_IF_ERROR(onOffArg(args, "vulkan-validation", &config->vulkan.validation));
  OSPREY_RETURN_IF_ERROR(onOffArg(args, "vulkan-fp16-math", &config->vulkan.halfMath));
  OSPREY_RETURN_IF_ERROR(onOffArg(args, "vulkan-mapped-weights", &config->vulkan.mappedWeights));
  return Status::ok();
}

}  // namespace

std::vector<std::string> withConfigOptions(std::vector<std::string> valued) {
  for (const char* name : {"backend", "threads", "time-limit-ms", "cpu-isa", "precision", "memory",
                           "memory-limit", "plan-cache", "fp32-stem", "cpu-pinning", "cpu-layout", "cpu-quantized-layout", "cuda-low-precision",
                           "cuda-layout", "cuda-graphs", "cuda-autotune", "cuda-cache", "opencl-platform", "opencl-device", "opencl-tune", "opencl-cache",
                           "opencl-memory", "opencl-fp16-math", "opencl-profile", "vulkan-device", "vulkan-cache",
                           "vulkan-validation", "vulkan-fp16-math", "vulkan-mapped-weights", "signature"})
    if (std::find(valued.begin(), valued.end(), name) == valued.end()) valued.push_back(name);
  return valued;
}

const char* configOptionsUsage() {
  return "  options of run and bench that configure the session:\n"
         "    --backend cpu|cuda|opencl|vulkan  --threads N  --time-limit-ms MS\n"
         "    --precision normal|high|low  --memory normal|low (low: arena pages returned between runs,\n"
         "                                 a .osp file mapped and its packed weights' pages returned)\n"
         "    --memory-limit BYTES[K|M|G|T]  refuse plans needing more (default: physical memory)\n"
         "    --plan-cache N                 plans of N other input shapes kept (default 4)\n"
         "    --fp32-stem SHARE              at low precision, share of the convolution work kept in fp32 (0.1)\n"
         "    --cpu-isa native|avx2|scalar   widest CPU kernel table (process-wide; also OSPREY_CPU_ISA)\n"
         "    --cpu-pinning auto|on|off      bind the thread pool's workers to cores\n"
         "    --cpu-layout nchw|nc8hw8       CPU activation layout (nc8hw8: opt-in packed layout)\n"
         "    --cpu-quantized-layout auto|nchw|nhwc  layout of 4-D int8/uint8 activations (auto: nhwc)\n"
         "    --cuda-low-precision fp16|bf16 --cuda-layout auto|nchw|nhwc  --cuda-graphs on|off\n"
         "    --cuda-autotune on|off         time cuBLASLt / cuDNN algorithms per shape (off: heuristics)\n"
         "    --cuda-cache FILE              timed choices kept across processes\n"
         "    --opencl-platform P  --opencl-device D   index or name substring (default: first GPU)\n"
         "    --opencl-tune none|fast|wide   --opencl-cache FILE (programs and tuned work sizes)\n"
         "    --opencl-memory auto|buffer|image  --opencl-fp16-math on|off  --opencl-profile on|off\n"
         "    --vulkan-device D  index or name substring (default: first GPU)  --vulkan-cache FILE (pipelines)\n"
         "    --vulkan-validation on|off     VK_LAYER_KHRONOS_validation where installed\n"
         "    --vulkan-fp16-math on|off      fp16 multiplies in convolutions and MatMul at --precision low\n"
         "    --vulkan-mapped-weights on|off weights written into mapped device memory where a large heap is\n";
}

Status backendConfigFromArgs(const Args& args, BackendConfig* config) {
  const std::string precision = args.get("precision", "normal");
  if (precision == "normal") config->precision = BackendConfig::Precision::Normal;
  else if (precision == "high") config->precision = BackendConfig::Precision::High;
  else if (precision == "low") config->precision = BackendConfig::Precision::Low;
  else return Status::invalidArgument("--precision must be normal, high or low, got '" + precision + "'");
  using Memory = BackendConfig::Memory;
  OSPREY_RETURN_IF_ERROR(choiceArg<Memory>(args, "memory", {{"normal", Memory::Normal}, {"low", Memory::Low}}, &config->memory));
  if (args.has("fp32-stem")) {
    const std::string text = args.get("fp32-stem");
    char* end = nullptr;
    const float share = std::strtof(text.c_str(), &end);
    if (text.empty() || *end || !(share >= 0.f && share <= 1.f))
      return Status::invalidArgument("--fp32-stem must be a share from 0 to 1, got '" + text + "'");
    config->fullPrecisionStem = share;
  }
  OSPREY_RETURN_IF_ERROR(perBackendOptionsFromArgs(args, config));
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
