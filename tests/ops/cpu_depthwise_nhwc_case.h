// One case of the channels-last depthwise QLinearConv kernel tests (quantized_depthwise_nhwc.h)
// and its check: every kernel this CPU can run must equal, byte for byte, plain integer loops
// followed by qgemmRequantize; row ranges computed apart must give the same bytes, and nothing
// outside them may be written.
#pragma once
#include <cstdint>
#include <string>

namespace osprey::test {

struct NhwcCase {
  int64_t channels, inH, inW, kernelH, kernelW, stride, dilation;
  int64_t padTop, padLeft, padBottom, padRight;
  bool signedX;
  int32_t xZero;
  bool signedW;
  int32_t wZero;  // on every channel, or on two channels in three when perChannelW
  bool perChannelW, signedOut;
  int32_t yZero;
  bool extremeData, powerOfTwoScales;
  bool bigBias = false;  // |bias| up to 2^30, so that float(sum + bias) rounds
  bool clamp = false;    // a fused clamp: lo and hi inside the output type
  int32_t centredW = -1;  // >= 0: the zero point of the other channels when perChannelW (else 0)
  bool nonFiniteScales = false;  // +-inf and NaN on some channels: their bytes are hi or lo
};

// Every kernel this CPU runs on the case's seeded random bytes: the float-sum kernels, and the
// one the AVX-512 table chooses for its weights (the integer one where they are centred).
void checkNhwcCase(const NhwcCase& k, uint32_t seed);
// The case in words, for SCOPED_TRACE.
std::string describeNhwcCase(const NhwcCase& k);
// The window of k fits its padded map (else the case is not a convolution).
bool nhwcCaseFits(const NhwcCase& k);

}  // namespace osprey::test
