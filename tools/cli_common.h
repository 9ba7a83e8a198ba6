// Shared pieces of the `osprey` CLI: argument access, tensor files, printing.
#pragma once
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "osprey/osprey.h"

namespace osprey::cli {

// Arguments after the subcommand; options are "--name value" or "--flag".
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> all(const std::string& name) const;
  bool has(const std::string& name) const { return options.count(name) > 0; }
};
// Parses argv; `flags` are the options that take no value. Unknown options are an error.
Status parseArgs(int argc, char** argv, int first, const std::vector<std::string>& valued,
                 const std::vector<std::string>& flags, Args* out);
Status parseInt(const std::string& text, const char* what, int* out);
// Every --input-shape NAME=D,D,... (a dimension -1 or ? stays dynamic).
Status inputShapesFromArgs(const Args& args, std::map<std::string, Shape>* out);

// Reads a .npy or ONNX TensorProto .pb file.
Status loadTensorFile(const std::string& path, Tensor* out);
// Reads the value of a model input from `path`: a sequence input from an ONNX SequenceProto .pb,
// an optional one from an OptionalProto .pb (or, as any input, a .npy / TensorProto .pb).
Status loadInputFile(const std::string& path, const TensorInfoPublic& input, Tensor* out);
// "float32 [2, 3] [0.1, ...]", "sequence of 2 float32: [2, 3] [...], [1, 3] [...]", "no value".
std::string describeValue(const Tensor& t, int count);
// "float32 [1, ?]", "sequence(float32)", "optional(float32 [2])".
std::string describeType(const TensorInfoPublic& t);
Status saveNpy(const std::string& path, const Tensor& t);
// Seeded random data for an input (floats in [-1, 1), integers in [0, 10), bools 0/1).
Tensor randomInput(DataType dtype, const Shape& shape, uint32_t seed);
std::string previewValues(const Tensor& t, int count);

// The command's MODEL: one positional, or a Caffe deploy.prototxt and its .caffemodel.
Status loadModel(const Args& args, const char* command, std::shared_ptr<Interpreter>* out);
// --backend, --threads, --time-limit-ms; also applies --cpu-isa (process-wide: setCpuIsaLimit), so
// call it before the model loads.
Status scheduleFromArgs(const Args& args, ScheduleConfig* schedule);
// --precision normal|high|low (Low: fp16 storage on CUDA, --cuda-low-precision bf16 for bf16),
// --memory, --memory-limit BYTES (a K, M, G or T suffix multiplies by 1024 per step),
// --plan-cache, --fp32-stem and the per-backend options (--cpu-*, --cuda-*, --opencl-*).
Status backendConfigFromArgs(const Args& args, BackendConfig* config);
// `valued` plus every valued option scheduleFromArgs and backendConfigFromArgs read.
std::vector<std::string> withConfigOptions(std::vector<std::string> valued);
// The usage lines of those options, for `osprey --help`.
const char* configOptionsUsage();
// A Vulkan or OpenCL runtime (the device, queues and pipeline or program cache) made on a thread
// of its own from the moment this is constructed, while the caller loads the model
// (Interpreter::createRuntime needs no model; on NVIDIA's Vulkan driver the device alone takes
// ~150 ms). Other backends' runtimes are made by the session, as before.
class RuntimeMadeWhileLoading {
 public:
  RuntimeMadeWhileLoading(const ScheduleConfig& schedule, const BackendConfig& config);
  ~RuntimeMadeWhileLoading();
  // A session of `interp` on that runtime; where it could not be made, a session made as
  // Interpreter::createSession(schedule, config) makes it, which says why.
  Status createSession(const Interpreter& interp, std::unique_ptr<Session>* out);

 private:
  ScheduleConfig schedule_;
  BackendConfig config_;
  std::shared_ptr<SharedRuntime> runtime_;
  // Set by `maker_` as soon as the runtime is made: a std::async future would wait for its
  // thread's exit too, where a GPU driver's thread-exit handlers took 10 ms on NVIDIA's.
  std::future<Status> made_;
  std::thread maker_;
};

// Plans `session` for the given inputs' shapes and the shapes of those still to be generated,
// so that shapes past the memory limit are refused before any input is allocated.
Status planBeforeGenerating(Session* session, const std::map<std::string, Tensor>& given,
                            const std::map<std::string, Shape>& generated);
// The shape a generated input gets: --shape NAME=D0,D1,... if given, else the model's shape with
// symbolic dims set to 1 and, with --batch N, dim 0 set to N.
Status generatedInputShape(const Args& args, const TensorInfoPublic& info, Shape* shape);

int cmdConvert(int argc, char** argv);
int cmdRun(int argc, char** argv);
int cmdBench(int argc, char** argv);
int cmdInfo(int argc, char** argv);
int cmdBackends(int argc, char** argv);
int cmdQuantize(int argc, char** argv);

// Prints "error: <message>" on one line to stderr and returns 1.
int fail(const Status& st);

}  // namespace osprey::cli
