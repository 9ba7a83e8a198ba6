#include "backends/cpu/float16_cast.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/cpu_functions.h"
#include "core/dtype.h"
#include "core/thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define OSPREY_F16C 1
#endif

namespace osprey {

namespace {

constexpr int64_t kChunk = 8192;  // elements per task: large enough to hide the pool's wake-up

#ifdef OSPREY_F16C
// Compiled for F16C here rather than in a kernels/*_avx2.cpp file, and taken only where the CPU
// function table is AVX2's or wider (every such x86 CPU has F16C), so that the process-wide ISA
// limit (setCpuIsaLimit "scalar") holds for these too.
__attribute__((target("avx,f16c"))) void halvesToFloatsF16c(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = halfToFloat(x[i]);
}

__attribute__((target("avx,f16c"))) void floatsToHalvesF16c(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = floatToHalf(x[i]);
}

// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports knows no "f16c").
bool cpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}

bool useF16c() {
  static const bool use = std::strcmp(cpuFunctions().isa, "scalar") != 0 && cpuHasF16c();
  return use;
}
#endif

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
        floatsToHalves(reinterpret_cast<const float*>(x) + lo, reinterpret_cast<uint16_t*>(y) + lo, count);
      else
        halvesToFloats(reinterpret_cast<const uint16_t*>(x) + lo, reinterpret_cast<float*>(y) + lo, count);
    }, kFineRangesPerThread);
    return Status::ok();
  }

 private:
  bool toHalf_;
};

}  // namespace

void halvesToFloats(const uint16_t* x, float* y, int64_t n) {
#ifdef OSPREY_F16C
  if (useF16c()) return halvesToFloatsF16c(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = halfToFloat(x[i]);
}

void floatsToHalves(const float* x, uint16_t* y, int64_t n) {
#ifdef OSPREY_F16C
  if (useF16c()) return floatsToHalvesF16c(x, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = floatToHalf(x[i]);
}

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
