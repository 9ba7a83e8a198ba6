#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "backends/cuda/host_narrow.h"
#include "backends/cuda/kernels/cuda_launch.h"
#include "core/layout.h"
#include "ops/op_def.h"

namespace osprey {

namespace {

DataType lowPrecisionType(const CudaOptions& options) {
  return options.lowPrecision == CudaOptions::LowPrecision::BFloat16 ? DataType::BFloat16 : DataType::Float16;
}

// NHWC (what tensor-core convolutions read) for 4-D float activations at fp16 / bf16, NCHW at
// fp32; CudaOptions::layout NCHW or NHWC chooses for every precision.
bool channelsLastFor(const CudaOptions& options, DataType computeType) {
  if (options.layout == CudaOptions::Layout::NCHW) return false;
  if (options.layout == CudaOptions::Layout::NHWC) return true;
  return computeType != DataType::Float32;
}

// A chunk with its own device allocation (STATIC): `device` points at
// blockBase, like planned chunks point at the arena's base.
struct OwnedDeviceChunk : MemChunk {
  std::shared_ptr<DeviceBuffer> block;
  uint8_t* blockBase = nullptr;
};

class PlannedDeviceMemObj : public MemObj {
 public:
  PlannedDeviceMemObj(MemoryPlanner* planner, std::shared_ptr<MemChunk> chunk) : planner_(planner), chunk_(std::move(chunk)) {}
  ~PlannedDeviceMemObj() override { planner_->release(chunk_); }

 private:
  MemoryPlanner* planner_;
  std::shared_ptr<MemChunk> chunk_;
};

class OwnedDeviceMemObj : public MemObj {
 public:
  explicit OwnedDeviceMemObj(std::shared_ptr<DeviceBuffer> block) : block_(std::move(block)) {}

 private:
  std::shared_ptr<DeviceBuffer> block_;
};

bool isFloatStorage(DataType t) { return t == DataType::Float32 || t == DataType::Float16 || t == DataType::BFloat16; }

}  // namespace

// Skips the op while the backend replays the captured graph, which already holds its kernels.
class GraphAwareExecution : public Execution {
 public:
  GraphAwareExecution(CUDABackend* backend, std::unique_ptr<Execution> inner)
      : Execution(backend), cuda_(backend), inner_(std::move(inner)) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>& inputs,
                      const std::vector<RuntimeTensor*>& outputs) const override {
    return inner_->supportsLayout(layout, inputs, outputs);
  }
  Status onResize(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    return inner_->onResize(inputs, outputs);
  }
  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    if (cuda_->replaying()) return Status::ok();
    return inner_->onExecute(inputs, outputs);
  }

 private:
  CUDABackend* cuda_;
  std::unique_ptr<Execution> inner_;
};

CUDABackend::CUDABackend(CUDARuntime* runtime, const BackendConfig& config)
    : Backend(ForwardType::CUDA), runtime_(runtime), config_(config), planner_(kDeviceAlignment) {
  computeType_ = config.precision == BackendConfig::Precision::Low ? lowPrecisionType(config.cuda) : DataType::Float32;
  channelsLast_ = channelsLastFor(config.cuda, computeType_);
  graphAllowed_ = config.cuda.graphs;
  if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    stream_ = nullptr;  // the legacy default stream still works; graphs need a real stream
    graphAllowed_ = false;
  }
}

CUDABackend::~CUDABackend() {
  abandonCapture();
  if (stream_) cudaStreamSynchronize(stream_);
  if (graphExec_) cudaGraphExecDestroy(graphExec_);
  for (cudaEvent_t e : profileEvents_) cudaEventDestroy(e);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (stream_) cudaStreamDestroy(stream_);
}

cudnnHandle_t CUDABackend::cudnn() {
  if (!cudnn_) {
    cudnn_ = runtime_->createCudnn();
    if (cudnn_) cudnnSetStream(cudnn_, stream_);
  }
  return cudnn_;
}

std::unique_ptr<Execution> CUDABackend::onCreate(const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs, const OpRef& op) {
  CUDAExecutionCreator creator = cudaKernelCreator(op.type);
  if (!creator) return nullptr;
  auto exe = creator(this, op, inputs, outputs);
  if (!exe) return nullptr;
  return std::make_unique<GraphAwareExecution>(this, std::move(exe));
}

