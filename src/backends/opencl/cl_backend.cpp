#include "backends/opencl/cl_backend.h"

#include <algorithm>
#include <cstring>

#include "backends/opencl/half.h"
#include "core/layout.h"

namespace osprey::opencl {

namespace {

// Planned memory: destroying it ends the chunk's lifetime in the plan.
class PlannedMemObj : public MemObj {
 public:
  PlannedMemObj(MemoryPlanner* planner, std::shared_ptr<MemChunk> chunk)
      : planner_(planner), chunk_(std::move(chunk)) {}
  ~PlannedMemObj() override { planner_->release(chunk_); }

 private:
  MemoryPlanner* planner_;
  std::shared_ptr<MemChunk> chunk_;
};

// A chunk with a buffer or image of its own; `device` points at `slot`.
struct PooledChunk : MemChunk {
  DeviceSlot slot;
};

// Returns the image to the image pool when destroyed.
class ImageMemObj : public MemObj {
 public:
  ImageMemObj(ImagePool* pool, cl_mem image, size_t width, size_t height, cl_channel_type type)
      : pool_(pool), image_(image), width_(width), height_(height), type_(type) {}
  ~ImageMemObj() override { pool_->release(image_, width_, height_, type_); }

 private:
  ImagePool* pool_;
  cl_mem image_;
  size_t width_, height_;
  cl_channel_type type_;
};

// Returns the buffer to its pool when destroyed.
class PooledMemObj : public MemObj {
 public:
  PooledMemObj(BufferPool* pool, cl_mem mem, size_t bytes) : pool_(pool), mem_(mem), bytes_(bytes) {}
  ~PooledMemObj() override { pool_->release(mem_, bytes_); }

