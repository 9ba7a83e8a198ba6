// How a session is scheduled (which backend, threads, fallback) and how its backend behaves.
#pragma once
#include <cstdint>
#include <string>

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
  enum class Precision { Normal, High, Low };
  enum class Power { Normal, High, Low };
  enum class Memory { Normal, Low };
  Precision precision = Precision::Normal;
  Power power = Power::Normal;
  Memory memory = Memory::Normal;
  // At Low precision, the share of the model's convolution work, counted from its inputs, that
  // stays in fp32 (0 = none) on backends that can mix precisions. Rounding at the input end is
  // amplified by every later layer, so there it costs the most accuracy for the least time.
  // OSPREY_FP32_STEM overrides it.
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
};

}  // namespace osprey
