// The CPU function table: the few hot loops that have one version per instruction set, chosen
// once at start-up for the CPU found (MNN's core-function pattern). Executions call through it
// and never name an ISA themselves, so one binary runs on any x86-64.
#pragma once
#include <cstdint>
#include <limits>

#include "backends/cpu/kernels/qgemm.h"

namespace osprey {

// The largest register block of any f32 GEMM micro-kernel (rows of A by columns of B); each
// table says its own (gemmMr x gemmNr), and packed operands follow the table that packed them.
constexpr int64_t kGemmMaxMr = 8;
constexpr int64_t kGemmMaxNr = 32;

// The output stage a micro-kernel can apply to a finished block itself: + rowBias[i] (when
// not null), + residual[i * residualStride + j] (when not null: Conv's Z, read while the block
// is in registers), then clamped to [lo, hi] (Relu, Clip, or +-infinity for none).
struct GemmOutputStage {
  const float* rowBias = nullptr;
  const float* columnBias = nullptr;  // read only by the kernels that store C transposed (gemmPlanes)
  const float* residual = nullptr;
  int64_t residualStride = 0;
  float lo = 0.f, hi = 0.f;
};

// C[mr x nr] (row stride ldc) = stage((accumulate ? C : 0) + A[mr x kc] * B[kc x nr]) for the
// table's block mr x nr, where stage is the identity when `stage` is null. A's element (i, k) is
// at a[i * aRowStride + k * aColStride]; B's row k is the nr contiguous floats at b + k * ldb.
// No tails: callers stage partial blocks into full ones.
using GemmMicroKernel = void (*)(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                                 int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage);

// C[rows x nr] (nr: the table's gemmNr) stored transposed, element (r, col) at c[col * ldc + r],
// = stage(sum over taps t < taps and ch < channels of a[offsets[t] + ch * channelStride + r] *
// b[(t * channels + ch) * nr + col]), the stage's bias per column: a convolution's window as
// shifted views of its input rows (implicit GEMM), no im2col copy, all of K in one call.
using GemmTapsKernel = void (*)(int64_t taps, const int64_t* offsets, int64_t channels, const float* a,
                                int64_t channelStride, const float* b, float* c, int64_t ldc,
                                const GemmOutputStage* stage);

// out[j] = sum over k < K of a[k * aStride] * panel[k * nr + j], for j < nr: one row of A
// against one packed B panel (nr a multiple of 8), for products with too few rows to fill a
// micro-kernel block.
using GemvPanelKernel = void (*)(int64_t K, const float* a, int64_t aStride, const float* panel, int64_t nr,
                                 float* out);

// One channel plane of a 2-D depthwise convolution; residual (outH x outW, optional: Conv's Z)
// is added before reluMin clamps to [clipLo, clipHi] (Relu and Clip fused); other activations
// are applied by the caller.
struct DepthwiseArgs {
  int64_t inH = 0, inW = 0, outH = 0, outW = 0, kernelH = 0, kernelW = 0;
  int64_t strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1;
  bool reluMin = false;
  float clipLo = 0.f, clipHi = 0.f;
  const float* residual = nullptr;
};
using DepthwisePlaneKernel = void (*)(const DepthwiseArgs& args, const float* x, const float* w, float bias, float* y);
// A 3x3 depthwise plane with stride 1 whose output has the input's size, taken as one flat
// run of positions in vectors of kFlatLanes; masks[v * taps + t] holds the lanes of vector v
// whose tap t lies inside the plane (depthwiseFlatMasks). Same epilogue as DepthwisePlaneKernel.
constexpr int64_t kFlatLanes = 16;
using DepthwiseFlatKernel = void (*)(const DepthwiseArgs& args, const uint16_t* masks, const float* x, const float* w,
                                     float bias, float* y);

// One output row of a direct 2-D convolution over few input channels (a network's stem, where
// im2col would copy each input value once per tap). rows[r] (r = input channel * kernelH + kh)
// is the input row that window row r reads, inW floats, or null where it lies in the padding.
// Tap kw of output column ow reads column ow * stride + kw - padW (0 outside the row); stride
// is 1 or 2. w holds each block of kDirectConvBlock output channels as [rowCount][kernelW][block]
// (zero past outChannels). Writes y[o * outPlaneStride + ow] = bias[o] + sum (bias may be null),
// clamped to [lo, hi] as the GEMM's output stage does, for o < outChannels and ow < outW.
constexpr int64_t kDirectConvBlock = 16;
struct DirectConvRowArgs {
  int64_t rowCount = 0, inW = 0, kernelW = 0, stride = 1, padW = 0;
  int64_t outW = 0, outChannels = 0, outPlaneStride = 0;
  float lo = 0.f, hi = 0.f;
};
using DirectConvRowKernel = void (*)(const DirectConvRowArgs& args, const float* const* rows, const float* w,
                                     const float* bias, float* y);

// Sixteen channels of an output computed with positions as rows, moved into planes:
// y[c * ldy + p] = src[p * lds + c] + bias[c] + residual[c * ldy + p] (bias and residual may be
// null), clamped to [lo, hi] as the GEMM's output stage does, for c < channels (at most 16) and
// p < positions.
using TransposeToPlanesKernel = void (*)(const float* src, int64_t lds, int64_t positions, int64_t channels,
                                         const float* bias, const float* residual, float lo, float hi, float* y,
                                         int64_t ldy);

// out[ow] = max of the 3x3 window at columns 2*ow .. 2*ow+2 of rows r0..r2, for ow in [lo, hi);
// each r may be read at indices below rowLength. Same NaN rule as the reference MaxPool.
using MaxPoolRowKernel = void (*)(const float* r0, const float* r1, const float* r2, int64_t lo, int64_t hi,
                                  int64_t rowLength, float* out);

// y[i] = f(x[i]) for i < n (y may equal x).
using UnaryKernel = void (*)(const float* x, float* y, int64_t n);

// Elementwise float functions run as standalone ops and as Conv / Gemm epilogues (pointwise.h
// maps ops and fused activations to them). Parameters: LeakyRelu a = alpha; Clip a = min,
// b = max; HardSigmoid y = clamp(a x + b, 0, 1); Elu a = alpha; Selu a = alpha, b = gamma.
enum class PointwiseOp : uint8_t {
  Relu, Clip, LeakyRelu, HardSigmoid, HardSwish, Abs, Neg, Sqrt, Reciprocal, Floor, Ceil, Round,
  Exp, Tanh, Elu, Selu, Softplus, Mish
};
struct Pointwise {
  PointwiseOp op = PointwiseOp::Relu;
  float a = 0.f, b = 0.f;
};
using PointwiseKernel = void (*)(const Pointwise& p, const float* x, float* y, int64_t n);

// One row of Softmax: y[i] = exp(scale * x[i] - m) / sum_j exp(scale * x[j] - m) for i < n,
// m the largest scale * x[j] (y may equal x; n >= 1).
using SoftmaxRowKernel = void (*)(const float* x, float* y, int64_t n, float scale);

// One row of LayerNormalization: y = (x - mean) / sqrt(var + epsilon) * gamma + beta over n
// values (beta may be null; y may equal x).
using LayerNormRowKernel = void (*)(const float* x, int64_t n, float epsilon, const float* gamma, const float* beta,
                                    float* y);

// Winograd F(2x2, 3x3) over one row of tiles (winograd_kernel.h): the input transform reads
// columns 2t .. 2t+3 of four rows and writes position p of tile t to v[p * posStride + t]; the
// output transform reads m likewise and writes the 2x2 outputs into two rows of one channel,
// each output + bias + the residual at the same place in z0 / z1 (null: none), clamped to
// [lo, hi] as the GEMM's output stage does.
struct WinogradOutputStage {
  float bias = 0.f;
  const float* z0 = nullptr;
  const float* z1 = nullptr;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
};
using WinogradInputKernel = void (*)(const float* const* rows, int64_t tiles, float* v, int64_t posStride);
using WinogradOutputKernel = void (*)(const float* m, int64_t posStride, int64_t tiles, float* y0, float* y1,
                                      const WinogradOutputStage& stage);
// With tiles as the GEMM's rows: one tile's 2x2 outputs of each channel c < channels from
// m[p * posStride + c], into the four output positions' rows of channels.
using WinogradOutputChannelsKernel = void (*)(const float* m, int64_t posStride, int64_t channels, float* y00,
                                              float* y01, float* y10, float* y11);

// NC8HW8 activations ([N][C/8][H][W][8], docs/cpu.md): a convolution tile of `positions` (1..6)
// output positions by `outBlocks` (1 or 2) blocks of 8 output channels, summed over `taps`
// window taps and `inBlocks` blocks of 8 input channels. Position p reads its tap t at
// x + p * positionStride + tapOffsets[t] + block * inBlockStride; the weights of tap t, input
// block b are the 8x8 floats (input lane major) at w + (tapWeights[t] * inBlocks + b) * 64, the
// second output block's at + weightBlockStride. Only the first inLanes channels of the last
// input block are read (the rest are padding, whose weights are zero). Epilogue: + bias[8 * block + lane] (bias may be
// null), + residual (laid out as y, may be null), clamped to [lo, hi]. Output position p of
// block k is at y + k * outBlockStride + 8 * p.
struct Nc8ConvArgs {
  const int64_t* tapOffsets = nullptr;
  const int64_t* tapWeights = nullptr;
  int64_t taps = 0;
  int64_t inBlocks = 0, inBlockStride = 0, positionStride = 8, inLanes = 8;
  int64_t weightBlockStride = 0, outBlockStride = 0;
  float lo = 0.f, hi = 0.f;
};
using Nc8ConvKernel = void (*)(const Nc8ConvArgs& args, int64_t positions, int64_t outBlocks, const float* x,
                               const float* w, const float* bias, const float* residual, float* y);

// A depthwise convolution on a block of channels held in vector lanes, position by position: 8
// per position in NC8HW8, 16 in the AVX-512 rows kernel below. The input plane is inH x inW
// positions; rows and columns outside it (padding) read as zero.
struct BlockedDepthwiseArgs {
  int64_t inH = 0, inW = 0, outW = 0, kernelH = 0, kernelW = 0;
  int64_t strideH = 1, strideW = 1, padH = 0, padW = 0, dilationH = 1, dilationW = 1;
  float lo = 0.f, hi = 0.f;
};
// One output row `oh` of an NC8HW8 depthwise convolution for one block of 8 channels: x is the
// block's input plane (inH x inW x 8), w its taps ([kernelH * kernelW][8]), bias 8 floats;
// residual (a row laid out as y, optional) is added before clamping to [lo, hi].
using Nc8DepthwiseRowKernel = void (*)(const BlockedDepthwiseArgs& args, int64_t oh, const float* x, const float* w,
                                       const float* bias, const float* residual, float* y);
// Output rows [oh0, oh1) of a depthwise convolution on 16 channels in lanes: x holds the input
// plane (inH x inW x 16, unpadded), w the taps ([kernelH * kernelW][16]), bias 16 floats; y gets
// the rows one after another (outW x 16 each), clamped to [lo, hi]. Square 3x3 and 5x5 windows,
// stride 1 or 2 in both directions, no dilation.
using Nc16DepthwiseRowsKernel = void (*)(const BlockedDepthwiseArgs& args, int64_t oh0, int64_t oh1, const float* x,
                                         const float* w, const float* bias, float* y);
// Positions [0, count) of up to 16 planes into lanes: dst[16 * p + c] = planes[c * planeStride + p]
// (0 for c >= channels). transposeToPlanes takes them back.
using Nc16InterleaveKernel = void (*)(const float* planes, int64_t planeStride, int64_t channels, int64_t count,
                                      float* dst);
// Calls tap(xOffset, wOffset) for each tap of the window at input corner (ih0, iw0) that lies
// inside the input: the float offsets of its 8 channels in the packed input plane and in the
// packed weights. The window walk of every depthwise kernel where padding cuts the window.
template <class Tap>
inline void forEachNc8DepthwiseTap(const BlockedDepthwiseArgs& a, int64_t ih0, int64_t iw0, Tap&& tap) {
  for (int64_t kh = 0; kh < a.kernelH; ++kh) {
    const int64_t ih = ih0 + kh * a.dilationH;
    if (ih < 0 || ih >= a.inH) continue;
    for (int64_t kw = 0; kw < a.kernelW; ++kw) {
      const int64_t iw = iw0 + kw * a.dilationW;
      if (iw < 0 || iw >= a.inW) continue;
      tap((ih * a.inW + iw) * 8, (kh * a.kernelW + kw) * 8);
    }
  }
}

// Up to 8 planes interleaved into NC8HW8 order and back. Interleave reads `rows` rows of
// `rowLength` floats (consecutive in each plane) and writes position (r, i) of plane c to
// dst[8 * (r * dstRowStride + i) + c] (0 for c >= channels), so that a band of rows lands inside
// zero padding. Deinterleave writes planes[c * planeStride + i] = src[8 * i + c] for c < channels.
using Nc8InterleaveKernel = void (*)(const float* planes, int64_t planeStride, int64_t channels, int64_t rowLength,
                                     int64_t rows, int64_t dstRowStride, float* dst);
using Nc8DeinterleaveKernel = void (*)(const float* src, int64_t count, int64_t channels, float* planes,
                                       int64_t planeStride);

// QuantizeLinear of n floats with one scale and zero point: y = saturate(rint(x / scale) + zp),
// half to even, NaN to 0, as int8 (signedOut) or uint8. DequantizeLinear: y = (x - zp) * scale.
using QuantizeRowKernel = void (*)(const float* x, int64_t n, float scale, int32_t zp, bool signedOut, uint8_t* y);
using DequantizeRowKernel = void (*)(const uint8_t* x, int64_t n, bool signedIn, int32_t zp, float scale, float* y);

struct CpuFunctions {
  const char* isa = "scalar";
  GemmMicroKernel gemm = nullptr;
  int64_t gemmMr = 6, gemmNr = 16;
  // gemmTail[r]: the same kernel for exactly r < gemmMr rows (null: stage into a whole block).
  const GemmMicroKernel* gemmTail = nullptr;
  // The same block stored transposed, element (r, col) at c[col * ldc + r], with a bias per
  // column (stage->columnBias) and the residual laid out as C; tails for every r < gemmMr.
  // AVX2 and AVX-512 (null in the scalar table: packedGemmToPlanes is not available).
  GemmMicroKernel gemmPlanes = nullptr;
  const GemmMicroKernel* gemmPlanesTail = nullptr;
  // gemmTaps[r] for r = 1..gemmMr rows, gemmNr columns; AVX2 and AVX-512.
  const GemmTapsKernel* gemmTaps = nullptr;
  GemvPanelKernel gemvPanel = nullptr;
  DepthwisePlaneKernel depthwisePlane = nullptr;
  DepthwiseFlatKernel depthwiseFlat = nullptr;  // AVX-512 only
  // Square 3x3 or 5x5 windows, stride 2, no dilation, on a plane in place; AVX-512 only.
  DepthwisePlaneKernel depthwiseStride2 = nullptr;
  MaxPoolRowKernel maxPool3x3s2 = nullptr;
  DirectConvRowKernel directConvRow = nullptr;
  TransposeToPlanesKernel transposeToPlanes = nullptr;  // null: such convolutions run im2col
  UnaryKernel sigmoid = nullptr;
  UnaryKernel erf = nullptr;
  UnaryKernel exp = nullptr;
  UnaryKernel gelu = nullptr;  // erf form
  UnaryKernel swish = nullptr;  // x * sigmoid(x)
  UnaryKernel tanh = nullptr;
  PointwiseKernel pointwise = nullptr;
  SoftmaxRowKernel softmaxRow = nullptr;
  LayerNormRowKernel layerNormRow = nullptr;
  WinogradInputKernel winogradInput2x3 = nullptr;
  WinogradOutputKernel winogradOutput2x3 = nullptr;
  WinogradOutputChannelsKernel winogradOutputChannels2x3 = nullptr;
  Nc8ConvKernel nc8Conv = nullptr;
  Nc8DepthwiseRowKernel nc8DepthwiseRow = nullptr;
  Nc8InterleaveKernel nc8Interleave = nullptr;
  Nc8DeinterleaveKernel nc8Deinterleave = nullptr;
  Nc16DepthwiseRowsKernel nc16DepthwiseRows = nullptr;  // AVX-512 only
  Nc16InterleaveKernel nc16Interleave = nullptr;  // AVX-512 only
  QGemmFunctions qgemm;  // the integer GEMM (qgemm.h)
  QuantizeRowKernel quantizeRow = nullptr;
  DequantizeRowKernel dequantizeRow = nullptr;
};

// Whether the CPU has AVX-512 VNNI with BW and VL (the integer kernels' vpdpbusd forms).
bool cpuSupportsAvx512Vnni();

// The table for this CPU (AVX-512F GEMM, Sigmoid, Swish and GELU with the AVX2+FMA rest, AVX2+FMA, or scalar).
const CpuFunctions& cpuFunctions();
// The portable table, always available (tests compare it with the selected one).
const CpuFunctions& scalarCpuFunctions();

void f32_gemm_6x16__scalar(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                           int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage);
void f32_gemv_panel__scalar(int64_t K, const float* a, int64_t aStride, const float* panel, int64_t nr, float* out);
void f32_dwconv2d__scalar(const DepthwiseArgs& args, const float* x, const float* w, float bias, float* y);
void f32_winograd_input_2x3__scalar(const float* const* rows, int64_t tiles, float* v, int64_t posStride);
void f32_winograd_output_2x3__scalar(const float* m, int64_t posStride, int64_t tiles, float* y0, float* y1,
                                     const WinogradOutputStage& stage);
void f32_winograd_output_channels_2x3__scalar(const float* m, int64_t posStride, int64_t channels, float* y00,
                                              float* y01, float* y10, float* y11);
void f32_maxpool3x3s2__scalar(const float* r0, const float* r1, const float* r2, int64_t lo, int64_t hi,
                              int64_t rowLength, float* out);
void f32_direct_conv_row__scalar(const DirectConvRowArgs& args, const float* const* rows, const float* w,
                                 const float* bias, float* y);
void f32_transpose_to_planes__scalar(const float* src, int64_t lds, int64_t positions, int64_t channels,
                                     const float* bias, const float* residual, float lo, float hi, float* y, int64_t ldy);
void f32_sigmoid__scalar(const float* x, float* y, int64_t n);
void f32_erf__scalar(const float* x, float* y, int64_t n);
void f32_exp__scalar(const float* x, float* y, int64_t n);
void f32_gelu__scalar(const float* x, float* y, int64_t n);
void f32_swish__scalar(const float* x, float* y, int64_t n);
void f32_tanh__scalar(const float* x, float* y, int64_t n);
void f32_pointwise__scalar(const Pointwise& p, const float* x, float* y, int64_t n);
void f32_softmax_row__scalar(const float* x, float* y, int64_t n, float scale);
void f32_layernorm_row__scalar(const float* x, int64_t n, float epsilon, const float* gamma, const float* beta,
                               float* y);
void f32_nc8_conv_6x16__scalar(const Nc8ConvArgs& args, int64_t positions, int64_t outBlocks, const float* x,
                               const float* w, const float* bias, const float* residual, float* y);
void f32_nc8_dwconv_row__scalar(const BlockedDepthwiseArgs& args, int64_t oh, const float* x, const float* w,
                                const float* bias, const float* residual, float* y);
void f32_nc8_interleave__scalar(const float* planes, int64_t planeStride, int64_t channels, int64_t rowLength,
                                int64_t rows, int64_t dstRowStride, float* dst);
void f32_nc8_deinterleave__scalar(const float* src, int64_t count, int64_t channels, float* planes,
                                  int64_t planeStride);
void quantize_row__scalar(const float* x, int64_t n, float scale, int32_t zp, bool signedOut, uint8_t* y);
void dequantize_row__scalar(const uint8_t* x, int64_t n, bool signedIn, int32_t zp, float scale, float* y);
#if defined(__x86_64__) || defined(_M_X64)
void quantize_row__avx2(const float* x, int64_t n, float scale, int32_t zp, bool signedOut, uint8_t* y);
void dequantize_row__avx2(const uint8_t* x, int64_t n, bool signedIn, int32_t zp, float scale, float* y);
void f32_nc8_conv_6x16__avx2_fma(const Nc8ConvArgs& args, int64_t positions, int64_t outBlocks, const float* x,
                                 const float* w, const float* bias, const float* residual, float* y);
void f32_nc8_dwconv_row__avx2_fma(const BlockedDepthwiseArgs& args, int64_t oh, const float* x, const float* w,
                                  const float* bias, const float* residual, float* y);
void f32_nc8_interleave__avx2_fma(const float* planes, int64_t planeStride, int64_t channels, int64_t rowLength,
                                  int64_t rows, int64_t dstRowStride, float* dst);
void f32_nc8_deinterleave__avx2_fma(const float* src, int64_t count, int64_t channels, float* planes,
                                    int64_t planeStride);
// Polynomial exp (relative error about 2e-7) and erf (absolute error about 2e-7).
void f32_maxpool3x3s2__avx2_fma(const float* r0, const float* r1, const float* r2, int64_t lo, int64_t hi,
                                int64_t rowLength, float* out);
void f32_sigmoid__avx2_fma(const float* x, float* y, int64_t n);
void f32_erf__avx2_fma(const float* x, float* y, int64_t n);
void f32_exp__avx2_fma(const float* x, float* y, int64_t n);
void f32_gelu__avx2_fma(const float* x, float* y, int64_t n);
void f32_swish__avx2_fma(const float* x, float* y, int64_t n);
void f32_tanh__avx2_fma(const float* x, float* y, int64_t n);
void f32_pointwise__avx2_fma(const Pointwise& p, const float* x, float* y, int64_t n);
void f32_softmax_row__avx2_fma(const float* x, float* y, int64_t n, float scale);
void f32_layernorm_row__avx2_fma(const float* x, int64_t n, float epsilon, const float* gamma, const float* beta,
                                 float* y);
void f32_gemv_panel__avx2_fma(int64_t K, const float* a, int64_t aStride, const float* panel, int64_t nr,
                              float* out);
// 3x3 / 5x5, stride 1 or 2, dilation 1, planes of up to 48 KiB padded; false for any other.
bool f32_dwconv2d_padded__avx2_fma(const DepthwiseArgs& args, const float* x, const float* w, float bias, float* y);
void f32_dwconv2d__avx2_fma(const DepthwiseArgs& args, const float* x, const float* w, float bias, float* y);
void f32_winograd_input_2x3__avx2_fma(const float* const* rows, int64_t tiles, float* v, int64_t posStride);
void f32_winograd_output_2x3__avx2_fma(const float* m, int64_t posStride, int64_t tiles, float* y0, float* y1,
                                       const WinogradOutputStage& stage);
void f32_winograd_output_channels_2x3__avx2_fma(const float* m, int64_t posStride, int64_t channels, float* y00,
                                                float* y01, float* y10, float* y11);
void f32_maxpool3x3s2__avx512f(const float* r0, const float* r1, const float* r2, int64_t lo, int64_t hi,
                               int64_t rowLength, float* out);
void f32_direct_conv_row__avx512f(const DirectConvRowArgs& args, const float* const* rows, const float* w,
                                  const float* bias, float* y);
void f32_transpose_to_planes__avx512f(const float* src, int64_t lds, int64_t positions, int64_t channels,
                                      const float* bias, const float* residual, float lo, float hi, float* y, int64_t ldy);
void f32_sigmoid__avx512f(const float* x, float* y, int64_t n);
void f32_tanh__avx512f(const float* x, float* y, int64_t n);
void f32_pointwise__avx512f(const Pointwise& p, const float* x, float* y, int64_t n);
void f32_dwconv3x3_flat__avx512f(const DepthwiseArgs& args, const uint16_t* masks, const float* x, const float* w,
                                 float bias, float* y);
void f32_swish__avx512f(const float* x, float* y, int64_t n);
void f32_dwconv_stride2__avx512f(const DepthwiseArgs& args, const float* x, const float* w, float bias, float* y);
void f32_gelu__avx512f(const float* x, float* y, int64_t n);
void f32_nc16_dwconv_rows__avx512f(const BlockedDepthwiseArgs& args, int64_t oh0, int64_t oh1, const float* x,
                                   const float* w, const float* bias, float* y);
void f32_nc16_interleave__avx512f(const float* planes, int64_t planeStride, int64_t channels, int64_t count,
                                  float* dst);
extern const GemmMicroKernel kAvx512TailKernels[8];  // rows 1..7 of f32_gemm_8x32__avx512f
void f32_gemm_8x32__avx512f(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                            int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage);
extern const GemmTapsKernel kAvx512TapsKernels[9];  // rows 1..8
extern const GemmMicroKernel kAvx512PlanesTailKernels[8];  // rows 1..7 of f32_gemm_8x32_planes__avx512f
void f32_gemm_8x32_planes__avx512f(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride,
                                   const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                   const GemmOutputStage* stage);
// Defined in kernels_avx2.cpp, compiled with -mavx2 -mfma; only called after a CPU check.
void f32_gemm_6x16__avx2_fma(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                             int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage);
extern const GemmMicroKernel kAvx2TailKernels[6];  // rows 1..5 of f32_gemm_6x16__avx2_fma
extern const GemmMicroKernel kAvx2PlanesTailKernels[6];  // rows 1..5 of f32_gemm_6x16_planes__avx2_fma
extern const GemmTapsKernel kAvx2TapsKernels[7];  // rows 1..6
void f32_gemm_6x16_planes__avx2_fma(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride,
                                    const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                                    const GemmOutputStage* stage);
void f32_direct_conv_row__avx2_fma(const DirectConvRowArgs& args, const float* const* rows, const float* w,
                                   const float* bias, float* y);
void f32_transpose_to_planes__avx2_fma(const float* src, int64_t lds, int64_t positions, int64_t channels,
                                       const float* bias, const float* residual, float lo, float hi, float* y,
                                       int64_t ldy);
#endif

}  // namespace osprey
