// ONNX Runtime's com.microsoft quantized ops (src/ops/qlinear_contrib.cpp) against naive loops
// written here, which follow ORT's float32 arithmetic step by step: integer outputs must be equal.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

const DataType kTypes[] = {DataType::UInt8, DataType::Int8};


// The zero points each test runs: both ends of the type and one inside.
std::vector<int> zeroPoints(DataType t) {
  return t == DataType::Int8 ? std::vector<int>{-128, 127, 3} : std::vector<int>{0, 255, 131};
}


// x86's cvtps: half to even, NaN and out-of-range values give INT32_MIN.
int roundMlas(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return std::numeric_limits<int>::min();
  return static_cast<int>(std::nearbyint(v));
}
int clampTo(DataType t, int v) { return std::min(byteHigh(t), std::max(byteLow(t), v)); }
int quantizeMlas(float v, float scale, int zp, DataType t) {
  float q = v / scale;
  q = std::max(q, static_cast<float>(byteLow(t) - zp));
  q = std::min(q, static_cast<float>(byteHigh(t) - zp));
  return clampTo(t, roundMlas(q) + zp);
}


// ---- QLinearAdd / QLinearMul ----

// Which operand repeats along the innermost dimension where the output is not 1.
int repeated(const Shape& a, const Shape& b, const Shape& out) {
  for (size_t d = out.size(); d-- > 0;) {
    if (out[d] == 1) continue;
    const size_t lead = out.size() - a.size(), leadB = out.size() - b.size();
    const int64_t da = d >= lead ? a[d - lead] : 1, db = d >= leadB ? b[d - leadB] : 1;
    return da == 1 ? 1 : db == 1 ? 2 : 0;
  }
  return 0;
}

Tensor naiveBinary(bool add, const Tensor& a, float sa, int za, const Tensor& b, float sb, int zb, float sc, int zc) {
  const Shape out = broadcastOf({a.shape(), b.shape()});
  const DataType t = a.dtype();
  Tensor y(t, out);
  const int rep = repeated(a.shape(), b.shape(), out);
  for (int64_t i = 0; i < y.elements(); ++i) {
    const int av = static_cast<int>(at(a, sourceIndex(out, a.shape(), i)));
    const int bv = static_cast<int>(at(b, sourceIndex(out, b.shape(), i)));
    int q;
    if (add) {
      const float ra = sa / sc, rb = sb / sc;
      const float pa = ra * za, pb = rb * zb;
      const float fixed = static_cast<float>(zc) - (rep == 1 ? pb + pa : pa + pb);
      float v;
      if (rep == 2)
        v = std::fmaf(static_cast<float>(av), ra, fixed + static_cast<float>(bv) * rb);
      else if (rep == 1)
        v = std::fmaf(static_cast<float>(bv), rb, fixed + static_cast<float>(av) * ra);
      else
        v = std::fmaf(static_cast<float>(av), ra, std::fmaf(static_cast<float>(bv), rb, fixed));
      q = roundMlas(v);
    } else {
      const float ratio = sa * sb / sc;
      q = roundMlas(static_cast<float>((av - za) * (bv - zb)) * ratio + static_cast<float>(zc));
    }
    storeFromDouble(t, y.data(), i, clampTo(t, q));
  }
  return y;
}

