// How a session is scheduled (which backend, threads, fallback) and how its backend behaves.
#pragma once
#include <cstdint>
#include <string>

#include "osprey/backend_options.h"

namespace osprey {

enum class ForwardType { CPU = 0, CUDA = 1, OpenCL = 2, Vulkan = 3 };
const char* forwardTypeName(ForwardType t);               // "cpu", "cuda", ...
bool forwardTypeFromName(const std::string& name, ForwardType* out);

struct ScheduleConfig {
  ForwardType backend = ForwardType::CPU;
  ForwardType backupBackend = ForwardType::CPU;  // takes every op the main backend declines
  int threads = 1;
  // A run that takes longer fails with an error instead of going on (0: no limit). Checked
  // between commands and at each iteration of Loop and Scan, whose trip count a model may set
  // to 2^63.
  int64_t runTimeLimitMs = 0;
};

struct BackendConfig {
  // Normal: fp32, with kernels whose rounding differs slightly from plain fp32 arithmetic (CPU
  // Winograd convolutions, CUDA convolutions on TF32 tensor cores with split operands). High:
  // without them. Low: fp16 (or bf16) storage and arithmetic where the backend has it.
  enum class Precision { Normal, High, Low };
  enum class Memory { Normal, Low };
  Precision precision = Precision::Normal;
  // Low: after each run the activation arena's pages go back to the system (the plan keeps its
  // addresses; the next run touches fresh pages), and a model file mapped by
  // LoadOptions::mapFile returns its weights' pages once they are packed.
  Memory memory = Memory::Normal;
  // At Low precision, the share of the model's convolution work, counted from its inputs, that
  // stays in fp32 (0 = none) on backends that can mix precisions. Rounding at the input end is
  // amplified by every later layer, so there it costs the most accuracy for the least time.
  float fullPrecisionStem = 0.1f;
  // The most bytes a session may plan: any one tensor, and its activation arena, weights and
  // folded constants together. A shape that needs more is refused at resize with an error
  // naming the tensor, instead of the process being killed by the system's out-of-memory
  // handling. 0 means the machine's physical memory.
  uint64_t memoryLimit = 0;
  // Plans of this many recently used input shapes are kept besides the current one (executions,
  // packed weights, memory plan), so returning to one of them plans nothing; the oldest go first,
  // and all of them while they pass memoryLimit together. 0 keeps none: each new shape plans
  // again in place.
  int planCacheSize = 4;
  // Per-backend settings (osprey/backend_options.h); a backend reads only its own.
  CpuOptions cpu;
  CudaOptions cuda;
  OpenCLOptions opencl;
  VulkanOptions vulkan;
};

}  // namespace osprey
