#include "backends/opencl/cl_runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "backends/opencl/cl_programs.h"
#include "core/files.h"

namespace osprey::opencl {

BufferPool::~BufferPool() { clear(); }

cl_mem BufferPool::acquire(size_t bytes, size_t* actualBytes) {
  bytes = std::max<size_t>(bytes, 64);
  auto it = free_.lower_bound(bytes);
  // Best fit, but a block more than twice the request would waste too much: allocate instead.
  if (it != free_.end() && it->first <= bytes * 2) {
    cl_mem mem = it->second;
    *actualBytes = it->first;
    free_.erase(it);
    return mem;
  }
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  if (err != CL_SUCCESS) {
    clear();  // give the device back what the pool holds and try once more
    mem = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    if (err != CL_SUCCESS) return nullptr;
  }
  held_ += bytes;
  *actualBytes = bytes;
  return mem;
}

void BufferPool::release(cl_mem mem, size_t bytes) {
  if (mem) free_.emplace(bytes, mem);
}

void BufferPool::clear() {
  for (auto& [bytes, mem] : free_) {
    clReleaseMemObject(mem);
    held_ -= bytes;
  }
  free_.clear();
}

ImagePool::~ImagePool() { clear(); }

cl_mem ImagePool::acquire(size_t width, size_t height, cl_channel_type channelType) {
  auto it = free_.find(Key{width, height, channelType});
  if (it != free_.end()) {
    cl_mem image = it->second;
    free_.erase(it);
    return image;
  }
  cl_image_format format = {CL_R, channelType};
  cl_image_desc desc;
  std::memset(&desc, 0, sizeof(desc));
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = width;
  desc.image_height = height;
  cl_int err = CL_SUCCESS;
  cl_mem image = clCreateImage(context_, CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
  if (err != CL_SUCCESS && clearOnFailure_) {
    clear();  // give the device back the free images and try once more
    image = clCreateImage(context_, CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
  }
  if (err != CL_SUCCESS) return nullptr;
  ++created_;
  return image;
}

void ImagePool::release(cl_mem image, size_t width, size_t height, cl_channel_type channelType) {
  if (image) free_.emplace(Key{width, height, channelType}, image);
}

void ImagePool::clear() {
  for (auto& [key, image] : free_) clReleaseMemObject(image);
  free_.clear();
}

namespace {
// True when the device takes CL_R images of `type` for reading and writing.
bool supportsFormat(cl_context context, cl_channel_type type) {
  cl_uint n = 0;
  if (clGetSupportedImageFormats(context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &n) != CL_SUCCESS)
    return false;
  std::vector<cl_image_format> formats(n);
  if (n && clGetSupportedImageFormats(context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, n, formats.data(),
                                      nullptr) != CL_SUCCESS)
    return false;
  for (auto& f : formats)
    if (f.image_channel_order == CL_R && f.image_channel_data_type == type) return true;
  return false;
}

// Doubles four values of a half image through a kernel and reads them back: some drivers (PoCL) list
// CL_HALF_FLOAT images but convert wrongly in read_imagef / write_imagef.
bool halfImagesRoundTrip(cl_context context, cl_device_id device, cl_command_queue queue) {
  if (!supportsFormat(context, CL_HALF_FLOAT)) return false;
  static const char* text =
      "__constant sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;\n"
      "__kernel void probe(__read_only image2d_t a, __write_only image2d_t b) {\n"
      "  const int x = get_global_id(0);\n"
      "  write_imagef(b, (int2)(x, 0), read_imagef(a, s, (int2)(x, 0)) * 2.f);\n"
      "}\n";
  cl_image_format format = {CL_R, CL_HALF_FLOAT};
  cl_image_desc desc;
  std::memset(&desc, 0, sizeof(desc));
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = 4;
  desc.image_height = 1;
  cl_int err = CL_SUCCESS;
  cl_mem a = clCreateImage(context, CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
  cl_mem b = clCreateImage(context, CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
  cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
  cl_kernel kernel = nullptr;
  bool ok = false;
  if (a && b && program && clBuildProgram(program, 1, &device, "", nullptr, nullptr) == CL_SUCCESS)
    kernel = clCreateKernel(program, "probe", &err);
  if (kernel) {
    const uint16_t in[4] = {0x3c00, 0x3e00, 0xbc00, 0x0000};  // 1, 1.5, -1, 0
    uint16_t out[4] = {0, 0, 0, 0};
    size_t origin[3] = {0, 0, 0}, region[3] = {4, 1, 1}, global = 4;
    clSetKernelArg(kernel, 0, sizeof(cl_mem), &a);
    clSetKernelArg(kernel, 1, sizeof(cl_mem), &b);
    ok = clEnqueueWriteImage(queue, a, CL_TRUE, origin, region, 8, 0, in, 0, nullptr, nullptr) == CL_SUCCESS &&
         clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr) == CL_SUCCESS &&
         clEnqueueReadImage(queue, b, CL_TRUE, origin, region, 8, 0, out, 0, nullptr, nullptr) == CL_SUCCESS &&
         out[0] == 0x4000 && out[1] == 0x4200 && out[2] == 0xc000 && out[3] == 0;
  }
  if (kernel) clReleaseKernel(kernel);
  if (program) clReleaseProgram(program);
  if (a) clReleaseMemObject(a);
  if (b) clReleaseMemObject(b);
  return ok;
}

// Program binaries built in this process, per device identity: every session makes its own
// Runtime, and a later one on the same device starts from these instead of compiling again.
std::mutex& processBinariesMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::map<std::string, std::vector<uint8_t>>>& processBinaries() {
  static std::map<std::string, std::map<std::string, std::vector<uint8_t>>> m;
  return m;
}
std::string identityOf(const DeviceFacts& f) {
  return f.platformName + "|" + f.name + "|" + f.version + "|" + f.driverVersion;
}

// The text a program is built from: common.cl (FLOAT, LOAD/STORE, activations), then the program.
bool fullSource(const std::string& name, std::string* out) {
  const EmbeddedProgram* source = nullptr;
  std::string common;
  for (auto& e : embeddedPrograms()) {
    if (name == e.name) source = &e;
    if (std::string("common") == e.name) common = e.source + "\n";
  }
  if (!source) return false;
  *out = common + source->source;
  return true;
}

// True when a cache key (name, options, source hash) matches the program compiled in now.
bool keyIsCurrent(const std::string& key) {
  const size_t nameEnd = key.find('\n'), hashStart = key.rfind('\n');
  std::string full;
  if (nameEnd == std::string::npos || !fullSource(key.substr(0, nameEnd), &full)) return false;
  return key.substr(hashStart + 1) == std::to_string(std::hash<std::string>()(full));
}

}  // namespace

// The memory object a device gets unless OpenCLOptions::memory says otherwise. Images on GPUs,
// whose texture caches serve the 2-D reuse of convolutions (the mobile GPUs MNN targets), except
// where buffers measured faster: NVIDIA (H200, docs/opencl.md: buffers 0.83 vs images 1.09 ms
// on mobilenet_v2, 37.6 vs 40.0 ms on resnet50 at batch 32) and AMD's discrete GPUs, which, like
// NVIDIA's, cache global memory as well as textures. CPU devices (PoCL) read buffers directly.
bool imagesByDefault(const DeviceFacts& f) {
  if (!(f.type & CL_DEVICE_TYPE_GPU)) return false;
  for (const char* vendor : {"NVIDIA", "Advanced Micro Devices", "AMD"})
    if (f.vendor.find(vendor) != std::string::npos) return false;
  return true;
}

RuntimeOptions RuntimeOptions::fromConfig(const OpenCLOptions& options) {
  using T = OpenCLOptions::Tuning;
  using M = OpenCLOptions::Memory;
  RuntimeOptions o;
  o.platform = options.platform;
  o.device = options.device;
  o.tune = options.tuning == T::Wide ? TuneLevel::Wide : options.tuning == T::Fast ? TuneLevel::Fast : TuneLevel::None;
  o.profile = options.profile;
  o.cachePath = options.tuningCachePath;
  o.memory = options.memory == M::Image ? MemoryMode::Image : options.memory == M::Buffer ? MemoryMode::Buffer : MemoryMode::Default;
  o.imageMaxWidth = options.imageMaxWidth;
  o.imageMaxHeight = options.imageMaxHeight;
  o.halfMath = options.halfMath;
  return o;
}

bool halfMathOn(const DeviceFacts& f, const RuntimeOptions& options) { return f.fp16 && options.halfMath; }

Status OpenCLRuntime::create(const RuntimeOptions& options, std::unique_ptr<OpenCLRuntime>* out) {
  std::unique_ptr<OpenCLRuntime> rt(new OpenCLRuntime());
  rt->options_ = options;
  OSPREY_RETURN_IF_ERROR(selectDevice(options.platform, options.device, &rt->facts_));
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(rt->facts_.platform),
                                   0};
  rt->context_ = clCreateContext(props, 1, &rt->facts_.device, nullptr, nullptr, &err);
  OSPREY_RETURN_IF_ERROR(clCheck(err, "clCreateContext on " + rt->facts_.name));
  // Tuning times candidates with events, so it needs the profiling queue too.
  cl_command_queue_properties qp = options.profile || options.tune != TuneLevel::None ? CL_QUEUE_PROFILING_ENABLE : 0;
  rt->queue_ = clCreateCommandQueue(rt->context_, rt->facts_.device, qp, &err);
  OSPREY_RETURN_IF_ERROR(clCheck(err, "clCreateCommandQueue on " + rt->facts_.name));
  rt->dynamicPool_ = std::make_unique<BufferPool>(rt->context_);
  rt->staticPool_ = std::make_unique<BufferPool>(rt->context_);
  rt->staticImagePool_ = std::make_unique<ImagePool>(rt->context_, true);
  // Images need CL_R float images and room for a useful tensor (half ones are probed below).
  const DeviceFacts& f = rt->facts_;
  const bool imagesWork = f.imageSupport && f.image2dMaxWidth >= 1024 && f.image2dMaxHeight >= 1024 &&
                          supportsFormat(rt->context_, CL_FLOAT);
  const bool wantImages = options.memory == MemoryMode::Default ? imagesByDefault(f) : options.memory == MemoryMode::Image;
  rt->useImages_ = imagesWork && wantImages;
  if (rt->useImages_) {
    // Probed once per device and process: every session makes its own runtime.
    static std::mutex probeMutex;
    static std::map<std::string, bool> probed;
    std::lock_guard<std::mutex> lock(probeMutex);
    auto it = probed.find(identityOf(f));
    if (it == probed.end())
      it = probed.emplace(identityOf(f), halfImagesRoundTrip(rt->context_, f.device, rt->queue_)).first;
    rt->halfImages_ = it->second;
  }
  rt->setImageLimits(options.imageMaxWidth, options.imageMaxHeight);
  {
    std::lock_guard<std::mutex> lock(processBinariesMutex());
    rt->binaries_ = processBinaries()[identityOf(rt->facts_)];
  }
  if (!options.cachePath.empty()) {
    std::ifstream probe(options.cachePath, std::ios::binary);
    if (probe) {
      Status st = rt->loadCache(options.cachePath);
      (void)st;  // a stale or foreign cache is rebuilt, not an error
    }
    // Programs this process built earlier that the file lacks: write them when this runtime ends.
    for (auto& [key, binary] : rt->binaries_) rt->cacheDirty_ |= !rt->fromFile_.count(key);
  }
  *out = std::move(rt);
  return Status::ok();
}

OpenCLRuntime::~OpenCLRuntime() {
  if (cacheDirty_ && !options_.cachePath.empty()) {
    Status st = saveCache(options_.cachePath);
    (void)st;  // the cache is an optimisation: a read-only location only costs the next start
  }
  if (queue_) clFinish(queue_);
  dynamicPool_.reset();
  staticPool_.reset();
  staticImagePool_.reset();
  for (auto& [key, p] : programs_) clReleaseProgram(p);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

void OpenCLRuntime::onGarbageCollect(int level) {
  (void)level;
  dynamicPool_->clear();
  staticPool_->clear();
  staticImagePool_->clear();
}

void OpenCLRuntime::imageExtent(size_t elements, size_t* width, size_t* height) const {
  // Rows of a power of two texels (kernels index with a mask and a shift), at most 4096 and the
  // device's limit: small tensors get one short row.
  size_t rowMax = 1;
  while (rowMax * 2 <= std::min<size_t>(imageMaxWidth_, 4096)) rowMax *= 2;
  *width = *height = 0;
  if (elements == 0 || imageMaxWidth_ == 0) return;
  size_t w = 1;
  while (w < elements && w < rowMax) w *= 2;
  const size_t h = (elements + w - 1) / w;
  if (h > imageMaxHeight_ || elements > static_cast<size_t>(INT32_MAX)) return;
  *width = w;
  *height = h;
}

void OpenCLRuntime::setImageLimits(size_t maxWidth, size_t maxHeight) {
  imageMaxWidth_ = maxWidth ? std::min(maxWidth, facts_.image2dMaxWidth) : facts_.image2dMaxWidth;
  imageMaxHeight_ = maxHeight ? std::min(maxHeight, facts_.image2dMaxHeight) : facts_.image2dMaxHeight;
}

Status OpenCLRuntime::program(const std::string& name, const std::string& options, cl_program* out) {
  const std::string memoKey = name + "\n" + options;
  if (auto it = programs_.find(memoKey); it != programs_.end()) {
    *out = it->second;
    return Status::ok();
  }
  std::string full;
  if (!fullSource(name, &full)) return Status::internal("OpenCL: no embedded program '" + name + "'");
  // Cached binaries are keyed by the source too, so a changed kernel is never served stale.
  const std::string key = memoKey + "\n" + std::to_string(std::hash<std::string>()(full));
  cl_int err = CL_SUCCESS;
  cl_program p = nullptr;
  if (auto bin = binaries_.find(key); bin != binaries_.end()) {
    const unsigned char* bytes = bin->second.data();
    size_t size = bin->second.size();
    cl_int binStatus = CL_SUCCESS;
    p = clCreateProgramWithBinary(context_, 1, &facts_.device, &size, &bytes, &binStatus, &err);
    if (err == CL_SUCCESS && binStatus == CL_SUCCESS &&
        clBuildProgram(p, 1, &facts_.device, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
      ++programsFromBinary_;
      programs_[memoKey] = p;
      *out = p;
      return Status::ok();
    }
    if (p) clReleaseProgram(p);
    p = nullptr;
    binaries_.erase(bin);  // stale binary (driver update): build from source below
  }
  const char* text = full.c_str();
  size_t length = full.size();
  p = clCreateProgramWithSource(context_, 1, &text, &length, &err);
  OSPREY_RETURN_IF_ERROR(clCheck(err, "clCreateProgramWithSource(" + name + ")"));
  err = clBuildProgram(p, 1, &facts_.device, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(p, facts_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(p, facts_.device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    clReleaseProgram(p);
    return Status::internal("OpenCL: building program '" + name + "' with '" + options + "' failed: " + log);
  }
  ++programsBuilt_;
  size_t binarySize = 0;
  if (clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof(size_t), &binarySize, nullptr) == CL_SUCCESS && binarySize) {
    std::vector<uint8_t> binary(binarySize);
    unsigned char* dst = binary.data();
    if (clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(unsigned char*), &dst, nullptr) == CL_SUCCESS) {
      {
        std::lock_guard<std::mutex> lock(processBinariesMutex());
        processBinaries()[identityOf(facts_)][key] = binary;
      }
      binaries_[key] = std::move(binary);
      cacheDirty_ = true;
    }
  }
  programs_[memoKey] = p;
  *out = p;
  return Status::ok();
}

Status OpenCLRuntime::kernel(const std::string& programName, const std::string& name, const std::string& options,
                             cl_kernel* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  cl_program p = nullptr;
  OSPREY_RETURN_IF_ERROR(program(programName, options, &p));
  cl_int err = CL_SUCCESS;
  *out = clCreateKernel(p, name.c_str(), &err);
  return clCheck(err, "clCreateKernel(" + name + ")");
}

namespace {

std::string globalKey(const std::string& key, int dims, const size_t* global) {
  std::string k = key;
  for (int d = 0; d < dims; ++d) k += (d ? "x" : "@") + std::to_string(global[d]);
  return k;
}

// Candidate local sizes: powers of two whose product the device accepts. Fast keeps to the
// usual shapes (x*y up to 256, z = 1); wide also tries every z and larger x.
std::vector<std::vector<size_t>> candidates(TuneLevel level, int dims, const DeviceFacts& f) {
  std::vector<std::vector<size_t>> out;
  const size_t maxTotal = f.maxWorkGroupSize;
  const size_t cap = std::min<size_t>(maxTotal, level == TuneLevel::Wide ? 1024 : 256);
  auto within = [&](size_t v, int d) { return v <= f.maxWorkItemSizes[d]; };
  for (size_t x = 1; x <= cap; x *= 2) {
    if (dims == 1) {
      if (within(x, 0) && (level == TuneLevel::Wide || x >= 16)) out.push_back({x});
      continue;
    }
    for (size_t y = 1; x * y <= cap; y *= 2) {
      if (dims == 2) {
        if (within(x, 0) && within(y, 1)) out.push_back({x, y});
        continue;
      }
      for (size_t z = 1; x * y * z <= cap; z *= 2) {
        if (level == TuneLevel::Fast && z > 1) break;
        if (within(x, 0) && within(y, 1) && within(z, 2)) out.push_back({x, y, z});
      }
    }
  }
  return out;
}

}  // namespace

Status OpenCLRuntime::tune(cl_kernel kernel, int dims, const size_t* global, std::vector<size_t>* best) {
  size_t kernelMax = 0;
  clGetKernelWorkGroupInfo(kernel, facts_.device, CL_KERNEL_WORK_GROUP_SIZE, sizeof(size_t), &kernelMax, nullptr);
  auto timeOf = [&](const std::vector<size_t>& local, double* ns) -> bool {
    size_t padded[3];
    for (int d = 0; d < dims; ++d)
      padded[d] = local.empty() ? global[d] : (global[d] + local[d] - 1) / local[d] * local[d];
    double bestNs = 1e300;
    for (int rep = 0; rep < 2; ++rep) {
      cl_event ev = nullptr;
      if (clEnqueueNDRangeKernel(queue_, kernel, dims, nullptr, padded, local.empty() ? nullptr : local.data(), 0,
                                 nullptr, &ev) != CL_SUCCESS)
        return false;
      clWaitForEvents(1, &ev);
      cl_ulong start = 0, end = 0;
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr);
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
      clReleaseEvent(ev);
      bestNs = std::min(bestNs, static_cast<double>(end - start));
    }
    *ns = bestNs;
    return true;
  };
  double bestNs = 1e300;
  best->clear();  // empty: the driver chooses
  if (!timeOf({}, &bestNs)) return Status::internal("OpenCL: kernel launch failed while tuning");
  for (auto& local : candidates(options_.tune, dims, facts_)) {
    size_t total = 1;
    for (size_t v : local) total *= v;
    if (total > kernelMax) continue;
    bool wasteful = false;  // skip groups much larger than the work
    for (int d = 0; d < dims; ++d) wasteful |= local[d] > 1 && local[d] / 2 >= global[d];
    if (wasteful) continue;
    double ns = 0;
    if (timeOf(local, &ns) && ns < bestNs * 0.97) {
      bestNs = ns;
      *best = local;
    }
  }
  return Status::ok();
}

Status OpenCLRuntime::launch(cl_kernel kernel, const std::string& key, int dims, const size_t* global) {
  for (int d = 0; d < dims; ++d)
    if (global[d] == 0) return Status::ok();  // nothing to do
  std::vector<size_t> local;
  if (options_.tune != TuneLevel::None) {
    std::string k = globalKey(key, dims, global);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = tuned_.find(k);
    if (it == tuned_.end()) {
      std::vector<size_t> best;
      OSPREY_RETURN_IF_ERROR(tune(kernel, dims, global, &best));
      it = tuned_.emplace(k, best).first;
      cacheDirty_ = true;
    }
    local = it->second;
  }
  size_t padded[3];
  for (int d = 0; d < dims; ++d)
    padded[d] = local.empty() ? global[d] : (global[d] + local[d] - 1) / local[d] * local[d];
  OSPREY_RETURN_IF_ERROR(clCheck(clEnqueueNDRangeKernel(queue_, kernel, dims, nullptr, padded,
                                                        local.empty() ? nullptr : local.data(), 0, nullptr, nullptr),
                                 "enqueue " + key));
  return finishIfProfiling();
}

Status OpenCLRuntime::launchWithLocal(cl_kernel kernel, const std::string& key, int dims, const size_t* global,
                                      const size_t* local) {
  size_t padded[3];
  for (int d = 0; d < dims; ++d) {
    if (global[d] == 0) return Status::ok();
    padded[d] = (global[d] + local[d] - 1) / local[d] * local[d];
  }
  OSPREY_RETURN_IF_ERROR(clCheck(
      clEnqueueNDRangeKernel(queue_, kernel, dims, nullptr, padded, local, 0, nullptr, nullptr), "enqueue " + key));
  return finishIfProfiling();
}

// Per-op timing (OSPREY_OPENCL_PROFILE=1): the queue drains after every kernel, so the
// session's per-command clock measures the kernel, not the enqueue.
Status OpenCLRuntime::finishIfProfiling() {
  return options_.profile ? clCheck(clFinish(queue_), "clFinish") : Status::ok();
}

// Cache file: "OSPREYCL1\n", the device identity, then programs and tuned sizes as
// length-prefixed records. A cache of another device or driver is ignored.
namespace {
void putU64(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void putBytes(std::vector<uint8_t>& b, const void* p, size_t n) {
  putU64(b, n);
  b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}
struct Reader {
  const std::vector<uint8_t>& b;
  size_t pos = 0;
  bool ok = true;
  uint64_t u64() {
    if (pos + 8 > b.size()) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[pos + i]) << (8 * i);
    pos += 8;
    return v;
  }
  std::vector<uint8_t> bytes() {
    uint64_t n = u64();
    if (!ok || n > b.size() - pos) {
      ok = false;
      return {};
    }
    std::vector<uint8_t> v(b.begin() + pos, b.begin() + pos + n);
    pos += n;
    return v;
  }
};
constexpr char kCacheMagic[] = "OSPREYCL1\n";
}  // namespace

std::vector<uint8_t> OpenCLRuntime::makeCache() const {
  std::vector<uint8_t> b(kCacheMagic, kCacheMagic + sizeof(kCacheMagic) - 1);
  std::string identity = identityOf(facts_);
  putBytes(b, identity.data(), identity.size());
  // Binaries of kernels this build no longer has are left out, so the file does not grow.
  uint64_t current = 0;
  for (auto& [key, bin] : binaries_) current += keyIsCurrent(key);
  putU64(b, current);
  for (auto& [key, bin] : binaries_) {
    if (!keyIsCurrent(key)) continue;
    putBytes(b, key.data(), key.size());
    putBytes(b, bin.data(), bin.size());
  }
  putU64(b, tuned_.size());
  for (auto& [key, local] : tuned_) {
    putBytes(b, key.data(), key.size());
    std::vector<uint8_t> sizes;
    for (size_t v : local) putU64(sizes, v);
    putBytes(b, sizes.data(), sizes.size());
  }
  return b;
}

Status OpenCLRuntime::setCache(const std::vector<uint8_t>& bytes) {
  const size_t magic = sizeof(kCacheMagic) - 1;
  if (bytes.size() < magic || std::memcmp(bytes.data(), kCacheMagic, magic) != 0)
    return Status::invalidArgument("OpenCL cache: not an Osprey OpenCL cache");
  Reader r{bytes, magic};
  std::vector<uint8_t> id = r.bytes();
  std::string identity = identityOf(facts_);
  if (!r.ok || std::string(id.begin(), id.end()) != identity)
    return Status::invalidArgument("OpenCL cache: made for another device or driver");
  std::map<std::string, std::vector<uint8_t>> binaries;
  std::map<std::string, std::vector<size_t>> tuned;
  uint64_t n = r.u64();
  for (uint64_t i = 0; r.ok && i < n; ++i) {
    std::vector<uint8_t> key = r.bytes();
    std::vector<uint8_t> bin = r.bytes();
    binaries[std::string(key.begin(), key.end())] = std::move(bin);
  }
  n = r.u64();
  for (uint64_t i = 0; r.ok && i < n; ++i) {
    std::vector<uint8_t> key = r.bytes();
    std::vector<uint8_t> sizes = r.bytes();
    std::vector<size_t> local;
    for (size_t k = 0; k + 8 <= sizes.size(); k += 8) {
      uint64_t v = 0;
      for (int j = 0; j < 8; ++j) v |= static_cast<uint64_t>(sizes[k + j]) << (8 * j);
      local.push_back(static_cast<size_t>(v));
    }
    tuned[std::string(key.begin(), key.end())] = std::move(local);
  }
  if (!r.ok) return Status::invalidArgument("OpenCL cache: truncated");
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [k, v] : binaries) {
    fromFile_.insert(k);
    binaries_.emplace(k, std::move(v));
  }
  for (auto& [k, v] : tuned) tuned_.emplace(k, std::move(v));
  return Status::ok();
}

Status OpenCLRuntime::saveCache(const std::string& path) const {
  return writeFileAtomically(path, makeCache()).withContext("OpenCL cache");
}

Status OpenCLRuntime::loadCache(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::invalidArgument("OpenCL cache: cannot read '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return setCache(bytes);
}

std::string clErrorName(cl_int err) {
  switch (err) {
    case CL_DEVICE_NOT_FOUND:
      return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE:
      return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
      return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
      return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:
      return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
      return "CL_INVALID_VALUE";
    case CL_INVALID_MEM_OBJECT:
      return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_KERNEL_ARGS:
      return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_INDEX:
      return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE:
      return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE:
      return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_GROUP_SIZE:
      return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE:
      return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE:
      return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BUFFER_SIZE:
      return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_NAME:
      return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_BUILD_OPTIONS:
      return "CL_INVALID_BUILD_OPTIONS";
    default:
      return "OpenCL error " + std::to_string(err);
  }
}

}  // namespace osprey::opencl
