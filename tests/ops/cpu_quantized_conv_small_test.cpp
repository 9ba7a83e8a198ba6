// QLinearConv on small maps with many channels, where the CPU takes its other paths: depthwise on
// 16 channels in lanes (every lanes kernel this CPU can run, then the execution) and the GEMM
// with positions as rows. Results must equal, byte for byte, plain integer loops followed by the
// kernels' requantisation (float(sum + bias) * (x_scale * w_scale / y_scale), ONNX Runtime's
// order), on odd channel counts, every window edge, zero points at both ends of their types and
// per-channel scales and zero points.
#include <random>

#include "backends/cpu/kernels/qgemm.h"
#include "backends/cpu/kernels/quantized_depthwise.h"
#include "ops/op_def.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

std::vector<std::pair<const char*, QDepthwiseLanesKernel>> lanesKernels() {
  std::vector<std::pair<const char*, QDepthwiseLanesKernel>> kernels = {{"scalar", qdwconv_lanes16__scalar}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernels.push_back({"avx2", qdwconv_lanes16__avx2});
  if (__builtin_cpu_supports("avx512f")) kernels.push_back({"avx512f", qdwconv_lanes16__avx512f});
#endif
  return kernels;
}

QGemmOutputStage byteStage(bool signedOut, int32_t zeroPoint) {
  QGemmOutputStage s;
  s.signedOutput = signedOut;
  s.lo = signedOut ? -128 : 0;
  s.hi = signedOut ? 127 : 255;
  s.zeroPoint = zeroPoint;
  return s;
}

TEST(CpuQuantizedConvSmall, DepthwiseLanesKernelsMatchIntegerLoops) {
  struct Case {
    int64_t inH, inW, k, stride, pad, dilation;
    bool signedOut;
    int32_t yZero;
  };
  const std::vector<Case> cases = {{2, 2, 5, 1, 2, 1, false, 0},  {2, 2, 3, 1, 1, 1, true, 127},
                                   {4, 4, 5, 2, 2, 1, false, 255}, {3, 5, 3, 2, 0, 1, true, -128},
                                   {7, 6, 3, 1, 2, 2, false, 131}, {1, 9, 5, 1, 2, 1, true, 0}};
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    QDepthwiseLanesArgs a;
    a.inH = c.inH, a.inW = c.inW, a.kernelH = c.inH == 1 ? 1 : c.k, a.kernelW = c.k;
    a.strideH = a.strideW = c.stride, a.padH = c.inH == 1 ? 0 : c.pad, a.padW = c.pad;
    a.dilationH = a.dilationW = c.dilation;
    a.outH = (a.inH + 2 * a.padH - (a.kernelH - 1) * c.dilation - 1) / c.stride + 1;
    a.outW = (a.inW + 2 * a.padW - (a.kernelW - 1) * c.dilation - 1) / c.stride + 1;
    const int64_t L = kQDepthwiseLanes, taps = a.kernelH * a.kernelW;
    // x - zx and w - zw at the ends of their ranges (255 - 0, -128 - 127, ...).
    std::uniform_int_distribution<int> xd(-255, 255), wd(-255, 255), bd(-40000, 40000);
    std::vector<float> x(a.inH * a.inW * L), w(taps * L), scale(L);
    std::vector<int32_t> bias(L);
    for (float& v : x) v = static_cast<float>(xd(rng));
    for (float& v : w) v = static_cast<float>(wd(rng));
    for (int64_t i = 0; i < L; ++i) bias[i] = bd(rng), scale[i] = 0.0004f * static_cast<float>(i + 1);
    x[0] = 255, w[0] = -255;
    const QGemmOutputStage stage = byteStage(c.signedOut, c.yZero);
    std::vector<uint8_t> want(a.outH * a.outW * L);
    for (int64_t oh = 0; oh < a.outH; ++oh)
      for (int64_t ow = 0; ow < a.outW; ++ow)
        for (int64_t l = 0; l < L; ++l) {
          int32_t sum = 0;
          for (int64_t kh = 0; kh < a.kernelH; ++kh)
            for (int64_t kw = 0; kw < a.kernelW; ++kw) {
              const int64_t ih = oh * a.strideH - a.padH + kh * a.dilationH, iw = ow * a.strideW - a.padW + kw * a.dilationW;
              if (ih < 0 || ih >= a.inH || iw < 0 || iw >= a.inW) continue;
              sum += static_cast<int32_t>(x[(ih * a.inW + iw) * L + l]) * static_cast<int32_t>(w[(kh * a.kernelW + kw) * L + l]);
            }
          const float f = static_cast<float>(sum + bias[l]) * scale[l];
          want[(oh * a.outW + ow) * L + l] = static_cast<uint8_t>(qgemmRequantize(f, stage));
        }
    for (const auto& [name, kernel] : lanesKernels()) {
      SCOPED_TRACE(std::string(name) + " " + std::to_string(c.inH) + "x" + std::to_string(c.inW) + " k" +
                   std::to_string(c.k) + " s" + std::to_string(c.stride));
      std::vector<uint8_t> got(want.size(), 0xAA);
      kernel(a, x.data(), w.data(), bias.data(), scale.data(), stage, got.data());
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(int(got[i]), int(want[i])) << "byte " << i;
    }
  }
}

