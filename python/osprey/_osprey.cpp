// The `osprey._osprey` extension: the engine's Interpreter and Session behind
// osprey.InferenceSession, conversion to .osp, and the engine's errors as Python exceptions.
// The Python layer (osprey/__init__.py) adds the ONNX Runtime-style API on top.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "converter/converter.h"
#include "quantizer/quantizer_io.h"
#include "dlpack_import.h"
#include "core/graph.h"
#include "runtime/model_io.h"
#include "osprey/osprey.h"
#include "osprey_generated.h"

namespace py = pybind11;

namespace osprey {
namespace {

// Thrown from anywhere (also while the GIL is released); translated once the GIL is held again.
struct StatusError {
  Status status;
};

void check(const Status& st) {
  if (!st) throw StatusError{st};
}

Status invalidArgument(std::string message) { return Status::invalidArgument(std::move(message)); }

// Exception classes, created at import; they live as long as the interpreter.
struct ErrorTypes {
  PyObject* base = nullptr;
  PyObject* invalidArgument = nullptr;
  PyObject* invalidModel = nullptr;
  PyObject* unsupported = nullptr;
  PyObject* notFound = nullptr;
  PyObject* outOfMemory = nullptr;
  PyObject* cancelled = nullptr;
};
ErrorTypes gErrors;

PyObject* errorTypeFor(StatusCode code) {
  switch (code) {
    case StatusCode::InvalidArgument: return gErrors.invalidArgument;
    case StatusCode::InvalidModel: return gErrors.invalidModel;
    case StatusCode::Unsupported: return gErrors.unsupported;
    case StatusCode::NotFound: return gErrors.notFound;
    case StatusCode::OutOfMemory: return gErrors.outOfMemory;
    case StatusCode::Cancelled: return gErrors.cancelled;
    default: return gErrors.base;
  }
}

PyObject* makeError(py::module_& m, const char* name, std::vector<PyObject*> bases, const char* doc) {
  py::tuple tuple(bases.size());
  for (size_t i = 0; i < bases.size(); ++i) tuple[i] = py::reinterpret_borrow<py::object>(bases[i]);
  std::string qualified = std::string("osprey.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, tuple.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

// numpy dtype of an engine dtype; None where numpy has no such type (bfloat16, float8, int4...).
py::object numpyDtype(DataType t) {
  switch (t) {
    case DataType::Float32: return py::dtype("float32");
    case DataType::Float64: return py::dtype("float64");
    case DataType::Float16: return py::dtype("float16");
    case DataType::Int8: return py::dtype("int8");
    case DataType::Int16: return py::dtype("int16");
    case DataType::Int32: return py::dtype("int32");
    case DataType::Int64: return py::dtype("int64");
    case DataType::UInt8: return py::dtype("uint8");
    case DataType::UInt16: return py::dtype("uint16");
    case DataType::UInt32: return py::dtype("uint32");
    case DataType::UInt64: return py::dtype("uint64");
    case DataType::Bool: return py::dtype("bool");
    case DataType::String: return py::dtype("object");
    default: return py::none();
  }
}

// numpy's dtype struct changed in numpy 2; pybind11 before 2.12 reads it directly, so dtype
// fields are read through Python attributes and strides are passed explicitly everywhere.

// The engine dtype of a numpy dtype; Undefined where the engine has none (complex, datetime...).
DataType engineDtype(const py::dtype& dt) {
  const size_t size = dt.attr("itemsize").cast<size_t>();
  switch (dt.attr("kind").cast<std::string>().at(0)) {
    case 'f': return size == 2 ? DataType::Float16 : size == 4 ? DataType::Float32 : size == 8 ? DataType::Float64 : DataType::Undefined;
    case 'i':
      return size == 1 ? DataType::Int8 : size == 2 ? DataType::Int16 : size == 4 ? DataType::Int32 : size == 8 ? DataType::Int64 : DataType::Undefined;
    case 'u':
      return size == 1 ? DataType::UInt8 : size == 2 ? DataType::UInt16 : size == 4 ? DataType::UInt32 : size == 8 ? DataType::UInt64 : DataType::Undefined;
    case 'b': return DataType::Bool;
    case 'U':
    case 'S':
    case 'O': return DataType::String;
    default: return DataType::Undefined;
  }
}

Shape shapeOf(const py::array& a) {
  Shape s(static_cast<size_t>(a.ndim()));
  for (size_t d = 0; d < s.size(); ++d) s[d] = static_cast<int64_t>(a.shape(static_cast<py::ssize_t>(d)));
  return s;
}

std::vector<py::ssize_t> cStrides(const Shape& shape, size_t itemBytes) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t step = static_cast<py::ssize_t>(itemBytes);
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= static_cast<py::ssize_t>(shape[d]);
  }
  return strides;
}

Tensor stringTensor(const std::string& name, const py::array& a) {
  Tensor t(DataType::String, shapeOf(a));
  py::list items = a.attr("ravel")().attr("tolist")();
  for (size_t i = 0; i < items.size(); ++i) {
    py::handle item = items[i];
    if (py::isinstance<py::str>(item)) {
      t.strings()[i] = item.cast<std::string>();
    } else if (py::isinstance<py::bytes>(item)) {
      t.strings()[i] = std::string(item.cast<py::bytes>());
    } else {
      throw StatusError{invalidArgument("input '" + name + "' is an object array whose elements are not all str")};
    }
  }
  return t;
}

py::array stringArray(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(py::dtype("object"), shape, cStrides(t.shape(), sizeof(PyObject*)));
  auto** cells = static_cast<PyObject**>(out.mutable_data());
  for (size_t i = 0; i < t.strings().size(); ++i) {
    PyObject* s = PyUnicode_DecodeUTF8(t.strings()[i].data(), static_cast<py::ssize_t>(t.strings()[i].size()), "replace");
    if (!s) throw py::error_already_set();
    Py_XDECREF(cells[i]);
    cells[i] = s;
  }
  return out;
}

// Hands the output's own buffer to numpy (no copy): a capsule owning the Tensor is the array's base.
// A sequence becomes a list of arrays, an absent optional None (as ONNX Runtime returns them).
py::object toNumpy(Tensor&& t, const std::string& name) {
  if (t.empty()) return py::none();
  if (t.isMap()) {  // {key: value}, as ONNX Runtime returns ZipMap's rows
    py::dict d;
    const Tensor &keys = t.items().at(0), &values = t.items().at(1);
    for (int64_t i = 0; i < keys.elements(); ++i) {
      py::object key = keys.dtype() == DataType::String ? py::object(py::str(keys.strings()[i]))
                                                        : py::object(py::int_(keys.data<int64_t>()[i]));
      d[key] = values.dtype() == DataType::Float64 ? py::float_(values.data<double>()[i])
               : values.dtype() == DataType::Int64 ? py::float_(static_cast<double>(values.data<int64_t>()[i]))
                                                   : py::float_(values.data<float>()[i]);
    }
    return d;
  }
  if (t.isSequence()) {
    py::list items;
    for (const Tensor& item : t.items()) items.append(toNumpy(Tensor(item), name));
    return items;
  }
  if (t.dtype() == DataType::String) return stringArray(t);
  py::object dtype = numpyDtype(t.dtype());
  if (dtype.is_none())
    throw StatusError{Status::unsupported("output '" + name + "' has dtype " + dataTypeName(t.dtype()) +
                                          ", which numpy has no type for")};
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  auto* owner = new Tensor(std::move(t));
  py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(py::dtype::from_args(dtype), shape, cStrides(owner->shape(), dataTypeSize(owner->dtype())), owner->data(),
                   base);
}

py::dict describe(const TensorInfoPublic& t) {
  py::dict d;
  d["name"] = t.name;
  d["dtype_code"] = static_cast<int>(t.dtype);
  d["dtype_name"] = dataTypeName(t.dtype);
  d["shape"] = t.shape;
  d["dim_names"] = t.dimNames;
  d["element_dtype_name"] = dataTypeName(t.elementDtype);
  d["optional"] = t.optional;
  return d;
}

// .osp bytes carry the schema's file identifier; anything else is taken for ONNX.
bool isOspBuffer(const std::string& bytes) {
  return bytes.size() >= 12 && flatbuffers::BufferHasIdentifier(bytes.data(), fb::ModelIdentifier(), /*size_prefixed=*/true);
}

// The value of option `name` as one of `choices`; anything else raises InvalidArgumentError naming
// the option and what it accepts.
template <class T>
T choiceOption(const py::dict& options, const char* name, const std::vector<std::pair<const char*, T>>& choices) {
  const std::string value = py::str(options[name]);
  std::string known;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (value == choices[i].first) return choices[i].second;
    known += std::string(i == 0 ? "" : ", ") + choices[i].first;
  }
  throw StatusError{invalidArgument(std::string("unknown ") + name + " '" + value + "' (known: " + known + ")")};
}

// The keyword options of InferenceSession / Runtime beyond the positional ones (osprey/__init__.py
// passes only those given): memory, fp32_stem and the per-backend options.
void applyOptions(const py::dict& options, BackendConfig* config) {
  for (auto item : options) {
    const std::string name = py::str(item.first);
    const char* key = name.c_str();
    if (name == "memory") {
      using M = BackendConfig::Memory;
      config->memory = choiceOption<M>(options, key, {{"normal", M::Normal}, {"low", M::Low}});
    } else if (name == "fp32_stem") {
      const float share = item.second.cast<float>();
      if (!(share >= 0.f && share <= 1.f)) throw StatusError{invalidArgument("fp32_stem must be from 0 to 1")};
      config->fullPrecisionStem = share;
    } else if (name == "cpu_pinning") {
      using P = CpuOptions::Pinning;
      config->cpu.pinning = choiceOption<P>(options, key, {{"auto", P::Auto}, {"on", P::On}, {"off", P::Off}});
    } else if (name == "cpu_layout") {
      using L = CpuOptions::Layout;
      config->cpu.layout = choiceOption<L>(options, key, {{"nchw", L::NCHW}, {"nc8hw8", L::NC8HW8}});
    } else if (name == "cpu_quantized_layout") {
      using L = CpuOptions::QuantizedLayout;
      config->cpu.quantizedLayout =
          choiceOption<L>(options, key, {{"auto", L::Auto}, {"nchw", L::NCHW}, {"nhwc", L::NHWC}});
    } else if (name == "cuda_low_precision") {
      using L = CudaOptions::LowPrecision;
      config->cuda.lowPrecision = choiceOption<L>(options, key, {{"fp16", L::Float16}, {"bf16", L::BFloat16}});
    } else if (name == "cuda_layout") {
      using L = CudaOptions::Layout;
      config->cuda.layout = choiceOption<L>(options, key, {{"auto", L::Auto}, {"nchw", L::NCHW}, {"nhwc", L::NHWC}});
    } else if (name == "cuda_graphs") {
      config->cuda.graphs = item.second.cast<bool>();
    } else if (name == "cuda_autotune") {
      config->cuda.autotune = item.second.cast<bool>();
    } else if (name == "cuda_cache") {
      config->cuda.tuningCachePath = py::str(item.second);
    } else if (name == "opencl_platform") {
      config->opencl.platform = py::str(item.second);
    } else if (name == "opencl_device") {
      config->opencl.device = py::str(item.second);
    } else if (name == "opencl_tune") {
      using T = OpenCLOptions::Tuning;
      config->opencl.tuning = choiceOption<T>(options, key, {{"none", T::None}, {"fast", T::Fast}, {"wide", T::Wide}});
    } else if (name == "opencl_cache") {
      config->opencl.tuningCachePath = py::str(item.second);
    } else if (name == "opencl_memory") {
      using M = OpenCLOptions::Memory;
      config->opencl.memory = choiceOption<M>(options, key, {{"auto", M::Auto}, {"buffer", M::Buffer}, {"image", M::Image}});
    } else if (name == "opencl_fp16_math") {
      config->opencl.halfMath = item.second.cast<bool>();
    } else if (name == "opencl_profile") {
      config->opencl.profile = item.second.cast<bool>();
    } else if (name == "vulkan_device") {
      config->vulkan.device = py::str(item.second);
    } else if (name == "vulkan_cache") {
      config->vulkan.pipelineCachePath = py::str(item.second);
    } else if (name == "vulkan_validation") {
      config->vulkan.validation = item.second.cast<bool>();
    } else if (name == "vulkan_fp16_math") {
      config->vulkan.halfMath = item.second.cast<bool>();
    } else if (name == "vulkan_mapped_weights") {
      config->vulkan.mappedWeights = item.second.cast<bool>();
    } else {
      throw StatusError{invalidArgument("unknown option '" + name + "'")};
    }
  }
}

void setCpuIsaLimitByName(const std::string& name) {
  CpuIsa isa;
  if (!cpuIsaFromName(name, &isa))
    throw StatusError{invalidArgument("unknown CPU ISA limit '" + name + "' (known: native, avx2, scalar)")};
  check(setCpuIsaLimit(isa));
}

// The schedule and backend settings the Python arguments name.
void configsFrom(const std::string& backend, int threads, const std::string& precision, uint64_t memoryLimit,
                 int64_t runTimeLimitMs, int planCacheSize, const py::dict& options, ScheduleConfig* scheduleOut,
                 BackendConfig* configOut) {
  ScheduleConfig schedule;
  if (!forwardTypeFromName(backend, &schedule.backend))
    throw StatusError{invalidArgument("unknown backend '" + backend + "' (known: cpu, cuda, opencl, vulkan)")};
  if (threads < 1) throw StatusError{invalidArgument("threads must be at least 1, got " + std::to_string(threads))};
  schedule.threads = threads;
  if (runTimeLimitMs < 0) throw StatusError{invalidArgument("run_time_limit_ms must be >= 0")};
  schedule.runTimeLimitMs = runTimeLimitMs;
  BackendConfig config;
  if (precision == "normal") {
    config.precision = BackendConfig::Precision::Normal;
  } else if (precision == "high") {
    config.precision = BackendConfig::Precision::High;
  } else if (precision == "low") {
    config.precision = BackendConfig::Precision::Low;
  } else {
    throw StatusError{invalidArgument("unknown precision '" + precision + "' (known: normal, high, low)")};
  }
  config.memoryLimit = memoryLimit;
  if (planCacheSize < 0) throw StatusError{invalidArgument("plan_cache_size must be >= 0")};
  config.planCacheSize = planCacheSize;
  applyOptions(options, &config);
  *scheduleOut = schedule;
  *configOut = config;
}

// The engine dtype of a __cuda_array_interface__ typestr ("<f4"), or Undefined.
DataType dtypeOfTypestr(const std::string& t) {
  static const std::map<std::string, DataType> known = {
      {"f4", DataType::Float32}, {"f2", DataType::Float16}, {"f8", DataType::Float64}, {"i8", DataType::Int64},
      {"i4", DataType::Int32},   {"i2", DataType::Int16},   {"i1", DataType::Int8},    {"u1", DataType::UInt8},
      {"b1", DataType::Bool}};
  if (t.size() != 3 || (t[0] != '<' && t[0] != '|')) return DataType::Undefined;
  auto it = known.find(t.substr(1));
  return it == known.end() ? DataType::Undefined : it->second;
}

// Inputs and outputs bound to memory the caller owns (IoBinding): numpy arrays on the host, or
// objects with __cuda_array_interface__ (torch and CuPy CUDA tensors) in CUDA memory, read and
// written in place. The bound objects are kept alive by the binding.
class PyIoBinding {
 public:
  void bindInput(const std::string& name, const py::object& value) { bind(name, value, true); }
  void bindOutput(const std::string& name, const py::object& value) { bind(name, value, false); }
  const IoBinding& io() const { return io_; }

