// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
// ConvInteger and QLinearConv against naive loops written here.
#include <cmath>
#include <string>
#include <vector>

#include "core/low_precision.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

double clampTo(DataType t, double v) {
  const double lo = t == DataType::Int8 ? -128 : t == DataType::Int16 ? -32768 : 0;
  const double hi = t == DataType::Int8 ? 127 : t == DataType::Int16 ? 32767 : t == DataType::UInt16 ? 65535 : 255;
  return std::min(hi, std::max(lo, v));
}

// Index of the scale for element i of shape `s`: per tensor, per axis, or blocked.
int64_t paramIndex(const Shape& s, const Shape& scaleShape, int64_t axis, int64_t block, int64_t i) {
  if (shapeElements(scaleShape) == 1) return 0;
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) idx[d] = i % s[d], i /= s[d];
  if (block == 0) return idx[axis];
  idx[axis] /= block;
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * scaleShape[d] + idx[d];
  return f;
}

struct QCase {
  Shape x, scale;
  int64_t axis, block;
  DataType type;
};

const std::vector<QCase> kQuantCases = {
    {{13}, {}, 1, 0, DataType::UInt8},          {{3, 7}, {7}, 1, 0, DataType::Int8},
    {{4, 5, 3}, {4}, 0, 0, DataType::UInt16},   {{3, 7, 2}, {3, 3, 2}, 1, 3, DataType::Int16},
    {{6, 5}, {2, 5}, -2, 4, DataType::UInt8},
};

TEST(QuantizeLinearOp, LayoutsAndTypes) {
  uint32_t seed = 1;
  for (const QCase& c : kQuantCases) {
    SCOPED_TRACE(shapeToString(c.x) + " scale " + shapeToString(c.scale) + " " + dataTypeName(c.type));
    const double range = c.type == DataType::Int16 || c.type == DataType::UInt16 ? 3000 : 30;
    Tensor x = randomTensor(DataType::Float32, c.x, seed++, -range, range);
    Tensor scale = randomTensor(DataType::Float32, c.scale, seed++, 0.05, 0.3);
    Tensor zp = randomTensor(c.type, c.scale, seed++, 0, 20);
    Node node;
    node.type = OpType::QuantizeLinear;
    node.setInt("axis", c.axis);
    if (c.block) node.setInt("block_size", c.block);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis;
    Tensor expected(c.type, c.x);
    for (int64_t i = 0; i < x.elements(); ++i) {
      const int64_t p = paramIndex(c.x, c.scale, axis, c.block, i);
      const float q = x.data<float>()[i] / scale.data<float>()[p];
      storeFromDouble(c.type, expected.data(), i, clampTo(c.type, std::nearbyint(q) + at(zp, p)));
    }
    expectEqualValues(run1(node, {in(x), in(scale), in(zp)}), expected);
  }
}

TEST(QuantizeLinearOp, OutputDtypeWithoutZeroPointAndTies) {
  Tensor x = makeTensor<float>({6}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1000.f});
  Tensor scale = makeTensor<float>({}, {1.f});
  Node node;
  node.type = OpType::QuantizeLinear;
  node.setInt("output_dtype", static_cast<int64_t>(DataType::Int8));
  Tensor y = run1(node, {in(x), in(scale)});
  ASSERT_EQ(y.dtype(), DataType::Int8);
  const std::vector<double> expected = {0, 2, 2, -0, -2, 127};  // ties to even, then saturate
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(at(y, i), expected[i]);
  Node dflt;
  dflt.type = OpType::QuantizeLinear;
  EXPECT_EQ(run1(dflt, {in(x), in(scale)}).dtype(), DataType::UInt8);
}

