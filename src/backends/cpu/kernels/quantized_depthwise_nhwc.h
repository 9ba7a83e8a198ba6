// Depthwise QLinearConv (one input and one output channel per group) on channels-last bytes:
// x is [inH][inW][C], y is [outH][outW][C], so channels sit in vector lanes and one FMA per tap
// serves a whole vector of channels. Each input row a call needs is turned once into floats
// (x - zx) in the caller's scratch, in a ring of rows as tall as the window, with zero columns
// standing for the left and right padding; window rows above or below the map are left out row
// by row. The sums are exact as on the plane path: every product and partial sum is an integer
// below 2^24 (|x - zx| <= 255, |w - zw| <= 255, taps <= 258).
//
// With AVX-512 VNNI and weights that are int8 values as they stand (zero point 0 once flipped),
// an integer kernel takes their place: its ring holds byte quads instead of floats, and one
// vpdpbusd per kernel row of up to four taps sums in int32 (quantized_depthwise_nhwc_quads.inl).
// Both give the same int32 sum to the same output stage, so the same bytes.
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

// The packed weights of the float-sum kernels: floats w - zw in blocks of 16 channels,
// [channels / 16 rounded up][taps][16], zero past channels. Made once per convolution.
size_t qdepthwiseNhwcPackedBytes(int64_t channels, int64_t kernelH, int64_t kernelW);
// w is [channels][kernelH * kernelW] bytes (int8 when signedW, else uint8); wZero holds
// wZeroCount zero points, 1 (the tensor's) or channels; packed holds the kernel's packed bytes,
// 4-byte aligned.
void qdepthwiseNhwcPackWeights(const uint8_t* w, int64_t channels, int64_t kernelH, int64_t kernelW, bool signedW,
                               const int32_t* wZero, int64_t wZeroCount, void* packed);
// The packed weights of the integer kernel (quantized_depthwise_nhwc_quads.inl): int8 quads and
// running sums of the kernel rows' weights. Only for centred weights (qdepthwiseNhwcCentredWeights).
size_t qdepthwiseNhwcPackedQuadBytes(int64_t channels, int64_t kernelH, int64_t kernelW);
void qdepthwiseNhwcPackQuads(const uint8_t* w, int64_t channels, int64_t kernelH, int64_t kernelW, bool signedW,
                             const int32_t* wZero, int64_t wZeroCount, void* packed);
// Whether every weight is an int8 value as it stands: int8 weights of zero point 0, or uint8 of
// 128 (flipped by 0x80), as symmetric quantisation (QDQ, TFLite) gives them.
bool qdepthwiseNhwcCentredWeights(bool signedW, const int32_t* wZero, int64_t wZeroCount);

// Output rows [oh0, oh1) of one image: x and y point at the image's first byte. For each
// position and channel c, y = qgemmRequantize(float(sum + bias[c]) * scale[c], stage) as a byte
// (lo, hi, zeroPoint; int8 or uint8 alike). bias and scale hold channels rounded up to 64 values
// (padding 0 / 1.0f); packedWeights is the kernel's own packing (QDepthwiseNhwcKernels); scratch
// holds the kernel's scratch bytes, 64-byte aligned, one per thread. Writes exactly the bytes of
// those rows and reads no byte outside the image's inH * inW * C.
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
// Integer sums: one vpdpbusd per kernel row (up to four taps) per 16 channels on byte quads,
// int32 throughout, then the same output stage. Centred weights only.
void qdwconv_nhwc_quads__avx512vnni(const QDepthwiseNhwcArgs& args, const uint8_t* x, const void* packedWeights,
                                    const int32_t* bias, const float* scale, const QGemmOutputStage& stage,
                                    int64_t oh0, int64_t oh1, uint8_t* y, void* scratch);
#endif

// Bytes of scratch one call needs (any row range): of the float-sum kernels, of the integer one.
size_t qdepthwiseNhwcScratchBytes(const QDepthwiseNhwcArgs& args);
size_t qdepthwiseNhwcQuadScratchBytes(const QDepthwiseNhwcArgs& args);

// A kernel with the packed weight format it reads and the scratch it needs.
struct QDepthwiseNhwcKernels {
  QDepthwiseNhwcKernel run = nullptr;
  void (*pack)(const uint8_t* w, int64_t channels, int64_t kernelH, int64_t kernelW, bool signedW,
               const int32_t* wZero, int64_t wZeroCount, void* packed) = nullptr;
  size_t (*packedBytes)(int64_t channels, int64_t kernelH, int64_t kernelW) = nullptr;
  size_t (*scratchBytes)(const QDepthwiseNhwcArgs& args) = nullptr;
};

// The fastest kernel for the CPU table whose isa name is `isa` (CpuFunctions::isa): the integer
// one where the table is "avx512f", the CPU has AVX-512 VNNI and the weights are centred, else
// the float-sum kernel of that ISA.
QDepthwiseNhwcKernels qdepthwiseNhwcKernels(const char* isa, bool centredWeights);

}  // namespace osprey