 private:
  void bind(const std::string& name, const py::object& value, bool input) {
    const std::string what = std::string(input ? "input '" : "output '") + name + "'";
    if (py::hasattr(value, "__cuda_array_interface__")) {
      DeviceTensor d = deviceTensorOf(what, value.attr("__cuda_array_interface__").cast<py::dict>(), input);
      input ? io_.bindInput(name, d) : io_.bindOutput(name, d);
      keep_.push_back(value);
      return;
    }
    const bool dlpack = py::hasattr(value, "__dlpack__");
    if (dlpack && python::dlpackDevice(value).type == python::kDLCUDA) {
      DeviceTensor d;
      python::DLPackHandle handle;
      const Status st = python::cudaTensorFromDLPack(what, value, &d, &handle);
      dlpacks_.push_back(std::move(handle));
      check(st);
      input ? io_.bindInput(name, d) : io_.bindOutput(name, d);
      keep_.push_back(value);
      return;
    }
    // Host memory: numpy arrays and what numpy reads in place (__array__, or __dlpack__ on the CPU).
    const bool viaDLPack = dlpack && !py::isinstance<py::array>(value) && !py::hasattr(value, "__array__");
    py::array a = viaDLPack ? py::array::ensure(py::module_::import("numpy").attr("from_dlpack")(value))
                            : py::array::ensure(value);
    if (!a) {
      PyErr_Clear();
      throw StatusError{invalidArgument(what + " is neither a numpy array nor an object with __cuda_array_interface__ or __dlpack__")};
    }
    const DataType dtype = engineDtype(a.dtype());
    if (dtype == DataType::Undefined || dtype == DataType::String)
      throw StatusError{invalidArgument(what + " has numpy dtype " + py::str(a.dtype()).cast<std::string>() + ", which cannot be bound")};
    if (!(a.flags() & py::array::c_style) || !a.dtype().attr("isnative").cast<bool>()) {
      if (!input) throw StatusError{invalidArgument(what + " must be a C-contiguous array in native byte order")};
      a = py::array::ensure(a.attr("astype")(a.dtype().attr("newbyteorder")("=")), py::array::c_style);
    }
    // numpy marks arrays it takes over DLPack read-only, whoever owns the memory.
    if (!input && !a.writeable() && !viaDLPack) throw StatusError{invalidArgument(what + " is a read-only array")};
    const Tensor t = Tensor::wrap(dtype, shapeOf(a), const_cast<void*>(a.data()));
    input ? io_.bindInput(name, t) : io_.bindOutput(name, t);
    keep_.push_back(a);
  }