// The one-byte-per-element low-precision types: 4-bit integers saturate to their own range,
// float8 rounds to nearest even (saturating by default), and both dequantize back.
TEST(QuantizeLinearOp, LowPrecisionTypes) {
  Tensor x = randomTensor(DataType::Float32, {3, 5}, 5, -4, 4);
  Tensor scale = makeTensor<float>({3}, {0.25f, 0.5f, 0.1f});
  Tensor zp(DataType::Int4, {3});
  storeFromDouble(DataType::Int4, zp.data(), 0, -1);
  storeFromDouble(DataType::Int4, zp.data(), 1, 2);
  storeFromDouble(DataType::Int4, zp.data(), 2, 0);
  Node node;
  node.type = OpType::QuantizeLinear;
  node.setInt("axis", 0);
  Tensor y = run1(node, {in(x), in(scale), in(zp)});
  ASSERT_EQ(y.dtype(), DataType::Int4);
  for (int64_t i = 0; i < 15; ++i) {
    const double q = std::nearbyint(x.data<float>()[i] / scale.data<float>()[i / 5]) + at(zp, i / 5);
    ASSERT_EQ(at(y, i), std::min(7.0, std::max(-8.0, q))) << i;
  }
  Node dq;
  dq.type = OpType::DequantizeLinear;
  dq.setInt("axis", 0);
  Tensor back = run1(dq, {in(y), in(scale), in(zp)});
  for (int64_t i = 0; i < 15; ++i)
    ASSERT_FLOAT_EQ(back.data<float>()[i], static_cast<float>((at(y, i) - at(zp, i / 5)) * scale.data<float>()[i / 5]));

  Node f8;
  f8.type = OpType::QuantizeLinear;
  f8.setInt("output_dtype", static_cast<int64_t>(DataType::Float8E4M3FN));
  Tensor big = makeTensor<float>({5}, {0.3f, -1000.f, 7.7f, 0.f, 449.f});
  Tensor s2 = makeTensor<float>({}, {0.5f});
  Tensor y8 = run1(f8, {in(big), in(s2)});
  ASSERT_EQ(y8.dtype(), DataType::Float8E4M3FN);
  for (int64_t i = 0; i < 5; ++i)
    ASSERT_EQ(y8.data<uint8_t>()[i], encodeLowPrecision(DataType::Float8E4M3FN, big.data<float>()[i] / 0.5f)) << i;
  Node dq8;
  dq8.type = OpType::DequantizeLinear;
  Tensor back8 = run1(dq8, {in(y8), in(s2)});
  for (int64_t i = 0; i < 5; ++i)
    ASSERT_EQ(back8.data<float>()[i], static_cast<float>(decodeLowPrecision(DataType::Float8E4M3FN, y8.data<uint8_t>()[i]) * 0.5));
}

TEST(DequantizeLinearOp, LayoutsAndTypes) {
  uint32_t seed = 20;
  for (QCase c : kQuantCases) {
    SCOPED_TRACE(shapeToString(c.x) + " scale " + shapeToString(c.scale) + " " + dataTypeName(c.type));
    Tensor x = randomTensor(c.type, c.x, seed++, 0, 100);
    Tensor scale = randomTensor(DataType::Float32, c.scale, seed++, 0.05, 0.3);
    Tensor zp = randomTensor(c.type, c.scale, seed++, 0, 50);
    Node node;
    node.type = OpType::DequantizeLinear;
    node.setInt("axis", c.axis);
    if (c.block) node.setInt("block_size", c.block);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis;
    Tensor expected(DataType::Float32, c.x);
    for (int64_t i = 0; i < x.elements(); ++i) {
      const int64_t p = paramIndex(c.x, c.scale, axis, c.block, i);
      expected.data<float>()[i] = static_cast<float>((at(x, i) - at(zp, p)) * scale.data<float>()[p]);
    }
    expectNear(run1(node, {in(x), in(scale), in(zp)}), expected, 0, 1e-7);
  }
  // int32 input without zero point, float16 output through output_dtype.
  Tensor x = makeTensor<int32_t>({4}, {-100000, 5, 0, 77});
  Node node;
  node.type = OpType::DequantizeLinear;
  node.setInt("output_dtype", static_cast<int64_t>(DataType::Float16));
  Tensor y = run1(node, {in(x), in(makeTensor<float>({}, {0.125f}))});
  ASSERT_EQ(y.dtype(), DataType::Float16);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(at(y, i), at(x, i) * 0.125, std::fabs(at(x, i)) * 1e-3);
}

