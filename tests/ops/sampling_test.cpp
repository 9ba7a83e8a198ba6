// GridSample, AffineGrid and Col2Im against naive loops written here: 2-D and 3-D sampling with
// explicit corner formulas, the affine grid from its definition, and Col2Im by gathering, for
// every image pixel, the columns that cover it.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

double unnormalize(double g, int64_t size, bool align) {
  return align ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
}

double reflectCoord(double x, double lo, double hi) {
  const double span = hi - lo;
  if (span <= 0) return lo;
  while (x < lo || x > hi) x = x < lo ? 2 * lo - x : 2 * hi - x;  // mirror until inside
  return x;
}

// The value at integer position (r, c) of a plane after the padding rule.
double pixel(const Tensor& x, int64_t plane, int64_t h, int64_t w, int64_t r, int64_t c, const std::string& padding,
             bool align) {
  if (padding == "border") {
    r = std::min(std::max<int64_t>(r, 0), h - 1);
    c = std::min(std::max<int64_t>(c, 0), w - 1);
  } else if (padding == "reflection") {
    r = static_cast<int64_t>(reflectCoord(r, align ? 0 : -0.5, align ? h - 1 : h - 0.5));
    c = static_cast<int64_t>(reflectCoord(c, align ? 0 : -0.5, align ? w - 1 : w - 0.5));
    r = std::min(std::max<int64_t>(r, 0), h - 1);
    c = std::min(std::max<int64_t>(c, 0), w - 1);
  }
  if (r < 0 || r >= h || c < 0 || c >= w) return 0;
  return at(x, (plane * h + r) * w + c);
}

double cubic(double d) {
  const double a = -0.75;
  d = std::fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

Tensor naiveGridSample2d(const Tensor& x, const Tensor& grid, const std::string& mode, const std::string& padding,
                         bool align) {
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = grid.shape()[1], ow = grid.shape()[2];
  Tensor y(x.dtype(), {n, c, oh, ow});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double cx = unnormalize(at(grid, ((b * oh + i) * ow + j) * 2), w, align);
        double cy = unnormalize(at(grid, ((b * oh + i) * ow + j) * 2 + 1), h, align);
        if (mode == "nearest") cx = std::nearbyint(cx), cy = std::nearbyint(cy);
        const double lo = align ? 0 : -0.5;
        if (padding == "border") {
          if (cx < lo || cx > (align ? w - 1 : w - 0.5)) cx = std::min(std::max(cx, 0.0), w - 1.0);
          if (cy < lo || cy > (align ? h - 1 : h - 0.5)) cy = std::min(std::max(cy, 0.0), h - 1.0);
        } else if (padding == "reflection") {
          cx = reflectCoord(cx, lo, align ? w - 1 : w - 0.5);
          cy = reflectCoord(cy, lo, align ? h - 1 : h - 0.5);
        }
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t plane = b * c + ch;
          double v = 0;
          if (mode == "nearest") {
            v = pixel(x, plane, h, w, static_cast<int64_t>(cy), static_cast<int64_t>(cx), padding, align);
          } else {
            const int64_t x0 = static_cast<int64_t>(std::floor(cx)), y0 = static_cast<int64_t>(std::floor(cy));
            const int64_t reach = mode == "linear" ? 0 : 1;
            for (int64_t r = y0 - reach; r <= y0 + 1 + reach; ++r)
              for (int64_t q = x0 - reach; q <= x0 + 1 + reach; ++q) {
                const double wy = mode == "linear" ? 1 - std::fabs(cy - r) : cubic(cy - r);
                const double wx = mode == "linear" ? 1 - std::fabs(cx - q) : cubic(cx - q);
                v += wy * wx * pixel(x, plane, h, w, r, q, padding, align);
              }
          }
          storeFromDouble(x.dtype(), y.data(), ((plane * oh) + i) * ow + j, v);
        }
      }
  return y;
}