  static DeviceTensor deviceTensorOf(const std::string& what, const py::dict& cai, bool input) {
    DeviceTensor d;
    d.device = ForwardType::CUDA;
    d.dtype = dtypeOfTypestr(cai["typestr"].cast<std::string>());
    if (d.dtype == DataType::Undefined)
      throw StatusError{invalidArgument(what + " has CUDA array type " + cai["typestr"].cast<std::string>() + ", which cannot be bound")};
    for (auto dim : cai["shape"].cast<py::tuple>()) d.shape.push_back(dim.cast<int64_t>());
    const py::tuple data = cai["data"].cast<py::tuple>();
    d.data = reinterpret_cast<void*>(data[0].cast<uintptr_t>());
    if (!input && data[1].cast<bool>()) throw StatusError{invalidArgument(what + " is read-only CUDA memory")};
    if (cai.contains("strides") && !cai["strides"].is_none()) {
      int64_t expected = static_cast<int64_t>(dataTypeSize(d.dtype));
      const py::tuple strides = cai["strides"].cast<py::tuple>();
      for (size_t i = d.shape.size(); i-- > 0;) {
        if (d.shape[i] != 1 && strides[i].cast<int64_t>() != expected)
          throw StatusError{invalidArgument(what + " is not contiguous CUDA memory (call .contiguous() first)")};
        expected *= d.shape[i];
      }
    }
    return d;
  }

