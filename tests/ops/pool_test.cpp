// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool against naive loops written here.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

struct PoolCase {
  Shape x;  // N, C, spatial...
  Shape kernel;
  std::vector<int64_t> strides, dilations, pads;
  std::string autoPad;
  bool ceilMode = false;
  bool countIncludePad = false;
  bool columnMajor = false;  // storage_order

  PoolCase(Shape xs, Shape k) : x(std::move(xs)), kernel(std::move(k)) {}
  PoolCase& withStrides(std::vector<int64_t> v) {
    strides = std::move(v);
    return *this;
  }
  PoolCase& withDilations(std::vector<int64_t> v) {
    dilations = std::move(v);
    return *this;
  }
  PoolCase& withPads(std::vector<int64_t> v) {
    pads = std::move(v);
    return *this;
  }
  PoolCase& withAutoPad(std::string v) {
    autoPad = std::move(v);
    return *this;
  }
  PoolCase& withCeilMode() {
    ceilMode = true;
    return *this;
  }
};

struct PoolDims {
  int rank;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

// Sizes as the ONNX pool specs give them, including ceil_mode's rule that a window starting
// in the end padding is dropped.
PoolDims dimsOf(const PoolCase& c) {
  PoolDims g;
  g.rank = static_cast<int>(c.kernel.size());
  for (int i = 0; i < g.rank; ++i) {
    int sl = 3 - g.rank + i;
    g.in[sl] = c.x[2 + i];
    g.k[sl] = c.kernel[i];
    if (!c.strides.empty()) g.s[sl] = c.strides[i];
    if (!c.dilations.empty()) g.d[sl] = c.dilations[i];
    if (!c.pads.empty() && c.autoPad.empty()) g.pb[sl] = c.pads[i], g.pe[sl] = c.pads[g.rank + i];
    int64_t extent = (g.k[sl] - 1) * g.d[sl] + 1;
    if (c.autoPad == "SAME_UPPER" || c.autoPad == "SAME_LOWER") {
      g.out[sl] = static_cast<int64_t>(std::ceil(static_cast<double>(g.in[sl]) / g.s[sl]));
      int64_t total = std::max<int64_t>(0, (g.out[sl] - 1) * g.s[sl] + extent - g.in[sl]);
      g.pe[sl] = c.autoPad == "SAME_UPPER" ? total - total / 2 : total / 2;
      g.pb[sl] = total - g.pe[sl];
      continue;
    }
    double span = static_cast<double>(g.in[sl] + g.pb[sl] + g.pe[sl] - extent) / g.s[sl];
    g.out[sl] = static_cast<int64_t>(c.ceilMode ? std::ceil(span) : std::floor(span)) + 1;
    if (c.ceilMode && (g.out[sl] - 1) * g.s[sl] >= g.in[sl] + g.pb[sl]) --g.out[sl];
  }
  return g;
}

Node makeNode(OpType type, const PoolCase& c) {
  Node node;
  node.type = type;
  node.setInts("kernel_shape", c.kernel);
  if (!c.strides.empty()) node.setInts("strides", c.strides);
  if (!c.dilations.empty()) node.setInts("dilations", c.dilations);
  if (!c.pads.empty()) node.setInts("pads", c.pads);
  if (!c.autoPad.empty()) node.setString("auto_pad", c.autoPad);
  if (c.ceilMode) node.setInt("ceil_mode", 1);
  if (c.countIncludePad) node.setInt("count_include_pad", 1);
  if (c.columnMajor) node.setInt("storage_order", 1);
  return node;
}

// Naive pooling: outputs[0] values, outputs[1] MaxPool indices.
std::vector<Tensor> naivePool(const PoolCase& c, bool isMax, const Tensor& x) {
  PoolDims g = dimsOf(c);
  Shape ys{c.x[0], c.x[1]};
  for (int i = 0; i < g.rank; ++i) ys.push_back(g.out[3 - g.rank + i]);
  Tensor y(x.dtype(), ys), idx(DataType::Int64, ys);
  const int64_t planes = c.x[0] * c.x[1], inPlane = g.in[0] * g.in[1] * g.in[2];
  int64_t yi = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          double best = -INFINITY, sum = 0;
          int64_t bestAt = -1, count = 0, padCount = 0;
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
                int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
                int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
                if (id >= -g.pb[0] && id < g.in[0] + g.pe[0] && ih >= -g.pb[1] && ih < g.in[1] + g.pe[1] &&
                    iw >= -g.pb[2] && iw < g.in[2] + g.pe[2])
                  ++padCount;
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
                double v = at(x, p * inPlane + (id * g.in[1] + ih) * g.in[2] + iw);
                if (bestAt < 0 || v > best) {
                  best = v;
                  // Column-major flattening runs the first spatial dim fastest.
                  bestAt = c.columnMajor ? id + g.in[0] * (ih + g.in[1] * iw) : (id * g.in[1] + ih) * g.in[2] + iw;
                }
                sum += v;
                ++count;
              }
          storeFromDouble(y.dtype(), y.data(), yi, isMax ? best : sum / (c.countIncludePad ? padCount : count));
          idx.data<int64_t>()[yi++] = p * inPlane + bestAt;
        }
  return {y, idx};
}