TEST(GridSampleOp, ModesPaddingsAlign2d) {
  Tensor x = randomTensor(DataType::Float32, {2, 3, 5, 7}, 1, -2, 2);
  Tensor grid = randomTensor(DataType::Float32, {2, 4, 6, 2}, 2, -1.4, 1.4);  // some points outside
  for (std::string mode : {"nearest", "linear", "cubic"})
    for (std::string padding : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) {
        SCOPED_TRACE(mode + " " + padding + (align ? " align" : ""));
        Node node;
        node.type = OpType::GridSample;
        node.setString("mode", mode);
        node.setString("padding_mode", padding);
        node.setInt("align_corners", align);
        std::vector<Tensor> out;
        Status st = runOp(node, {in(x), in(grid)}, 1, &out);
        ASSERT_TRUE(st.isOk()) << st.message();
        expectNear(out[0], naiveGridSample2d(x, grid, mode, padding, align), 1e-5, 1e-4);
      }
}

TEST(GridSampleOp, Trilinear3d) {
  Tensor x = randomTensor(DataType::Float32, {1, 2, 3, 4, 5}, 3, -2, 2);
  Tensor grid = randomTensor(DataType::Float32, {1, 2, 3, 4, 3}, 4, -1, 1);
  Node node;
  node.type = OpType::GridSample;
  std::vector<Tensor> out;
  ASSERT_TRUE(runOp(node, {in(x), in(grid)}, 1, &out).isOk());
  Tensor expected(DataType::Float32, {1, 2, 2, 3, 4});
  const int64_t dims[3] = {3, 4, 5};
  for (int64_t ch = 0; ch < 2; ++ch)
    for (int64_t o = 0; o < 24; ++o) {
      double c[3];
      for (int d = 0; d < 3; ++d) c[d] = unnormalize(at(grid, o * 3 + (2 - d)), dims[d], false);
      double v = 0;
      for (int64_t corner = 0; corner < 8; ++corner) {
        double wgt = 1;
        int64_t idx[3];
        bool inside = true;
        for (int d = 0; d < 3; ++d) {
          idx[d] = static_cast<int64_t>(std::floor(c[d])) + ((corner >> (2 - d)) & 1);
          wgt *= 1 - std::fabs(c[d] - idx[d]);
          inside = inside && idx[d] >= 0 && idx[d] < dims[d];
        }
        if (inside) v += wgt * at(x, ((ch * 3 + idx[0]) * 4 + idx[1]) * 5 + idx[2]);
      }
      expected.data<float>()[ch * 24 + o] = static_cast<float>(v);
    }
  expectNear(out[0], expected, 1e-5, 1e-4);
}

TEST(AffineGridOp, TwoAndThreeDimensions) {
  for (bool align : {false, true}) {
    Tensor theta = randomTensor(DataType::Float32, {2, 2, 3}, 10);
    Node node;
    node.type = OpType::AffineGrid;
    node.setInt("align_corners", align);
    std::vector<Tensor> out;
    ASSERT_TRUE(runOp(node, {in(theta), constant(makeTensor<int64_t>({4}, {2, 3, 5, 7}))}, 1, &out).isOk());
    ASSERT_EQ(out[0].shape(), (Shape{2, 5, 7, 2}));
    auto coord = [&](int64_t i, int64_t n) { return align ? -1 + 2.0 * i / (n - 1) : (2.0 * i + 1) / n - 1; };
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 7; ++j)
          for (int64_t k = 0; k < 2; ++k) {
            const double e = at(theta, b * 6 + k * 3) * coord(j, 7) + at(theta, b * 6 + k * 3 + 1) * coord(i, 5) +
                             at(theta, b * 6 + k * 3 + 2);
            ASSERT_NEAR(at(out[0], ((b * 5 + i) * 7 + j) * 2 + k), e, 1e-5);
          }
    Tensor theta3 = randomTensor(DataType::Float32, {1, 3, 4}, 11);
    ASSERT_TRUE(runOp(node, {in(theta3), constant(makeTensor<int64_t>({5}, {1, 1, 2, 3, 4}))}, 1, &out).isOk());
    ASSERT_EQ(out[0].shape(), (Shape{1, 2, 3, 4, 3}));
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j)
          for (int64_t k = 0; k < 3; ++k) {
            const double e = at(theta3, k * 4) * coord(j, 4) + at(theta3, k * 4 + 1) * coord(i, 3) +
                             at(theta3, k * 4 + 2) * coord(d, 2) + at(theta3, k * 4 + 3);
            ASSERT_NEAR(at(out[0], ((d * 3 + i) * 4 + j) * 3 + k), e, 1e-5);
          }
  }
}

