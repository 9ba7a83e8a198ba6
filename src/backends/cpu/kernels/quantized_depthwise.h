// Depthwise QLinearConv on channels in vector lanes, for maps of few positions: the plane-by-plane
// path (quantized_conv.cpp) pays three calls and a float plane per channel, which on a 2x2 map of
// 1152 channels costs far more than the sums. Here sixteen channels' planes are interleaved into
// [position][16] floats (x - zx), each output position sums its window's taps as whole vectors,
// and the requantised bytes go back into the planes.
// The sums are exact as on the plane path: every product and partial sum is an integer below 2^24.
#pragma once
#include <cstdint>

#include "backends/cpu/kernels/qgemm.h"

namespace osprey {

class ThreadPool;

constexpr int64_t kQDepthwiseLanes = 16;

struct QDepthwiseLanesArgs {
  int64_t inH = 0, inW = 0, outH = 0, outW = 0, kernelH = 0, kernelW = 0;
  int64_t strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1;
};

// One block of 16 channels: x holds inH * inW positions of 16 floats (x - zx), w the taps
// ([kernelH * kernelW][16] floats, w - zw), bias and scale 16 values each; y gets outH * outW
// positions of 16 bytes, each qgemmRequantize(float(int32(sum) + bias) * scale) under `stage`
// (lo, hi, zeroPoint; stored as int8 or uint8 bytes alike).
using QDepthwiseLanesKernel = void (*)(const QDepthwiseLanesArgs& args, const float* x, const float* w,
                                       const int32_t* bias, const float* scale, const QGemmOutputStage& stage,
                                       uint8_t* y);

void qdwconv_lanes16__scalar(const QDepthwiseLanesArgs& args, const float* x, const float* w, const int32_t* bias,
                             const float* scale, const QGemmOutputStage& stage, uint8_t* y);
#if defined(__x86_64__) || defined(_M_X64)
void qdwconv_lanes16__avx2(const QDepthwiseLanesArgs& args, const float* x, const float* w, const int32_t* bias,
                           const float* scale, const QGemmOutputStage& stage, uint8_t* y);
void qdwconv_lanes16__avx512f(const QDepthwiseLanesArgs& args, const float* x, const float* w, const int32_t* bias,
                              const float* scale, const QGemmOutputStage& stage, uint8_t* y);
#endif

// The kernel for the CPU table whose isa name is `isa` (CpuFunctions::isa).
QDepthwiseLanesKernel qdepthwiseLanesKernel(const char* isa);

// Whether a depthwise map of these sizes runs faster in lanes than plane by plane.
bool preferDepthwiseLanes(int64_t inPositions, int64_t outPositions, int64_t channels);

// taps [channels][taps] floats into blocks of 16 channels, [block][taps][16], zero past channels.
void packDepthwiseLanesTaps(const float* taps, int64_t channels, int64_t tapCount, float* dst);

// Bytes each thread's slot of scratch needs.
int64_t depthwiseLanesScratchBytes(const QDepthwiseLanesArgs& args);

// The whole convolution: `planes` = images * channels planes of x (int8 when signedX, else
// uint8, zero point xZero) into y's planes; lanesTaps from packDepthwiseLanesTaps; bias and scale
// per channel, each array holding channels rounded up to 16. `threads` slots of
// depthwiseLanesScratchBytes in scratch.
void runDepthwiseLanes(ThreadPool* pool, int64_t threads, QDepthwiseLanesKernel kernel, const QDepthwiseLanesArgs& args,
                       const uint8_t* x, bool signedX, int32_t xZero, int64_t images, int64_t channels,
                       const float* lanesTaps, const int32_t* bias, const float* scale, const QGemmOutputStage& stage,
                       uint8_t* y, uint8_t* scratch);

}  // namespace osprey
