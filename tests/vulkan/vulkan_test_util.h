// Runs one node on the Vulkan backend and, for comparison, through the op's reference kernel
// (the oracle), on the same inputs. Tests skip when no Vulkan device is present.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "../ops/op_test_util.h"
#include "osprey/osprey.h"

namespace osprey::test {

// True when the Vulkan backend is compiled in and a device is installed; otherwise `why` says
// what is missing.
bool vulkanAvailable(std::string* why);

#define OSPREY_REQUIRE_VULKAN()                                        \
  do {                                                                 \
    std::string why_;                                                  \
    if (!::osprey::test::vulkanAvailable(&why_)) GTEST_SKIP() << why_; \
  } while (0)

// The VulkanOptions of the test sessions: OSPREY_VULKAN_DEVICE from the environment picks the
// device (the library itself reads no environment).
VulkanOptions testVulkanOptions();

// A Vulkan session at `precision`. At Low, `fullPrecisionStem` is BackendConfig's share of the
// convolution work kept in fp32 (0: every float tensor in fp16, as the per-kernel tests want), and
// `halfMath` is VulkanOptions::halfMath (fp16 multiplies where the device has shaderFloat16),
// `mappedWeights` VulkanOptions::mappedWeights.
Status createVulkanSession(const Interpreter& interp, std::unique_ptr<Session>* out,
                           BackendConfig::Precision precision = BackendConfig::Precision::Normal,
                           float fullPrecisionStem = 0.f, bool halfMath = true, bool mappedWeights = true);

// True when the test device stores float tensors in fp16 at Precision::Low (16-bit storage);
// elsewhere Low runs in fp32.
bool vulkanHalfStorage();
// True when, besides, the device multiplies in fp16 (shaderFloat16): the _fp16a shader variants.
bool vulkanHalfMath();

// Float32 weights of shape `s` uniform within sqrt(3 / fanIn), the scale of trained layers, for
// tests of long reductions at fp16: at unit scale a reduction of 2304 sums to about 16, where
// fp16's rounding of the inputs alone passes 1e-2 absolute near zero.
Tensor trainedScaleWeights(const Shape& s, int64_t fanIn, uint32_t seed);

// The relative tolerance of results at `precision`: 1e-4 in fp32, 1e-2 in fp16 (issue #38).
double tolerance(BackendConfig::Precision precision);

// How many commands ran on each backend, e.g. "vulkan:Conv x1, cpu:Sin x1".
std::string describeBackends(const SessionStats& stats);
// True when every op of the run ran on Vulkan.
bool noFallback(const SessionStats& stats);

// Runs `node` on Vulkan in fp32 and again at Precision::Low with fp16 storage (fp32 arithmetic)
// and checks each output against the op's reference kernel: |a - e| <= tolerance * max(1, |e|)
// (1e-4, then 1e-2), and that the op (or its Raster) ran on Vulkan, nothing on the CPU.
void checkAgainstReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs = 1);
// The same at Precision::Low with fp16 arithmetic (the _fp16a shaders; skips on devices without
// shaderFloat16). Sums of products in fp16 carry an error that grows with the products' size, so
// these tests give weights the scale of trained layers (about 1 / sqrt(fan-in)), not unit scale.
void checkHalfMathAgainstReference(const Node& node, const std::vector<OpInput>& inputs);
// The same at one precision.
void checkAgainstReferenceAt(BackendConfig::Precision precision, const Node& node, const std::vector<OpInput>& inputs,
                             int numOutputs = 1, bool halfMath = true);

}  // namespace osprey::test
