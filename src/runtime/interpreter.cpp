#include "converter/converter.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <future>

#include "core/files.h"
#include "ops/op_def.h"
#include "runtime/float16_widening.h"
#include "runtime/model_io.h"
#include "runtime/session_impl.h"
#include "osprey/interpreter.h"

namespace osprey {

namespace {
bool endsWith(const std::string& s, const char* suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool looksLikeOnnx(const std::string& path, const std::vector<uint8_t>& bytes) {
  if (endsWith(path, ".onnx")) return true;
  if (isTfliteModel(path, bytes.data(), bytes.size())) return false;
  if (endsWith(path, ".osp")) return false;
  // .osp files carry the identifier at bytes 8..11 (after the size prefix and root offset).
  return !(bytes.size() >= 12 && std::equal(bytes.begin() + 8, bytes.begin() + 12, "OSP1"));
}
}  // namespace

Interpreter::~Interpreter() = default;

std::shared_ptr<Interpreter> Interpreter::holding(std::shared_ptr<const Model> model) {
  std::shared_ptr<Interpreter> interp(new Interpreter());
  interp->model_ = std::move(model);
  interp->float16_ = std::make_shared<Float16Widening>(interp->model_);
  return interp;
}

Status Interpreter::fromFile(const std::string& path, std::shared_ptr<Interpreter>* out) {
  return fromFile(path, LoadOptions(), out);
}

Status Interpreter::fromFile(const std::string& path, const LoadOptions& options, std::shared_ptr<Interpreter>* out) {
  if (isCaffePrototxt(path)) {
    std::string weights = options.weights;
    if (weights.empty()) {
      std::filesystem::path sibling(path);
      sibling.replace_extension(".caffemodel");
      if (std::filesystem::exists(sibling)) weights = sibling.string();
    }
    auto model = std::make_shared<Model>();
    OSPREY_RETURN_IF_ERROR(convertCaffeFiles(path, weights, model.get()));
    *out = holding(std::move(model));
    return Status::ok();
  }
  if (isTensorflowModel(path)) {  // a frozen GraphDef (.pb) or a SavedModel directory
    auto model = std::make_shared<Model>();
    ConvertOptions convert;
    convert.signature = options.signature;
    OSPREY_RETURN_IF_ERROR(convertTensorflowFile(path, model.get(), convert));
    *out = holding(std::move(model));
    return Status::ok();
  }
  // Read through a mapping: the parsers read the file's pages in place, with no copy of the
  // whole file on the heap first. A pipe or a device is read whole instead.
  FileBytes file;
  OSPREY_RETURN_IF_ERROR(mapOrReadFile(path, &file));
  const std::vector<uint8_t> head(file.data, file.data + std::min<size_t>(file.size, 64));
  auto model = std::make_shared<Model>();
  if (isTfliteModel(path, head.data(), head.size())) {
    OSPREY_RETURN_IF_ERROR(convertTfliteBytes(file.data, file.size, model.get()).withContext(path));
  } else if (looksLikeOnnx(path, head)) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    OSPREY_RETURN_IF_ERROR(
        convertOnnxFileBytes(std::move(file.holder), file.data, file.size, dir, model.get()).withContext(path));
  } else if (options.mapFile && file.mapped) {
    OSPREY_RETURN_IF_ERROR_IN(readModel(file.data, file.size, model.get(), file.holder), path);
    model->mapping = file.mapping();
  } else {
    // The constants point into the file's bytes on the heap (a copy of a mapping), held by the model.
    if (file.mapped) file.holder = std::make_shared<const std::vector<uint8_t>>(file.data, file.data + file.size);
    const auto* bytes = static_cast<const std::vector<uint8_t>*>(file.holder.get());
    OSPREY_RETURN_IF_ERROR_IN(readModel(bytes->data(), bytes->size(), model.get(), file.holder), path);
  }
  *out = holding(std::move(model));
  return Status::ok();
}

Status Interpreter::fromBuffer(const void* data, size_t size, std::shared_ptr<Interpreter>* out) {
  auto model = std::make_shared<Model>();
  OSPREY_RETURN_IF_ERROR(readModel(static_cast<const uint8_t*>(data), size, model.get()));
  *out = holding(std::move(model));
  return Status::ok();
}

Status Interpreter::fromModel(std::shared_ptr<const Model> model, std::shared_ptr<Interpreter>* out) {
  OSPREY_RETURN_IF_ERROR(model->graph.validate());
  OSPREY_RETURN_IF_ERROR(checkOpArity(model->graph));
  *out = holding(std::move(model));
  return Status::ok();
}

Status Interpreter::createSession(const ScheduleConfig& schedule, const BackendConfig& backend,
                                  std::unique_ptr<Session>* out) const {
  auto impl = std::make_unique<SessionImpl>(model_, schedule, backend);
  OSPREY_RETURN_IF_ERROR(impl->init(float16_.get()));
  out->reset(new Session(std::move(impl)));
  return Status::ok();
}

Status Interpreter::createRuntime(const ScheduleConfig& schedule, const BackendConfig& backend,
                                  std::shared_ptr<SharedRuntime>* out) {
  return makeSharedRuntime(schedule, backend, out);
}

Status Interpreter::createSession(const std::shared_ptr<SharedRuntime>& runtime, std::unique_ptr<Session>* out) const {
  if (!runtime) return Status::invalidArgument("createSession was given no runtime");
  auto impl = std::make_unique<SessionImpl>(model_, runtime);
  OSPREY_RETURN_IF_ERROR(impl->init(float16_.get()));
  out->reset(new Session(std::move(impl)));
  return Status::ok();
}

static std::vector<TensorInfoPublic> describe(const Model& m, const std::vector<int>& idx) {
  std::vector<TensorInfoPublic> out;
  for (int i : idx) {
    auto& t = m.graph.tensors[i];
    out.push_back({t.name, t.dtype, t.shape, t.dimNames, t.elementDtype, t.optional});
  }
  return out;
}

std::vector<TensorInfoPublic> Interpreter::inputs() const { return describe(*model_, model_->graph.inputs); }
std::vector<TensorInfoPublic> Interpreter::outputs() const { return describe(*model_, model_->graph.outputs); }

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  if (impl_ && impl_->pendingRun.valid()) impl_->pendingRun.wait();
}

