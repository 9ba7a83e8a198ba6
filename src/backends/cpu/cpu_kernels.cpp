// The CPU kernel registry: ops with an optimised CPU execution. Every other op runs its
// reference kernel (src/ops/), so this list only grows with speed work.
#include "backends/cpu/cpu_backend.h"

namespace osprey {

CPUExecutionCreator cpuKernelCreator(OpType type) {
  switch (type) {
    default: return nullptr;
  }
}

}  // namespace osprey
