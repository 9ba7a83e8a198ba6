// Launchers of the CUDA kernels: plain functions on device pointers and a stream, callable from
// host C++ (executions) without CUDA headers beyond the runtime API. Float activations are in a
// storage dtype (Float32, Float16 or BFloat16); kernels compute in fp32.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "osprey/types.h"

namespace osprey::cuda {

// dst[i] = src[i] converted between Float32 / Float16 / BFloat16 (same dtype: plain copy).
cudaError_t convertFloat(const void* src, DataType srcType, void* dst, DataType dstType, int64_t n, cudaStream_t stream);
// Converts float storage types and moves [batch, channels, spatial] to [batch, spatial,
// channels] (toChannelsLast) or back.
cudaError_t convertFloatLayout(const void* src, DataType srcType, void* dst, DataType dstType, int64_t batch,
                               int64_t channels, int64_t spatial, bool toChannelsLast, cudaStream_t stream);
// Rows of `channels` elements (2 or 4 bytes) copied into rows of paddedChannels, zero-filled.
cudaError_t padChannels(const void* src, void* dst, int64_t rows, int64_t channels, int64_t paddedChannels,
                        int elementSize, cudaStream_t stream);
// Per batch item of `perBatch` floats (NCHW: C*H*W), writes 3 * perBatch: [hi | lo | hi] with
// hi = x rounded to TF32 and lo = x - hi, the operand split of an fp32-accurate TF32 convolution.
cudaError_t splitTf32(const float* src, float* dst, int64_t batch, int64_t perBatch, cudaStream_t stream);


// One Raster region with its source resolved to a device pointer (strides/offsets in elements).
struct DeviceRasterRegion {
  const void* src;
  int64_t srcOffset, dstOffset;
  int64_t srcStride[3], dstStride[3];
  int64_t size[3];
};
constexpr int kRasterRegionsPerLaunch = 32;
// Copies up to kRasterRegionsPerLaunch regions into dst (elements of elementSize bytes).
cudaError_t rasterCopy(const DeviceRasterRegion* regions, int count, void* dst, int elementSize, cudaStream_t stream);
// Fills n elements of elementSize bytes with the bit pattern `pattern`.
cudaError_t fillPattern(void* dst, int64_t n, int elementSize, uint64_t pattern, cudaStream_t stream);


// Up to this many dimensions after merging; higher ranks run on the CPU.
constexpr int kMaxRank = 8;

// An elementwise op's index space: the output shape and, per operand, its strides in
// elements (0 on broadcast dimensions).
struct BroadcastIndex {
  int rank = 0;
  int64_t shape[kMaxRank];
  int64_t stride[3][kMaxRank];
};

enum class UnaryKind {
  Relu, Sigmoid, Tanh, Erf, Gelu, GeluTanh, Exp, Log, Sqrt, Reciprocal, Neg, Abs, Clip, LeakyRelu,
  HardSigmoid, HardSwish, Elu, Softplus, Sin, Cos, Floor, Ceil, Round, Sign, Mish, Swish, Identity,
  Selu, Celu, Softsign, ThresholdedRelu
};
// dst = f(src) on float storage (computed in fp32); a, b are the op's parameters.
cudaError_t unaryFloat(UnaryKind kind, float a, float b, const void* src, void* dst, int64_t n, DataType storage,
                       cudaStream_t stream);

enum class BinaryKind { Add, Sub, Mul, Div, Pow, Max, Min, PRelu, Mod, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor };
constexpr bool isComparison(BinaryKind k) {
  return k == BinaryKind::Equal || k == BinaryKind::Less || k == BinaryKind::Greater || k == BinaryKind::LessOrEqual ||
         k == BinaryKind::GreaterOrEqual;
}
// dst = a op b with broadcasting (strides 0 and 1 of `index`). Operands are float storage,
// Int32, Int64 or Bool (And/Or/Xor); comparisons write Bool.
cudaError_t binary(BinaryKind kind, const void* a, const void* b, void* dst, DataType operandType, const BroadcastIndex& index,
                   cudaStream_t stream);
// dst = cond ? x : y with broadcasting (strides 0: cond, 1: x, 2: y); elements of elementSize bytes.
cudaError_t where(const void* cond, const void* x, const void* y, void* dst, int elementSize, const BroadcastIndex& index,
                  cudaStream_t stream);
// Elementwise dtype conversion between any two of float32/float16/bfloat16/float64, int8..int64,
// uint8..uint64 and bool (float to integer truncates toward zero, like the reference Cast).
cudaError_t cast(const void* src, DataType srcType, void* dst, DataType dstType, int64_t n, cudaStream_t stream);
cudaError_t logicalNot(const void* src, void* dst, int64_t n, cudaStream_t stream);


enum class ReduceKind { Sum, Mean, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };
// Tensor seen as [outer, n, inner]: dst[outer, inner] = reduce over n (fp32 accumulation).
cudaError_t reduceAxis(ReduceKind kind, const void* src, void* dst, int64_t outer, int64_t n, int64_t inner, DataType storage,
                       cudaStream_t stream);
// Softmax (or LogSoftmax) over the middle axis of [outer, n, inner].
cudaError_t softmax(const void* src, void* dst, int64_t outer, int64_t n, int64_t inner, bool logSoftmax, DataType storage,
                    cudaStream_t stream);
// Rows of n: y = (x - mean) / sqrt(var + eps) * scale + bias (bias may be null); scale/bias
// have n elements in the same storage dtype. rms: no mean subtraction (RMSNormalization).
cudaError_t layerNorm(const void* x, const void* scale, const void* bias, void* y, int64_t rows, int64_t n, float epsilon,
                      bool rms, DataType storage, cudaStream_t stream);

// A pooling window over (D, H, W), leading unused dims of size 1 (see ops/window.h). Planes
// are [N, C, D, H, W] in memory, or [N, D, H, W, C] with channelsLast.
struct PoolGeometry {
  int64_t planes;    // N * C
  int64_t channels;  // C
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], padBegin[3], padEnd[3];
  bool countIncludePad;
  bool channelsLast;
};
cudaError_t pool(bool isMax, const void* src, void* dst, const PoolGeometry& g, DataType storage, cudaStream_t stream);

// Gather along an axis of data seen as [outer, axisSize, inner]: dst[outer, j, inner] =
// data[outer, indices[j], inner] (negative indices count from the end; out of range gives 0).
cudaError_t gather(const void* data, const void* indices, bool indices64, void* dst, int64_t outer, int64_t axisSize,
                   int64_t inner, int64_t count, int elementSize, cudaStream_t stream);

// Resize of the two innermost axes of [planes, inH, inW] -> [planes, outH, outW], nearest or
// (bi)linear, with ONNX's coordinate transforms. scale = output / input length as the op gives
// it; resized = inLen * scale (not an integer when the scales do not divide evenly).
struct ResizeGeometry {
  int64_t planes, inH, inW, outH, outW;
  double scaleH, scaleW, resizedH, resizedW;  // double, as the reference: nearest must round alike
  int coordinate;   // 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel
  int nearestMode;  // 0 floor, 1 ceil, 2 round_prefer_floor, 3 round_prefer_ceil
  bool linear;
};
cudaError_t resize2d(const void* src, void* dst, const ResizeGeometry& g, DataType storage, cudaStream_t stream);

}  // namespace osprey::cuda