void checkPool(OpType type, const PoolCase& c, uint32_t seed, DataType dtype = DataType::Float32, double tol = 1e-5) {
  SCOPED_TRACE("x " + shapeToString(c.x) + " kernel " + shapeToString(c.kernel) + " seed " + std::to_string(seed));
  const bool isMax = type == OpType::MaxPool;
  Tensor x = randomTensor(dtype, c.x, seed, -50, 50);
  std::vector<Tensor> outs;
  Status st = runOp(makeNode(type, c), {in(x)}, isMax ? 2 : 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  std::vector<Tensor> expected = naivePool(c, isMax, x);
  expectNear(outs[0], expected[0], tol, tol);
  if (isMax) expectNear(outs[1], expected[1], 0, 0);
}

TEST(MaxPoolTest, ResNetStem) {
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 1);
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {2, 2}).withStrides({2, 2}), 2);
}

TEST(MaxPoolTest, DilationsAsymmetricPadsStorageOrder) {
  checkPool(OpType::MaxPool,
            PoolCase({2, 5, 13, 11}, {3, 2}).withStrides({1, 2}).withDilations({2, 3}).withPads({2, 0, 1, 1}), 3);
  PoolCase c = PoolCase({1, 3, 13, 11}, {3, 3}).withStrides({2, 1}).withDilations({1, 2}).withPads({1, 1, 0, 2});
  c.columnMajor = true;
  checkPool(OpType::MaxPool, c, 4);
}

TEST(MaxPoolTest, CeilModeDropsWindowStartingInPadding) {
  // in 5, kernel 2, stride 2, pads 1/1: ceil gives 4 windows, the last would start at padded
  // position 6 = in + pad_begin, inside the end padding, so 3 remain.
  PoolCase c = PoolCase({1, 2, 5, 5}, {2, 2}).withStrides({2, 2}).withPads({1, 1, 1, 1});
  c.ceilMode = true;
  ASSERT_EQ(dimsOf(c).out[2], 3);
  checkPool(OpType::MaxPool, c, 5);
  checkPool(OpType::AveragePool, c, 5);
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withCeilMode(), 6);
  checkPool(
      OpType::MaxPool,
      PoolCase({2, 3, 13, 12}, {3, 2}).withStrides({3, 3}).withDilations({1, 2}).withPads({1, 0, 0, 1}).withCeilMode(),
      7);
}

TEST(MaxPoolTest, AutoPad) {
  for (std::string mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(mode);
    checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {4, 3}).withStrides({2, 3}).withAutoPad(mode), 8);
    checkPool(OpType::MaxPool,
              PoolCase({1, 3, 13, 11}, {2, 3}).withStrides({3, 2}).withDilations({2, 1}).withAutoPad(mode), 9);
    checkPool(OpType::AveragePool, PoolCase({2, 3, 13, 11}, {4, 3}).withStrides({2, 3}).withAutoPad(mode), 10);
    PoolCase inc = PoolCase({1, 3, 13, 11}, {4, 3}).withStrides({2, 2}).withAutoPad(mode);
    inc.countIncludePad = true;
    checkPool(OpType::AveragePool, inc, 11);
  }
}

TEST(MaxPoolTest, OneAndThreeDimensionalAndBytes) {
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13}, {3}).withStrides({2}).withPads({1, 1}), 12);
  PoolCase c3 =
      PoolCase({1, 2, 5, 6, 7}, {2, 3, 2}).withStrides({1, 2, 2}).withDilations({2, 1, 1}).withPads({0, 1, 1, 1, 0, 1});
  checkPool(OpType::MaxPool, c3, 13);
  c3.columnMajor = true;
  checkPool(OpType::MaxPool, c3, 13);
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 14,
            DataType::Int8, 0);
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 15,
            DataType::UInt8, 0);
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 16,
            DataType::Float16, 0);
  checkPool(OpType::MaxPool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 17,
            DataType::Float64, 0);
}

TEST(MaxPoolTest, OnlyValuesOutput) {
  Tensor x = randomTensor(DataType::Float32, {2, 3, 13, 11}, 18);
  PoolCase c = PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1});
  std::vector<Tensor> outs;
  ASSERT_TRUE(runOp(makeNode(OpType::MaxPool, c), {in(x)}, 1, &outs).isOk());
  expectNear(outs[0], naivePool(c, true, x)[0], 0, 0);
}

