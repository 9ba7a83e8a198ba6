// Runs one node on the OpenCL backend and, for comparison, through the op's reference kernel
// (the oracle), on the same inputs. Tests skip when no OpenCL device is present.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"
#include "osprey/osprey.h"

namespace osprey::test {

// True when an OpenCL platform with a device is installed; otherwise `why` says what is missing.
bool openclAvailable(std::string* why);

#define OSPREY_REQUIRE_OPENCL()                                        \
  do {                                                                 \
    std::string why_;                                                  \
    if (!::osprey::test::openclAvailable(&why_)) GTEST_SKIP() << why_; \
  } while (0)

struct DeviceRun {
  std::vector<Tensor> outputs;
  SessionStats stats;
};

// A session of `interp` on the OpenCL backend (CPU backup) with testOpenCLOptions().
Status createOpenCLSession(const Interpreter& interp, BackendConfig::Precision precision, std::unique_ptr<Session>* out);
// Runs `node` on the OpenCL backend (CPU backup) with the given precision.
Status runOnOpenCL(Node node, const std::vector<OpInput>& inputs, int numOutputs, BackendConfig::Precision precision,
                   DeviceRun* out);
// The op's reference kernel on the same inputs (shape computation first).
Status runReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* outputs);

// How many commands ran on each backend, e.g. {"opencl:Conv": 1}.
std::string describeBackends(const SessionStats& stats);
// True when no op of the run fell back to the CPU.
bool noFallback(const SessionStats& stats);

// Runs on OpenCL in fp32 and, in fp16 storage, checks each output against the reference:
// |a - e| <= tol * max(1, |e|), tol 1e-4 for fp32 and 1e-2 for fp16; and that the op (or its
// Raster) ran on OpenCL with nothing falling back.
// Both memory modes are checked: OpenCLOptions::memory Buffer, then Image (tensors in image2d
// objects where the device supports them).
void checkAgainstReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs = 1);
// The same in the memory mode testOpenCLOptions() selects.
void checkInOneMemoryMode(const Node& node, const std::vector<OpInput>& inputs, int numOutputs = 1);

// The OpenCLOptions of the sessions runOnOpenCL makes. By default their tuningCachePath is
// OSPREY_OPENCL_CACHE from the environment (ctest sets it: PoCL compiles slowly, so the tests
// share one program cache), and OSPREY_OPENCL_PLATFORM / _DEVICE pick the device
// (bench/opencl_device.sh); the library itself reads no environment.
OpenCLOptions& testOpenCLOptions();

// Changes testOpenCLOptions() for one scope.
class ScopedOpenCLOptions {
 public:
  template <class Change>
  explicit ScopedOpenCLOptions(Change change) : saved_(testOpenCLOptions()) {
    change(testOpenCLOptions());
  }
  ~ScopedOpenCLOptions() { testOpenCLOptions() = saved_; }
  ScopedOpenCLOptions(const ScopedOpenCLOptions&) = delete;
  ScopedOpenCLOptions& operator=(const ScopedOpenCLOptions&) = delete;

 private:
  OpenCLOptions saved_;
};

}  // namespace osprey::test