  IoBinding io_;
  std::vector<py::object> keep_;
  std::vector<python::DLPackHandle> dlpacks_;  // tensors taken from __dlpack__, freed with the binding
};

// A runtime (thread pool, memory pools, caches) for sessions to share.
class PyRuntime {
 public:
  PyRuntime(const std::string& backend, int threads, const std::string& precision, uint64_t memoryLimit,
            int64_t runTimeLimitMs, int planCacheSize, const py::dict& options) {
    ScheduleConfig schedule;
    BackendConfig config;
    configsFrom(backend, threads, precision, memoryLimit, runTimeLimitMs, planCacheSize, options, &schedule, &config);
    py::gil_scoped_release release;
    check(Interpreter::createRuntime(schedule, config, &runtime_));
  }
  int threadCount() const { return runtime_->threadCount(); }
  void garbageCollect(int level) {
    py::gil_scoped_release release;
    runtime_->garbageCollect(level);
  }
  const std::shared_ptr<SharedRuntime>& get() const { return runtime_; }

 private:
  std::shared_ptr<SharedRuntime> runtime_;
};

// One loaded model and one session of it. Runs are serialised: a Session is not reentrant.
class PySession {
 public:
  PySession(const py::object& source, const std::string& backend, int threads, const std::string& precision,
            uint64_t memoryLimit, int64_t runTimeLimitMs, int planCacheSize, const PyRuntime* runtime,
            const py::dict& options, const std::string& signature) {
    ScheduleConfig schedule;
    BackendConfig config;
    configsFrom(backend, threads, precision, memoryLimit, runTimeLimitMs, planCacheSize, options, &schedule, &config);
    auto create = [&] {
      check(runtime ? interpreter_->createSession(runtime->get(), &session_)
                    : interpreter_->createSession(schedule, config, &session_));
    };
    if (py::isinstance<py::bytes>(source)) {
      std::string bytes = source.cast<std::string>();
      py::gil_scoped_release release;
      if (isOspBuffer(bytes)) {
        check(Interpreter::fromBuffer(bytes.data(), bytes.size(), &interpreter_));
      } else {
        auto model = std::make_shared<Model>();
        const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
        check(isTfliteModel("", data, bytes.size()) ? convertTfliteBytes(data, bytes.size(), model.get())
                                                    : convertOnnxBytes(data, bytes.size(), model.get()));
        check(Interpreter::fromModel(std::move(model), &interpreter_));
      }
      create();
    } else {
      LoadOptions load;
      load.signature = signature;
      std::string path;
      if (py::isinstance<py::tuple>(source)) {  // (deploy.prototxt, net.caffemodel)
        auto pair = source.cast<std::pair<std::string, std::string>>();
        path = pair.first;
        load.weights = pair.second;
      } else {
        path = source.cast<std::string>();
      }
      py::gil_scoped_release release;
      // memory="low" maps a .osp file, so its weights' pages can go back once packed.
      load.mapFile = (runtime ? runtime->get()->backendConfig() : config).memory == BackendConfig::Memory::Low;
      check(Interpreter::fromFile(path, load, &interpreter_));
      create();
    }
    inputInfo_ = interpreter_->inputs();
    for (auto& t : inputInfo_) inputNames_.push_back(t.name);
    for (auto& t : interpreter_->outputs()) outputNames_.push_back(t.name);
  }

