// Cast from int8 / uint8 to float32 on the CPU (quantized_elementwise.h): the codes as floats, in
// either layout of the bytes. From channels-last bytes it writes NCHW floats itself (a transpose
// in tiles), a bridge between the two layouts, so that a TFLite int8 MEAN (Cast, ReduceSum and a
// table) costs one pass over the map instead of a conversion and then a cast.
#include <algorithm>

#include "backends/cpu/kernels/quantized_elementwise.h"
#include "backends/cpu/kernels/quantized_exec.h"
#include "core/thread_pool.h"

namespace osprey {

namespace {

template <class T>
void castPlain(const T* __restrict x, int64_t n, float* __restrict y) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

// y[c][p] = x[p][c] of one image, [positions][channels] bytes into [channels][positions] floats,
// the tile of rows [p0, p1) by all channels.
template <class T>
void castTransposed(const T* x, int64_t positions, int64_t channels, int64_t p0, int64_t p1, float* y) {
  constexpr int64_t kTile = 32;
  for (int64_t c0 = 0; c0 < channels; c0 += kTile) {
    const int64_t c1 = std::min(channels, c0 + kTile);
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t p = p0; p < p1; ++p) y[c * positions + p] = static_cast<float>(x[p * channels + c]);
  }
}

class ByteCastExecution : public Execution {
 public:
  explicit ByteCastExecution(CPUBackend* backend) : Execution(backend) {}
  bool supportsLayout(Layout layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return layout == Layout::NCHW || layout == Layout::NHWC;
  }
  bool bridgesLayouts() const override { return true; }
  bool favorsLayout(Layout, const std::vector<RuntimeTensor*>&, const std::vector<RuntimeTensor*>&) const override {
    return false;
  }

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    const RuntimeTensor &x = *inputs[0], &y = *outputs[0];
    if (x.dtype == DataType::Int8) return run<int8_t>(x, y);
    return run<uint8_t>(x, y);
  }

 private:
  template <class T>
  Status run(const RuntimeTensor& x, const RuntimeTensor& y) {
    ThreadPool* pool = static_cast<CPUBackend*>(backend())->threadPool();
    const T* in = reinterpret_cast<const T*>(x.host());
    float* out = reinterpret_cast<float*>(y.host());
    constexpr int64_t kPiece = 16384;
    if (x.layout == y.layout) {
      const int64_t n = x.elements(), pieces = (n + kPiece - 1) / kPiece;
      parallelFor(n >= 2 * kPiece ? pool : nullptr, pieces, [&](int64_t p0, int64_t p1) {
        castPlain(in + p0 * kPiece, std::min(n, p1 * kPiece) - p0 * kPiece, out + p0 * kPiece);
      });
      return Status::ok();
    }
    if (x.layout != Layout::NHWC || y.layout != Layout::NCHW || x.shape.size() != 4)
      return Status::internal("Cast '" + x.name + "': no conversion between these layouts");
    const int64_t images = x.shape[0], channels = x.shape[1], positions = x.shape[2] * x.shape[3];
    constexpr int64_t kRows = 32;
    const int64_t bands = (positions + kRows - 1) / kRows;
    parallelFor(images * positions * channels >= 2 * kPiece ? pool : nullptr, images * bands, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t image = b / bands, p0 = b % bands * kRows, p1 = std::min(positions, p0 + kRows);
        castTransposed(in + image * positions * channels, positions, channels, p0, p1,
                       out + image * positions * channels);
      }
    });
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Execution> createByteCastExecution(CPUBackend* backend, const OpRef& op,
                                                   const std::vector<RuntimeTensor*>& inputs,
                                                   const std::vector<RuntimeTensor*>& outputs) {
  if (!op.node || op.type != OpType::Cast || inputs.size() != 1 || outputs.size() != 1 || !inputs[0] || !outputs[0])
    return nullptr;
  if (!isByteType(inputs[0]) || outputs[0]->dtype != DataType::Float32) return nullptr;
  if (op.node->getInt("saturate", 1) != 1 && op.node->getInt("saturate", 1) != 0) return nullptr;
  return std::make_unique<ByteCastExecution>(backend);
}

}  // namespace osprey
