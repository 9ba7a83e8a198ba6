// DFT, STFT, the windows and MelWeightMatrix against naive std::complex sums and textbook
// window formulas written here.
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

using cd = std::complex<double>;
const double kPi = std::acos(-1.0);

Tensor scalarInt(int64_t v) { return makeTensor<int64_t>({}, {v}); }

struct DftCase {
  Shape shape;  // input, last dimension 1 or 2
  int64_t axis = -2, length = 0;  // length 0: no dft_length input
  bool inverse = false, onesided = false, axisInput = true;
};

void checkDft(const DftCase& c, uint32_t seed) {
  SCOPED_TRACE("shape " + shapeToString(c.shape) + " axis " + std::to_string(c.axis) + " inverse " +
               std::to_string(c.inverse) + " onesided " + std::to_string(c.onesided));
  Tensor x = randomTensor(DataType::Float32, c.shape, seed);
  Node node;
  node.type = OpType::DFT;
  if (c.inverse) node.setInt("inverse", 1);
  if (c.onesided) node.setInt("onesided", 1);
  std::vector<OpInput> inputs{in(x), c.length ? in(scalarInt(c.length)) : absent()};
  if (c.axisInput) inputs.push_back(in(scalarInt(c.axis)));
  std::vector<Tensor> outs;
  Status st = runOp(node, inputs, 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();

  const int64_t r = static_cast<int64_t>(c.shape.size()), a = c.axis < 0 ? c.axis + r : c.axis;
  const int64_t inLen = c.shape[a], comps = c.shape[r - 1];
  const bool c2r = c.inverse && c.onesided;
  const int64_t n = c.length ? c.length : (c2r ? 2 * (inLen - 1) : inLen);
  const int64_t outLen = c.onesided && !c.inverse ? n / 2 + 1 : n;
  Shape outShape = c.shape;
  outShape[a] = outLen;
  outShape[r - 1] = c2r ? 1 : 2;
  Tensor want(DataType::Float32, outShape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a; ++d) outer *= c.shape[d];
  for (int64_t d = a + 1; d < r - 1; ++d) inner *= c.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto value = [&](int64_t k) {  // input element k along the axis, zero past its end
        if (k >= inLen) return cd(0, 0);
        const int64_t base = ((o * inLen + k) * inner + i) * comps;
        return cd(at(x, base), comps == 2 ? at(x, base + 1) : 0.0);
      };
      std::vector<cd> seq(n);
      for (int64_t k = 0; k < n; ++k) {
        if (c2r) seq[k] = k <= n / 2 ? value(k) : std::conj(value(n - k));
        else seq[k] = value(k);
      }
      if (c2r) seq[0] = cd(seq[0].real(), 0);
      for (int64_t f = 0; f < outLen; ++f) {
        cd sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += seq[k] * std::polar(1.0, (c.inverse ? 2 : -2) * kPi * f * k / n);
        if (c.inverse) sum /= static_cast<double>(n);
        const int64_t base = ((o * outLen + f) * inner + i) * (c2r ? 1 : 2);
        storeFromDouble(DataType::Float32, want.data(), base, sum.real());
        if (!c2r) storeFromDouble(DataType::Float32, want.data(), base + 1, sum.imag());
      }
    }
  expectNear(outs[0], want, 1e-4, 1e-4);
}

TEST(SignalTest, DftForwardAndInverse) {
  checkDft({{2, 13, 1}, -2}, 1);
  checkDft({{3, 7, 5, 2}, 1}, 2);
  checkDft({{3, 7, 5, 2}, 2, 0, true}, 3);
  checkDft({{2, 13, 1}, 1, 0, false, false, false}, 4);  // axis input omitted: -2
}

TEST(SignalTest, DftLengthPadsAndTruncates) {
  checkDft({{2, 9, 3, 1}, 1, 12}, 5);
  checkDft({{2, 9, 3, 2}, 1, 5, true}, 6);
}

TEST(SignalTest, DftOnesided) {
  checkDft({{3, 11, 1}, 1, 0, false, true}, 7);
  checkDft({{2, 6, 4, 2}, 1, 0, true, true}, 8);   // complex-to-real, length 2 * (6 - 1)
  checkDft({{2, 6, 4, 2}, 1, 11, true, true}, 9);  // odd output length
}

TEST(SignalTest, DftRejectsBadAxisAndLength) {
  Tensor x = randomTensor(DataType::Float32, {2, 8, 1}, 1);
  Node node;
  node.type = OpType::DFT;
  std::vector<Tensor> outs;
  EXPECT_FALSE(runOp(node, {in(x), absent(), in(scalarInt(2))}, 1, &outs).isOk()) << "axis on the complex dimension";
  EXPECT_FALSE(runOp(node, {in(x), in(scalarInt(0)), in(scalarInt(1))}, 1, &outs).isOk());
  Tensor bad = randomTensor(DataType::Float32, {2, 8, 3}, 1);
  EXPECT_FALSE(runOp(node, {in(bad)}, 1, &outs).isOk());
}

