#include "converter/passes/widen_float16_ops.h"

namespace osprey::passes::float16 {

namespace {

constexpr uint32_t kAll = ~0u;
constexpr uint32_t kFirst = 1u;

Half halfIf(DataType t) { return t == DataType::Float16 ? Half::Yes : Half::No; }

Half fromDtypeAttribute(const Node& node, const char* name, int64_t fallback) {
  return halfIf(static_cast<DataType>(node.getInt(name, fallback)));
}

// Output `i` of If, Loop or Scan: the output of its body that it returns, as the body declares it.
Half fromBody(const Node& node, size_t i) {
  const char* body = node.type == OpType::If ? "then_branch" : "body";
  const Attribute* a = node.attr(body);
  // Loop's body returns its condition first.
  const size_t k = node.type == OpType::Loop ? i + 1 : i;
  if (!a || !a->graph || k >= a->graph->outputs.size()) return Half::Unknown;
  const DataType t = a->graph->tensors[a->graph->outputs[k]].dtype;
  return t == DataType::Undefined ? Half::Unknown : halfIf(t);
}

}  // namespace

bool widenable(const Node& node, uint32_t* typedInputs) {
  switch (node.type) {
    // T throughout: every input of the op's float type.
    case OpType::Conv:
    case OpType::ConvTranspose:
    case OpType::Gemm:
    case OpType::MatMul:
    case OpType::Einsum:
    case OpType::Add:
    case OpType::Sub:
    case OpType::Mul:
    case OpType::Div:
    case OpType::Mod:
    case OpType::PRelu:
    case OpType::Max:
    case OpType::Min:
    case OpType::Sum:
    case OpType::Mean:
    case OpType::Clip:
    case OpType::Concat:
    case OpType::Equal:
    case OpType::Less:
    case OpType::Greater:
    case OpType::GreaterOrEqual:
    case OpType::LessOrEqual:
    case OpType::LayerNormalization:
    case OpType::GroupNormalization:
    case OpType::InstanceNormalization:
    case OpType::RMSNormalization:
      *typedInputs = kAll;
      return true;
    // Data and its indices, shapes or axes: the first input only.
    case OpType::Relu:
    case OpType::LeakyRelu:
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
    case OpType::Sin:
    case OpType::Cos:
    case OpType::Tan:
    case OpType::Asin:
    case OpType::Acos:
    case OpType::Atan:
    case OpType::Sinh:
    case OpType::Cosh:
    case OpType::Asinh:
    case OpType::Acosh:
    case OpType::Atanh:
    case OpType::Round:
    case OpType::Floor:
    case OpType::Ceil:
    case OpType::Sign:
    case OpType::IsNaN:
    case OpType::IsInf:
    case OpType::Selu:
    case OpType::Celu:
    case OpType::Softplus:
    case OpType::Softsign:
    case OpType::ThresholdedRelu:
    case OpType::Shrink:
    case OpType::Mish:
    case OpType::Swish:
    case OpType::Softmax:
    case OpType::LogSoftmax:
    case OpType::Hardmax:
    case OpType::ReduceMean:
    case OpType::ReduceSum:
    case OpType::ReduceMax:
    case OpType::ReduceMin:
    case OpType::ReduceProd:
    case OpType::ReduceL1:
    case OpType::ReduceL2:
    case OpType::ReduceLogSum:
    case OpType::ReduceLogSumExp:
    case OpType::ReduceSumSquare:
    case OpType::ArgMax:
    case OpType::ArgMin:
    case OpType::TopK:
    case OpType::CumSum:
    case OpType::MaxPool:
    case OpType::AveragePool:
    case OpType::GlobalAveragePool:
    case OpType::GlobalMaxPool:
    case OpType::LpPool:
    case OpType::GlobalLpPool:
    case OpType::LRN:
    case OpType::LpNormalization:
    case OpType::MeanVarianceNormalization:
    case OpType::Reshape:
    case OpType::Flatten:
    case OpType::Squeeze:
    case OpType::Unsqueeze:
    case OpType::Transpose:
    case OpType::Split:
    case OpType::Slice:
    case OpType::Expand:
    case OpType::Tile:
    case OpType::Identity:
    case OpType::Gather:
    case OpType::GatherElements:
    case OpType::GatherND:
    case OpType::Trilu:
    case OpType::ReverseSequence:
    case OpType::Compress:
    case OpType::DepthToSpace:
    case OpType::SpaceToDepth:
    case OpType::NonZero:
    case OpType::Pow:       // the exponent may be of another type
    case OpType::Resize:    // roi and scales are floats of their own
    case OpType::Dropout:   // so is the ratio
      *typedInputs = kFirst;
      return true;
    // Normalising statistics of a float type of their own; the training outputs are not widened.
    case OpType::BatchNormalization:
      *typedInputs = kFirst;
      return node.outputs.size() < 2;
    case OpType::Pad:  // data, pads, constant value, axes
    case OpType::ScatterElements:
    case OpType::ScatterND:
      *typedInputs = kFirst | 1u << 2;
      return true;
    case OpType::Where:  // a bool condition, then the two choices
      *typedInputs = 1u << 1 | 1u << 2;
      return true;
    case OpType::Attention:  // Q, K, V, mask (bool or T), past K, past V, int64 lengths
      *typedInputs = 0x7u | 1u << 4 | 1u << 5;
      return true;
    case OpType::RotaryEmbedding:  // X, cos and sin caches, int64 positions
      *typedInputs = 0x7u;
      return true;
    default:
      return false;
  }
}

DataType fixedOutputDtype(const Node& node, size_t i) {
  switch (node.type) {
    case OpType::Equal:
    case OpType::Less:
    case OpType::Greater:
    case OpType::GreaterOrEqual:
    case OpType::LessOrEqual:
    case OpType::IsNaN:
    case OpType::IsInf: return DataType::Bool;
    case OpType::ArgMax:
    case OpType::ArgMin:
    case OpType::NonZero: return DataType::Int64;
    case OpType::MaxPool:
    case OpType::TopK: return i == 0 ? DataType::Undefined : DataType::Int64;
    case OpType::Dropout: return i == 0 ? DataType::Undefined : DataType::Bool;
    case OpType::LayerNormalization:
      return i == 0 ? DataType::Undefined : static_cast<DataType>(node.getInt("stash_type", 1));
    default: return DataType::Undefined;
  }
}

bool halfFromAttributes(const Node& node, size_t i, const std::function<Half(size_t)>& input, Half* half) {
  switch (node.type) {
    case OpType::Cast:
    case OpType::BitCast: *half = fromDtypeAttribute(node, "to", 0); return true;
    case OpType::CastLike: *half = node.inputs.size() > 1 ? input(1) : Half::Unknown; return true;
    case OpType::ConstantOfShape:
    case OpType::Constant: {
      const Attribute* value = node.attr("value");
      *half = value && value->tensor ? halfIf(value->tensor->dtype) : Half::No;
      return true;
    }
    case OpType::EyeLike: *half = node.hasAttr("dtype") ? fromDtypeAttribute(node, "dtype", 1) : input(0); return true;
    case OpType::HannWindow:
    case OpType::HammingWindow:
    case OpType::BlackmanWindow:
    case OpType::MelWeightMatrix: *half = fromDtypeAttribute(node, "output_datatype", 1); return true;
    case OpType::QuantizeLinear:
    case OpType::DynamicQuantizeLinear: *half = Half::No; return true;  // integers, and a float32 scale
    case OpType::DequantizeLinear: {
      const int64_t to = node.getInt("output_dtype", 0);
      *half = to != 0 ? halfIf(static_cast<DataType>(to)) : input(1);
      return true;
    }
    case OpType::Range: *half = input(0); return true;
    case OpType::Shape:
    case OpType::Size: *half = Half::No; return true;
    case OpType::If:
    case OpType::Loop:
    case OpType::Scan: *half = fromBody(node, i); return true;
    default: return false;
  }
}

}  // namespace osprey::passes::float16