TEST(QLinearContrib, AddAndMulBroadcastMatchNaive) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{13, 7}, {13, 7}}, {{3, 13, 7}, {7}}, {{3, 1, 7}, {5, 1}},
                                                       {{127}, {1}},       {{1}, {2, 9}},     {{4, 1}, {4, 5}},
                                                       {{1}, {1}}};
  uint32_t seed = 1;
  for (bool add : {true, false})
    for (DataType t : kTypes)
      for (int z : zeroPoints(t))
        for (auto& [sa, sb] : shapes) {
          SCOPED_TRACE(std::string(add ? "QLinearAdd " : "QLinearMul ") + dataTypeName(t) + " zp " + std::to_string(z) +
                       " " + shapeToString(sa) + " " + shapeToString(sb));
          Tensor a = randomBytes(t, sa, seed++), b = randomBytes(t, sb, seed++);
          const int zb = zeroPoints(t)[seed % 3], zc = zeroPoints(t)[(seed + 1) % 3];
          const float scA = add ? 0.0173f : 0.031f, scB = add ? 0.0291f : 0.047f, scC = add ? 0.0457f : 0.9f;
          Tensor y = run1(makeNode(add ? OpType::QLinearAdd : OpType::QLinearMul),
                         {in(a), constant(scalar(scA)), constant(zeroPoint(t, z)), in(b), constant(scalar(scB)),
                          constant(zeroPoint(t, zb)), constant(scalar(scC)), constant(zeroPoint(t, zc))});
          expectEqualValues(y, naiveBinary(add, a, scA, z, b, scB, zb, scC, zc));
        }
}

TEST(QLinearContrib, BinaryOmittedZeroPointsAreZero) {
  Tensor a = randomBytes(DataType::UInt8, {5, 3}, 7), b = randomBytes(DataType::UInt8, {5, 3}, 8);
  Tensor y = run1(makeNode(OpType::QLinearAdd), {in(a), constant(scalar(0.1f)), absent(), in(b), constant(scalar(0.2f)),
                                                absent(), constant(scalar(0.4f))});
  expectEqualValues(y, naiveBinary(true, a, 0.1f, 0, b, 0.2f, 0, 0.4f, 0));
}

TEST(QLinearContrib, BinaryBadInputsNameTheTensor) {
  Tensor a = randomBytes(DataType::UInt8, {5, 3}, 7), b = randomBytes(DataType::Int8, {5, 3}, 8);
  std::vector<Tensor> out;
  Status st =
      runOp(makeNode(OpType::QLinearAdd),
            {in(a), constant(scalar(0.1f)), constant(zeroPoint(DataType::Int8, 0)), in(a), constant(scalar(0.2f)),
             constant(zeroPoint(DataType::UInt8, 0)), constant(scalar(0.4f)), constant(zeroPoint(DataType::UInt8, 0))},
            1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("A_zero_point"), std::string::npos) << st.message();
  st = runOp(makeNode(OpType::QLinearMul),
             {in(a), constant(scalar(0.1f)), absent(), in(b), constant(scalar(0.2f)), absent(), constant(scalar(0.4f))},
             1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("B has dtype int8"), std::string::npos) << st.message();
  st = runOp(makeNode(OpType::QLinearMul),
             {in(a), constant(makeTensor<float>({2}, {0.1f, 0.2f})), absent(), in(a), constant(scalar(0.2f)), absent(),
              constant(scalar(0.4f))},
             1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("A_scale"), std::string::npos) << st.message();
  Tensor f = randomTensor(DataType::Float32, {5, 3}, 9);
  st = runOp(makeNode(OpType::QLinearAdd),
             {in(f), constant(scalar(0.1f)), absent(), in(f), constant(scalar(0.2f)), absent(), constant(scalar(0.4f))},
             1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("A has dtype float32"), std::string::npos) << st.message();
}

// ---- QLinearGlobalAveragePool ----