TEST(SignalTest, StftWithAndWithoutWindow) {
  const int64_t B = 2, L = 37, step = 5, frame = 9;
  for (int complexInput = 0; complexInput < 2; ++complexInput)
    for (int variant = 0; variant < 3; ++variant) {  // window only, frame_length only, both
      SCOPED_TRACE("complex " + std::to_string(complexInput) + " variant " + std::to_string(variant));
      Tensor x = randomTensor(DataType::Float32, {B, L, complexInput ? 2 : 1}, 3 + variant);
      Tensor window = randomTensor(DataType::Float32, {frame}, 9, 0, 1);
      const bool onesided = !complexInput;
      Node node;
      node.type = OpType::STFT;
      node.setInt("onesided", onesided);
      std::vector<OpInput> inputs{in(x), in(scalarInt(step)), variant != 1 ? in(window) : absent()};
      if (variant != 0) inputs.push_back(in(scalarInt(frame)));
      std::vector<Tensor> outs;
      Status st = runOp(node, inputs, 1, &outs);
      ASSERT_TRUE(st.isOk()) << st.message();
      const int64_t frames = (L - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
      Tensor want(DataType::Float32, {B, frames, bins, 2});
      for (int64_t b = 0; b < B; ++b)
        for (int64_t f = 0; f < frames; ++f)
          for (int64_t k = 0; k < bins; ++k) {
            cd sum = 0;
            for (int64_t m = 0; m < frame; ++m) {
              const int64_t idx = (b * L + f * step + m) * (complexInput ? 2 : 1);
              const cd v(at(x, idx), complexInput ? at(x, idx + 1) : 0.0);
              sum += v * (variant != 1 ? at(window, m) : 1.0) * std::polar(1.0, -2 * kPi * k * m / frame);
            }
            const int64_t o = ((b * frames + f) * bins + k) * 2;
            storeFromDouble(DataType::Float32, want.data(), o, sum.real());
            storeFromDouble(DataType::Float32, want.data(), o + 1, sum.imag());
          }
      expectNear(outs[0], want, 1e-4, 1e-4);
    }
}

TEST(SignalTest, StftRejectsMismatchedFrame) {
  Tensor x = randomTensor(DataType::Float32, {1, 20, 1}, 1), window = randomTensor(DataType::Float32, {8}, 2);
  Node node;
  node.type = OpType::STFT;
  std::vector<Tensor> outs;
  EXPECT_FALSE(runOp(node, {in(x), in(scalarInt(4)), in(window), in(scalarInt(6))}, 1, &outs).isOk());
  EXPECT_FALSE(runOp(node, {in(x), in(scalarInt(0)), in(window)}, 1, &outs).isOk());
  EXPECT_FALSE(runOp(node, {in(x), in(scalarInt(2)), absent(), in(scalarInt(21))}, 1, &outs).isOk());
}

TEST(SignalTest, Windows) {
  struct W {
    OpType type;
    double (*fn)(double n, double N);
  };
  const W windows[] = {
      {OpType::HannWindow, [](double n, double N) { return std::pow(std::sin(kPi * n / N), 2); }},
      {OpType::HammingWindow, [](double n, double N) { return 0.54347826 - 0.45652174 * std::cos(2 * kPi * n / N); }},
      {OpType::BlackmanWindow,
       [](double n, double N) { return 0.42 - 0.5 * std::cos(2 * kPi * n / N) + 0.08 * std::cos(4 * kPi * n / N); }},
  };
  for (const W& w : windows)
    for (int periodic = 0; periodic < 2; ++periodic)
      for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16}) {
        const int64_t size = 13;
        Node node;
        node.type = w.type;
        node.setInt("periodic", periodic);
        node.setInt("output_datatype", static_cast<int64_t>(dt));
        std::vector<Tensor> outs;
        Status st = runOp(node, {in(makeTensor<int32_t>({}, {static_cast<int32_t>(size)}))}, 1, &outs);
        ASSERT_TRUE(st.isOk()) << st.message();
        Tensor want(dt, {size});
        for (int64_t i = 0; i < size; ++i)
          storeFromDouble(dt, want.data(), i, w.fn(static_cast<double>(i), periodic ? size : size - 1.0));
        expectNear(outs[0], want, dt == DataType::Float16 ? 2e-3 : 1e-6, 1e-6);
      }
  Node node;
  node.type = OpType::HannWindow;
  node.setInt("output_datatype", static_cast<int64_t>(DataType::String));
  std::vector<Tensor> outs;
  EXPECT_FALSE(runOp(node, {in(scalarInt(4))}, 1, &outs).isOk());
  node.setInt("output_datatype", 1);
  EXPECT_FALSE(runOp(node, {in(scalarInt(-1))}, 1, &outs).isOk());
}

TEST(SignalTest, MelWeightMatrix) {
  const int64_t mels = 7, dft = 31, rate = 8000;
  const float lo = 50.f, hi = 3500.f;
  Node node;
  node.type = OpType::MelWeightMatrix;
  std::vector<Tensor> outs;
  Status st = runOp(node,
                    {in(scalarInt(mels)), in(scalarInt(dft)), in(scalarInt(rate)), in(makeTensor<float>({}, {lo})),
                     in(makeTensor<float>({}, {hi}))},
                    1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  // Triangles between mel-spaced edges, converted to DFT bins.
  auto toMel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double step = (toMel(hi) - toMel(lo)) / (mels + 2);
  std::vector<int64_t> edge(mels + 2);
  for (int64_t i = 0; i < mels + 2; ++i)
    edge[i] = static_cast<int64_t>((dft + 1) * 700 * (std::pow(10, (toMel(lo) + i * step) / 2595) - 1) / rate);
  const int64_t bins = dft / 2 + 1;
  Tensor want(DataType::Float32, {bins, mels});
  for (int64_t m = 0; m < mels; ++m)
    for (int64_t k = 0; k < bins; ++k) {
      double v = 0;
      if (k >= edge[m] && k <= edge[m + 1])
        v = edge[m + 1] == edge[m] ? 1.0 : double(k - edge[m]) / double(edge[m + 1] - edge[m]);
      if (k >= edge[m + 1] && k < edge[m + 2]) v = double(edge[m + 2] - k) / double(edge[m + 2] - edge[m + 1]);
      storeFromDouble(DataType::Float32, want.data(), k * mels + m, v);
    }
  expectNear(outs[0], want, 1e-6, 1e-6);
}

}  // namespace
}  // namespace osprey::test
