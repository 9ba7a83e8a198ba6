// Depthwise QLinearConv (one input and one output channel per group) on channels-last bytes:
// x is [inH][inW][C], y is [outH][outW][C], so channels sit in vector lanes and one FMA per tap
// serves a whole vector of channels. Each input row a call needs is turned once into floats
// (x - zx) in the caller's scratch, in a ring of rows as tall as the window, with zero columns
// standing for the left and right padding; window rows above or below the map are left out row
// by row. The sums are exact as on the plane path: every product and partial sum is an integer
// below 2^24 (|x - zx| <= 255, |w - zw| <= 255, taps <= 258).
#pragma once
#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels/qgemm.h"

namespace osprey {

// padH and padW are the top and left padding; outH and outW imply the bottom and right. x bytes
// are int8 when signedX, else uint8, with zero point xZero.
struct QDepthwiseNhwcArgs {
  int64_t inH = 0, inW = 0, outH = 0, outW = 0, channels = 0, kernelH = 0, kernelW = 0;
  int64_t strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1;
  bool signedX = false;
  int32_t xZero = 0;
};

// The packed weights: floats w - zw in blocks of 16 channels, [channels / 16 rounded up][taps]
// [16], zero past channels. Made once per convolution.
size_t qdepthwiseNhwcPackedBytes(int64_t channels, int64_t taps);
// w is [channels][taps] bytes (int8 when signedW, else uint8); wZero holds wZeroCount zero
// points, 1 (the tensor's) or channels; packed holds qdepthwiseNhwcPackedBytes, 4-byte aligned.
void qdepthwiseNhwcPackWeights(const uint8_t* w, int64_t channels, int64_t taps, bool signedW, const int32_t* wZero,
                               int64_t wZeroCount, void* packed);

// Output rows [oh0, oh1) of one image: x and y point at the image's first byte. For each
// position and channel c, y = qgemmRequantize(float(sum + bias[c]) * scale[c], stage) as a byte
// (lo, hi, zeroPoint; int8 or uint8 alike). bias and scale hold channels rounded up to 64 values
// (padding 0 / 1.0f); scratch holds qdepthwiseNhwcScratchBytes, 64-byte aligned, one per thread.
// Writes exactly the bytes of those rows and reads no byte outside the image's inH * inW * C.
using QDepthwiseNhwcKernel = void (*)(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                                      const int32_t* bias, const float* scale, const QGemmOutputStage& stage,
                                      int64_t oh0, int64_t oh1, uint8_t* y, void* scratch);

void qdwconv_nhwc__scalar(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                          const int32_t* bias, const float* scale, const QGemmOutputStage& stage, int64_t oh0,
                          int64_t oh1, uint8_t* y, void* scratch);
#if defined(__x86_64__) || defined(_M_X64)
void qdwconv_nhwc__avx2(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                        const int32_t* bias, const float* scale, const QGemmOutputStage& stage, int64_t oh0,
                        int64_t oh1, uint8_t* y, void* scratch);
void qdwconv_nhwc__avx512f(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                           const int32_t* bias, const float* scale, const QGemmOutputStage& stage, int64_t oh0,
                           int64_t oh1, uint8_t* y, void* scratch);
#endif

// The kernel for the CPU table whose isa name is `isa` (CpuFunctions::isa).
QDepthwiseNhwcKernel qdepthwiseNhwcKernel(const char* isa);

// Bytes of scratch one call needs (any kernel, any row range).
size_t qdepthwiseNhwcScratchBytes(const QDepthwiseNhwcArgs& args);

}  // namespace osprey