TEST(QLinearContrib, GlobalAveragePoolMatchesNaive) {
  uint32_t seed = 100;
  for (DataType t : kTypes)
    for (int zx : zeroPoints(t))
      for (bool last : {false, true}) {
        SCOPED_TRACE(std::string(dataTypeName(t)) + " zp " + std::to_string(zx) + (last ? " NHWC" : " NCHW"));
        const int64_t n = 2, c = 13, h = 7, w = 5;
        const Shape shape = last ? Shape{n, h, w, c} : Shape{n, c, h, w};
        Tensor x = randomBytes(t, shape, seed++);
        const int zy = zeroPoints(t)[seed % 3];
        const float sx = 0.05f, sy = 0.021f;
        Node node = makeNode(OpType::QLinearGlobalAveragePool);
        node.setInt("channels_last", last ? 1 : 0);
        Tensor y = run1(node, {in(x), constant(scalar(sx)), constant(zeroPoint(t, zx)), constant(scalar(sy)),
                              constant(zeroPoint(t, zy))});
        Tensor e(t, last ? Shape{n, 1, 1, c} : Shape{n, c, 1, 1});
        const float scale = sx / (sy * static_cast<float>(h * w));
        for (int64_t b = 0; b < n; ++b)
          for (int64_t ch = 0; ch < c; ++ch) {
            int acc = -zx * static_cast<int>(h * w);
            for (int64_t i = 0; i < h * w; ++i)
              acc += static_cast<int>(at(x, last ? (b * h * w + i) * c + ch : (b * c + ch) * h * w + i));
            float v = static_cast<float>(acc) * scale;
            v = std::min(std::max(v, static_cast<float>(byteLow(t) - zy)), static_cast<float>(byteHigh(t) - zy));
            storeFromDouble(t, e.data(), b * c + ch, clampTo(t, roundMlas(v) + zy));
          }
        expectEqualValues(y, e);
      }
}

// ---- QLinearAveragePool ----

TEST(QLinearContrib, AveragePoolMatchesNaive) {
  uint32_t seed = 200;
  for (DataType t : kTypes)
    for (int zx : zeroPoints(t))
      for (bool last : {false, true})
        for (int includePad : {0, 1}) {
          SCOPED_TRACE(std::string(dataTypeName(t)) + " zp " + std::to_string(zx) + (last ? " NHWC" : " NCHW") +
                       " count_include_pad " + std::to_string(includePad));
          const int64_t n = 2, c = 3, h = 13, w = 7, k = 3, stride = 2, pad = 1;
          const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
          Tensor x = randomBytes(t, last ? Shape{n, h, w, c} : Shape{n, c, h, w}, seed++);
          const int zy = zeroPoints(t)[seed % 3];
          const float sx = 0.07f, sy = 0.033f;
          Node node = makeNode(OpType::QLinearAveragePool);
          node.setInts("kernel_shape", {k, k});
          node.setInts("strides", {stride, stride});
          node.setInts("pads", {pad, pad, pad, pad});
          node.setInt("count_include_pad", includePad);
          node.setInt("channels_last", last ? 1 : 0);
          Tensor y = run1(node, {in(x), constant(scalar(sx)), constant(zeroPoint(t, zx)), constant(scalar(sy)),
                                constant(zeroPoint(t, zy))});
          Tensor e(t, last ? Shape{n, oh, ow, c} : Shape{n, c, oh, ow});
          for (int64_t b = 0; b < n; ++b)
            for (int64_t ch = 0; ch < c; ++ch)
              for (int64_t i = 0; i < oh; ++i)
                for (int64_t j = 0; j < ow; ++j) {
                  const int64_t h0 = std::max<int64_t>(i * stride - pad, 0), h1 = std::min(i * stride - pad + k, h);
                  const int64_t w0 = std::max<int64_t>(j * stride - pad, 0), w1 = std::min(j * stride - pad + k, w);
                  float sum = 0.f;
                  for (int64_t r = h0; r < h1; ++r)
                    for (int64_t q = w0; q < w1; ++q) {
                      const int64_t src = last ? ((b * h + r) * w + q) * c + ch : ((b * c + ch) * h + r) * w + q;
                      sum += sx * static_cast<float>(static_cast<int>(at(x, src)) - zx);
                    }
                  const float count = static_cast<float>(includePad ? k * k : (h1 - h0) * (w1 - w0));
                  const int v = static_cast<int>(std::nearbyint(sum / count / sy + static_cast<float>(zy)));
                  const int64_t dst = last ? ((b * oh + i) * ow + j) * c + ch : ((b * c + ch) * oh + i) * ow + j;
                  storeFromDouble(t, e.data(), dst, clampTo(t, v));
                }
          expectEqualValues(y, e);
        }
}

// ---- QLinearSigmoid / QLinearLeakyRelu ----