std::unique_ptr<MemObj> CUDABackend::onAcquire(RuntimeTensor* tensor, StorageType storage) {
  size_t bytes = static_cast<size_t>(layoutElements(tensor->shape, tensor->layout)) * dataTypeSize(storageType(tensor));
  tensor->backend = this;
  if (storage == StorageType::DYNAMIC) {
    tensor->chunk = planner_.acquire(bytes);
    tensor->chunk->device = &arenaBase_;
    return std::make_unique<PlannedDeviceMemObj>(&planner_, tensor->chunk);
  }
  auto block = std::make_shared<DeviceBuffer>();
  if (!block->allocate(bytes)) return nullptr;
  if (cudaMemsetAsync(block->get(), 0, std::max<size_t>(bytes, 1), stream_) != cudaSuccess) return nullptr;
  auto chunk = std::make_shared<OwnedDeviceChunk>();
  chunk->block = block;
  chunk->blockBase = block->as<uint8_t>();
  chunk->device = &chunk->blockBase;
  chunk->size = bytes;
  tensor->chunk = chunk;
  if (storage == StorageType::STATIC) staticBytes_ += bytes;
  return std::make_unique<OwnedDeviceMemObj>(block);
}

void CUDABackend::onClearBuffer() {
  if (stream_) cudaStreamSynchronize(stream_);
  arena_.reset();
  arenaBase_ = nullptr;
  if (graphExec_) cudaGraphExecDestroy(graphExec_);
  graphExec_ = nullptr;
  graphMode_ = GraphMode::Eager;
}

void* CUDABackend::devicePtr(const RuntimeTensor* t) const {
  if (!t || !t->chunk || !t->chunk->device) return nullptr;
  uint8_t* base = *static_cast<uint8_t* const*>(t->chunk->device);
  return base ? base + t->chunk->offset : nullptr;
}

std::shared_ptr<MemChunk> CUDABackend::acquireScratch(size_t bytes) {
  auto chunk = planner_.acquire(bytes);
  chunk->device = &arenaBase_;
  return chunk;
}

void CUDABackend::releaseScratch(const std::shared_ptr<MemChunk>& chunk) { planner_.release(chunk); }

void* CUDABackend::scratchPtr(const MemChunk& chunk) const {
  uint8_t* base = *static_cast<uint8_t* const*>(chunk.device);
  return base ? base + chunk.offset : nullptr;
}

Status CUDABackend::allocateStatic(size_t bytes, DeviceBuffer* out) {
  if (!out->allocate(bytes)) return Status::outOfMemory("CUDA: cannot allocate " + std::to_string(bytes) + " bytes of weights");
  staticBytes_ += bytes;
  return Status::ok();
}

Status CUDABackend::uploadStatic(const void* host, size_t bytes, DeviceBuffer* out) {
  OSPREY_RETURN_IF_ERROR(allocateStatic(bytes, out));
  OSPREY_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out->get(), host, bytes, cudaMemcpyHostToDevice, stream_), "weight upload");
  // Pageable source: the copy has finished reading `host` when the call returns, but the
  // device may not be done; synchronise so callers can free their host copy.
  OSPREY_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "weight upload");
  return Status::ok();
}

void CUDABackend::onResizeBegin() {
  abandonCapture();
  if (stream_) cudaStreamSynchronize(stream_);
  planner_.reset();
  staticBytes_ = 0;
  staging_.clear();
  if (graphExec_) cudaGraphExecDestroy(graphExec_);
  graphExec_ = nullptr;
  graphMode_ = GraphMode::Eager;
  eagerRunsSinceResize_ = 0;
  graphError_ = Status::ok();
}

Status CUDABackend::onResizeEnd() {
  size_t need = planner_.plan();
  if (need > arena_.bytes() || !arena_.get()) {
    if (stream_) cudaStreamSynchronize(stream_);
    arena_.reset();  // free first: the old and new arenas need not fit together
    if (!arena_.allocate(need))
      return Status::outOfMemory("CUDA: cannot allocate the activation arena of " + std::to_string(need) + " bytes");
  }
  arenaBase_ = arena_.as<uint8_t>();
  return Status::ok();
}