  py::list inputs() const { return describeAll(interpreter_->inputs()); }
  py::list outputs() const { return describeAll(interpreter_->outputs()); }

  // `outputNames` empty: every output, in the model's order.
  py::list run(const std::vector<std::string>& outputNames, const py::dict& feed) {
    return runWith(outputNames, feed, py::none(), py::none());
  }

  // `before` / `after`: None or a callable(op: dict, tensors: list of arrays) that returns False
  // to stop the run (CancelledError). An exception it raises stops the run and is re-raised.
  std::vector<size_t> picksOf(const std::vector<std::string>& outputNames) const {
    std::vector<size_t> picks;
    for (auto& name : outputNames) picks.push_back(outputIndex(name));
    if (outputNames.empty())
      for (size_t i = 0; i < outputNames_.size(); ++i) picks.push_back(i);
    return picks;
  }

  // The tensors borrow the arrays' buffers, so keepAlive must outlive the run.
  std::map<std::string, Tensor> inputsOf(const py::dict& feed, std::vector<py::array>* keepAlive) const {
    std::map<std::string, Tensor> inputs;
    for (auto [key, value] : feed) {
      if (!py::isinstance<py::str>(key)) throw StatusError{invalidArgument("input names must be str")};
      std::string name = key.cast<std::string>();
      if (std::find(inputNames_.begin(), inputNames_.end(), name) == inputNames_.end())
        throw StatusError{invalidArgument("'" + name + "' is not an input of the model; its inputs are: " + join(inputNames_))};
      inputs.emplace(name, inputOf(name, value, keepAlive));
    }
    // Unlike Session::run (which keeps the last values of inputs left out), every input is required.
    for (auto& name : inputNames_)
      if (!inputs.count(name))
        throw StatusError{invalidArgument("input '" + name + "' was not given; the model's inputs are: " + join(inputNames_))};
    return inputs;
  }

  // Session::runAsync: the run goes on while Python does; wait() returns its outputs.
  void runAsync(const std::vector<std::string>& outputNames, const py::dict& feed) {
    std::vector<size_t> picks = picksOf(outputNames);
    std::vector<py::array> keepAlive;
    std::map<std::string, Tensor> inputs = inputsOf(feed, &keepAlive);
    check(session_->runAsync(std::move(inputs)));
    asyncPicks_ = std::move(picks);
    asyncArrays_ = std::move(keepAlive);
  }

  py::list wait() {
    std::vector<Tensor> results;
    Status st;
    {
      py::gil_scoped_release release;
      st = session_->wait(&results);
    }
    asyncArrays_.clear();
    check(st);
    py::list out;
    for (size_t i : asyncPicks_) out.append(toNumpy(Tensor(results.at(i)), outputNames_[i]));
    return out;
  }

