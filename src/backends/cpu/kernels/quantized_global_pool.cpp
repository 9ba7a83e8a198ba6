// QLinearGlobalAveragePool on the CPU, its input's channel planes or its channels-last rows
// (CpuOptions::QuantizedLayout): the reference's arithmetic (ops/qlinear_contrib.cpp, ONNX
// Runtime's MlasQLinearGlobalAveragePool) with int32 sums, so the bytes are the same. Channels
// last, the positions are the outer loop and the channels the inner one, which vectorises.
#include <algorithm>
#include <vector>

#include "backends/cpu/kernels/quantized_elementwise.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "core/thread_pool.h"
#include "ops/quant_util.h"

namespace osprey {

namespace {

template <class T>
void sumPositions(const uint8_t* x, int64_t batch, int64_t channels, int64_t image, bool channelsLast, int32_t* sums) {
  const T* v = reinterpret_cast<const T*>(x);
  for (int64_t n = 0; n < batch; ++n) {
    int32_t* acc = sums + n * channels;
    std::fill(acc, acc + channels, 0);
    const T* in = v + n * channels * image;
    if (channelsLast) {
      for (int64_t p = 0; p < image; ++p)
        for (int64_t c = 0; c < channels; ++c) acc[c] += in[p * channels + c];
    } else {
      for (int64_t c = 0; c < channels; ++c) {
        int32_t s = 0;
        for (int64_t p = 0; p < image; ++p) s += in[c * image + p];
        acc[c] = s;
      }
    }
  }
}

class QuantizedGlobalPoolExecution : public Execution {
 public:
  explicit QuantizedGlobalPoolExecution(CPUBackend* backend) : Execution(backend) {}

  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || layout == Layout::NHWC;
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor& x = *inputs[0];
    const DataType t = x.dtype;
    const int64_t batch = x.shape[0], channels = x.shape[1], image = x.elements() / std::max<int64_t>(1, batch * channels);
    sums_.resize(static_cast<size_t>(batch * channels));
    const bool channelsLast = x.layout == Layout::NHWC;
    if (t == DataType::Int8)
      sumPositions<int8_t>(x.host(), batch, channels, image, channelsLast, sums_.data());
    else
      sumPositions<uint8_t>(x.host(), batch, channels, image, channelsLast, sums_.data());
    const float sX = reinterpret_cast<const float*>(inputs[1]->host())[0];
    const float sY = reinterpret_cast<const float*>(inputs[3]->host())[0];
    const int32_t zX = byteAt(inputAt(inputs, 2), 0), zY = byteAt(inputAt(inputs, 4), 0);
    const float scale = sX / (sY * static_cast<float>(image));
    const int32_t bias = -zX * static_cast<int32_t>(image);
    const float lo = static_cast<float>(quant::lowOf(t) - zY), hi = static_cast<float>(quant::highOf(t) - zY);
    uint8_t* y = outputs[0]->host();
    for (int64_t i = 0; i < batch * channels; ++i) {
      float v = static_cast<float>(sums_[i] + bias) * scale;
      v = v > lo ? v : lo;
      v = v < hi ? v : hi;
      y[i] = static_cast<uint8_t>(quant::saturate(quant::cvtps(v) + zY, t));
    }
    return Status::ok();
  }

 private:
  std::vector<int32_t> sums_;
};

}  // namespace

std::unique_ptr<Execution> createQuantizedGlobalPoolExecution(CPUBackend* backend, const OpRef& op,
                                                              const std::vector<RuntimeTensor*>& inputs,
                                                              const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || op.type != OpType::QLinearGlobalAveragePool || op.node->getInt("channels_last", 0) != 0) return nullptr;
  if (inputs.size() < 4 || outputs.size() != 1 || !isByteType(inputs[0]) || outputs[0]->dtype != inputs[0]->dtype)
    return nullptr;
  const RuntimeTensor& x = *inputs[0];
  if (x.shape.size() < 3 || !isFloatScalar(inputs[1]) || !isFloatScalar(inputs[3])) return nullptr;
  for (int i : {2, 4}) {
    const RuntimeTensor* z = inputAt(inputs, i);
    if (z && (z->dtype != x.dtype || z->elements() != 1)) return nullptr;
  }
  int64_t image = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) image *= x.shape[d];
  if (image >= (int64_t{1} << 24)) return nullptr;  // the reference names the limit
  return std::make_unique<QuantizedGlobalPoolExecution>(backend);
}

}  // namespace osprey
