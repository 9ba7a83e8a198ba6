// The CUDA kernel registry: ops with a CUDA execution. Every other op (and any op whose creator
// declines, e.g. for an unsupported dtype) runs on the CPU backup, with copies in between.
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernels/cuda_executions.h"
#include "backends/cuda/math/math_executions.h"

namespace osprey {

CUDAExecutionCreator cudaKernelCreator(OpType type) {
  switch (type) {
    // Data movement: every op that geometry lowers runs as Raster.
    case OpType::Raster: return cuda::createRasterExecution;
    case OpType::Gather: return cuda::createGatherExecution;
    // Elementwise.
    case OpType::Relu: case OpType::Sigmoid: case OpType::Tanh: case OpType::Erf: case OpType::Gelu:
    case OpType::Exp: case OpType::Log: case OpType::Sqrt: case OpType::Reciprocal: case OpType::Neg:
    case OpType::Abs: case OpType::Sin: case OpType::Cos: case OpType::Floor: case OpType::Ceil:
    case OpType::Round: case OpType::Sign: case OpType::Softplus: case OpType::Softsign: case OpType::Mish:
    case OpType::HardSwish: case OpType::Identity: case OpType::Dropout: case OpType::LeakyRelu:
    case OpType::Elu: case OpType::Celu: case OpType::ThresholdedRelu: case OpType::Swish:
    case OpType::HardSigmoid: case OpType::Selu: case OpType::Clip:
      return cuda::createUnaryExecution;
    case OpType::Add: case OpType::Sub: case OpType::Mul: case OpType::Div: case OpType::Pow:
    case OpType::Max: case OpType::Min: case OpType::Sum: case OpType::PRelu: case OpType::Mod:
    case OpType::Equal: case OpType::Less: case OpType::Greater: case OpType::LessOrEqual:
    case OpType::GreaterOrEqual: case OpType::And: case OpType::Or: case OpType::Xor:
      return cuda::createBinaryExecution;
    case OpType::Where: return cuda::createWhereExecution;
    case OpType::Cast: return cuda::createCastExecution;
    case OpType::Not: return cuda::createNotExecution;
    // Reductions and normalisation.
    case OpType::ReduceSum: case OpType::ReduceMean: case OpType::ReduceMax: case OpType::ReduceMin:
    case OpType::ReduceProd: case OpType::ReduceSumSquare: case OpType::ReduceL1: case OpType::ReduceL2:
    case OpType::ReduceLogSum: case OpType::ReduceLogSumExp: case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
      return cuda::createReduceExecution;
    case OpType::Softmax: case OpType::LogSoftmax: return cuda::createSoftmaxExecution;
    case OpType::LayerNormalization: case OpType::RMSNormalization: return cuda::createNormalizationExecution;
    case OpType::MaxPool: case OpType::AveragePool: return cuda::createPoolExecution;
    case OpType::Resize: return cuda::createResizeExecution;
    // Math (math/): cuDNN convolution, cuBLASLt Gemm / MatMul, fused attention.
    case OpType::Conv: return cuda::createConvExecution;
    case OpType::Gemm: return cuda::createGemmExecution;
    case OpType::MatMul: return cuda::createMatMulExecution;
    case OpType::Attention: return cuda::createAttentionExecution;
    default: return nullptr;
  }
}

}  // namespace osprey