TEST(DynamicQuantizeLinearOp, MatchesNaive) {
  for (double lo : {-3.0, 0.5}) {
    Tensor x = randomTensor(DataType::Float32, {13, 7}, 30, lo, 4);
    Node node;
    node.type = OpType::DynamicQuantizeLinear;
    std::vector<Tensor> out;
    ASSERT_TRUE(runOp(node, {in(x)}, 3, &out).isOk());
    float mn = 0, mx = 0;
    for (int64_t i = 0; i < x.elements(); ++i) mn = std::min(mn, x.data<float>()[i]), mx = std::max(mx, x.data<float>()[i]);
    const float scale = (mx - mn) / 255.f;
    const float zp = std::nearbyint(std::min(255.f, std::max(0.f, -mn / scale)));
    EXPECT_EQ(out[1].data<float>()[0], scale);
    EXPECT_EQ(at(out[2], 0), zp);
    for (int64_t i = 0; i < x.elements(); ++i)
      ASSERT_EQ(at(out[0], i), std::min(255.f, std::max(0.f, std::nearbyint(x.data<float>()[i] / scale) + zp)));
  }
}

// Naive (A - azp) x (B - bzp) with per-row azp and per-column bzp (vectors, empty = 0).
std::vector<int64_t> naiveIntMatMul(const Tensor& a, const Tensor& b, const std::vector<double>& azp,
                                    const std::vector<double>& bzp, int64_t batches, bool broadcastB) {
  const Shape &as = a.shape(), &bs = b.shape();
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  std::vector<int64_t> out(batches * m * n);
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double av = at(a, (t * m + i) * k + q) - (azp.empty() ? 0 : azp[azp.size() == 1 ? 0 : i]);
          const double bv = at(b, ((broadcastB ? 0 : t) * k + q) * n + j) - (bzp.empty() ? 0 : bzp[bzp.size() == 1 ? 0 : j]);
          s += static_cast<int64_t>(av * bv);
        }
        out[(t * m + i) * n + j] = s;
      }
  return out;
}

TEST(MatMulIntegerOp, ZeroPointsAndBroadcast) {
  Tensor a = randomTensor(DataType::UInt8, {3, 5, 7}, 40, 0, 255), b = randomTensor(DataType::Int8, {7, 4}, 41, -128, 127);
  Tensor azp = randomTensor(DataType::UInt8, {5}, 42, 0, 255), bzp = randomTensor(DataType::Int8, {4}, 43, -128, 127);
  Node node;
  node.type = OpType::MatMulInteger;
  std::vector<double> az, bz;
  for (int64_t i = 0; i < 5; ++i) az.push_back(at(azp, i));
  for (int64_t i = 0; i < 4; ++i) bz.push_back(at(bzp, i));
  Tensor y = run1(node, {in(a), in(b), in(azp), in(bzp)});
  ASSERT_EQ(y.shape(), (Shape{3, 5, 4}));
  std::vector<int64_t> e = naiveIntMatMul(a, b, az, bz, 3, true);
  for (int64_t i = 0; i < y.elements(); ++i) ASSERT_EQ(y.data<int32_t>()[i], e[i]);
  Tensor y0 = run1(node, {in(a), in(b)});
  e = naiveIntMatMul(a, b, {}, {}, 3, true);
  for (int64_t i = 0; i < y0.elements(); ++i) ASSERT_EQ(y0.data<int32_t>()[i], e[i]);
}

