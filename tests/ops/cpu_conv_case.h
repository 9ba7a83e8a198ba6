// One 2-D Conv case of the CPU kernel tests (NCHW im2col / Winograd / depthwise and the NC8HW8
// executions): the node, its seeded random inputs and its output shape.
#pragma once
#include <string>
#include <vector>

#include "op_test_util.h"
#include "ops/activation.h"

namespace osprey::test {

struct CpuConvCase {
  int64_t n, c, h, w, m, kh, kw, group, stride, pad, dilation;
  bool bias;
  FusedActivation::Kind act;
  bool residual = false;  // Conv's Z (input 3), of the output's shape
  int threads = 1;
  std::vector<int64_t> pads = {};  // top, left, bottom, right when not all `pad`
};

struct BuiltConv {
  Node node;
  std::vector<OpInput> inputs;  // x, w, then the bias and Z where the case has them
  Shape outShape;
};

// Clip runs on [0, 0.5], Swish with alpha 1 (the SiLU of EfficientNet), the other activations
// with alpha 0.1; inputs in [-1, 1], Z in [-2, 2].
BuiltConv buildConvCase(const CpuConvCase& k, uint32_t seed);
// The case in words, for SCOPED_TRACE.
std::string describeConvCase(const CpuConvCase& k);

}  // namespace osprey::test