PinnedBuffer* CUDABackend::stagingFor(const RuntimeTensor* t, size_t bytes) {
  PinnedBuffer& b = staging_[t];
  if (b.bytes() < bytes && !b.allocate(bytes)) return nullptr;
  return &b;
}

void CUDABackend::hostCopy(void* dst, const void* src, size_t bytes) {
  hostParallel(bytes, [&](size_t from, size_t to) {
    std::memcpy(static_cast<uint8_t*>(dst) + from, static_cast<const uint8_t*>(src) + from, to - from);
  });
}

void CUDABackend::hostNarrow(uint16_t* dst, const float* src, size_t n, DataType to) {
  hostParallel(n * sizeof(float), [&](size_t from, size_t end) {
    cuda::narrowFloats(dst + from / sizeof(float), src + from / sizeof(float), (end - from) / sizeof(float), to);
  });
}

void CUDABackend::hostParallel(size_t bytes, const std::function<void(size_t, size_t)>& work) {
  constexpr size_t kParallelFrom = size_t(1) << 20, kBlock = size_t(256) << 10;  // kBlock: a multiple of 4
  if (bytes >= kParallelFrom && !copyPoolChecked_) {
    copyPoolChecked_ = true;
    // Half the cores, at most 8: a few threads saturate host memory bandwidth.
    int threads = std::min(8, static_cast<int>(std::thread::hardware_concurrency() / 2));
    if (threads > 1) copyPool_ = std::make_unique<ThreadPool>(threads);
  }
  if (bytes < kParallelFrom || !copyPool_) {
    work(0, bytes);
    return;
  }
  const int64_t blocks = static_cast<int64_t>((bytes + kBlock - 1) / kBlock);
  copyPool_->parallelFor(blocks, [&](int64_t begin, int64_t end) {
    work(static_cast<size_t>(begin) * kBlock, std::min(bytes, static_cast<size_t>(end) * kBlock));
  });
}

Layout CUDABackend::activationLayout(const RuntimeTensor& t) const {
  // Only fp16 / bf16 activations go NHWC (tensor-core convolution); the fp32 stem stays NCHW,
  // as fp32 sessions do.
  return channelsLast_ && storageType(&t) != DataType::Float32 && t.shape.size() == 4 ? Layout::NHWC : Layout::NCHW;
}

Status CUDABackend::onWaitFinish() {
  if (!graphError_.isOk()) return std::exchange(graphError_, Status::ok());
  OSPREY_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "waiting for the run");
  return Status::ok();
}

Status CUDABackend::onAllocateDevice(size_t bytes, void** data, std::shared_ptr<void>* owner) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    return Status::outOfMemory("CUDA: cannot allocate a device tensor of " + std::to_string(bytes) + " bytes");
  }
  *data = p;
  *owner = std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
  return Status::ok();
}

Status CUDABackend::onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) {
  if (src->dtype != dst->dtype || src->shape != dst->shape)
    return Status::internal("CUDA copy between tensors of different dtype or shape: " + src->name);
  const bool srcOnDevice = src->backend == this && !src->constData;
  const bool dstOnDevice = dst->backend == this;
  Status st;
  if (srcOnDevice && dstOnDevice) {
    st = copyDeviceToDevice(src, dst);
  } else if (dstOnDevice) {
    st = copyHostToDevice(src, dst);
  } else if (srcOnDevice) {
    st = copyDeviceToHost(src, dst);
  } else {
    st = Status::internal("CUDA copy with neither side on the device: " + src->name);
  }
  return st.withContext("copy of '" + src->name + "'");
}