float logisticMlas(float x) {
  const float v = std::min(std::max(x, -18.0f), 18.0f), v2 = v * v;
  float p = std::fmaf(v2, 4.37031012579801e-11f, 1.15627324459942e-07f);
  for (float a : {6.08574864600143e-05f, 8.51377133304701e-03f, 2.48287947061529e-01f}) p = std::fmaf(p, v2, a);
  float q = std::fmaf(v2, 6.10247389755681e-13f, 5.76102136993427e-09f);
  for (float b : {6.29106785017040e-06f, 1.70198817374094e-03f, 1.16817656904453e-01f, 9.93151921023180e-01f})
    q = std::fmaf(q, v2, b);
  return std::min(std::max(p * v / q + 0.5f, 0.f), 1.f);
}

TEST(QLinearContrib, SigmoidAndLeakyReluMatchNaive) {
  uint32_t seed = 300;
  for (bool sigmoid : {true, false})
    for (DataType t : kTypes)
      for (int zx : zeroPoints(t)) {
        SCOPED_TRACE(std::string(sigmoid ? "QLinearSigmoid " : "QLinearLeakyRelu ") + dataTypeName(t) + " zp " +
                     std::to_string(zx));
        Tensor x = randomBytes(t, {3, 127}, seed++);
        const int zy = sigmoid ? byteLow(t) : zeroPoints(t)[seed % 3];
        const float sx = 0.061f, sy = sigmoid ? 1.0f / 256 : 0.043f, alpha = 0.13f;
        Node node = makeNode(sigmoid ? OpType::QLinearSigmoid : OpType::QLinearLeakyRelu);
        if (!sigmoid) node.setFloat("alpha", alpha);
        Tensor y = run1(node, {in(x), constant(scalar(sx)), constant(zeroPoint(t, zx)), constant(scalar(sy)),
                              constant(zeroPoint(t, zy))});
        Tensor e(t, x.shape());
        for (int64_t i = 0; i < x.elements(); ++i) {
          const float v = sx * static_cast<float>(static_cast<int>(at(x, i)) - zx);
          const float f = sigmoid ? logisticMlas(v) : (v >= 0.f ? v : alpha * v);
          storeFromDouble(t, e.data(), i, quantizeMlas(f, sy, zy, t));
        }
        expectEqualValues(y, e);
      }
}

// ---- QLinearConcat ----

TEST(QLinearContrib, ConcatMatchesNaive) {
  uint32_t seed = 400;
  for (DataType t : kTypes)
    for (int64_t axis : {0, 1, -1}) {
      SCOPED_TRACE(std::string(dataTypeName(t)) + " axis " + std::to_string(axis));
      const std::vector<Shape> shapes = axis == 0   ? std::vector<Shape>{{2, 5, 3}, {3, 5, 3}, {1, 5, 3}}
                                        : axis == 1 ? std::vector<Shape>{{2, 1, 3}, {2, 7, 3}, {2, 2, 3}}
                                                    : std::vector<Shape>{{2, 5, 3}, {2, 5, 1}, {2, 5, 4}};
      const float ys = 0.05f;
      const int yz = zeroPoints(t)[2];
      const float scales[] = {0.05f, 0.031f, 0.2f};
      std::vector<OpInput> ins = {constant(scalar(ys)), constant(zeroPoint(t, yz))};
      std::vector<Tensor> xs;
      for (size_t i = 0; i < shapes.size(); ++i) {
        xs.push_back(randomBytes(t, shapes[i], seed++));
        const int z = i == 0 ? yz : zeroPoints(t)[i - 1];  // input 0 is already in Y's parameters
        ins.push_back(in(xs.back()));
        ins.push_back(constant(scalar(scales[i])));
        ins.push_back(constant(zeroPoint(t, z)));
      }
      Node node = makeNode(OpType::QLinearConcat);
      node.setInt("axis", axis);
      Tensor y = run1(node, ins);
      const size_t ax = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      Shape outShape = shapes[0];
      outShape[ax] = 0;
      for (auto& s : shapes) outShape[ax] += s[ax];
      Tensor e(t, outShape);
      for (int64_t o = 0; o < e.elements(); ++o) {
        std::vector<int64_t> idx = unravel(o, outShape);
        size_t which = 0;
        while (idx[ax] >= shapes[which][ax]) idx[ax] -= shapes[which++][ax];
        const int xv = static_cast<int>(at(xs[which], ravel(idx, shapes[which])));
        const int z = which == 0 ? yz : zeroPoints(t)[which - 1];
        const int v = which == 0 ? xv : quantizeMlas(scales[which] * static_cast<float>(xv - z), ys, yz, t);
        storeFromDouble(t, e.data(), o, v);
      }
      expectEqualValues(y, e);
    }
}

