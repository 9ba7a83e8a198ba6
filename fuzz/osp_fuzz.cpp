// .osp bytes -> Interpreter -> Session -> one run.
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  std::shared_ptr<osprey::Interpreter> interp;
  if (osprey::Interpreter::fromBuffer(data, size, &interp)) osprey::fuzz::runWithInputsFrom(*interp, data, size);
  return 0;
}