 private:
  BufferPool* pool_;
  cl_mem mem_;
  size_t bytes_;
};

bool isHost(const RuntimeTensor* t) { return t->constData || !t->backend || t->backend->type() == ForwardType::CPU; }

}  // namespace

OpenCLBackend::OpenCLBackend(OpenCLRuntime* runtime, const BackendConfig& config)
    : Backend(ForwardType::OpenCL),
      runtime_(runtime),
      config_(config),
      planner_(std::max<size_t>(64, runtime->facts().baseAddressAlignBytes)),
      dynamicImages_(runtime->context(), false) {
  // fp16 storage goes through vload_half/vstore_half (core OpenCL), so any device can hold
  // activations and weights in half; arithmetic is half too where the device has cl_khr_fp16
  // (REAL in cl/common.cl), float elsewhere.
  fp16_ = config.precision == BackendConfig::Precision::Low;
  halfMath_ = fp16_ && runtime->halfMath();
  buildOptions_ = halfMath_ ? "-DUSE_FP16 -DUSE_FP16_MATH" : fp16_ ? "-DUSE_FP16" : "";
}

OpenCLBackend::~OpenCLBackend() {
  onClearBuffer();
  clFinish(runtime_->queue());
  dynamicImages_.clear();
}

size_t OpenCLBackend::deviceElementSize(DataType dtype) const {
  return dtype == DataType::Float32 && fp16_ ? 2 : dataTypeSize(dtype);
}

Layout OpenCLBackend::preferredLayout(const RuntimeTensor& t) const {
  (void)t;
  return Layout::NCHW;  // every kernel here indexes plain row-major tensors
}

DeviceRef OpenCLBackend::ref(const RuntimeTensor* t) const {
  DeviceRef r;
  if (!t || !t->chunk || !t->chunk->device) return r;
  const auto* slot = static_cast<const DeviceSlot*>(t->chunk->device);
  r.mem = slot->mem;
  if (slot->imageWidth) {
    r.image = true;
    r.width = slot->imageWidth;
    r.height = slot->imageHeight;
    r.offset = 0;
    while ((size_t(1) << r.offset) < slot->imageWidth) ++r.offset;
  } else {
    r.offset = static_cast<int>(t->chunk->offset / deviceElementSize(t->dtype));
  }
  return r;
}

bool OpenCLBackend::imageTensor(const RuntimeTensor* t) const {
  if (!t || !runtime_->useImages() || t->dtype != DataType::Float32) return false;
  if (fp16_ && !runtime_->halfImages()) return false;  // fp16 storage in buffers where half images fail
  size_t w = 0, h = 0;
  runtime_->imageExtent(static_cast<size_t>(layoutElements(t->shape, t->layout)), &w, &h);
  return w > 0;
}

std::string OpenCLBackend::optionsFor(const std::vector<const RuntimeTensor*>& slots) const {
  std::string options = buildOptions_;
  bool any = false;
  for (size_t k = 0; k < slots.size(); ++k) {
    if (!imageTensor(slots[k])) continue;
    options += " -DIMG" + std::to_string(k);
    any = true;
  }
  if (any) options += " -DUSE_IMAGE";
  return options;
}

std::unique_ptr<MemObj> OpenCLBackend::onAcquire(RuntimeTensor* tensor, StorageType storage) {
  size_t bytes = static_cast<size_t>(layoutElements(tensor->shape, tensor->layout)) * deviceElementSize(tensor->dtype);
  tensor->backend = this;
  if (imageTensor(tensor)) {
    // Images are not planned into the arena: each tensor takes one from the pool and gives it
    // back when its MemObj dies, so tensors with disjoint lifetimes share images.
    size_t w = 0, h = 0;
    runtime_->imageExtent(static_cast<size_t>(layoutElements(tensor->shape, tensor->layout)), &w, &h);
    const cl_channel_type type = fp16_ ? CL_HALF_FLOAT : CL_FLOAT;
    ImagePool& pool =
        storage == StorageType::DYNAMIC ? dynamicImages_ : runtime_->staticImagePool();
    cl_mem image = pool.acquire(w, h, type);
    if (!image) return nullptr;
    auto chunk = std::make_shared<PooledChunk>();
    chunk->slot = {image, w, h};
    chunk->device = &chunk->slot;
    chunk->size = bytes;
    tensor->chunk = chunk;
    if (storage == StorageType::STATIC) staticBytes_ += bytes;
    return std::make_unique<ImageMemObj>(&pool, image, w, h, type);
  }
  if (storage == StorageType::DYNAMIC) {
    tensor->chunk = planner_.acquire(bytes);
    tensor->chunk->device = &arena_;
    return std::make_unique<PlannedMemObj>(&planner_, tensor->chunk);
  }
  BufferPool& pool = storage == StorageType::STATIC ? runtime_->staticPool() : runtime_->dynamicPool();
  size_t actual = 0;
  cl_mem mem = pool.acquire(bytes, &actual);
  if (!mem) return nullptr;
  auto chunk = std::make_shared<PooledChunk>();
  chunk->slot.mem = mem;
  chunk->device = &chunk->slot;
  chunk->size = bytes;
  tensor->chunk = chunk;
  if (storage == StorageType::STATIC) staticBytes_ += bytes;
  return std::make_unique<PooledMemObj>(&pool, mem, actual);
}

void OpenCLBackend::onClearBuffer() {
  if (arena_.mem) {
    clFinish(runtime_->queue());
    runtime_->dynamicPool().release(arena_.mem, arenaCapacity_);
  }
  arena_.mem = nullptr;
  arenaCapacity_ = 0;
}

void OpenCLBackend::onResizeBegin() {
  planner_.reset();
  staticBytes_ = 0;
}

Status OpenCLBackend::onResizeEnd() {
  size_t need = planner_.plan();
  if (need > arenaCapacity_) {
    onClearBuffer();
    size_t actual = 0;
    arena_.mem = runtime_->dynamicPool().acquire(need, &actual);
    if (!arena_.mem)
      return Status::outOfMemory("OpenCL: cannot allocate the activation arena of " + std::to_string(need) +
                                 " bytes on " + runtime_->facts().name);
    arenaCapacity_ = actual;
  }
  return Status::ok();
}

void OpenCLBackend::onExecuteEnd() { clFinish(runtime_->queue()); }

Status OpenCLBackend::onWaitFinish() {
  const cl_int err = clFinish(runtime_->queue());
  return err == CL_SUCCESS ? Status::ok() : Status::internal("OpenCL: clFinish failed with error " + std::to_string(err));
}


Status OpenCLBackend::onAllocateDevice(size_t bytes, void** data, std::shared_ptr<void>* owner) {
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(runtime_->context(), CL_MEM_READ_WRITE, bytes, nullptr, &err);
  if (!mem || err != CL_SUCCESS)
    return Status::outOfMemory("OpenCL: cannot allocate a device tensor of " + std::to_string(bytes) + " bytes (error " +
                               std::to_string(err) + ")");
  *data = mem;
  *owner = std::shared_ptr<void>(mem, [](void* m) { clReleaseMemObject(static_cast<cl_mem>(m)); });
  return Status::ok();
}

std::shared_ptr<MemChunk> OpenCLBackend::onWrapDevice(void* data, size_t bytes) const {
  auto chunk = std::make_shared<PooledChunk>();
  chunk->slot.mem = static_cast<cl_mem>(data);
  chunk->slot.bound = true;
  chunk->device = &chunk->slot;
  chunk->size = bytes;
  return chunk;
}

// Host -> device: the layout changes on the host (convertLayout, the one place that knows
// layouts), then float32 narrows to half when the device stores fp16.
Status OpenCLBackend::upload(const RuntimeTensor* src, RuntimeTensor* dst) {
  const size_t hostElem = dataTypeSize(src->dtype);
  const int64_t n = layoutElements(dst->shape, dst->layout);
  const uint8_t* bytes = src->host();
  if (!bytes && n > 0) return Status::internal("OpenCL upload of '" + src->name + "': the host tensor has no memory");
  std::vector<uint8_t> staging;
  if (src->layout != dst->layout) {
    staging.resize(static_cast<size_t>(n) * hostElem);
    OSPREY_RETURN_IF_ERROR(convertLayout(bytes, src->layout, staging.data(), dst->layout, src->shape, hostElem));
    bytes = staging.data();
  }
  std::vector<uint16_t> halves;
  if (deviceElementSize(dst->dtype) != hostElem) {
    halves.resize(static_cast<size_t>(n));
    floatsToHalves(reinterpret_cast<const float*>(bytes), halves.data(), n);
    bytes = reinterpret_cast<const uint8_t*>(halves.data());
  }
  const size_t size = static_cast<size_t>(n) * deviceElementSize(dst->dtype);
  if (size == 0) return Status::ok();
  return writeDevice(dst, bytes, size);
}

namespace {
// An image holds element i at texel (i % width, i / width): `elements` of them are the full
// rows, then a partial last row. Calls `part(origin, region, firstElement)` for each piece.
template <class F>
cl_int forImageParts(const DeviceRef& r, size_t elements, F part) {
  const size_t rows = elements / r.width, rest = elements % r.width;
  if (rows) {
    size_t origin[3] = {0, 0, 0}, region[3] = {r.width, rows, 1};
    if (cl_int err = part(origin, region, size_t(0)); err != CL_SUCCESS) return err;
  }
  if (rest) {
    size_t origin[3] = {0, rows, 0}, region[3] = {rest, 1, 1};
    return part(origin, region, rows * r.width);
  }
  return CL_SUCCESS;
}
}  // namespace

Status OpenCLBackend::writeDevice(const RuntimeTensor* dst, const uint8_t* bytes, size_t size) {
  DeviceRef d = ref(dst);
  cl_command_queue q = runtime_->queue();
  if (!d.image)
    return clCheck(clEnqueueWriteBuffer(q, d.mem, CL_TRUE, dst->chunk->offset, size, bytes, 0, nullptr, nullptr),
                   "upload of '" + dst->name + "'");
  const size_t elem = deviceElementSize(dst->dtype);
  return clCheck(forImageParts(d, size / elem,
                               [&](const size_t* origin, const size_t* region, size_t first) {
                                 return clEnqueueWriteImage(q, d.mem, CL_TRUE, origin, region, d.width * elem, 0,
                                                            bytes + first * elem, 0, nullptr, nullptr);
                               }),
                 "upload of '" + dst->name + "' into an image");
}

Status OpenCLBackend::readDevice(const RuntimeTensor* src, uint8_t* bytes, size_t size) {
  DeviceRef s = ref(src);
  cl_command_queue q = runtime_->queue();
  if (!s.image)
    return clCheck(clEnqueueReadBuffer(q, s.mem, CL_TRUE, src->chunk->offset, size, bytes, 0, nullptr, nullptr),
                   "download of '" + src->name + "'");
  const size_t elem = deviceElementSize(src->dtype);
  return clCheck(forImageParts(s, size / elem,
                               [&](const size_t* origin, const size_t* region, size_t first) {
                                 return clEnqueueReadImage(q, s.mem, CL_TRUE, origin, region, s.width * elem, 0,
                                                           bytes + first * elem, 0, nullptr, nullptr);
                               }),
                 "download of '" + src->name + "' from an image");
}

// Same layout on both sides: buffer or image to buffer or image, on the device.
Status OpenCLBackend::copyOnDevice(const RuntimeTensor* src, RuntimeTensor* dst, size_t size) {
  DeviceRef s = ref(src), d = ref(dst);
  cl_command_queue q = runtime_->queue();
  const size_t elem = deviceElementSize(src->dtype), n = size / elem;
  const std::string what = "copy of '" + src->name + "'";
  if (!s.image && !d.image)
    return clCheck(clEnqueueCopyBuffer(q, s.mem, d.mem, src->chunk->offset, dst->chunk->offset, size, 0, nullptr,
                                       nullptr),
                   what);
  if (s.image && d.image) {
    if (s.width == d.width) {
      size_t origin[3] = {0, 0, 0}, region[3] = {s.width, std::min(s.height, d.height), 1};
      return clCheck(clEnqueueCopyImage(q, s.mem, d.mem, origin, origin, region, 0, nullptr, nullptr), what);
    }
    std::vector<uint8_t> staging(size);  // images of different widths: through the host
    OSPREY_RETURN_IF_ERROR(readDevice(src, staging.data(), size));
    return writeDevice(dst, staging.data(), size);
  }
  if (s.image)
    return clCheck(forImageParts(s, n,
                                 [&](const size_t* origin, const size_t* region, size_t first) {
                                   return clEnqueueCopyImageToBuffer(q, s.mem, d.mem, origin, region,
                                                                     dst->chunk->offset + first * elem, 0, nullptr,
                                                                     nullptr);
                                 }),
                   what);
  return clCheck(forImageParts(d, n,
                               [&](const size_t* origin, const size_t* region, size_t first) {
                                 return clEnqueueCopyBufferToImage(q, s.mem, d.mem, src->chunk->offset + first * elem,
                                                                   origin, region, 0, nullptr, nullptr);
                               }),
                 what);
}

Status OpenCLBackend::download(const RuntimeTensor* src, RuntimeTensor* dst) {
  const size_t hostElem = dataTypeSize(src->dtype);
  const int64_t n = layoutElements(src->shape, src->layout);
  const size_t devElem = deviceElementSize(src->dtype);
  std::vector<uint8_t> raw(static_cast<size_t>(n) * devElem);
  if (!raw.empty()) OSPREY_RETURN_IF_ERROR(readDevice(src, raw.data(), raw.size()));
  std::vector<uint8_t> widened;
  const uint8_t* bytes = raw.data();
  if (devElem != hostElem) {
    widened.resize(static_cast<size_t>(n) * hostElem);
    halvesToFloats(reinterpret_cast<const uint16_t*>(raw.data()), reinterpret_cast<float*>(widened.data()), n);
    bytes = widened.data();
  }
  uint8_t* out = dst->host();
  if (!out && n > 0) return Status::internal("OpenCL download of '" + src->name + "': the host tensor has no memory");
  if (n == 0) return Status::ok();
  return convertLayout(bytes, src->layout, out, dst->layout, src->shape, hostElem);
}

Status OpenCLBackend::onCopyBuffer(const RuntimeTensor* src, RuntimeTensor* dst) {
  if (src->dtype != dst->dtype || src->shape != dst->shape)
    return Status::internal("OpenCL copy between tensors of different dtype or shape: '" + src->name + "' " +
                            shapeToString(src->shape) + " -> '" + dst->name + "' " + shapeToString(dst->shape));
  const bool srcHost = isHost(src), dstHost = isHost(dst);
  // A bound device tensor holds float32; the backend's own floats are half under fp16 storage.
  auto isBound = [](const RuntimeTensor* t) {
    return t->chunk && t->chunk->device && static_cast<const DeviceSlot*>(t->chunk->device)->bound;
  };
  const bool bound = (!srcHost && isBound(src)) || (!dstHost && isBound(dst));
  if (bound && fp16_ && src->dtype == DataType::Float32)
    return Status::unsupported("OpenCL: float device tensors cannot be bound at precision low (the backend stores "
                               "half); bind host tensors, or run at normal precision");
  if (srcHost && dstHost) {
    return convertLayout(src->host(), src->layout, dst->host(), dst->layout, src->shape, dataTypeSize(src->dtype));
  }
  if (srcHost) return upload(src, dst);
  if (dstHost) return download(src, dst);
  if (src->layout == dst->layout) {
    size_t size = static_cast<size_t>(layoutElements(src->shape, src->layout)) * deviceElementSize(src->dtype);
    if (size == 0) return Status::ok();
    return copyOnDevice(src, dst, size);
  }
  // Device to device across layouts: through the host, where layout conversion lives.
  RuntimeTensor host = *src;
  host.backend = nullptr;
  host.layout = dst->layout;
  host.constData = nullptr;
  std::vector<uint8_t> staging(static_cast<size_t>(layoutElements(src->shape, dst->layout)) * dataTypeSize(src->dtype));
  auto chunk = std::make_shared<MemChunk>();
  uint8_t* base = staging.data();
  chunk->base = &base;
  host.chunk = chunk;
  OSPREY_RETURN_IF_ERROR(download(src, &host));
  return upload(&host, dst);
}

std::unique_ptr<Execution> OpenCLBackend::onCreate(const std::vector<RuntimeTensor*>& inputs,
                                                   const std::vector<RuntimeTensor*>& outputs, const OpRef& op) {
  CLExecutionCreator creator = clKernelCreator(op.type);
  if (!creator) return nullptr;
  return creator(this, op, inputs, outputs);
}

}  // namespace osprey::opencl
