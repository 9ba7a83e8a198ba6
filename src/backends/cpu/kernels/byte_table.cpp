// ByteLookup on the CPU: the table's 256 bytes through the vectorised lookup (byte_lookup.h),
// in pieces over the thread pool. The result of a byte does not depend on where it lies, so the
// op runs in any layout its input and output share.
#include <algorithm>

#include "backends/cpu/kernels/byte_lookup.h"
#include "backends/cpu/kernels/cpu_functions.h"
#include "backends/cpu/kernels/quantized_elementwise.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

class ByteTableExecution : public Execution {
 public:
  explicit ByteTableExecution(CPUBackend* backend) : Execution(backend), lookup_(byteLookupKernel(cpuFunctions().isa)) {}
  bool supportsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return true;
  }
  bool favorsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return false;
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    constexpr int64_t kPiece = 16384;
    const uint8_t *x = inputs[0]->host(), *table = inputs[1]->host();
    uint8_t* y = outputs[0]->host();
    const int64_t n = inputs[0]->elements();
    ThreadPool* pool = n >= 4 * kPiece ? static_cast<CPUBackend*>(backend())->threadPool() : nullptr;
    parallelFor(pool, (n + kPiece - 1) / kPiece, [&](int64_t p0, int64_t p1) {
      const int64_t begin = p0 * kPiece, end = std::min(n, p1 * kPiece);
      lookup_(table, x + begin, end - begin, y + begin);
    });
    return Status::ok();
  }

 private:
  ByteLookupKernel lookup_;
};

}  // namespace

std::unique_ptr<Execution> createByteTableExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs) {
  if (op.type != OpType::ByteLookup || inputs.size() != 2 || outputs.size() != 1) return nullptr;
  if (!isByteType(inputs[0]) || !isByteType(inputs[1]) || inputs[1]->elements() != 256) return nullptr;
  if (outputs[0]->dtype != inputs[1]->dtype || outputs[0]->shape != inputs[0]->shape) return nullptr;
  return std::make_unique<ByteTableExecution>(backend);
}

}  // namespace osprey