TEST(QLinearMatMulOp, MatchesNaive) {
  for (DataType t : {DataType::UInt8, DataType::Int8}) {
    SCOPED_TRACE(dataTypeName(t));
    const double lo = t == DataType::Int8 ? -128 : 0, hi = t == DataType::Int8 ? 127 : 255;
    Tensor a = randomTensor(t, {2, 5, 7}, 50, lo, hi), b = randomTensor(t, {2, 7, 3}, 51, lo, hi);
    Tensor as = makeTensor<float>({}, {0.02f}), bs = makeTensor<float>({}, {0.03f}), ys = makeTensor<float>({}, {0.5f});
    Tensor azp = randomTensor(t, {}, 52, lo, hi), bzp = randomTensor(t, {}, 53, lo, hi), yzp = randomTensor(t, {}, 54, lo, hi);
    Node node;
    node.type = OpType::QLinearMatMul;
    Tensor y = run1(node, {in(a), in(as), in(azp), in(b), in(bs), in(bzp), in(ys), in(yzp)});
    std::vector<int64_t> acc = naiveIntMatMul(a, b, {at(azp, 0)}, {at(bzp, 0)}, 2, false);
    const double mult = static_cast<float>(0.02f * 0.03f) / 0.5f;
    for (int64_t i = 0; i < y.elements(); ++i)
      ASSERT_EQ(at(y, i), std::min(hi, std::max(lo, std::nearbyint(acc[i] * static_cast<double>(static_cast<float>(mult)) + at(yzp, 0)))));
  }
}

// Naive 2-D integer convolution with groups, pads and strides; per-channel w zero points.
std::vector<int64_t> naiveIntConv(const Tensor& x, const Tensor& w, double xz, const std::vector<double>& wz,
                                  int64_t group, int64_t pad, int64_t stride, Shape* outShape) {
  const Shape &xs = x.shape(), &ws = w.shape();
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], m = ws[0], cg = ws[1], kh = ws[2], kw = ws[3];
  const int64_t oh = (h + 2 * pad - kh) / stride + 1, ow = (wd + 2 * pad - kw) / stride + 1;
  *outShape = {n, m, oh, ow};
  std::vector<int64_t> y(n * m * oh * ow);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t s = 0;
          const int64_t g = o / (m / group);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t bb = 0; bb < kw; ++bb) {
                const int64_t r = i * stride - pad + a, q = j * stride - pad + bb;
                if (r < 0 || r >= h || q < 0 || q >= wd) continue;
                const double xv = at(x, ((b * c + g * cg + ci) * h + r) * wd + q) - xz;
                const double wv = at(w, ((o * cg + ci) * kh + a) * kw + bb) - wz[wz.size() == 1 ? 0 : o];
                s += static_cast<int64_t>(xv * wv);
              }
          y[((b * m + o) * oh + i) * ow + j] = s;
        }
  return y;
}

TEST(ConvIntegerOp, GroupsPadsStrides) {
  Tensor x = randomTensor(DataType::UInt8, {2, 4, 7, 5}, 60, 0, 255), w = randomTensor(DataType::UInt8, {6, 2, 3, 2}, 61, 0, 255);
  Tensor xzp = makeTensor<uint8_t>({}, {3});
  Tensor wzp = randomTensor(DataType::UInt8, {6}, 62, 0, 255);
  std::vector<double> wz;
  for (int64_t i = 0; i < 6; ++i) wz.push_back(at(wzp, i));
  Node node;
  node.type = OpType::ConvInteger;
  node.setInt("group", 2);
  node.setInts("pads", {1, 1, 1, 1});
  node.setInts("strides", {2, 2});
  Shape shape;
  std::vector<int64_t> e = naiveIntConv(x, w, 3, wz, 2, 1, 2, &shape);
  Tensor y = run1(node, {in(x), in(w), in(xzp), in(wzp)});
  ASSERT_EQ(y.shape(), shape);
  for (int64_t i = 0; i < y.elements(); ++i) ASSERT_EQ(y.data<int32_t>()[i], e[i]);
}

