#include "ops/flops.h"

#include <cstdint>
#include <string>

namespace osprey {

int64_t opFlops(const Node& node, const TensorViews& in, const TensorViews& out) {
  auto elems = [](const TensorView& v) { return v.present ? shapeElements(v.shape) : 0; };
  switch (node.type) {
    case OpType::Conv:  // W: [Cout, Cin/g, k...]
      if (in.size() > 1 && in[1].shape.size() > 1) return 2 * elems(out[0]) * (elems(in[1]) / in[1].shape[0]);
      return 0;
    case OpType::ConvInteger:  // W at input 1
    case OpType::QLinearConv: {  // W at input 3
      const size_t w = node.type == OpType::QLinearConv ? 3 : 1;
      if (in.size() > w && in[w].shape.size() > 1) return 2 * elems(out[0]) * (elems(in[w]) / in[w].shape[0]);
      return 0;
    }
    case OpType::ConvTranspose:  // W: [Cin, Cout/g, k...]
      if (in.size() > 1 && in[1].shape.size() > 1) return 2 * elems(in[0]) * (elems(in[1]) / in[1].shape[0]);
      return 0;
    case OpType::MatMul:
    case OpType::MatMulInteger:
    case OpType::QLinearMatMul:
    case OpType::MatMulNBits:
    case OpType::MatMulIntegerToFloat:
    case OpType::DynamicQuantizeMatMul:
      if (!in[0].shape.empty()) return 2 * elems(out[0]) * in[0].shape.back();
      return 0;
    case OpType::RNN:
    case OpType::GRU:
    case OpType::LSTM:  // X [.., .., I]; W [dirs, gates * H, I] and R [dirs, gates * H, H] at every step
      if (in.size() > 2 && in[0].shape.size() == 3 && in[1].shape.size() == 3 && in[0].shape[2] > 0)
        return 2 * (elems(in[0]) / in[0].shape[2]) * (elems(in[1]) + elems(in[2]));
      return 0;
    case OpType::Attention: {  // Q.K for every key, then the weights times V: both of T keys
      if (in.size() < 3 || in[1].shape.size() < 3) return 0;
      const bool heads = in[1].shape.size() == 4;
      int64_t keys = in[1].shape[heads ? 2 : 1];
      if (heads && in.size() > 4 && in[4].present && in[4].shape.size() == 4) keys += in[4].shape[2];
      return 2 * keys * (elems(in[0]) + elems(out[0]));
    }
    case OpType::Gemm:
    case OpType::QGemm:
      if (in[0].shape.size() == 2) return 2 * elems(out[0]) * in[0].shape[node.getInt("transA", 0) ? 0 : 1];
      return 0;
    case OpType::MaxPool:
    case OpType::AveragePool:
    case OpType::LpPool: {  // every output reads its window's taps
      int64_t taps = 1;
      for (int64_t k : node.getInts("kernel_shape"))
        taps = k > 0 && taps <= INT64_MAX / k ? taps * k : INT64_MAX;
      const int64_t n = elems(out[0]);
      return n > 0 && taps > INT64_MAX / n ? INT64_MAX : n * taps;
    }
    case OpType::Resize: {  // linear / cubic: a multiply-add per tap, 2 or 4 taps per resized axis
      const std::string mode = node.getString("mode", "nearest");
      const int64_t perAxis = mode == "linear" ? 2 : mode == "cubic" ? 4 : 1;
      int64_t perOutput = perAxis > 1 ? 2 : 1;
      if (!in.empty() && !out.empty() && in[0].shape.size() == out[0].shape.size())
        for (size_t d = 0; d < out[0].shape.size(); ++d)
          if (in[0].shape[d] != out[0].shape[d]) perOutput *= perAxis;
      const int64_t n = elems(out[0]);
      return n > 0 && perOutput > INT64_MAX / n ? INT64_MAX : n * perOutput;
    }
    // A polynomial (exp, log, tanh, erf, sin...) per element: about ten multiply-adds, which is
    // what the CPU's serial-plan threshold must see (Exp over 400 K elements is worth two threads).
    case OpType::Exp:
    case OpType::Log:
    case OpType::Tanh:
    case OpType::Sigmoid:
    case OpType::Erf:
    case OpType::Gelu:
    case OpType::Elu:
    case OpType::Selu:
    case OpType::Celu:
    case OpType::Softplus:
    case OpType::Mish:
    case OpType::Swish:
    case OpType::Pow:
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
    case OpType::Softmax:
    case OpType::LogSoftmax: {
      constexpr int64_t kPolynomial = 10;
      const int64_t n = elems(out[0]);
      return n > INT64_MAX / kPolynomial ? INT64_MAX : n * kPolynomial;
    }
    default: {
      int64_t n = 0;
      for (auto& o : out) n += elems(o);
      return n;
    }
  }
}

}  // namespace osprey