struct SmallConvCase {
  int64_t c, h, w, m, k, group, stride, pad, dilation;
  DataType xType, wType;
  int32_t xZero, wZero, yZero;  // wZero on even channels (odd ones 0) when perChannel
  bool perChannel, constantWeights;
};

// QLinearConv by plain loops with the kernels' float steps (2-D, NCHW, one image).
Tensor integerQLinearConv(const SmallConvCase& k, const Tensor& x, const Tensor& w, const Tensor& wScale,
                          const Tensor& wZero, const Tensor& bias, float xs, float ys, int64_t outH, int64_t outW) {
  const DataType yType = k.xType;
  Tensor y(yType, {1, k.m, outH, outW});
  const QGemmOutputStage stage = byteStage(yType == DataType::Int8, k.yZero);
  const int64_t cin = k.c / k.group, mout = k.m / k.group;
  for (int64_t o = 0; o < k.m; ++o) {
    const int64_t g = o / mout, scaleAt = wScale.elements() == 1 ? 0 : o;
    const float scale = xs * wScale.data<float>()[scaleAt] / ys;
    const int32_t zw = static_cast<int32_t>(at(wZero, wZero.elements() == 1 ? 0 : o));
    for (int64_t oh = 0; oh < outH; ++oh)
      for (int64_t ow = 0; ow < outW; ++ow) {
        int32_t sum = bias.data<int32_t>()[o];
        for (int64_t ci = 0; ci < cin; ++ci)
          for (int64_t kh = 0; kh < k.k; ++kh)
            for (int64_t kw = 0; kw < k.k; ++kw) {
              const int64_t ih = oh * k.stride - k.pad + kh * k.dilation, iw = ow * k.stride - k.pad + kw * k.dilation;
              if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
              const int32_t xv = static_cast<int32_t>(at(x, ((g * cin + ci) * k.h + ih) * k.w + iw)) - k.xZero;
              const int32_t wv = static_cast<int32_t>(at(w, ((o * cin + ci) * k.k + kh) * k.k + kw)) - zw;
              sum += xv * wv;
            }
        storeFromDouble(yType, y.data(), (o * outH + oh) * outW + ow,
                        qgemmRequantize(static_cast<float>(sum) * scale, stage));
      }
  }
  return y;
}