TEST(QLinearConvOp, PerChannelScalesAndBias) {
  Tensor x = randomTensor(DataType::Int8, {1, 3, 6, 5}, 70, -128, 127), w = randomTensor(DataType::Int8, {4, 3, 2, 2}, 71, -128, 127);
  Tensor xs = makeTensor<float>({}, {0.05f}), ws = makeTensor<float>({4}, {0.01f, 0.02f, 0.005f, 0.03f});
  Tensor ys = makeTensor<float>({}, {2.f});
  Tensor xzp = makeTensor<int8_t>({}, {-3}), wzp = makeTensor<int8_t>({4}, {0, 0, 0, 0}), yzp = makeTensor<int8_t>({}, {5});
  Tensor bias = makeTensor<int32_t>({4}, {100, -2000, 0, 37});
  Node node;
  node.type = OpType::QLinearConv;
  node.setInts("pads", {1, 0, 1, 0});
  Tensor y = run1(node, {in(x), in(xs), in(xzp), in(w), in(ws), in(wzp), in(ys), in(yzp), in(bias)});
  // pads {1, 0, 1, 0}: one extra row above and below, so compare against a padded naive run.
  Tensor xp(DataType::Int8, {1, 3, 8, 5});
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t q = 0; q < 5; ++q)
        xp.data<int8_t>()[(c * 8 + r) * 5 + q] = (r == 0 || r == 7) ? -3 : x.data<int8_t>()[(c * 6 + r - 1) * 5 + q];
  Shape shape;
  std::vector<int64_t> acc = naiveIntConv(xp, w, -3, {0}, 1, 0, 1, &shape);
  ASSERT_EQ(y.shape(), shape);
  const int64_t plane = shape[2] * shape[3];
  for (int64_t i = 0; i < y.elements(); ++i) {
    const int64_t m = i / plane % 4;
    const double mult = static_cast<float>(static_cast<float>(0.05f * ws.data<float>()[m]) / 2.f);
    const double v = std::nearbyint((acc[i] + bias.data<int32_t>()[m]) * mult + 5);
    ASSERT_EQ(at(y, i), std::min(127.0, std::max(-128.0, v))) << i;
  }
}

TEST(QuantizeOps, Errors) {
  std::vector<Tensor> out;
  Tensor x = randomTensor(DataType::Float32, {3, 4}, 80);
  Node q;
  q.type = OpType::QuantizeLinear;
  EXPECT_FALSE(runOp(q, {in(x), in(randomTensor(DataType::Float32, {5}, 81, 0.1, 1))}, 1, &out).isOk());  // axis 1 has 4
  Node blocked = q;
  blocked.setInt("block_size", 3);
  EXPECT_FALSE(runOp(blocked, {in(x), in(randomTensor(DataType::Float32, {3, 3}, 82, 0.1, 1))}, 1, &out).isOk());
  Node dq;
  dq.type = OpType::DequantizeLinear;
  EXPECT_FALSE(runOp(dq, {in(randomTensor(DataType::UInt8, {4}, 83, 0, 9)), in(makeTensor<float>({}, {1.f})),
                          in(makeTensor<int8_t>({}, {0}))},
                     1, &out)
                   .isOk());  // zero point dtype differs from x
  Node mm;
  mm.type = OpType::MatMulInteger;
  EXPECT_FALSE(runOp(mm, {in(randomTensor(DataType::Float32, {2, 3}, 84)), in(randomTensor(DataType::Float32, {3, 2}, 85))},
                     1, &out)
                   .isOk());
  Node conv;
  conv.type = OpType::ConvInteger;
  conv.setInt("group", 2);
  EXPECT_FALSE(runOp(conv, {in(randomTensor(DataType::UInt8, {1, 3, 4, 4}, 86, 0, 9)),
                            in(randomTensor(DataType::UInt8, {2, 3, 2, 2}, 87, 0, 9))},
                     1, &out)
                   .isOk());
}

}  // namespace
}  // namespace osprey::test