// Within the device: a plain copy, or a conversion where the two sides differ in storage dtype
// (the fp32 stem's edge) or layout (NCHW <-> NHWC).
Status CUDABackend::copyDeviceToDevice(const RuntimeTensor* src, RuntimeTensor* dst) {
  if (graphMode_ == GraphMode::Replay && inRun_) return Status::ok();  // part of the replayed graph
  const int64_t n = src->elements();
  if (n == 0) return Status::ok();
  for (const RuntimeTensor* t : {src, static_cast<const RuntimeTensor*>(dst)})
    if (t->layout != Layout::NCHW && t->layout != Layout::NHWC && layoutMatters(t->shape, t->layout))
      return Status::unsupported("CUDA tensors are stored in NCHW or NHWC; got " + std::string(layoutName(t->layout)));
  const DataType from = storageType(src), to = storageType(dst);
  const bool srcRelaid = src->layout == Layout::NHWC && layoutMatters(src->shape, src->layout);
  const bool dstRelaid = dst->layout == Layout::NHWC && layoutMatters(dst->shape, dst->layout);
  if (srcRelaid == dstRelaid && from == to) {
    const size_t bytes = static_cast<size_t>(n) * dataTypeSize(from);
    OSPREY_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(devicePtr(dst), devicePtr(src), bytes, cudaMemcpyDeviceToDevice, stream_), "device copy");
    return Status::ok();
  }
  if (!isFloatStorage(from) || !isFloatStorage(to))
    return Status::unsupported(std::string("device conversion ") + dataTypeName(from) + " -> " + dataTypeName(to));
  const RuntimeTensor& relaid = srcRelaid ? *src : *dst;
  cudaError_t e = srcRelaid == dstRelaid
                      ? cuda::convertFloat(devicePtr(src), from, devicePtr(dst), to, n, stream_)
                      : cuda::convertFloatLayout(devicePtr(src), from, devicePtr(dst), to, relaid.shape[0], relaid.shape[1],
                                                 relaid.shape[2] * relaid.shape[3], dstRelaid, stream_);
  OSPREY_CUDA_RETURN_IF_ERROR(e, "device conversion");
  return Status::ok();
}

Status CUDABackend::copyHostToDevice(const RuntimeTensor* src, RuntimeTensor* dst) {
  const bool relayout = dst->layout != Layout::NCHW && layoutMatters(dst->shape, dst->layout);
  if (relayout && dst->layout != Layout::NHWC)
    return Status::unsupported("CUDA tensors are stored in NCHW or NHWC; got " + std::string(layoutName(dst->layout)));
  const int64_t n = src->elements();
  if (n == 0) return Status::ok();
  const DataType deviceType = storageType(dst);
  void* target = devicePtr(dst);
  if (!target) return Status::internal("device tensor has no memory");
  // Conversions (dtype, NCHW -> NHWC) run on the device, from an NCHW image of the host data,
  // except that activations narrow to fp16 / bf16 on the host while they fill the pinned
  // staging (half the bytes cross the bus).
  const bool convert = deviceType != src->dtype || relayout;
  if (convert && !(src->dtype == DataType::Float32 && isFloatStorage(deviceType)))
    return Status::unsupported(std::string("host ") + dataTypeName(src->dtype) + " to device " + dataTypeName(deviceType) +
                               " in " + layoutName(dst->layout));
  const bool hostIsNchw = src->layout == Layout::NCHW || src->shape.size() < 2;
  const bool narrowOnHost = !src->constData && deviceType != src->dtype && hostIsNchw;
  const DataType wireType = narrowOnHost ? deviceType : src->dtype;
  const size_t wireBytes = static_cast<size_t>(n) * dataTypeSize(wireType);
  const bool viaScratch = relayout || (convert && !narrowOnHost);
  if (viaScratch && uploadScratch_.bytes() < wireBytes) {
    // A captured graph holds the scratch's address: it may only grow before capture.
    if (graphMode_ != GraphMode::Eager) return Status::internal("upload scratch grew during CUDA graph capture");
    if (stream_) cudaStreamSynchronize(stream_);
    if (!uploadScratch_.allocate(wireBytes)) return Status::outOfMemory("CUDA: upload scratch of " + std::to_string(wireBytes) + " bytes");
  }
  void* landing = viaScratch ? uploadScratch_.get() : target;

  if (src->constData) {  // a weight, uploaded once at resize: no staging
    OSPREY_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(landing, src->constData, wireBytes, cudaMemcpyHostToDevice, stream_), "upload");
  } else {
    PinnedBuffer* staging = stagingFor(dst, wireBytes);
    if (!staging) return Status::outOfMemory("CUDA: pinned staging of " + std::to_string(wireBytes) + " bytes");
    const uint8_t* host = src->host();
    if (!host) return Status::internal("host tensor has no memory");
    if (narrowOnHost) {
      hostNarrow(static_cast<uint16_t*>(staging->get()), reinterpret_cast<const float*>(host), static_cast<size_t>(n), deviceType);
    } else if (hostIsNchw) {
      hostCopy(staging->get(), host, wireBytes);
    } else {
      OSPREY_RETURN_IF_ERROR(convertLayout(host, src->layout, staging->get(), Layout::NCHW, src->shape, dataTypeSize(src->dtype)));
    }
    if (graphMode_ == GraphMode::Replay && inRun_) return Status::ok();  // the graph copies from staging
    OSPREY_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(landing, staging->get(), wireBytes, cudaMemcpyHostToDevice, stream_), "upload");
  }
  if (relayout) {
    OSPREY_CUDA_RETURN_IF_ERROR(cuda::convertFloatLayout(landing, wireType, target, deviceType, dst->shape[0], dst->shape[1],
                                                         dst->shape[2] * dst->shape[3], true, stream_),
                                "upload conversion");
  } else if (viaScratch) {
    OSPREY_CUDA_RETURN_IF_ERROR(cuda::convertFloat(landing, src->dtype, target, deviceType, n, stream_), "upload conversion");
  }
  if (src->constData || !inRun_) OSPREY_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "upload");
  return Status::ok();
}

