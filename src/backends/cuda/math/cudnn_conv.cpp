#include "backends/cuda/math/cudnn_conv.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/math/epilogue.h"
#include "backends/cuda/math/math_util.h"

// The descriptor-based cuDNN API is marked deprecated in cuDNN 9 but remains the documented
// way to run a single convolution without building an operation graph.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace osprey::cuda_math {

namespace {

constexpr size_t kWorkspaceLimit = size_t(1) << 30;  // algorithms needing more are skipped

struct AlgoChoice {
  cudnnConvolutionFwdAlgo_t algo;
  cudnnMathType_t math;
};

// Chosen algorithms for the whole process, keyed by shape, dtype, layout and device: finding
// one runs every candidate, which is worth doing once per shape only.
std::mutex& cacheMutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<std::string, AlgoChoice>& algoCache() {
  static std::unordered_map<std::string, AlgoChoice> cache;
  return cache;
}

Status cudnnError(cudnnStatus_t s, const char* what) {
  return Status::internal(std::string("cuDNN ") + what + " failed: " + cudnnGetErrorString(s));
}

#define CUDNN_RETURN_IF_ERROR(call)                              \
  do {                                                           \
    cudnnStatus_t _s = (call);                                   \
    if (_s != CUDNN_STATUS_SUCCESS) return cudnnError(_s, #call); \
  } while (0)

cudnnDataType_t cudnnType(DataType t) {
  switch (t) {
    case DataType::Float16: return CUDNN_DATA_HALF;
    case DataType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

bool isGemmAlgorithm(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
}

}  // namespace

std::string ConvGeometry::key() const {
  std::string k;
  for (int64_t v : {batch, inChannels, inH, inW, outChannels, kernelH, kernelW, group, padH, padW, strideH, strideW,
                    dilationH, dilationW})
    k += std::to_string(v) + ",";
  return k;
}

CudnnConvolution::~CudnnConvolution() { destroy(); }

void CudnnConvolution::destroy() {
  if (xDesc_) cudnnDestroyTensorDescriptor(xDesc_);
  if (yDesc_) cudnnDestroyTensorDescriptor(yDesc_);
  if (biasDesc_) cudnnDestroyTensorDescriptor(biasDesc_);
  if (wDesc_) cudnnDestroyFilterDescriptor(wDesc_);
  if (convDesc_) cudnnDestroyConvolutionDescriptor(convDesc_);
  if (actDesc_) cudnnDestroyActivationDescriptor(actDesc_);
  xDesc_ = yDesc_ = biasDesc_ = nullptr;
  wDesc_ = nullptr;
  convDesc_ = nullptr;
  actDesc_ = nullptr;
}

Status CudnnConvolution::prepare(cudnnHandle_t handle, const ConvGeometry& g, DataType dtype, bool channelsLast,
                                 const FusedActivation& act, bool hasBias, bool hasResidual, bool tf32) {
  destroy();
  geometry_ = g;
  dtype_ = dtype;
  channelsLast_ = channelsLast;
  act_ = act;
  hasBias_ = hasBias;
  hasResidual_ = hasResidual;
  const cudnnDataType_t type = cudnnType(dtype);
  const cudnnTensorFormat_t format = channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&xDesc_));
  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&yDesc_));
  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&biasDesc_));
  CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&wDesc_));
  CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&convDesc_));
  CUDNN_RETURN_IF_ERROR(cudnnCreateActivationDescriptor(&actDesc_));
  CUDNN_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(xDesc_, format, type, i32(g.batch), i32(g.inChannels), i32(g.inH), i32(g.inW)));
  CUDNN_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(yDesc_, format, type, i32(g.batch), i32(g.outChannels), i32(g.outH), i32(g.outW)));
  CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(biasDesc_, format, type, 1, i32(g.outChannels), 1, 1));
  CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(wDesc_, type, format, i32(g.outChannels),
                                                   i32(g.inChannels / g.group), i32(g.kernelH), i32(g.kernelW)));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(convDesc_, i32(g.padH), i32(g.padW), i32(g.strideH),
                                                        i32(g.strideW), i32(g.dilationH), i32(g.dilationW),
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(convDesc_, i32(g.group)));
  // float keeps plain FMA math unless the caller split its operands for TF32: TF32 alone would
  // move results away from the reference kernels. Never CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
  // which may narrow float operands to fp16.
  const bool fmaOnly = dtype == DataType::Float32 && !tf32;
  const cudnnMathType_t math = fmaOnly ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(convDesc_, math));

  int device = 0;
  cudaGetDevice(&device);
  const std::string key = g.key() + std::to_string(static_cast<int>(dtype)) + (channelsLast ? "h" : "c") +
                          (tf32 ? "t" : "") + "@" + std::to_string(device);
  AlgoChoice choice{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, math};
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(cacheMutex());
    auto it = algoCache().find(key);
    if (it != algoCache().end()) {
      choice = it->second;
      cached = true;
    }
  }
  if (!cached) {
    constexpr int kCandidates = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    cudnnConvolutionFwdAlgoPerf_t perf[kCandidates];
    int returned = 0;
    cudnnStatus_t found = CUDNN_STATUS_NOT_SUPPORTED;
    // cuDNN's heuristic choice, not the fastest of a timed trial of every algorithm: the
    // trial's winners ran slower inside the model on the H200, ResNet-50 at batch 1 fp32
    // 3.1-3.6 ms against 2.05 ms, at batch 32 fp16 5.6-9.9 ms against 3.4-3.7 ms. The trial is
    // the fallback if the heuristic fails.
    found = cudnnGetConvolutionForwardAlgorithm_v7(handle, xDesc_, wDesc_, convDesc_, yDesc_, kCandidates, &returned,
                                                   perf);
    if (found != CUDNN_STATUS_SUCCESS)
      CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionForwardAlgorithm(handle, xDesc_, wDesc_, convDesc_, yDesc_, kCandidates,
                                                                 &returned, perf));
    bool picked = false;
    for (int i = 0; i < returned && !picked; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kWorkspaceLimit) continue;
      if (fmaOnly && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
      if (dtype == DataType::Float32 && perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
      // Split operands stay exact only where products of the operands themselves are summed:
      // FFT and Winograd would round their transformed values to TF32 again.
      if (tf32 && !isGemmAlgorithm(perf[i].algo)) continue;
      choice = {perf[i].algo, fmaOnly ? CUDNN_FMA_MATH : perf[i].mathType};
      picked = true;
    }
    if (!picked) return Status::unsupported("cuDNN has no forward algorithm for convolution " + g.key());
    std::lock_guard<std::mutex> lock(cacheMutex());
    algoCache()[key] = choice;
  }
  algo_ = choice.algo;
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(convDesc_, choice.math));
  CUDNN_RETURN_IF_ERROR(
      cudnnGetConvolutionForwardWorkspaceSize(handle, xDesc_, wDesc_, convDesc_, yDesc_, algo_, &workspaceBytes_));

  // cuDNN fuses bias + ReLU with any algorithm, and bias alone only with implicit precomputed GEMM;
  // the residual rides along as z (y = act(conv + z + bias)).
  using K = FusedActivation::Kind;
  fused_ = hasBias &&
           (act.kind == K::Relu || (act.kind == K::None && algo_ == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM));
  CUDNN_RETURN_IF_ERROR(cudnnSetActivationDescriptor(
      actDesc_, act.kind == K::Relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  return Status::ok();
}

Status CudnnConvolution::run(cudnnHandle_t handle, cudaStream_t stream, const void* x, const void* w,
                             const void* bias, const void* residual, void* y, void* workspace) {
  CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle, stream));
  const float one = 1.f, zero = 0.f;
  if (fused_ && bias) {
    // z is y itself (scaled by 0) without a residual.
    cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
        handle, &one, xDesc_, x, wDesc_, w, convDesc_, algo_, workspace, workspaceBytes_, residual ? &one : &zero,
        yDesc_, residual ? residual : y, biasDesc_, bias, actDesc_, yDesc_, y);
    if (s == CUDNN_STATUS_SUCCESS) return Status::ok();
    fused_ = false;  // this configuration is not fusable here: the unfused path serves from now on
  }
  CUDNN_RETURN_IF_ERROR(cudnnConvolutionForward(handle, &one, xDesc_, x, wDesc_, w, convDesc_, algo_, workspace,
                                                workspaceBytes_, &zero, yDesc_, y));
  if (!bias && !residual && act_.kind == FusedActivation::Kind::None) return Status::ok();
  ChannelGeometry cg;
  cg.batch = geometry_.batch;
  cg.channels = geometry_.outChannels;
  cg.spatial = geometry_.outH * geometry_.outW;
  cg.channelsLast = channelsLast_;
  ElementType type = ElementType::F32;
  toElementType(dtype_, &type);
  cudaError_t e = launchBiasActivation(stream, type, y, bias, residual, cg, toDeviceActivation(act_));
  if (e != cudaSuccess) return Status::internal(std::string("convolution epilogue: ") + cudaGetErrorString(e));
  return Status::ok();
}

}  // namespace osprey::cuda_math