TEST(Col2ImOp, GathersOverlappingColumns) {
  // Image 7 x 6, block 3 x 2, dilation (1, 2), stride (2, 1), pads (1, 0, 1, 1).
  const int64_t H = 7, W = 6, kh = 3, kw = 2, dh = 1, dw = 2, sh = 2, sw = 1, pt = 1, pl = 0, pb = 1, pr = 1;
  const int64_t bh = (H + pt + pb - ((kh - 1) * dh + 1)) / sh + 1, bw = (W + pl + pr - ((kw - 1) * dw + 1)) / sw + 1;
  Tensor cols = randomTensor(DataType::Float32, {2, 3 * kh * kw, bh * bw}, 20);
  Node node;
  node.type = OpType::Col2Im;
  node.setInts("dilations", {dh, dw});
  node.setInts("strides", {sh, sw});
  node.setInts("pads", {pt, pl, pb, pr});
  std::vector<Tensor> out;
  Status st = runOp(node, {in(cols), constant(makeTensor<int64_t>({2}, {H, W})), constant(makeTensor<int64_t>({2}, {kh, kw}))},
                    1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  Tensor expected(DataType::Float32, {2, 3, H, W});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t r = 0; r < H; ++r)
        for (int64_t q = 0; q < W; ++q) {
          double s = 0;
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
              const int64_t yr = r + pt - a * dh, yc = q + pl - b * dw;  // block origin * stride
              if (yr < 0 || yc < 0 || yr % sh || yc % sw || yr / sh >= bh || yc / sw >= bw) continue;
              s += at(cols, ((n * 3 + c) * kh * kw + a * kw + b) * bh * bw + (yr / sh) * bw + yc / sw);
            }
          expected.data<float>()[((n * 3 + c) * H + r) * W + q] = static_cast<float>(s);
        }
  expectNear(out[0], expected, 1e-5, 1e-5);
}

TEST(SamplingOps, Errors) {
  std::vector<Tensor> out;
  Node gs;
  gs.type = OpType::GridSample;
  Tensor x = randomTensor(DataType::Float32, {1, 2, 4, 4}, 30);
  EXPECT_FALSE(runOp(gs, {in(x), in(randomTensor(DataType::Float32, {1, 3, 3, 3}, 31))}, 1, &out).isOk());
  gs.setString("mode", "area");
  EXPECT_FALSE(runOp(gs, {in(x), in(randomTensor(DataType::Float32, {1, 3, 3, 2}, 32))}, 1, &out).isOk());
  Node ag;
  ag.type = OpType::AffineGrid;
  EXPECT_FALSE(runOp(ag, {in(randomTensor(DataType::Float32, {2, 2, 3}, 33)), constant(makeTensor<int64_t>({4}, {1, 1, 3, 3}))},
                     1, &out)
                   .isOk());  // theta batch 2, size batch 1
  Node c2i;
  c2i.type = OpType::Col2Im;
  EXPECT_FALSE(runOp(c2i, {in(randomTensor(DataType::Float32, {1, 4, 5}, 34)), constant(makeTensor<int64_t>({2}, {3, 3})),
                           constant(makeTensor<int64_t>({2}, {2, 2}))},
                     1, &out)
                   .isOk());  // 4 blocks fit, not 5
}

}  // namespace
}  // namespace osprey::test
