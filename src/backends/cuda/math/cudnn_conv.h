// A 2-D convolution through cuDNN: descriptors for one shape, the algorithm chosen once per
// (shape, dtype, layout) and cached for the process (or timed, with autotune), bias, a residual tensor and any fused
// activation applied by cudnnConvolutionBiasActivationForward where cuDNN fuses them (ReLU,
// identity; the residual as its z input) or by a small epilogue kernel otherwise. 1-D convolutions run as 2-D ones of height 1.
#pragma once
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_tuning.h"
#include "ops/activation.h"
#include "osprey/status.h"
#include "osprey/types.h"

namespace osprey::cuda_math {

struct ConvGeometry {
  int64_t batch = 1, inChannels = 1, inH = 1, inW = 1;
  int64_t outChannels = 1, kernelH = 1, kernelW = 1, group = 1;
  int64_t padH = 0, padW = 0, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t outH = 1, outW = 1;
  std::string key() const;
};

struct ConvAlgorithm {
  cudnnConvolutionFwdAlgo_t algo;
  cudnnMathType_t math;
};

class CudnnConvolution {
 public:
  CudnnConvolution() = default;
  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  // Builds descriptors and picks the algorithm. x, y and the residual are NCHW in memory with
  // KCRS filters, or with `channelsLast` NHWC with KRSC filters (the layout of the fastest
  // tensor-core kernels). dtype is Float32 (FMA math, no TF32, unless `tf32`: for operands the
  // caller split into TF32 parts), Float16 or BFloat16 (tensor cores, float accumulation).
  // With a tuning, the algorithm is the one it holds for this problem or, where it times
  // candidates, the fastest of cuDNN's first few run as run() runs them (recorded there).
  Status prepare(cudnnHandle_t handle, const ConvGeometry& g, DataType dtype, bool channelsLast,
                 const FusedActivation& act, bool hasBias, bool hasResidual = false, bool tf32 = false,
                 const cuda::TuningRequest& tuning = {});
  size_t workspaceBytes() const { return workspaceBytes_; }
  // y = act(conv(x, w) + bias + residual); bias (outChannels values of dtype) may be null, and
  // so may residual (y's shape, dtype and layout; only when prepared with hasResidual).
  Status run(cudnnHandle_t handle, cudaStream_t stream, const void* x, const void* w, const void* bias,
             const void* residual, void* y, void* workspace);

 private:
  void destroy();
  // cuDNN's algorithms for the prepared problem, in its heuristic order, that this precision allows.
  Status usableAlgorithms(cudnnHandle_t handle, bool fmaOnly, bool tf32, std::vector<ConvAlgorithm>* out) const;
  Status select(cudnnHandle_t handle, const ConvAlgorithm& choice);
  int timeCandidates(cudnnHandle_t handle, const std::vector<ConvAlgorithm>& candidates,
                     const cuda::TuningRequest& tuning);
  ConvGeometry geometry_;
  DataType dtype_ = DataType::Float32;
  bool channelsLast_ = false;
  FusedActivation act_;
  bool hasBias_ = false, hasResidual_ = false;
  bool fused_ = false;  // cudnnConvolutionBiasActivationForward applies bias and activation
  cudnnTensorDescriptor_t xDesc_ = nullptr, yDesc_ = nullptr, biasDesc_ = nullptr;
  cudnnFilterDescriptor_t wDesc_ = nullptr;
  cudnnConvolutionDescriptor_t convDesc_ = nullptr;
  cudnnActivationDescriptor_t actDesc_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspaceBytes_ = 0;
};

}  // namespace osprey::cuda_math