Status CUDABackend::copyDeviceToHost(const RuntimeTensor* src, RuntimeTensor* dst) {
  if (!graphError_.isOk()) return std::exchange(graphError_, Status::ok());
  if (inRun_) {
    // A host op reads device data inside the run: this run cannot become a graph.
    if (graphMode_ != GraphMode::Eager) return Status::internal("device-to-host copy inside a captured CUDA graph");
    sawHostReadInRun_ = true;
  }
  const bool relayout = src->layout != Layout::NCHW && layoutMatters(src->shape, src->layout);
  if (relayout && src->layout != Layout::NHWC)
    return Status::unsupported("CUDA tensors are stored in NCHW or NHWC; got " + std::string(layoutName(src->layout)));
  const int64_t n = src->elements();
  if (n == 0) return Status::ok();
  const DataType deviceType = storageType(src);
  const size_t hostBytes = static_cast<size_t>(n) * dataTypeSize(dst->dtype);
  const void* from = devicePtr(src);
  if (deviceType != dst->dtype || relayout) {
    if (!isFloatStorage(deviceType) || !isFloatStorage(dst->dtype))
      return Status::unsupported(std::string("device ") + dataTypeName(deviceType) + " in " + layoutName(src->layout) +
                                 " to host " + dataTypeName(dst->dtype));
    if (readbackScratch_.bytes() < hostBytes) {
      cudaStreamSynchronize(stream_);
      if (!readbackScratch_.allocate(hostBytes)) return Status::outOfMemory("CUDA: readback scratch of " + std::to_string(hostBytes) + " bytes");
    }
    cudaError_t e = relayout ? cuda::convertFloatLayout(from, deviceType, readbackScratch_.get(), dst->dtype, src->shape[0], src->shape[1],
                                                        src->shape[2] * src->shape[3], false, stream_)
                             : cuda::convertFloat(from, deviceType, readbackScratch_.get(), dst->dtype, n, stream_);
    OSPREY_CUDA_RETURN_IF_ERROR(e, "readback conversion");
    from = readbackScratch_.get();
  }
  PinnedBuffer* staging = stagingFor(src, hostBytes);
  if (!staging) return Status::outOfMemory("CUDA: pinned staging of " + std::to_string(hostBytes) + " bytes");
  OSPREY_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging->get(), from, hostBytes, cudaMemcpyDeviceToHost, stream_), "readback");
  OSPREY_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "readback");
  uint8_t* host = dst->host();
  if (!host) return Status::internal("host tensor has no memory");
  if (dst->layout == Layout::NCHW || dst->shape.size() < 2) {
    hostCopy(host, staging->get(), hostBytes);
    return Status::ok();
  }
  return convertLayout(staging->get(), Layout::NCHW, host, dst->layout, dst->shape, dataTypeSize(dst->dtype));
}