  py::list runWith(const std::vector<std::string>& outputNames, const py::dict& feed, const py::object& before,
                   const py::object& after) {
    std::vector<size_t> picks = picksOf(outputNames);
    std::vector<py::array> keepAlive;
    std::map<std::string, Tensor> inputs = inputsOf(feed, &keepAlive);

    std::vector<Tensor> results;
    RunCallbacks callbacks;
    std::unique_ptr<py::error_already_set> raised;
    auto wrap = [&raised](const py::object& fn) -> OpCallback {
      if (fn.is_none()) return nullptr;
      return [fn, &raised](const OpCallbackInfo& op, const OpTensors& tensors) {
        py::gil_scoped_acquire gil;
        try {
          py::dict info;
          info["name"] = op.name;
          info["type"] = op.type;
          info["backend"] = op.backend;
          py::list arrays;
          for (size_t i = 0; i < tensors.size(); ++i) {
            Tensor t;
            if (tensors.name(i).empty() || !tensors.read(i, &t)) {
              arrays.append(py::none());
              continue;
            }
            try {
              arrays.append(toNumpy(std::move(t), tensors.name(i)));
            } catch (const StatusError&) {  // a dtype numpy has no type for (bfloat16 ...)
              arrays.append(py::none());
            }
          }
          py::list names;
          for (size_t i = 0; i < tensors.size(); ++i) names.append(tensors.name(i));
          info["names"] = names;
          py::object verdict = fn(info, arrays);
          return verdict.is_none() || verdict.cast<bool>();
        } catch (py::error_already_set& e) {
          raised = std::make_unique<py::error_already_set>(std::move(e));
          return false;
        }
      };
    };
    callbacks.before = wrap(before);
    callbacks.after = wrap(after);
    const bool watched = callbacks.before || callbacks.after;
    Status st;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);  // taken without the GIL, so waiting never blocks Python
      st = watched ? session_->run(inputs, &results, callbacks) : session_->run(inputs, &results);
    }
    if (raised) throw *raised;
    check(st);
    py::list out;
    for (size_t i : picks) out.append(toNumpy(Tensor(results.at(i)), outputNames_[i]));
    return out;
  }

  void releaseMemory() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    session_->releaseMemory();
  }

  void runWithBinding(const PyIoBinding& binding) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    check(session_->run(binding.io()));
  }

  py::dict stats() const {
    SessionStats s;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      s = session_->stats();
    }
    py::dict d;
    d["arena_peak_bytes"] = s.arenaPeakBytes;
    d["activation_bytes_sum"] = s.activationBytesSum;
    d["static_bytes"] = s.staticBytes;
    d["executions"] = s.executions;
    d["folded_ops"] = s.foldedOps;
    d["lowered_ops"] = s.loweredOps;
    d["flops"] = s.flops;
    d["stages"] = s.stages;
    d["host_ops"] = s.hostOps;
    d["weights_packed"] = s.weightsPacked;
    d["relaid_tensors"] = s.relaidTensors;
    d["full_precision_ops"] = s.fullPrecisionOps;
    d["weights_shared"] = s.weightsShared;
    d["plans_made"] = s.plansMade;
    d["plans_kept"] = s.plansKept;
    d["ops_by_backend"] = s.opsByBackend;
    return d;
  }

 private:
  static py::list describeAll(const std::vector<TensorInfoPublic>& infos) {
    py::list out;
    for (auto& t : infos) out.append(describe(t));
    return out;
  }

  static std::string join(const std::vector<std::string>& names) {
    std::string s;
    for (auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
    return s;
  }

  size_t outputIndex(const std::string& name) const {
    for (size_t i = 0; i < outputNames_.size(); ++i)
      if (outputNames_[i] == name) return i;
    throw StatusError{invalidArgument("'" + name + "' is not an output of the model; its outputs are: " + join(outputNames_))};
  }

  // None for an optional input (no value); a list or tuple of arrays for a sequence input, its items
  // copied (a sequence's items may come back as outputs, which outlive the arrays); else an array.
  Tensor inputOf(const std::string& name, const py::handle& value, std::vector<py::array>* keepAlive) const {
    if (value.is_none()) return Tensor();
    auto info = std::find_if(inputInfo_.begin(), inputInfo_.end(), [&](const TensorInfoPublic& t) { return t.name == name; });
    if (info == inputInfo_.end() || info->dtype != DataType::Sequence || !(py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)))
      return toTensor(name, value, keepAlive);
    std::vector<Tensor> items;
    for (const py::handle& item : value) {
      std::vector<py::array> borrowed;
      const Tensor view = toTensor(name, item, &borrowed);
      Tensor owned = Tensor::uninitialized(view.dtype(), view.shape());
      if (view.dtype() == DataType::String)
        owned.strings() = view.strings();
      else if (view.bytes())
        std::memcpy(owned.data(), view.data(), view.bytes());
      items.push_back(std::move(owned));
    }
    DataType element = info->elementDtype;
    if (!items.empty()) element = items[0].dtype();
    if (element == DataType::Undefined) element = DataType::Float32;
    return Tensor::sequence(element, std::move(items));
  }

  // Borrows the array's buffer where it is C-contiguous in native byte order; copies otherwise.
  static Tensor toTensor(const std::string& name, const py::handle& value, std::vector<py::array>* keepAlive) {
    py::array a = py::array::ensure(value);
    if (!a) {
      PyErr_Clear();
      throw StatusError{invalidArgument("input '" + name + "' is not convertible to a numpy array")};
    }
    DataType dtype = engineDtype(a.dtype());
    if (py::str(a.dtype()).cast<std::string>() == "bfloat16")  // ml_dtypes' type
      throw StatusError{Status::unsupported("input '" + name + "' is a bfloat16 array; numpy bfloat16 arrays are not supported")};
    if (dtype == DataType::Undefined)
      throw StatusError{invalidArgument("input '" + name + "' has numpy dtype " + py::str(a.dtype()).cast<std::string>() +
                                        ", which Osprey has no type for")};
    if (dtype == DataType::String) return stringTensor(name, a);
    if (!a.dtype().attr("isnative").cast<bool>()) a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
    if (!(a.flags() & py::array::c_style)) a = py::array::ensure(a, py::array::c_style);
    // The session only reads its inputs, so read-only arrays are fine.
    Tensor t = Tensor::wrap(dtype, shapeOf(a), const_cast<void*>(a.data()));
    keepAlive->push_back(std::move(a));
    return t;
  }

  // The pending runAsync's picks and borrowed arrays; declared before session_, whose destructor
  // waits for that run, so they outlive it.
  std::vector<size_t> asyncPicks_;
  std::vector<py::array> asyncArrays_;
  std::shared_ptr<Interpreter> interpreter_;
  std::unique_ptr<Session> session_;
  std::vector<std::string> inputNames_, outputNames_;
  std::vector<TensorInfoPublic> inputInfo_;
  mutable std::mutex mutex_;
};

