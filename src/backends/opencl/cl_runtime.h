// OpenCLRuntime: the per-device resources sessions share: context, command queue, built
// programs (cached by program and build options), tuned work-group sizes, the buffer pools (dynamic and static),
// and the on-disk cache of program binaries and tuning results (makeCache / setCache).
#pragma once
#include <CL/cl.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/opencl/cl_device.h"
#include "core/backend.h"

namespace osprey::opencl {

enum class TuneLevel { None, Fast, Wide };

// Best-fit reuse of cl_mem buffers: a size-ordered free list searched with lower_bound.
class BufferPool {
 public:
  explicit BufferPool(cl_context context) : context_(context) {}
  ~BufferPool();
  cl_mem acquire(size_t bytes, size_t* actualBytes);  // null when the device is out of memory
  void release(cl_mem mem, size_t bytes);
  void clear();  // frees the free list
  size_t heldBytes() const { return held_; }

 private:
  cl_context context_;
  std::multimap<size_t, cl_mem> free_;
  size_t held_ = 0;
};

// Reuse of image2d objects by (width, height, channel type): an image returns here when the
// MemObj of its tensor is destroyed and the next tensor of the same extent takes it.
class ImagePool {
 public:
  // `clearOnFailure`: when an image cannot be made, free the pool's images and try again (only
  // where the free images are truly unused, see OpenCLBackend's pool of DYNAMIC images).
  ImagePool(cl_context context, bool clearOnFailure) : context_(context), clearOnFailure_(clearOnFailure) {}
  ~ImagePool();
  // A CL_R image of `width` x `height` texels of `channelType` (CL_FLOAT / CL_HALF_FLOAT);
  // null when it cannot be made.
  cl_mem acquire(size_t width, size_t height, cl_channel_type channelType);
  void release(cl_mem image, size_t width, size_t height, cl_channel_type channelType);
  void clear();
  size_t freeImages() const { return free_.size(); }
  int created() const { return created_; }

 private:
  struct Key {
    size_t width, height;
    cl_channel_type type;
    bool operator<(const Key& o) const {
      return width != o.width ? width < o.width : height != o.height ? height < o.height : type < o.type;
    }
  };
  cl_context context_;
  bool clearOnFailure_;
  std::multimap<Key, cl_mem> free_;
  int created_ = 0;
};

// Where float tensors live on the device (OpenCLOptions::memory); Default picks per device
// (imagesByDefault in cl_runtime.cpp).
enum class MemoryMode { Default, Buffer, Image };
// Whether MemoryMode::Default puts a device's float tensors in images.
bool imagesByDefault(const DeviceFacts& f);

// A Runtime's settings, from the OpenCLOptions of the session that creates it (docs/opencl.md).
struct RuntimeOptions {
  std::string platform, device;  // index or name substring; both empty: the first GPU, else the first device
  TuneLevel tune = TuneLevel::None;
  bool profile = false;   // a profiling queue, per-op device times
  std::string cachePath;  // program binaries and tuned work sizes
  MemoryMode memory = MemoryMode::Default;
  size_t imageMaxWidth = 0, imageMaxHeight = 0;  // narrower image limits than the device's (tests)
  bool halfMath = true;  // false: float arithmetic under fp16 storage everywhere
  static RuntimeOptions fromConfig(const OpenCLOptions& options);
};
// Whether precision Low computes in half on this device: it has cl_khr_fp16 and the options allow it.
bool halfMathOn(const DeviceFacts& f, const RuntimeOptions& options);

class OpenCLRuntime : public Runtime {
 public:
  static Status create(const RuntimeOptions& options, std::unique_ptr<OpenCLRuntime>* out);
  ~OpenCLRuntime() override;
  std::unique_ptr<Backend> onCreate(const BackendConfig& config) override;
  void onGarbageCollect(int level) override;

  const DeviceFacts& facts() const { return facts_; }
  const RuntimeOptions& options() const { return options_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  BufferPool& dynamicPool() { return *dynamicPool_; }
  BufferPool& staticPool() { return *staticPool_; }
  // Images of STATIC tensors. DYNAMIC ones come from a pool of their backend:
  // a DYNAMIC image freed while a plan is made is still written when the plan runs, so it stays
  // with that plan's backend (and no constant uploaded before the run may take it).
  ImagePool& staticImagePool() { return *staticImagePool_; }
  // True when float tensors are held in images (the mode after the per-device default).
  bool useImages() const { return useImages_; }
  // True when half (CL_HALF_FLOAT) images read and write correctly here: fp16 storage uses
  // images only then (PoCL's half images return garbage), buffers otherwise.
  bool halfImages() const { return halfImages_; }
  // True when fp16 storage also computes in half here (halfMathOn: cl_khr_fp16, not turned off).
  bool halfMath() const { return halfMathOn(facts_, options_); }
  // The image extent a tensor of `elements` gets ({0, 0} when it does not fit: a buffer then).
  void imageExtent(size_t elements, size_t* width, size_t* height) const;
  // Narrower limits than the device's (tests of the fallback to buffers); 0 keeps the device's.
  void setImageLimits(size_t maxWidth, size_t maxHeight);

  // A new kernel object from program `program` (a cl/*.cl file name) built with `options`.
  Status kernel(const std::string& program, const std::string& name, const std::string& options, cl_kernel* out);
  // Enqueues `kernel` over `global` (dims 1..3), with the tuned local size for `key`.
  Status launch(cl_kernel kernel, const std::string& key, int dims, const size_t* global);
  // With a fixed work-group size (kernels that share local memory); global rounds up to it.
  Status launchWithLocal(cl_kernel kernel, const std::string& key, int dims, const size_t* global, const size_t* local);
  void setTuneLevel(TuneLevel level) { options_.tune = level; }

  // The on-disk cache: program binaries and tuned local sizes of this device.
  std::vector<uint8_t> makeCache() const;
  Status setCache(const std::vector<uint8_t>& bytes);
  Status saveCache(const std::string& path) const;
  Status loadCache(const std::string& path);
  int programsBuilt() const { return programsBuilt_; }            // compiled from source
  int programsFromBinary() const { return programsFromBinary_; }  // loaded from the cache
  size_t tunedEntries() const { return tuned_.size(); }

 private:
  OpenCLRuntime() = default;
  Status program(const std::string& name, const std::string& options, cl_program* out);
  Status tune(cl_kernel kernel, int dims, const size_t* global, std::vector<size_t>* best);
  Status finishIfProfiling();

  RuntimeOptions options_;
  DeviceFacts facts_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::unique_ptr<BufferPool> dynamicPool_, staticPool_;
  std::unique_ptr<ImagePool> staticImagePool_;
  bool useImages_ = false, halfImages_ = false;
  size_t imageMaxWidth_ = 0, imageMaxHeight_ = 0;
  std::mutex mutex_;
  std::map<std::string, cl_program> programs_;            // key: name + '\n' + options
  std::map<std::string, std::vector<uint8_t>> binaries_;  // same key: from the disk cache
  std::map<std::string, std::vector<size_t>> tuned_;      // key: kernel key + global size
  std::set<std::string> fromFile_;                        // binaries the disk cache held
  int programsBuilt_ = 0, programsFromBinary_ = 0;
  bool cacheDirty_ = false;
};

// "what happened" text for an OpenCL error code.
std::string clErrorName(cl_int err);
inline Status clCheck(cl_int err, const std::string& what) {
  if (err == CL_SUCCESS) return Status::ok();
  return Status::internal("OpenCL: " + what + " failed: " + clErrorName(err));
}

void registerRuntime();

}  // namespace osprey::opencl
