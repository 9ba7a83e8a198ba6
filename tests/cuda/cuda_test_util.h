// CUDA kernel tests: one node through a CUDA session, compared with the op's reference kernel
// (run on the host). Tests skip cleanly where no CUDA device is present.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../ops/op_test_util.h"

namespace osprey {
int cudaDeviceCountOrZero();  // backends/cuda/cuda_runtime.h, without the CUDA headers
}

#define OSPREY_REQUIRE_CUDA_DEVICE() \
  if (::osprey::cudaDeviceCountOrZero() == 0) GTEST_SKIP() << "no CUDA device"

namespace osprey::test {

struct CudaRun {
  std::vector<Tensor> outputs;
  std::vector<std::string> onCpu;  // "cpu:Op" entries: commands that fell back to the CPU
  int relaidTensors = 0;           // activations the pipeline kept in the backend's layout
};
// Runs the node through a session on the CUDA backend (fp32, or fp16/bf16 storage without an
// fp32 stem when `lowPrecision`), `runs` times with the same inputs (later runs replay a CUDA graph),
// with activations in `layout`.
Status runOpOnCuda(Node node, const std::vector<OpInput>& inputs, int numOutputs, bool lowPrecision, CudaRun* out, int runs = 1,
                   CudaOptions::Layout layout = CudaOptions::Layout::Auto);

// Runs the node on the device in fp32, in fp16 storage with NHWC activations where supported,
// and in fp16 with CudaOptions::layout NCHW, and checks every output against the
// reference within tolerance·max(1, max|ref|), and that nothing fell back to the CPU.
void expectCudaMatchesReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs = 1,
                                double fp32Tolerance = 1e-4, double fp16Tolerance = 1e-2);

}  // namespace osprey::test