// ---- QGemm ----

TEST(QLinearContrib, QGemmMatchesNaive) {
  uint32_t seed = 500;
  for (DataType t : kTypes)
    for (bool transA : {false, true})
      for (bool transB : {false, true})
        for (bool floatOut : {false, true}) {
          SCOPED_TRACE(std::string(dataTypeName(t)) + " transA " + std::to_string(transA) + " transB " +
                       std::to_string(transB) + (floatOut ? " float" : " quantized"));
          const int64_t m = 5, k = 13, n = 7;
          Tensor a = randomBytes(t, transA ? Shape{k, m} : Shape{m, k}, seed++);
          Tensor b = randomBytes(t, transB ? Shape{n, k} : Shape{k, n}, seed++);
          Tensor c = randomTensor(DataType::Int32, {n}, seed++, -2000, 2000);
          const int za = zeroPoints(t)[seed % 3], zy = zeroPoints(t)[(seed + 1) % 3];
          std::vector<float> bsc(n);
          Tensor bz(t, {n});
          for (int64_t j = 0; j < n; ++j) {
            bsc[j] = 0.002f * static_cast<float>(j + 1);
            storeFromDouble(t, bz.data(), j, zeroPoints(t)[j % 3]);
          }
          const float as = 0.03f, ys = 0.7f, alpha = 1.5f;
          Node node = makeNode(OpType::QGemm);
          node.setInt("transA", transA);
          node.setInt("transB", transB);
          node.setFloat("alpha", alpha);
          std::vector<OpInput> ins = {in(a),
                                      constant(scalar(as)),
                                      constant(zeroPoint(t, za)),
                                      in(b),
                                      constant(makeTensor<float>({n}, bsc)),
                                      constant(bz),
                                      constant(c)};
          if (!floatOut) {
            ins.push_back(constant(scalar(ys)));
            ins.push_back(constant(zeroPoint(t, zy)));
          }
          Tensor y = run1(node, ins);
          Tensor e(floatOut ? DataType::Float32 : t, {m, n});
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              int acc = c.data<int32_t>()[j];
              for (int64_t q = 0; q < k; ++q)
                acc += (static_cast<int>(at(a, transA ? q * m + i : i * k + q)) - za) *
                       (static_cast<int>(at(b, transB ? j * k + q : q * n + j)) - static_cast<int>(at(bz, j)));
              float scale = alpha * as * bsc[j];
              if (!floatOut) scale /= ys;
              const float v = static_cast<float>(acc) * scale;
              if (floatOut) {
                e.data<float>()[i * n + j] = v;
              } else {
                const float clamped =
                    std::min(std::max(v, static_cast<float>(byteLow(t) - zy)), static_cast<float>(byteHigh(t) - zy));
                storeFromDouble(t, e.data(), i * n + j, clampTo(t, roundMlas(clamped) + zy));
              }
            }
          expectEqualValues(y, e);
        }
}

