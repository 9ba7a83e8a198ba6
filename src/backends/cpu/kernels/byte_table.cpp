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
    lookupBytes(static_cast<CPUBackend*>(backend())->threadPool(), lookup_, inputs[1]->host(), inputs[0]->host(),
                inputs[0]->elements(), outputs[0]->host());
    return Status::ok();
  }

 private:
  ByteLookupKernel lookup_;
};

}  // namespace

void lookupBytes(ThreadPool* pool, ByteLookupKernel lookup, const uint8_t* table, const uint8_t* x, int64_t n,
                 uint8_t* y) {
  constexpr int64_t kPiece = 16384;  // the vector kernels take about 2 us for it
  if (n < 4 * kPiece) pool = nullptr;
  parallelFor(pool, (n + kPiece - 1) / kPiece, [&](int64_t p0, int64_t p1) {
    const int64_t begin = p0 * kPiece, end = std::min(n, p1 * kPiece);
    lookup(table, x + begin, end - begin, y + begin);
  });
}

std::unique_ptr<Execution> createByteTableExecution(CPUBackend* backend, const OpRef& op,
                                                    const std::vector<RuntimeTensor*>& inputs,
                                                    const std::vector<RuntimeTensor*>& outputs) {
  if (op.type != OpType::ByteLookup || inputs.size() != 2 || outputs.size() != 1) return nullptr;
  if (!isByteType(inputs[0]) || !isByteType(inputs[1]) || inputs[1]->elements() != 256) return nullptr;
  if (outputs[0]->dtype != inputs[1]->dtype || outputs[0]->shape != inputs[0]->shape) return nullptr;
  return std::make_unique<ByteTableExecution>(backend);
}

}  // namespace osprey
