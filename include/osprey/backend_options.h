// Per-backend settings of a session (BackendConfig::cpu, ::cuda, ::opencl, ::vulkan) and the process-wide
// limit on the CPU instruction set. The CLI (`osprey run|bench --help`) and the Python package
// expose every field; docs/cpu.md, docs/cuda.md and docs/opencl.md say what each one does.
// Settings that belong to a backend's Runtime (thread pinning, the OpenCL device, tuning and its
// cache) are taken from the session that creates the runtime: with Interpreter::createRuntime,
// from the BackendConfig given there.
#pragma once
#include <cstddef>
#include <string>

#include "osprey/status.h"

namespace osprey {

struct CpuOptions {
  // Binding the thread pool's workers to cores. Auto binds them when the pool takes every core
  // the process may use (a woken worker then is not moved between cores), and not otherwise.
  enum class Pinning { Auto, On, Off };
  // Layout of 4-D float32 activations: NCHW, or NC8HW8 (8 channels per vector; opt-in, faster
  // on some CNNs, docs/cpu.md "NC8HW8 activations").
  enum class Layout { NCHW, NC8HW8 };
  // Layout of 4-D int8 / uint8 activations. Auto: NHWC (channels-last bytes: quantized
  // convolutions read rows of channels as their GEMM's rows, depthwise ones channels in lanes).
  enum class QuantizedLayout { Auto, NCHW, NHWC };
  Pinning pinning = Pinning::Auto;
  Layout layout = Layout::NCHW;
  QuantizedLayout quantizedLayout = QuantizedLayout::Auto;
};

struct CudaOptions {
  // What float tensors are stored in at BackendConfig::Precision::Low.
  enum class LowPrecision { Float16, BFloat16 };
  // Layout of 4-D float activations. Auto: NHWC (what tensor-core convolutions read) at
  // fp16/bf16, NCHW at fp32.
  enum class Layout { Auto, NCHW, NHWC };
  LowPrecision lowPrecision = LowPrecision::Float16;
  Layout layout = Layout::Auto;
  // Capture a run into a CUDA graph and replay it while shapes stay the same.
  bool graphs = true;
  // Time the candidate algorithms of each cuBLASLt product and cuDNN convolution shape once (at
  // the session's first resize) and keep the fastest; off: the libraries' heuristic choices.
  bool autotune = false;
  // File caching the timed choices: read when the runtime starts, written (atomically) when it
  // ends if it learned something. Empty: no cache.
  std::string tuningCachePath;
};

struct OpenCLOptions {
  // Local work-size search per (kernel, global size): None, Fast (a few candidates), Wide.
  enum class Tuning { None, Fast, Wide };
  // Where float tensors live. Auto: images on GPUs, except NVIDIA's and AMD's; buffers on CPU
  // devices.
  enum class Memory { Auto, Buffer, Image };
  // The platform and the device within it: an index ("0") or a substring of the name ("NVIDIA").
  // Empty: any; with both empty, the first GPU, else the first device.
  std::string platform;
  std::string device;
  Tuning tuning = Tuning::None;
  // File caching compiled programs and tuned work sizes: read when the runtime starts, written
  // (atomically) when it ends if it learned something. Empty: no cache.
  std::string tuningCachePath;
  Memory memory = Memory::Auto;
  // Precision::Low computes in half where the device has cl_khr_fp16; false keeps float arithmetic
  // (fp16 storage only).
  bool halfMath = true;
  // A profiling queue, drained after each kernel, so per-op times are the kernels' own.
  bool profile = false;
  // For tests of the fallback to buffers: image limits narrower than the device's (0: the device's).
  size_t imageMaxWidth = 0, imageMaxHeight = 0;
};

struct VulkanOptions {
  // The physical device: an index ("0") or a substring of its name ("llvmpipe"). Empty: the first
  // discrete or integrated GPU, else the first device.
  std::string device;
  // File caching compiled pipelines (VkPipelineCache): read when the runtime starts, written when
  // it ends. Empty: no cache.
  std::string pipelineCachePath;
  // Turn on VK_LAYER_KHRONOS_validation where it is installed (debugging; slow).
  bool validation = false;
  // At precision Low on a device with shaderFloat16: the convolution and MatMul shaders multiply
  // in fp16 (partial sums of 16 products in fp16, added into fp32 accumulators). Off: fp16
  // storage with fp32 arithmetic.
  bool halfMath = true;
  // Where the device has a large heap of device-local memory the host can map (a resizable BAR;
  // lavapipe's one memory), weights are written straight into it at resize instead of going
  // through a staging buffer and a copy. Off: always staged.
  bool mappedWeights = true;
};

// The widest CPU kernel table the process may use: Native (what the CPU has), Avx2 (AVX2+FMA at
// most), Scalar. The table is chosen once per process, at the first CPU kernel, so this is a
// process-wide setting, not a field of BackendConfig: call it before the first session runs.
// Setting a different limit after the table is chosen is an error (the table stays). The CLI
// (--cpu-isa) and the Python package (osprey.set_cpu_isa_limit) call it; both also honour
// OSPREY_CPU_ISA=avx2|scalar in the environment, as benchmark procedures use it.
enum class CpuIsa { Native, Avx2, Scalar };
Status setCpuIsaLimit(CpuIsa limit);
bool cpuIsaFromName(const std::string& name, CpuIsa* out);  // "native", "avx2", "scalar"
// The kernel table in use ("scalar", "avx2_fma", "avx512f"); chooses it if not chosen yet.
std::string cpuIsaInUse();

}  // namespace osprey