TEST(QLinearContrib, MatrixBadInputsNameTheTensor) {
  const DataType t = DataType::UInt8;
  Tensor a = randomBytes(t, {5, 13}, 1), b = randomBytes(t, {13, 7}, 2);
  std::vector<Tensor> out;
  // b_scale with 3 values for 7 columns.
  Status st = runOp(makeNode(OpType::QGemm),
                    {in(a), constant(scalar(0.1f)), constant(zeroPoint(t, 0)), in(b),
                     constant(makeTensor<float>({3}, {0.1f, 0.2f, 0.3f})), constant(zeroPoint(t, 0))},
                    1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("b_scale [3]"), std::string::npos) << st.message();
  // y_scale without y_zero_point.
  st = runOp(makeNode(OpType::QGemm),
             {in(a), constant(scalar(0.1f)), constant(zeroPoint(t, 0)), in(b), constant(scalar(0.1f)),
              constant(zeroPoint(t, 0)), absent(), constant(scalar(0.5f))},
             1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("y_scale and y_zero_point"), std::string::npos) << st.message();
  // A concat input whose dtype differs from Y's zero point.
  st = runOp(
      makeNode(OpType::QLinearConcat),
      {constant(scalar(0.1f)), constant(zeroPoint(t, 0)), in(a), constant(scalar(0.1f)), constant(zeroPoint(t, 0)),
       in(randomBytes(DataType::Int8, {5, 13}, 3)), constant(scalar(0.1f)), constant(zeroPoint(DataType::Int8, 0))},
      1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("input 1 has dtype int8"), std::string::npos) << st.message();
  // A float bias of the wrong length.
  st = runOp(makeNode(OpType::MatMulIntegerToFloat),
             {in(a), constant(b), constant(scalar(0.1f)), constant(scalar(0.1f)), absent(), absent(),
              constant(makeTensor<float>({2}, {1.f, 2.f}))},
             1, &out);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("bias [2]"), std::string::npos) << st.message();
}

// ---- MatMulIntegerToFloat / DynamicQuantizeMatMul ----

// float(sum (A - za)(B - zb[j])) * (as * bs[j]) + bias[j] for A [batch, m, k] and B [k, n].
Tensor naiveToFloat(const std::vector<int>& a, int za, const Tensor& b, const Tensor* bz, float as,
                    const std::vector<float>& bs, const std::vector<float>& bias, const Shape& outShape, int64_t k) {
  const int64_t n = b.shape()[1], rows = shapeElements(outShape) / n;
  Tensor y(DataType::Float32, outShape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const int zb = bz ? static_cast<int>(at(*bz, bz->elements() == 1 ? 0 : j)) : 0;
      int acc = 0;
      for (int64_t q = 0; q < k; ++q) acc += (a[r * k + q] - za) * (static_cast<int>(at(b, q * n + j)) - zb);
      float v = static_cast<float>(acc) * (as * bs[bs.size() == 1 ? 0 : j]);
      if (!bias.empty()) v += bias[j];
      y.data<float>()[r * n + j] = v;
    }
  return y;
}

TEST(QLinearContrib, MatMulIntegerToFloatMatchesNaive) {
  uint32_t seed = 600;
  for (DataType tb : kTypes)
    for (bool perColumn : {false, true}) {
      SCOPED_TRACE(std::string("B ") + dataTypeName(tb) + (perColumn ? " per column" : " per tensor"));
      const int64_t k = 13, n = 5;
      Tensor a = randomBytes(DataType::UInt8, {2, 3, k}, seed++), b = randomBytes(tb, {k, n}, seed++);
      std::vector<float> bs =
          perColumn ? std::vector<float>{0.01f, 0.02f, 0.03f, 0.04f, 0.05f} : std::vector<float>{0.02f};
      Tensor bz(tb, {static_cast<int64_t>(bs.size())});
      for (int64_t j = 0; j < bz.elements(); ++j) storeFromDouble(tb, bz.data(), j, zeroPoints(tb)[j % 3]);
      std::vector<float> bias = {0.5f, -1.f, 2.f, 0.f, 3.5f};
      Tensor y = run1(makeNode(OpType::MatMulIntegerToFloat),
                     {in(a), constant(b), constant(scalar(0.07f)), constant(makeTensor<float>({bz.elements()}, bs)),
                      constant(zeroPoint(DataType::UInt8, 255)), constant(bz), constant(makeTensor<float>({n}, bias))});
      std::vector<int> av(a.elements());
      for (int64_t i = 0; i < a.elements(); ++i) av[i] = static_cast<int>(at(a, i));
      expectNear(y, naiveToFloat(av, 255, b, &bz, 0.07f, bs, bias, {2, 3, n}, k), 1e-6, 1e-6);
    }
}