// A calibration sample from Python: {input name: numpy array}, copied.
FeedDict calibrationFeed(const py::dict& sample) {
  FeedDict feed;
  for (auto item : sample) {
    const std::string name = py::str(item.first);
    py::array a = py::array::ensure(item.second, py::array::c_style);
    if (!a) {
      PyErr_Clear();
      throw StatusError{invalidArgument("calibration input '" + name + "' is not convertible to a numpy array")};
    }
    const DataType dtype = engineDtype(a.dtype());
    if (dtype == DataType::Undefined || dtype == DataType::String)
      throw StatusError{invalidArgument("calibration input '" + name + "' has numpy dtype " +
                                        py::str(a.dtype()).cast<std::string>() + ", which quantization cannot feed")};
    if (!a.dtype().attr("isnative").cast<bool>()) a = a.attr("astype")(a.dtype().attr("newbyteorder")("="));
    Tensor t(dtype, shapeOf(a));
    std::memcpy(t.data(), a.data(), t.bytes());
    feed[name] = std::move(t);
  }
  return feed;
}

py::dict quantize(const std::string& src, const std::string& dst, const py::object& calibration,
                  const std::string& method, double percentile, bool perChannel, bool dynamic,
                  const std::vector<std::string>& exclude, int threads, int weightBits, int blockSize,
                  int accuracyLevel) {
  QuantizeOptions options;
  options.weightBits = weightBits;
  options.blockSize = blockSize;
  options.accuracyLevel = accuracyLevel;
  if (method == "minmax") options.method = CalibrationMethod::MinMax;
  else if (method == "entropy") options.method = CalibrationMethod::Entropy;
  else if (method == "percentile") options.method = CalibrationMethod::Percentile;
  else throw StatusError{invalidArgument("method must be 'minmax', 'entropy' or 'percentile', not '" + method + "'")};
  if (!(percentile > 50 && percentile <= 100)) throw StatusError{invalidArgument("percentile must be in (50, 100]")};
  options.percentile = percentile;
  options.perChannel = perChannel;
  options.dynamic = dynamic;
  options.exclude = exclude;
  options.threads = threads;
  Model model;
  {
    py::gil_scoped_release release;
    check(loadFloatModel(src, options, &model));
  }
  std::vector<FeedDict> samples;
  if (py::isinstance<py::str>(calibration)) {
    std::vector<std::string> names;
    for (int t : model.graph.inputs) names.push_back(model.graph.tensors[t].name);
    check(readCalibrationFolder(calibration.cast<std::string>(), names, &samples));
  } else if (!calibration.is_none()) {
    for (auto sample : calibration) samples.push_back(calibrationFeed(py::reinterpret_borrow<py::dict>(sample)));
  }
  QuantizeReport report;
  {
    py::gil_scoped_release release;
    Model quantized;
    check(quantizeModel(model, samples, options, &quantized, &report));
    check(saveModelFile(quantized, dst));
  }
  auto rows = [](const std::vector<QuantizedTensorReport>& tensors) {
    py::list list;
    for (const QuantizedTensorReport& t : tensors) list.append(py::make_tuple(t.name, t.op, t.cosine, t.maxError));
    return list;
  };
  py::dict d;
  d["quantized_ops"] = report.quantizedOps;
  d["float_ops"] = report.floatOps;
  d["quantized_by_type"] = report.quantizedByType;
  d["tensors"] = rows(report.tensors);
  d["outputs"] = rows(report.outputs);
  return d;
}