// A run that failed during capture never reached onExecuteEnd: close the capture, drop it, and
// run eagerly from now on rather than retry a run that cannot be captured.
void CUDABackend::abandonCapture() {
  if (graphMode_ != GraphMode::Capture) return;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_, &graph);
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  graphMode_ = GraphMode::Eager;
  graphAllowed_ = false;
}

Status CUDABackend::onProfileMark() {
  if (profileMarks_ == profileEvents_.size()) {
    if (graphMode_ == GraphMode::Replay) return Status::internal("a profiled run has more commands than the captured one");
    cudaEvent_t e = nullptr;
    OSPREY_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e), "profiling event");
    profileEvents_.push_back(e);
  }
  cudaEvent_t event = profileEvents_[profileMarks_++];
  if (graphMode_ == GraphMode::Replay) return Status::ok();  // the graph records it
  // In a capture, an event node of the graph: recorded at each replay.
  const unsigned flags = graphMode_ == GraphMode::Capture ? cudaEventRecordExternal : cudaEventRecordDefault;
  OSPREY_CUDA_RETURN_IF_ERROR(cudaEventRecordWithFlags(event, stream_, flags), "profiling event");
  return Status::ok();
}

Status CUDABackend::onProfileMarkTimes(std::vector<double>* us) {
  us->assign(profileMarks_, 0.0);
  for (size_t k = 0; k < profileMarks_; ++k) {
    float ms = 0;
    OSPREY_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(profileEvents_[k]), "profiling event");
    OSPREY_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, profileEvents_[0], profileEvents_[k]), "profiling event");
    (*us)[k] = ms * 1000.0;
  }
  return Status::ok();
}

void CUDABackend::onProfiling(bool on) {
  if (on == profiling_) return;
  profiling_ = on;
  // The graph captured before has no event nodes (or, after profiling, has them): capture again.
  dropGraph();
}

void CUDABackend::onStepwise(bool on) {
  if (on == stepwise_) return;
  stepwise_ = on;
  dropGraph();
}

void CUDABackend::dropGraph() {
  abandonCapture();
  if (stream_) cudaStreamSynchronize(stream_);
  if (graphExec_) cudaGraphExecDestroy(graphExec_);
  graphExec_ = nullptr;
  graphMode_ = GraphMode::Eager;
}

void CUDABackend::onExecuteBegin() {
  abandonCapture();
  inRun_ = true;
  profileMarks_ = 0;
  sawHostReadInRun_ = false;
  if (graphMode_ == GraphMode::Eager && graphAllowed_ && !stepwise_ && eagerRunsSinceResize_ > 0 &&
      lastEagerRunClean_) {
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
      graphMode_ = GraphMode::Capture;
    } else {
      cudaGetLastError();
      graphAllowed_ = false;
    }
  }
}

void CUDABackend::onExecuteEnd() {
  inRun_ = false;
  if (graphMode_ == GraphMode::Eager) {
    ++eagerRunsSinceResize_;
    lastEagerRunClean_ = !sawHostReadInRun_;
    return;
  }
  if (graphMode_ == GraphMode::Capture) {
    cudaGraph_t graph = nullptr;
    cudaError_t err = cudaStreamEndCapture(stream_, &graph);
    if (err == cudaSuccess) err = cudaGraphInstantiate(&graphExec_, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (err != cudaSuccess) {
      // The captured work never ran: report it at the read-back, run eagerly from now on.
      cudaGetLastError();
      graphExec_ = nullptr;
      graphError_ = cudaStatus(err, "CUDA graph capture of the run");
      graphMode_ = GraphMode::Eager;
      graphAllowed_ = false;
      return;
    }
    graphMode_ = GraphMode::Replay;
  }
  cudaError_t err = cudaGraphLaunch(graphExec_, stream_);
  if (err != cudaSuccess) graphError_ = cudaStatus(err, "CUDA graph launch");
}

}  // namespace osprey
