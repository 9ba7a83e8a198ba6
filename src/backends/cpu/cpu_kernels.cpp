// The CPU kernel registry: ops with an optimised CPU execution. Every other op runs its
// reference kernel (src/ops/), so this list only grows with speed work.
#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/matmul_nbits.h"
#include "backends/cpu/kernels/quantized_elementwise.h"
#include "backends/cpu/kernels/quantized_exec.h"

namespace osprey {

CPUExecutionCreator cpuKernelCreator(OpType type) {
  switch (type) {
    case OpType::Conv: return createConvExecution;
    case OpType::Gemm: return createGemmExecution;
    case OpType::MatMul: return createMatMulExecution;
    case OpType::MaxPool: return createMaxPoolAnyExecution;
    case OpType::AveragePool: return createAveragePoolExecution;
    case OpType::GlobalAveragePool: return createGlobalAveragePoolExecution;
    case OpType::ReduceSum:
    case OpType::ReduceMean:
    case OpType::ReduceMax:
    case OpType::ReduceMin: return createReduceExecution;
    case OpType::Sigmoid: return createSigmoidExecution;
    case OpType::Erf: return createErfExecution;
    case OpType::Softmax: return createSoftmaxExecution;
    case OpType::Gelu: return createGeluExecution;
    case OpType::Swish: return createSwishExecution;
    case OpType::Relu:
    case OpType::LeakyRelu:
    case OpType::HardSigmoid:
    case OpType::HardSwish:
    case OpType::Abs:
    case OpType::Neg:
    case OpType::Sqrt:
    case OpType::Reciprocal:
    case OpType::Floor:
    case OpType::Ceil:
    case OpType::Round:
    case OpType::Exp:
    case OpType::Tanh:
    case OpType::Elu:
    case OpType::Selu:
    case OpType::Softplus:
    case OpType::Mish: return createPointwiseExecution;
    case OpType::LayerNormalization: return createLayerNormExecution;
    case OpType::Attention: return createAttentionExecution;
    case OpType::Resize: return createResizeExecution;
    case OpType::LSTM:
    case OpType::GRU:
    case OpType::RNN: return createRecurrentExecution;
    case OpType::QuantizeLinear:
    case OpType::DynamicQuantizeLinear:
    case OpType::DequantizeLinear: return createQuantizeLinearExecution;
    case OpType::QLinearConv:
    case OpType::ConvInteger: return createQuantizedConvExecution;
    case OpType::QLinearMatMul:
    case OpType::QGemm:
    case OpType::MatMulInteger:
    case OpType::MatMulIntegerToFloat:
    case OpType::DynamicQuantizeMatMul: return createQuantizedMatMulExecution;
    case OpType::QLinearAdd:
    case OpType::QLinearMul: return createQuantizedBinaryExecution;
    case OpType::QLinearSigmoid:
    case OpType::QLinearLeakyRelu: return createQuantizedLookupExecution;
    case OpType::QLinearGlobalAveragePool: return createQuantizedGlobalPoolExecution;
    case OpType::ByteLookup: return createByteTableExecution;
    case OpType::MatMulNBits: return createMatMulNBitsExecution;
    default: return nullptr;
  }
}

}  // namespace osprey