py::dict convert(const std::string& src, const std::string& dst, bool foldConstants, bool fuse,
                 const std::string& weights, const std::string& signature) {
  ConvertOptions options;
  options.foldConstants = foldConstants;
  options.fuse = fuse;
  options.signature = signature;
  ConvertReport report;
  size_t bytesWritten = 0;
  {
    py::gil_scoped_release release;
    Model model;
    check(isCaffePrototxt(src)     ? convertCaffeFiles(src, weights, &model, options, &report)
          : isTensorflowModel(src) ? convertTensorflowFile(src, &model, options, &report)
          : isTfliteFile(src)      ? convertTfliteFile(src, &model, options, &report)
                                   : convertOnnxFile(src, &model, options, &report));
    std::vector<uint8_t> bytes;
    check(writeModel(model, &bytes));
    check(writeFile(dst, bytes));
    bytesWritten = bytes.size();
  }
  py::dict d;
  d["onnx_nodes"] = report.onnxNodes;
  d["tflite_ops"] = report.tfliteOps;
  d["caffe_layers"] = report.caffeLayers;
  d["tensorflow_nodes"] = report.tensorflowNodes;
  d["osprey_ops"] = report.ospreyOps;
  d["folded_ops"] = report.foldedOps;
  d["removed_ops"] = report.removedOps;
  d["fused_ops"] = report.fusedOps;
  d["seconds"] = report.seconds;
  d["bytes"] = bytesWritten;
  return d;
}

py::dict backends() {
  py::dict d;
  for (auto& b : availableBackends()) d[py::str(b.name)] = b.devices;
  return d;
}

}  // namespace
}  // namespace osprey

PYBIND11_MODULE(_osprey, m) {
  using namespace osprey;
  m.doc() = "Osprey's engine bindings; use the `osprey` package, not this module.";

  PyObject* base = makeError(m, "OspreyError", {PyExc_RuntimeError}, "An error reported by the Osprey engine.");
  gErrors.base = base;
  gErrors.invalidArgument = makeError(m, "InvalidArgumentError", {base, PyExc_ValueError},
                                      "A bad argument: an unknown input or output name, a wrong shape or dtype.");
  gErrors.invalidModel = makeError(m, "InvalidModelError", {base}, "The model file is malformed or inconsistent.");
  gErrors.unsupported = makeError(m, "UnsupportedError", {base},
                                  "The model or argument uses something this build does not support.");
  gErrors.notFound = makeError(m, "NotFoundError", {base}, "A file or named entity does not exist.");
  gErrors.outOfMemory = makeError(m, "OutOfMemoryError", {base, PyExc_MemoryError}, "An allocation failed.");
  gErrors.cancelled = makeError(m, "CancelledError", {base}, "A run callback stopped the run.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyErr_SetString(errorTypeFor(e.status.code()), e.status.message().c_str());
    }
  });

  py::class_<PyIoBinding>(m, "IoBinding")
      .def(py::init<>())
      .def("bind_input", &PyIoBinding::bindInput, py::arg("name"), py::arg("value"))
      .def("bind_output", &PyIoBinding::bindOutput, py::arg("name"), py::arg("value"));
  py::class_<PyRuntime>(m, "Runtime")
      .def(py::init<const std::string&, int, const std::string&, uint64_t, int64_t, int, const py::dict&>(),
           py::arg("backend"), py::arg("threads"), py::arg("precision"), py::arg("memory_limit") = 0,
           py::arg("run_time_limit_ms") = 0, py::arg("plan_cache_size") = BackendConfig().planCacheSize,
           py::arg("options") = py::dict())
      .def("thread_count", &PyRuntime::threadCount)
      .def("garbage_collect", &PyRuntime::garbageCollect, py::arg("level") = 0);
  py::class_<PySession>(m, "Session")
      .def(py::init<const py::object&, const std::string&, int, const std::string&, uint64_t, int64_t, int,
                    const PyRuntime*, const py::dict&, const std::string&>(),
           py::arg("source"), py::arg("backend"), py::arg("threads"), py::arg("precision"), py::arg("memory_limit") = 0,
           py::arg("run_time_limit_ms") = 0, py::arg("plan_cache_size") = BackendConfig().planCacheSize,
           py::arg("runtime") = nullptr, py::arg("options") = py::dict(), py::arg("signature") = "")
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("run", &PySession::run, py::arg("output_names"), py::arg("feed"))
      .def("run_async", &PySession::runAsync, py::arg("output_names"), py::arg("feed"))
      .def("wait", &PySession::wait)
      .def("run_with_binding", &PySession::runWithBinding, py::arg("binding"))
      .def("release_memory", &PySession::releaseMemory)
      .def("run_with_callbacks", &PySession::runWith, py::arg("output_names"), py::arg("feed"), py::arg("before"),
           py::arg("after"))
      .def("stats", &PySession::stats);
  m.def("convert", &convert, py::arg("src"), py::arg("dst"), py::arg("fold_constants") = true, py::arg("fuse") = true,
        py::arg("weights") = "", py::arg("signature") = "");
  m.def("quantize", &quantize, py::arg("src"), py::arg("dst"), py::arg("calibration"), py::arg("method"),
        py::arg("percentile"), py::arg("per_channel"), py::arg("dynamic"), py::arg("exclude"), py::arg("threads"),
        py::arg("weight_bits"), py::arg("block_size"), py::arg("accuracy_level"));
  m.def("backends", &backends);
  m.def("set_cpu_isa_limit", &setCpuIsaLimitByName, py::arg("name"));
  m.def("cpu_isa", &cpuIsaInUse);
  m.def("numpy_dtype", [](int code) { return numpyDtype(static_cast<DataType>(code)); }, py::arg("code"));
  m.attr("__version__") = OSPREY_VERSION;
}