TEST(AveragePoolTest, CountIncludePadCeilDilations) {
  PoolCase c = PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1});
  checkPool(OpType::AveragePool, c, 20);
  c.countIncludePad = true;
  checkPool(OpType::AveragePool, c, 21);
  c.ceilMode = true;  // the extra room ceil_mode adds does not count
  c.x = {2, 3, 12, 10};
  checkPool(OpType::AveragePool, c, 22);
  c.countIncludePad = false;
  checkPool(OpType::AveragePool, c, 23);
  checkPool(OpType::AveragePool,
            PoolCase({1, 3, 13, 11}, {3, 2}).withStrides({1, 2}).withDilations({2, 3}).withPads({2, 0, 1, 1}), 24);
  checkPool(OpType::AveragePool, PoolCase({2, 3, 13}, {4}).withStrides({3}).withPads({1, 2}), 25);
  checkPool(OpType::AveragePool,
            PoolCase({1, 2, 5, 6, 7}, {2, 3, 2}).withStrides({1, 2, 2}).withPads({0, 1, 1, 1, 0, 1}), 26);
  checkPool(OpType::AveragePool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 27,
            DataType::Float16, 2e-2);
  checkPool(OpType::AveragePool, PoolCase({2, 3, 13, 11}, {3, 3}).withStrides({2, 2}).withPads({1, 1, 1, 1}), 28,
            DataType::Float64, 1e-12);
}

void checkGlobal(OpType type, const Shape& xs, DataType dtype, double tol) {
  Tensor x = randomTensor(dtype, xs, 30, -10, 10);
  std::vector<Tensor> outs;
  Node node;
  node.type = type;
  ASSERT_TRUE(runOp(node, {in(x)}, 1, &outs).isOk());
  Shape ys(xs.size(), 1);
  ys[0] = xs[0];
  ys[1] = xs[1];
  Tensor expected(dtype, ys);
  const int64_t planes = xs[0] * xs[1], size = x.elements() / planes;
  for (int64_t p = 0; p < planes; ++p) {
    double best = -INFINITY, sum = 0;
    for (int64_t i = 0; i < size; ++i) {
      best = std::max(best, at(x, p * size + i));
      sum += at(x, p * size + i);
    }
    storeFromDouble(dtype, expected.data(), p, type == OpType::GlobalMaxPool ? best : sum / size);
  }
  expectNear(outs[0], expected, tol, tol);
}

TEST(GlobalPoolTest, AverageAndMax) {
  for (OpType t : {OpType::GlobalAveragePool, OpType::GlobalMaxPool}) {
    checkGlobal(t, {2, 5, 7, 7}, DataType::Float32, 1e-5);
    checkGlobal(t, {3, 4, 13}, DataType::Float32, 1e-5);
    checkGlobal(t, {1, 3, 3, 4, 5}, DataType::Float64, 1e-12);
    checkGlobal(t, {2, 5, 7, 7}, DataType::Float16, 1e-2);
  }
}

Status runPool(OpType type, Node node, const Shape& xs, DataType dtype = DataType::Float32) {
  node.type = type;
  std::vector<Tensor> outs;
  return runOp(node, {in(randomTensor(dtype, xs, 1))}, 1, &outs);
}

TEST(PoolTest, Errors) {
  Node none;
  EXPECT_FALSE(runPool(OpType::MaxPool, none, {1, 3, 8, 8}).isOk());  // kernel_shape missing
  Node k;
  k.setInts("kernel_shape", {3});
  EXPECT_FALSE(runPool(OpType::MaxPool, k, {1, 3, 8, 8}).isOk());  // wrong length
  k.setInts("kernel_shape", {9, 9});
  EXPECT_FALSE(runPool(OpType::MaxPool, k, {1, 3, 8, 8}).isOk());  // larger than input
  k.setInts("kernel_shape", {3, 3});
  EXPECT_FALSE(runPool(OpType::MaxPool, k, {3, 8}).isOk());  // no spatial dims
  EXPECT_FALSE(runPool(OpType::MaxPool, k, {1, 3, 8, 8}, DataType::Int32).isOk());
  EXPECT_FALSE(runPool(OpType::AveragePool, k, {1, 3, 8, 8}, DataType::Int8).isOk());
  Node c = k;
  c.setInt("ceil_mode", 2);
  EXPECT_FALSE(runPool(OpType::MaxPool, c, {1, 3, 8, 8}).isOk());
  Node s = k;
  s.setInts("strides", {1, 0});
  EXPECT_FALSE(runPool(OpType::AveragePool, s, {1, 3, 8, 8}).isOk());
  Node p = k;
  p.setInts("pads", {1, 1, 1});
  EXPECT_FALSE(runPool(OpType::AveragePool, p, {1, 3, 8, 8}).isOk());
  Node a = k;
  a.setString("auto_pad", "FULL");
  EXPECT_FALSE(runPool(OpType::MaxPool, a, {1, 3, 8, 8}).isOk());
  Node g;
  EXPECT_FALSE(runPool(OpType::GlobalAveragePool, g, {4}).isOk());
  EXPECT_FALSE(runPool(OpType::GlobalMaxPool, g, {1, 3, 4}, DataType::Int32).isOk());
}

}  // namespace
}  // namespace osprey::test
