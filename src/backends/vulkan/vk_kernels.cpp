// The Vulkan kernel registry: the explicit list of ops with a Vulkan execution. Anything else
// returns null and runs on the backup (CPU) backend, with copies the pipeline inserts.
#include "backends/vulkan/vk_execution.h"

namespace osprey::vulkan {

VkExecutionCreator vkKernelCreator(OpType type) {
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
    case OpType::Max:
    case OpType::Min:
    case OpType::PRelu:
      return createBinary;
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
    case OpType::BatchNormalization:
      return createBatchNorm;
    case OpType::Raster:
      return createRaster;
    case OpType::Attention:
      return createAttention;
    case OpType::Resize:
      return createResize;
    case OpType::ConvTranspose:
      return createConvTranspose;
    case OpType::Gather:
      return createGather;
    default:
      return nullptr;
  }
}

}  // namespace osprey::vulkan
