// LpPool, GlobalLpPool and MaxUnpool against naive loops written here (2-D windows placed by
// their own arithmetic: padding, strides, dilations, ceil_mode, SAME_UPPER).
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

struct Pool2d {
  int64_t kh, kw, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil = false, sameUpper = false;
};

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1, bool ceil) {
  const int64_t span = in + p0 + p1 - ((k - 1) * d + 1);
  int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (o - 1) * s >= in + p0) --o;
  return o;
}

Tensor naiveLpPool(const Tensor& x, Pool2d g, int64_t p) {
  const Shape& s = x.shape();
  const int64_t h = s[2], w = s[3];
  if (g.sameUpper) {
    auto same = [](int64_t in, int64_t k, int64_t st, int64_t d, int64_t* b, int64_t* e) {
      const int64_t out = (in + st - 1) / st, total = std::max<int64_t>(0, (out - 1) * st + (k - 1) * d + 1 - in);
      *b = total / 2, *e = total - total / 2;
    };
    same(h, g.kh, g.sh, g.dh, &g.pt, &g.pb);
    same(w, g.kw, g.sw, g.dw, &g.pl, &g.pr);
  }
  const int64_t oh = outSize(h, g.kh, g.sh, g.dh, g.pt, g.pb, g.ceil), ow = outSize(w, g.kw, g.sw, g.dw, g.pl, g.pr, g.ceil);
  Tensor y(x.dtype(), {s[0], s[1], oh, ow});
  for (int64_t plane = 0; plane < s[0] * s[1]; ++plane)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double sum = 0;
        for (int64_t a = 0; a < g.kh; ++a)
          for (int64_t b = 0; b < g.kw; ++b) {
            const int64_t r = i * g.sh - g.pt + a * g.dh, c = j * g.sw - g.pl + b * g.dw;
            if (r >= 0 && r < h && c >= 0 && c < w) sum += std::pow(std::fabs(at(x, (plane * h + r) * w + c)), p);
          }
        storeFromDouble(x.dtype(), y.data(), (plane * oh + i) * ow + j, std::pow(sum, 1.0 / p));
      }
  return y;
}

TEST(LpPoolOp, WindowsAndP) {
  Tensor x = randomTensor(DataType::Float32, {2, 3, 13, 7}, 1, -2, 2);
  struct Case {
    std::string name;
    Pool2d g;
    int64_t p;
  };
  std::vector<Case> cases = {
      {"default", {3, 2}, 2},
      {"strides pads", {3, 3, 2, 2, 1, 1, 1, 0, 2, 1}, 2},
      {"dilations p1", {2, 3, 1, 2, 2, 1}, 1},
      {"ceil p3", {3, 2, 2, 3, 1, 1, 0, 1, 1, 0, true}, 3},
      {"same upper", {4, 3, 2, 1, 1, 1, 0, 0, 0, 0, false, true}, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Pool2d& g = c.g;
    Node node;
    node.type = OpType::LpPool;
    node.setInts("kernel_shape", {g.kh, g.kw});
    node.setInts("strides", {g.sh, g.sw});
    node.setInts("dilations", {g.dh, g.dw});
    node.setInt("p", c.p);
    if (g.sameUpper)
      node.setString("auto_pad", "SAME_UPPER");
    else
      node.setInts("pads", {g.pt, g.pl, g.pb, g.pr});
    if (g.ceil) node.setInt("ceil_mode", 1);
    std::vector<Tensor> out;
    Status st = runOp(node, {in(x)}, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    expectNear(out[0], naiveLpPool(x, g, c.p), 1e-5, 1e-5);
  }
}

TEST(GlobalLpPoolOp, MatchesNaive) {
  Tensor x = randomTensor(DataType::Float32, {2, 3, 5, 7}, 2, -2, 2);
  for (int64_t p : {1, 2, 3}) {
    Node node;
    node.type = OpType::GlobalLpPool;
    node.setInt("p", p);
    Tensor expected(DataType::Float32, {2, 3, 1, 1});
    for (int64_t plane = 0; plane < 6; ++plane) {
      double sum = 0;
      for (int64_t i = 0; i < 35; ++i) sum += std::pow(std::fabs(at(x, plane * 35 + i)), p);
      expected.data<float>()[plane] = static_cast<float>(std::pow(sum, 1.0 / p));
    }
    std::vector<Tensor> out;
    ASSERT_TRUE(runOp(node, {in(x)}, 1, &out).isOk());
    expectNear(out[0], expected, 1e-5, 1e-5);
  }
}

TEST(MaxUnpoolOp, ScattersAndPadsToOutputShape) {
  // X (1, 2, 3, 2) unpooled with kernel 2, stride 2 -> (1, 2, 6, 4); indices pick one cell
  // of each 2x2 block.
  Tensor x = randomTensor(DataType::Float32, {1, 2, 3, 2}, 3, 1, 2);
  Tensor idx(DataType::Int64, {1, 2, 3, 2});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 2; ++j)
        idx.data<int64_t>()[(c * 3 + i) * 2 + j] = c * 24 + (2 * i + (i + c) % 2) * 4 + 2 * j + (j + i) % 2;
  for (bool withShape : {false, true}) {
    SCOPED_TRACE(withShape ? "output_shape" : "inferred");
    const Shape outShape = withShape ? Shape{1, 2, 7, 5} : Shape{1, 2, 6, 4};
    Tensor expected(DataType::Float32, outShape);
    for (int64_t k = 0; k < x.elements(); ++k) {
      const int64_t flat = idx.data<int64_t>()[k];  // position in the (1, 2, 6, 4) tensor
      const int64_t c = flat / 24, r = flat / 4 % 6, col = flat % 4;
      expected.data<float>()[(c * outShape[2] + r) * outShape[3] + col] = x.data<float>()[k];
    }
    Node node;
    node.type = OpType::MaxUnpool;
    node.setInts("kernel_shape", {2, 2});
    node.setInts("strides", {2, 2});
    std::vector<OpInput> ins{in(x), in(idx)};
    if (withShape) ins.push_back(constant(makeTensor<int64_t>({4}, {1, 2, 7, 5})));
    std::vector<Tensor> out;
    Status st = runOp(node, ins, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    expectNear(out[0], expected, 0, 0);
  }
}

TEST(PoolExtraOps, Errors) {
  std::vector<Tensor> out;
  Tensor x = randomTensor(DataType::Float32, {1, 2, 5, 5}, 4);
  Node lp;
  lp.type = OpType::LpPool;
  EXPECT_FALSE(runOp(lp, {in(x)}, 1, &out).isOk());  // kernel_shape missing
  lp.setInts("kernel_shape", {7, 2});
  EXPECT_FALSE(runOp(lp, {in(x)}, 1, &out).isOk());  // window larger than the input
  Node unpool;
  unpool.type = OpType::MaxUnpool;
  unpool.setInts("kernel_shape", {2, 2});
  Tensor bad = makeTensor<int64_t>({1, 1, 1, 2}, {0, 99});
  EXPECT_FALSE(runOp(unpool, {in(randomTensor(DataType::Float32, {1, 1, 1, 2}, 5)), in(bad)}, 1, &out).isOk());
  EXPECT_FALSE(runOp(unpool,
                     {in(randomTensor(DataType::Float32, {1, 1, 1, 2}, 5)), in(makeTensor<int64_t>({1, 1, 1, 2}, {0, 1})),
                      constant(makeTensor<int64_t>({4}, {1, 1, 1, 1}))},
                     1, &out)
                  .isOk());  // output_shape smaller than the unpooled shape
}

}  // namespace
}  // namespace osprey::test
