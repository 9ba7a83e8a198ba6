// The OpenCL kernel registry: the explicit list of ops with an OpenCL execution. Anything
// else returns null and runs on the backup (CPU) backend, with copies the pipeline inserts.
#include "backends/opencl/cl_execution.h"

namespace osprey::opencl {

CLExecutionCreator clKernelCreator(OpType type) {
  switch (type) {
    case OpType::Conv:
      return createConv;
    case OpType::MaxPool:
    case OpType::AveragePool:
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
      return createPool;
    case OpType::Relu:
    case OpType::LeakyRelu:
    case OpType::Clip:
    case OpType::Sigmoid:
    case OpType::Tanh:
    case OpType::HardSigmoid:
    case OpType::HardSwish:
    case OpType::Erf:
    case OpType::Gelu:
    case OpType::Elu:
    case OpType::Exp:
    case OpType::Log:
    case OpType::Sqrt:
    case OpType::Reciprocal:
    case OpType::Neg:
    case OpType::Abs:
    case OpType::Swish:
      return createUnary;
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
    case OpType::Pow:
    case OpType::PRelu:
    case OpType::Max:
    case OpType::Min:
    case OpType::Sum:
    case OpType::Mean:
      return createBinary;
    case OpType::BatchNormalization:
      return createBatchNorm;
    case OpType::Gemm:
    case OpType::MatMul:
      return createMatMul;
    case OpType::Softmax:
    case OpType::LogSoftmax:
      return createSoftmax;
    case OpType::LayerNormalization:
      return createLayerNorm;
    case OpType::ReduceSum:
    case OpType::ReduceMean:
    case OpType::ReduceMax:
    case OpType::ReduceMin:
      return createReduce;
    case OpType::Raster:
      return createRaster;
    case OpType::Resize:
      return createResize;
    default:
      return nullptr;
  }
}

}  // namespace osprey::opencl