namespace {
Status startAsync(SessionImpl* impl, std::function<Status()> run) {
  std::lock_guard<std::mutex> lock(impl->asyncMutex);
  if (impl->pendingRun.valid()) return Status::invalidArgument("a run started by runAsync is pending: call wait() first");
  impl->pendingRun = std::async(std::launch::async, std::move(run));
  return Status::ok();
}
}  // namespace

Status Session::runAsync(std::map<std::string, Tensor> inputs) {
  return startAsync(impl_.get(), [this, inputs = std::move(inputs)] { return run(inputs, &impl_->pendingOutputs); });
}

Status Session::runAsync(const IoBinding& io) {
  return startAsync(impl_.get(), [this, &io] {
    impl_->pendingOutputs.clear();
    return run(io);
  });
}

Status Session::wait(std::vector<Tensor>* outputs) {
  std::future<Status> run;
  {
    std::lock_guard<std::mutex> lock(impl_->asyncMutex);
    if (!impl_->pendingRun.valid()) return Status::invalidArgument("no run is pending: wait() follows runAsync");
    run = std::move(impl_->pendingRun);
  }
  const Status st = run.get();
  if (outputs) *outputs = std::move(impl_->pendingOutputs);
  impl_->pendingOutputs.clear();
  return st;
}
Status Session::resize(const std::map<std::string, Shape>& inputShapes) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  std::lock_guard<std::recursive_mutex> shared(impl_->runtimeMutex());
  return impl_->resize(inputShapes);
}
Status Session::run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>* outputs) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  std::lock_guard<std::recursive_mutex> shared(impl_->runtimeMutex());
  return impl_->run(inputs, outputs);
}
Status Session::run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>* outputs, const RunCallbacks& callbacks) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  std::lock_guard<std::recursive_mutex> shared(impl_->runtimeMutex());
  return impl_->run(inputs, outputs, &callbacks);
}
Status Session::run(const IoBinding& io) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  std::lock_guard<std::recursive_mutex> shared(impl_->runtimeMutex());
  return impl_->run(io);
}
Status Session::allocateDevice(DataType dtype, const Shape& shape, DeviceTensor* out) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  return impl_->allocateDevice(dtype, shape, out);
}
Status Session::copyToDevice(const Tensor& host, const DeviceTensor& device) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  std::lock_guard<std::recursive_mutex> shared(impl_->runtimeMutex());
  return impl_->copyToDevice(host, device);
}
Status Session::copyFromDevice(const DeviceTensor& device, Tensor* host) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  std::lock_guard<std::recursive_mutex> shared(impl_->runtimeMutex());
  return impl_->copyFromDevice(device, host);
}
std::vector<TensorInfoPublic> Session::inputs() const {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  return impl_->inputInfo();
}
std::vector<TensorInfoPublic> Session::outputs() const {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  return impl_->outputInfo();
}
const SessionStats& Session::stats() const { return impl_->stats(); }
void Session::releaseMemory() {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  std::lock_guard<std::recursive_mutex> shared(impl_->runtimeMutex());
  impl_->releaseMemory();
}
void Session::setProfiling(bool on) {
  std::lock_guard<std::mutex> lock(impl_->callMutex);
  impl_->setProfiling(on);
}
const std::vector<OpTiming>& Session::lastRunProfile() const { return impl_->lastRunProfile(); }

}  // namespace osprey
