#include "backends/cpu/float16_cast.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/cpu_functions.h"
#include "core/half_arrays.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

constexpr int64_t kChunk = 8192;  // elements per task: large enough to hide the pool's wake-up

// F16C (core/half_arrays.h) unless the process-wide ISA limit is "scalar" (setCpuIsaLimit), so
// that the limit holds for these too.
bool vectorised() {
  static const bool allowed = std::strcmp(cpuFunctions().isa, "scalar") != 0;
  return allowed;
}

class Float16CastExecution : public Execution {
 public:
  Float16CastExecution(CPUBackend* backend, bool toHalf) : Execution(backend), toHalf_(toHalf) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const uint8_t* x = inputs[0]->host();
    uint8_t* y = outputs[0]->host();
    const int64_t n = inputs[0]->elements();
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    ThreadPool* pool = chunks > 1 ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, chunks, [&](int64_t begin, int64_t end) {
      const int64_t lo = begin * kChunk, count = std::min(n, end * kChunk) - lo;
      if (toHalf_)
        floatsToHalves(reinterpret_cast<const float*>(x) + lo, reinterpret_cast<uint16_t*>(y) + lo, count, vectorised());
      else
        halvesToFloats(reinterpret_cast<const uint16_t*>(x) + lo, reinterpret_cast<float*>(y) + lo, count, vectorised());
    }, kFineRangesPerThread);
    return Status::ok();
  }

 private:
  bool toHalf_;
};

}  // namespace

std::unique_ptr<Execution> createFloat16CastExecution(CPUBackend* backend, const OpRef& op,
                                                      const std::vector<RuntimeTensor*>& inputs,
                                                      const std::vector<RuntimeTensor*>& outputs) {
  if (op.type != OpType::Cast || inputs.size() != 1 || outputs.size() != 1 || !inputs[0] || !outputs[0])
    return nullptr;
  const DataType from = inputs[0]->dtype, to = outputs[0]->dtype;
  if (from == DataType::Float32 && to == DataType::Float16) return std::make_unique<Float16CastExecution>(backend, true);
  if (from == DataType::Float16 && to == DataType::Float32) return std::make_unique<Float16CastExecution>(backend, false);
  return nullptr;
}

}  // namespace osprey
