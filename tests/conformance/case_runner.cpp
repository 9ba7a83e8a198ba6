// One conformance case, run inside a forked child: convert model.onnx, run every
// test_data_set_N through a CPU session and compare with output_K.pb.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>

#include "conformance.h"
#include "converter/converter.h"
#include "converter/onnx/onnx_proto.h"
#include "core/dtype.h"
#include "core/graph.h"
#include "osprey/interpreter.h"

namespace osprey::conformance {

namespace fs = std::filesystem;

namespace {

constexpr double kAbsTolerance = 1e-5;
constexpr double kRelTolerance = 1e-3;

// ONNX TensorProto.DataType names, including the types Osprey does not model.
std::string onnxTypeName(int32_t t) {
  if (isKnownDataType(t) && t != 0) return dataTypeName(static_cast<DataType>(t));
  switch (t) {
    case 0: return "undefined";
    case 14: return "complex64";
    case 15: return "complex128";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    case 24: return "float8e8m0";
    default: return "onnx-type-" + std::to_string(t);
  }
}

std::string valueTypeLabel(const onnx::ValueInfo& vi) {
  std::string elem = onnxTypeName(vi.elemType);
  switch (vi.kind) {
    case onnx::ValueInfo::kTensor: return elem;
    case onnx::ValueInfo::kSequence: return "sequence(" + elem + ")";
    case onnx::ValueInfo::kOptional: return "optional(" + elem + ")";
    case onnx::ValueInfo::kMap: return "map";
    case onnx::ValueInfo::kSparseTensor: return "sparse(" + elem + ")";
    default: return "other";
  }
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

void writeAll(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

struct Failure {
  Outcome outcome = Outcome::Pass;
  std::string message;
  bool failed() const { return outcome != Outcome::Pass; }
};

Failure fromStatus(const Status& st, const std::string& stage) {
  Failure f;
  f.outcome = st.code() == StatusCode::Unsupported ? Outcome::Unsupported : Outcome::Error;
  f.message = stage + ": " + st.message();
  return f;
}

Failure fail(Outcome o, std::string message) { return Failure{o, std::move(message)}; }

std::string formatValue(double v) {
  std::ostringstream os;
  os.precision(8);
  os << v;
  return os.str();
}

// Stored one byte per element as their bit pattern: compared by bits, any NaN equal to any NaN.
bool isLowPrecisionFloat(DataType t) {
  switch (t) {
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
    case DataType::Float4E2M1:
    case DataType::Float8E8M0: return true;
    default: return false;
  }
}

std::string integerAt(DataType t, const uint8_t* data, int64_t i) {
  auto load = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, data + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (t) {
    case DataType::UInt8: return std::to_string(load(uint8_t{}));
    case DataType::Int8: return std::to_string(load(int8_t{}));
    case DataType::UInt16: return std::to_string(load(uint16_t{}));
    case DataType::Int16: return std::to_string(load(int16_t{}));
    case DataType::Int32: return std::to_string(load(int32_t{}));
    case DataType::Int64: return std::to_string(load(int64_t{}));
    case DataType::UInt32: return std::to_string(load(uint32_t{}));
    case DataType::UInt64: return std::to_string(load(uint64_t{}));
    case DataType::Bool: return load(uint8_t{}) ? "true" : "false";
    // Sub-byte integers are unpacked to one byte holding the (sign-extended) value.
    case DataType::Int4:
    case DataType::Int2: return std::to_string(load(int8_t{}));
    case DataType::UInt4:
    case DataType::UInt2: return std::to_string(load(uint8_t{}));
    default: break;
  }
  if (isLowPrecisionFloat(t)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%02x = %.8g", load(uint8_t{}), loadAsDouble(t, data, i));
    return buf;
  }
  return "?";
}

bool isFloat(DataType t) {
  return t == DataType::Float32 || t == DataType::Float64 || t == DataType::Float16 || t == DataType::BFloat16;
}

// Compares one output with its expected TensorProto; an empty string means equal.
std::string compareTensor(const onnx::TensorProto& expected, const Tensor& got) {
  if (got.dtype() != expected.dtype)
    return std::string("dtype ") + dataTypeName(got.dtype()) + ", expected " + dataTypeName(expected.dtype);
  if (got.shape() != expected.dims)
    return "shape " + shapeToString(got.shape()) + ", expected " + shapeToString(expected.dims);
  DataType t = expected.dtype;
  int64_t n = expected.elementCount();
  int64_t bad = 0, worst = -1;
  double worstError = -1;
  std::string worstExpected, worstGot;
  if (t == DataType::String) {
    if (got.strings().size() != static_cast<size_t>(n) || expected.strings.size() != static_cast<size_t>(n))
      return "string element count differs";
    for (int64_t i = 0; i < n; ++i) {
      if (got.strings()[i] == expected.strings[i]) continue;
      if (bad++ == 0) worst = i, worstExpected = '"' + expected.strings[i] + '"', worstGot = '"' + got.strings()[i] + '"';
    }
    if (!bad) return "";
    return std::to_string(bad) + " of " + std::to_string(n) + " strings differ, first at index " + std::to_string(worst) +
           " (expected " + oneLine(worstExpected, 40) + ", got " + oneLine(worstGot, 40) + ")";
  }
  const uint8_t* e = expected.data.data();
  const uint8_t* g = static_cast<const uint8_t*>(got.data());
  if (n > 0 && (!g || !e)) return "no data";
  if (isFloat(t)) {
    for (int64_t i = 0; i < n; ++i) {
      double ev = loadAsDouble(t, e, i), gv = loadAsDouble(t, g, i);
      double err;
      if (std::isnan(ev) || std::isnan(gv)) {
        if (std::isnan(ev) && std::isnan(gv)) continue;
        err = INFINITY;
      } else if (std::isinf(ev) || std::isinf(gv)) {
        if (ev == gv) continue;
        err = INFINITY;
      } else {
        err = std::fabs(gv - ev);
        if (err <= kAbsTolerance + kRelTolerance * std::fabs(ev)) continue;
      }
      ++bad;
      if (err > worstError) worstError = err, worst = i, worstExpected = formatValue(ev), worstGot = formatValue(gv);
    }
    if (!bad) return "";
    return std::to_string(bad) + " of " + std::to_string(n) + " elements differ, largest error " + formatValue(worstError) +
           " at index " + std::to_string(worst) + " (expected " + worstExpected + ", got " + worstGot + ")";
  }
  size_t size = dataTypeSize(t);
  if (size == 0) return std::string("cannot compare dtype ") + dataTypeName(t);
  for (int64_t i = 0; i < n; ++i) {
    bool same = t == DataType::Bool ? ((e[i] != 0) == (g[i] != 0)) : std::memcmp(e + i * size, g + i * size, size) == 0;
    if (!same && isLowPrecisionFloat(t)) same = std::isnan(loadAsDouble(t, e, i)) && std::isnan(loadAsDouble(t, g, i));
    if (same) continue;
    if (bad++ == 0) worst = i, worstExpected = integerAt(t, e, i), worstGot = integerAt(t, g, i);
  }
  if (!bad) return "";
  return std::to_string(bad) + " of " + std::to_string(n) + " elements differ, first at index " + std::to_string(worst) +
         " (expected " + worstExpected + ", got " + worstGot + ")";
}

Tensor toTensor(const onnx::TensorProto& tp) {
  Tensor t(tp.dtype, tp.dims);
  if (tp.dtype == DataType::String) {
    t.strings() = tp.strings;
  } else if (!tp.data.empty()) {
    std::memcpy(t.data(), tp.data.data(), std::min(tp.data.size(), t.bytes()));
  }
  return t;
}

// A test data file of a graph input or output: a TensorProto, or for a sequence or optional value
// a SequenceProto / OptionalProto. `tensors` gets the file's TensorProtos (a sequence's items).
Failure loadValue(const fs::path& path, const onnx::ValueInfo& vi, const std::string& where, Tensor* value,
                  std::vector<onnx::TensorProto>* tensors) {
  const std::string file = path.filename().string() + where;
  if (vi.kind == onnx::ValueInfo::kTensor) {
    tensors->resize(1);
    Status st = onnx::loadTensorFile(path.string(), &tensors->back());
    if (!st) return fromStatus(st, file);
    if (tensors->back().dtype == DataType::Undefined)
      return fail(Outcome::Unsupported, "'" + vi.name + "' has ONNX data type " + onnxTypeName(tensors->back().rawType));
    *value = toTensor(tensors->back());
    return {};
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ValueProto v;
  const int kind = vi.kind == onnx::ValueInfo::kSequence ? onnx::ValueProto::kSequence : onnx::ValueProto::kOptional;
  Status st = onnx::parseValue(bytes.data(), bytes.size(), kind, &v);
  if (!st) return fromStatus(st, file);
  *tensors = v.tensors;
  if (!v.hasValue) {
    *value = Tensor();
    return {};
  }
  std::vector<Tensor> items;
  for (const auto& tp : v.tensors) {
    if (tp.dtype == DataType::Undefined)
      return fail(Outcome::Unsupported, "'" + vi.name + "' holds ONNX data type " + onnxTypeName(tp.rawType));
    items.push_back(toTensor(tp));
  }
  if (!v.isSequence) {
    *value = items.at(0);
    return {};
  }
  const DataType element = items.empty() ? (isKnownDataType(vi.elemType) ? static_cast<DataType>(vi.elemType) : DataType::Float32)
                                         : items[0].dtype();
  *value = Tensor::sequence(element, std::move(items));
  return {};
}

// test_data_set_N directories in numeric order.
std::vector<std::pair<int, fs::path>> dataSets(const fs::path& caseDir) {
  std::vector<std::pair<int, fs::path>> sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(caseDir, ec)) {
    std::string name = entry.path().filename().string();
    const std::string prefix = "test_data_set_";
    if (!entry.is_directory() || name.rfind(prefix, 0) != 0) continue;
    char* end = nullptr;
    long k = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (*end == '\0') sets.emplace_back(static_cast<int>(k), entry.path());
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

int countFiles(const fs::path& dir, const std::string& prefix) {
  int k = 0;
  while (fs::exists(dir / (prefix + std::to_string(k) + ".pb"))) ++k;
  return k;
}

struct CaseModel {
  std::vector<const onnx::ValueInfo*> inputs;  // graph inputs that are not initializers
  std::vector<const onnx::ValueInfo*> outputs;
  std::shared_ptr<Interpreter> interp;
  std::unique_ptr<Session> session;
};

Failure runDataSet(CaseModel& m, int setIndex, const fs::path& dir) {
  std::string where = " (data set " + std::to_string(setIndex) + ")";
  std::set<std::string> ospreyInputs;
  for (const auto& info : m.interp->inputs()) ospreyInputs.insert(info.name);

  std::map<std::string, Tensor> inputs;
  int inputCount = countFiles(dir, "input_");
  if (inputCount > static_cast<int>(m.inputs.size()))
    return fail(Outcome::Error, "test data has " + std::to_string(inputCount) + " inputs, the graph " +
                                    std::to_string(m.inputs.size()) + where);
  for (int k = 0; k < inputCount; ++k) {
    const onnx::ValueInfo& vi = *m.inputs[k];
    Tensor value;
    std::vector<onnx::TensorProto> tensors;
    Failure f = loadValue(dir / ("input_" + std::to_string(k) + ".pb"), vi, where, &value, &tensors);
    if (f.failed()) return f;
    // The converter may drop an input nothing reads; there is nothing to bind it to then.
    if (ospreyInputs.count(vi.name)) inputs[vi.name] = value;
  }
  for (const auto& name : ospreyInputs)
    if (!inputs.count(name)) return fail(Outcome::Error, "graph input '" + name + "' has no test data" + where);

  std::vector<Tensor> outputs;
  Status st = m.session->run(inputs, &outputs);
  if (!st) return fromStatus(st, "run" + where);

  auto outputInfo = m.interp->outputs();
  int outputCount = countFiles(dir, "output_");
  if (static_cast<int>(outputs.size()) < outputCount)
    return fail(Outcome::Error, "session returned " + std::to_string(outputs.size()) + " outputs, test data has " +
                                    std::to_string(outputCount) + where);
  for (int k = 0; k < outputCount; ++k) {
    Tensor expected;
    std::vector<onnx::TensorProto> tensors;
    if (k >= static_cast<int>(m.outputs.size())) return fail(Outcome::Error, "more expected outputs than graph outputs" + where);
    Failure f = loadValue(dir / ("output_" + std::to_string(k) + ".pb"), *m.outputs[k], where, &expected, &tensors);
    if (f.failed()) return f;
    const Tensor& got = outputs[k];
    std::string diff;
    if (expected.empty() != got.empty() || expected.isSequence() != got.isSequence()) {
      auto kind = [](const Tensor& t) { return t.empty() ? "no value" : t.isSequence() ? "a sequence" : "a tensor"; };
      diff = std::string("expected ") + kind(expected) + ", got " + kind(got);
    } else if (expected.isSequence()) {
      if (got.items().size() != tensors.size())
        diff = "expected a sequence of " + std::to_string(tensors.size()) + " items, got " + std::to_string(got.items().size());
      for (size_t i = 0; diff.empty() && i < tensors.size(); ++i) {
        diff = compareTensor(tensors[i], got.items()[i]);
        if (!diff.empty()) diff = "item " + std::to_string(i) + ": " + diff;
      }
    } else if (!expected.empty()) {
      diff = compareTensor(tensors.at(0), got);
    }
    if (!diff.empty()) {
      std::string name = k < static_cast<int>(outputInfo.size()) ? outputInfo[k].name : "?";
      return fail(Outcome::Wrong, "output " + std::to_string(k) + " '" + name + "'" + where + ": " + diff);
    }
  }
  return {};
}

Failure runCase(const CaseInfo& info, int fd) {
  std::string modelPath = info.path + "/model.onnx";
  onnx::ModelProto proto;
  Status st = onnx::loadModelFile(modelPath, &proto);
  if (!st) return fromStatus(st, "parse model.onnx");

  const onnx::GraphProto& graph = proto.graph;
  std::set<std::string> ops, dtypes, initializers;
  for (const auto& node : graph.nodes)
    ops.insert(node.domain.empty() || node.domain == "ai.onnx" ? node.opType : node.domain + "." + node.opType);
  for (const auto& init : graph.initializers) initializers.insert(init.name);
  CaseModel m;
  for (const auto& vi : graph.inputs) {
    if (initializers.count(vi.name)) continue;
    m.inputs.push_back(&vi);
    dtypes.insert(valueTypeLabel(vi));
  }
  // Sent before anything that might crash, so even a crashed case has its ops and dtypes.
  writeAll(fd, encodeLine({"META", join({ops.begin(), ops.end()}, ","), join({dtypes.begin(), dtypes.end()}, ",")}));

  auto held = [](const onnx::ValueInfo& vi) {
    return vi.kind == onnx::ValueInfo::kTensor || vi.kind == onnx::ValueInfo::kSequence || vi.kind == onnx::ValueInfo::kOptional;
  };
  for (const auto* vi : m.inputs)
    if (!held(*vi))
      return fail(Outcome::Unsupported, "graph input '" + vi->name + "' has type " + valueTypeLabel(*vi) +
                                            "; the runner and Osprey handle tensors, sequences and optionals");
  for (const auto& vi : graph.outputs) {
    if (!held(vi))
      return fail(Outcome::Unsupported, "graph output '" + vi.name + "' has type " + valueTypeLabel(vi) +
                                            "; the runner and Osprey handle tensors, sequences and optionals");
    m.outputs.push_back(&vi);
  }

  auto model = std::make_shared<Model>();
  st = convertOnnxFile(modelPath, model.get());
  if (!st) return fromStatus(st, "convert");
  st = Interpreter::fromModel(model, &m.interp);
  if (!st) return fromStatus(st, "load");
  ScheduleConfig schedule;
  schedule.threads = 1;
  st = m.interp->createSession(schedule, BackendConfig(), &m.session);
  if (!st) return fromStatus(st, "session");

  auto sets = dataSets(info.path);
  if (sets.empty()) return fail(Outcome::Error, "no test_data_set_N directories");
  for (const auto& [index, dir] : sets) {
    Failure f = runDataSet(m, index, dir);
    if (f.failed()) return f;
  }
  if (ops.count("If") || ops.count("Loop") || ops.count("Scan"))
    writeAll(fd, encodeLine({"BODIES", m.session->stats().bodySessions > 0 ? "compiled" : "eager"}));
  bool quantized = false, reference = false;
  for (const std::string& op : quantizedOps()) {
    quantized |= ops.count(op) > 0;
    reference |= m.session->stats().referenceOps.count(op) > 0;
  }
  if (quantized) writeAll(fd, encodeLine({"KERNEL", reference ? "reference" : "integer"}));
  return {};
}

}  // namespace

void runCaseInChild(const CaseInfo& info, int fd) {
  Failure f;
  try {
    f = runCase(info, fd);
  } catch (const std::exception& e) {
    // Errors are values in Osprey; an exception escaping would end a user's process.
    f = fail(Outcome::Crash, std::string("uncaught C++ exception: ") + e.what());
  } catch (...) {
    f = fail(Outcome::Crash, "uncaught C++ exception of unknown type");
  }
  // The converter names the file; the case id already does, and reasons must not depend on
  // where the test data lives.
  std::string modelPath = info.path + "/model.onnx";
  for (const std::string& drop : {modelPath + ": ", modelPath}) {
    for (size_t at; (at = f.message.find(drop)) != std::string::npos;) f.message.erase(at, drop.size());
  }
  writeAll(fd, encodeLine({"RESULT", outcomeName(f.outcome), f.message}));
}

}  // namespace osprey::conformance