TEST(QLinearContrib, DynamicQuantizeMatMulMatchesNaive) {
  uint32_t seed = 700;
  for (DataType tb : kTypes) {
    SCOPED_TRACE(std::string("B ") + dataTypeName(tb));
    const int64_t m = 7, k = 13, n = 5;
    Tensor a = randomTensor(DataType::Float32, {m, k}, seed++, -2.0, 3.0), b = randomBytes(tb, {k, n}, seed++);
    Tensor bz = zeroPoint(tb, zeroPoints(tb)[1]);
    Tensor y =
        run1(makeNode(OpType::DynamicQuantizeMatMul), {in(a), constant(b), constant(scalar(0.03f)), constant(bz)});
    float lo = 0.f, hi = 0.f;
    for (int64_t i = 0; i < a.elements(); ++i)
      lo = std::min(lo, a.data<float>()[i]), hi = std::max(hi, a.data<float>()[i]);
    const float scale = (hi - lo) / 255.0f;
    const int za = static_cast<int>(std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / scale))));
    std::vector<int> av(a.elements());
    for (int64_t i = 0; i < a.elements(); ++i) av[i] = quantizeMlas(a.data<float>()[i], scale, za, DataType::UInt8);
    expectNear(y, naiveToFloat(av, za, b, &bz, scale, {0.03f}, {}, {m, n}, k), 1e-6, 1e-6);
  }
}

// ---- QLinearSoftmax ----

TEST(QLinearContrib, SoftmaxMatchesNaive) {
  uint32_t seed = 800;
  for (DataType t : kTypes)
    for (int opset : {11, 13}) {
      SCOPED_TRACE(std::string(dataTypeName(t)) + " opset " + std::to_string(opset));
      const Shape shape = {3, 5, 7};
      const int64_t axis = 1;
      Tensor x = randomBytes(t, shape, seed++);
      const float xs = 0.09f, ys = 1.0f / 256;
      const int zy = byteLow(t);
      Node node = makeNode(OpType::QLinearSoftmax);
      node.setInt("opset", opset);
      node.setInt("axis", axis);
      Tensor y = run1(node, {in(x), constant(scalar(xs)), constant(zeroPoint(t, zeroPoints(t)[0])), constant(scalar(ys)),
                            constant(zeroPoint(t, zy))});
      // Rows: opset 11 flattens dims 1.., opset 13 reduces dim 1 only (stride 7).
      const int64_t d = opset < 13 ? 35 : 5, inner = opset < 13 ? 1 : 7, outer = 3;
      double shift = std::log(static_cast<double>(std::numeric_limits<float>::max() / static_cast<float>(d)));
      shift = std::max(0.0, shift - 5.0) / xs;
      const float yScale = std::floor(1.0f / ys);
      Tensor e(t, shape);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          int xmax = byteLow(t);
          for (int64_t q = 0; q < d; ++q) xmax = std::max(xmax, static_cast<int>(at(x, o * d * inner + q * inner + j)));
          auto expOf = [&](int v) {  // e^((v - max) * xs) scaled by e^(shift * xs), rounded to float
            return static_cast<float>(std::exp((static_cast<double>(v - xmax) + shift) * static_cast<double>(xs)));
          };
          float sum = 0.f;
          for (int64_t q = 0; q < d; ++q) sum += expOf(static_cast<int>(at(x, o * d * inner + q * inner + j)));
          for (int64_t q = 0; q < d; ++q) {
            const int64_t i = o * d * inner + q * inner + j;
            const int v = static_cast<int>(std::nearbyint(expOf(static_cast<int>(at(x, i))) * yScale / sum)) + zy;
            storeFromDouble(t, e.data(), i, std::min(v, byteHigh(t)));
          }
        }
      expectEqualValues(y, e);
    }
}

}  // namespace
}  // namespace osprey::test