void checkSmallConv(const SmallConvCase& k, uint32_t seed) {
  SCOPED_TRACE("c=" + std::to_string(k.c) + " m=" + std::to_string(k.m) + " " + std::to_string(k.h) + "x" +
               std::to_string(k.w) + " k=" + std::to_string(k.k) + " group=" + std::to_string(k.group) +
               " stride=" + std::to_string(k.stride) + " x " + dataTypeName(k.xType) + " w " + dataTypeName(k.wType) +
               (k.constantWeights ? "" : " (weights as inputs)"));
  Node node = makeNode(OpType::QLinearConv);
  node.setInts("kernel_shape", {k.k, k.k});
  node.setInts("strides", {k.stride, k.stride});
  node.setInts("dilations", {k.dilation, k.dilation});
  node.setInts("pads", {k.pad, k.pad, k.pad, k.pad});
  node.setInt("group", k.group);
  const int64_t scales = k.perChannel ? k.m : 1;
  Tensor x = randomBytes(k.xType, {1, k.c, k.h, k.w}, seed);
  Tensor w = randomBytes(k.wType, {k.m, k.c / k.group, k.k, k.k}, seed + 1);
  Tensor wScale = randomTensor(DataType::Float32, scales == 1 ? Shape{} : Shape{scales}, seed + 2, 0.002, 0.02);
  Tensor wZero(k.wType, scales == 1 ? Shape{} : Shape{scales});
  for (int64_t i = 0; i < scales; ++i) storeFromDouble(k.wType, wZero.data(), i, i % 2 ? 0 : k.wZero);
  Tensor bias = randomTensor(DataType::Int32, {k.m}, seed + 3, -3000, 3000);
  const float xs = 0.05f, ys = 0.4f;
  auto param = [&](Tensor t) { return k.constantWeights ? constant(std::move(t)) : in(std::move(t)); };
  const std::vector<OpInput> inputs = {in(x),         param(scalar(xs)), param(zeroPoint(k.xType, k.xZero)),
                                       param(w),      param(wScale),     param(wZero),
                                       param(scalar(ys)), param(zeroPoint(k.xType, k.yZero)), param(bias)};
  std::vector<Tensor> got;
  const Status st = runOp(node, inputs, 1, &got, 2);
  ASSERT_TRUE(st) << st.message();
  const int64_t outH = (k.h + 2 * k.pad - (k.k - 1) * k.dilation - 1) / k.stride + 1;
  const int64_t outW = (k.w + 2 * k.pad - (k.k - 1) * k.dilation - 1) / k.stride + 1;
  expectEqualValues(got[0], integerQLinearConv(k, x, w, wScale, wZero, bias, xs, ys, outH, outW));
}

TEST(CpuQuantizedConvSmall, QLinearConvOnSmallMapsMatchesIntegerLoops) {
  const DataType u8 = DataType::UInt8, s8 = DataType::Int8;
  const std::vector<SmallConvCase> cases = {
      // Depthwise in lanes: 37 channels (a partial block), 2x2 maps with windows larger than the
      // map, stride 2, dilation, int8 activations at both ends, uint8 weights with zero points.
      {37, 2, 2, 37, 5, 37, 1, 2, 1, u8, s8, 0, 0, 255, true, true},
      {37, 2, 2, 37, 3, 37, 1, 1, 1, s8, s8, -128, 0, 127, true, true},
      {21, 4, 4, 21, 5, 21, 2, 2, 1, u8, u8, 255, 255, 0, true, true},
      {18, 5, 3, 18, 3, 18, 1, 2, 2, s8, u8, 127, 0, -128, false, true},
      {16, 9, 9, 16, 3, 16, 2, 1, 1, u8, s8, 128, -128, 3, true, false},
      // Positions as rows: pointwise on 2x2 / 4x4 / 3x3, a 3x3 window through im2col, groups.
      {45, 2, 2, 70, 1, 1, 1, 0, 1, u8, s8, 131, 0, 120, true, true},
      {29, 4, 4, 67, 1, 1, 1, 0, 1, s8, s8, -128, -128, 3, true, true},
      {33, 3, 3, 40, 1, 1, 1, 0, 1, u8, u8, 0, 255, 255, true, false},
      {19, 3, 3, 35, 3, 1, 1, 1, 1, s8, u8, 127, 200, -128, false, true},
      {24, 2, 3, 48, 1, 2, 1, 0, 1, u8, s8, 7, 5, 9, true, true},
  };
  uint32_t seed = 4000;
  for (SmallConvCase k : cases) {
    checkSmallConv(k, seed);
    k.constantWeights = !k.constantWeights;
    checkSmallConv(k, seed + 10);
    seed += 20;
  }
}

}  // namespace
}  // namespace osprey::test
