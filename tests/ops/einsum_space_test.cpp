// Einsum (against loops written out per equation), DepthToSpace / SpaceToDepth and
// CenterCropPad (against per-element index formulas).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

Tensor runEinsum(const std::string& eq, const std::vector<Tensor>& xs) {
  Node n;
  n.type = OpType::Einsum;
  n.setString("equation", eq);
  std::vector<OpInput> ins;
  for (auto& x : xs) ins.push_back(in(x));
  std::vector<Tensor> out;
  Status st = runOp(n, ins, 1, &out);
  EXPECT_TRUE(st.isOk()) << eq << ": " << st.message();
  return st.isOk() ? out[0] : Tensor();
}

// Expected output of `shape` where element idx is fn(idx).
Tensor build(DataType dt, const Shape& shape, const std::function<double(const std::vector<int64_t>&)>& fn) {
  Tensor y(dt, shape);
  for (int64_t i = 0; i < y.elements(); ++i) storeFromDouble(dt, y.data(), i, fn(unravel(i, shape)));
  return y;
}

double el(const Tensor& t, const std::vector<int64_t>& idx) { return at(t, ravel(idx, t.shape())); }

TEST(EinsumOp, ContractionsAndLayouts) {
  const DataType f = DataType::Float64;
  Tensor a = randomTensor(f, {5, 7}, 1), b = randomTensor(f, {7, 3}, 2), c = randomTensor(f, {3, 4}, 3);
  Tensor sq = randomTensor(f, {6, 6}, 4), v = randomTensor(f, {7}, 5), w = randomTensor(f, {5}, 6);
  auto matmul = [&](const std::vector<int64_t>& i) {
    double s = 0;
    for (int64_t k = 0; k < 7; ++k) s += el(a, {i[0], k}) * el(b, {k, i[1]});
    return s;
  };
  expectNear(runEinsum("ij,jk->ik", {a, b}), build(f, {5, 3}, matmul), 1e-12, 1e-12);
  expectNear(runEinsum("ij,jk", {a, b}), build(f, {5, 3}, matmul), 1e-12, 1e-12);  // implicit output
  expectNear(runEinsum("ij , jk -> ki", {a, b}),
             build(f, {3, 5}, [&](const std::vector<int64_t>& i) { return matmul({i[1], i[0]}); }), 1e-12, 1e-12);
  expectNear(runEinsum("ij->ji", {a}), build(f, {7, 5}, [&](const std::vector<int64_t>& i) { return el(a, {i[1], i[0]}); }), 0, 0);
  // Implicit output sorts letters: "ba" gives "ab", i.e. the transpose.
  expectNear(runEinsum("ba", {a}), build(f, {7, 5}, [&](const std::vector<int64_t>& i) { return el(a, {i[1], i[0]}); }), 0, 0);
  expectNear(runEinsum("ij->", {a}), build(f, {}, [&](const std::vector<int64_t>&) {
               double s = 0;
               for (int64_t i = 0; i < a.elements(); ++i) s += at(a, i);
               return s;
             }), 1e-12, 1e-12);
  expectNear(runEinsum("ii", {sq}), build(f, {}, [&](const std::vector<int64_t>&) {
               double s = 0;
               for (int64_t i = 0; i < 6; ++i) s += el(sq, {i, i});
               return s;
             }), 1e-12, 1e-12);
  expectNear(runEinsum("ii->i", {sq}), build(f, {6}, [&](const std::vector<int64_t>& i) { return el(sq, {i[0], i[0]}); }), 0, 0);
  expectNear(runEinsum("i,j->ij", {w, v}),
             build(f, {5, 7}, [&](const std::vector<int64_t>& i) { return el(w, {i[0]}) * el(v, {i[1]}); }), 1e-12, 1e-12);
  expectNear(runEinsum("i,i", {v, v}), build(f, {}, [&](const std::vector<int64_t>&) {
               double s = 0;
               for (int64_t i = 0; i < 7; ++i) s += el(v, {i}) * el(v, {i});
               return s;
             }), 1e-12, 1e-12);
  expectNear(runEinsum("ab,bc,cd->ad", {a, b, c}), build(f, {5, 4}, [&](const std::vector<int64_t>& i) {
               double s = 0;
               for (int64_t k = 0; k < 7; ++k)
                 for (int64_t l = 0; l < 3; ++l) s += el(a, {i[0], k}) * el(b, {k, l}) * el(c, {l, i[1]});
               return s;
             }), 1e-12, 1e-12);
}

TEST(EinsumOp, EllipsisBroadcastAndDtypes) {
  const DataType f = DataType::Float32;
  Tensor x = randomTensor(f, {2, 3, 5, 4}, 7), y = randomTensor(f, {3, 4, 6}, 8);  // batch dims broadcast
  expectNear(runEinsum("...ij,...jk->...ik", {x, y}), build(f, {2, 3, 5, 6}, [&](const std::vector<int64_t>& i) {
               double s = 0;
               for (int64_t k = 0; k < 4; ++k) s += el(x, {i[0], i[1], i[2], k}) * el(y, {i[1], k, i[3]});
               return s;
             }), 1e-5, 1e-5);
  Tensor d = randomTensor(f, {3, 4, 4}, 9);
  expectNear(runEinsum("...ii->...i", {d}), build(f, {3, 4}, [&](const std::vector<int64_t>& i) { return el(d, {i[0], i[1], i[1]}); }), 0, 0);
  // Implicit output puts the ellipsis first.
  expectNear(runEinsum("i...->...i", {d}), runEinsum("i...", {d}), 0, 0);
  Tensor p = randomTensor(DataType::Int32, {4, 3}, 10, -5, 5), q = randomTensor(DataType::Int32, {3, 2}, 11, -5, 5);
  expectNear(runEinsum("ij,jk->ik", {p, q}), build(DataType::Int32, {4, 2}, [&](const std::vector<int64_t>& i) {
               double s = 0;
               for (int64_t k = 0; k < 3; ++k) s += el(p, {i[0], k}) * el(q, {k, i[1]});
               return s;
             }), 0, 0);
  Tensor h = randomTensor(DataType::Float16, {3, 5}, 12);
  expectNear(runEinsum("ij->j", {h}), build(DataType::Float16, {5}, [&](const std::vector<int64_t>& i) {
               double s = 0;
               for (int64_t k = 0; k < 3; ++k) s += el(h, {k, i[0]});
               return s;
             }), 1e-2, 1e-2);
}

TEST(EinsumOp, Errors) {
  Tensor a = randomTensor(DataType::Float32, {5, 7}, 1), b = randomTensor(DataType::Float32, {6, 3}, 2);
  std::vector<Tensor> out;
  auto bad = [&](const std::string& eq, std::vector<OpInput> ins) {
    Node n;
    n.type = OpType::Einsum;
    n.setString("equation", eq);
    return !runOp(n, ins, 1, &out).isOk();
  };
  EXPECT_TRUE(bad("ij,jk->ik", {in(a), in(b)}));  // 7 vs 6
  EXPECT_TRUE(bad("ijk->i", {in(a)}));             // rank
  EXPECT_TRUE(bad("ij->k", {in(a)}));              // unknown output label
  EXPECT_TRUE(bad("ij->ii", {in(a)}));             // repeated output label
  EXPECT_TRUE(bad("ij,jk", {in(a)}));              // term count
  EXPECT_TRUE(bad("i1", {in(a)}));                 // bad character
  EXPECT_TRUE(bad("", {in(a)}));
}

// ---- DepthToSpace / SpaceToDepth ----

TEST(DepthSpaceOp, BothModesAndInverse) {
  const int64_t n = 2, c = 12, h = 3, w = 5;
  for (int64_t b : {1, 2}) {
    Tensor x = randomTensor(DataType::Float32, {n, c, h, w}, 13 + b);
    for (const char* mode : {"DCR", "CRD"}) {
      Node node;
      node.type = OpType::DepthToSpace;
      node.setInt("blocksize", b);
      node.setString("mode", mode);
      std::vector<Tensor> out;
      ASSERT_TRUE(runOp(node, {in(x)}, 1, &out).isOk());
      const int64_t oc = c / (b * b);
      const bool dcr = std::string(mode) == "DCR";
      expectNear(out[0], build(DataType::Float32, {n, oc, h * b, w * b}, [&](const std::vector<int64_t>& i) {
                   const int64_t b1 = i[2] % b, b2 = i[3] % b;
                   const int64_t ch = dcr ? (b1 * b + b2) * oc + i[1] : (i[1] * b + b1) * b + b2;
                   return el(x, {i[0], ch, i[2] / b, i[3] / b});
                 }), 0, 0);
    }
    // SpaceToDepth inverts DCR.
    Tensor s = randomTensor(DataType::Int8, {n, 3, h * b, w * b}, 20, -100, 100);
    Node s2d;
    s2d.type = OpType::SpaceToDepth;
    s2d.setInt("blocksize", b);
    std::vector<Tensor> out;
    ASSERT_TRUE(runOp(s2d, {in(s)}, 1, &out).isOk());
    expectNear(out[0], build(DataType::Int8, {n, 3 * b * b, h, w}, [&](const std::vector<int64_t>& i) {
                 const int64_t blk = i[1] / 3, ch = i[1] % 3;
                 return el(s, {i[0], ch, i[2] * b + blk / b, i[3] * b + blk % b});
               }), 0, 0);
  }
  std::vector<Tensor> out;
  Node bad;
  bad.type = OpType::DepthToSpace;
  bad.setInt("blocksize", 5);
  EXPECT_FALSE(runOp(bad, {in(randomTensor(DataType::Float32, {1, 12, 2, 2}, 1))}, 1, &out).isOk());
  bad.setInt("blocksize", 2);
  bad.setString("mode", "XYZ");
  EXPECT_FALSE(runOp(bad, {in(randomTensor(DataType::Float32, {1, 12, 2, 2}, 1))}, 1, &out).isOk());
  EXPECT_FALSE(runOp(bad, {in(randomTensor(DataType::Float32, {12, 2, 2}, 1))}, 1, &out).isOk());
  Node s2d;
  s2d.type = OpType::SpaceToDepth;
  s2d.setInt("blocksize", 2);
  EXPECT_FALSE(runOp(s2d, {in(randomTensor(DataType::Float32, {1, 2, 3, 4}, 1))}, 1, &out).isOk());
}

// ---- CenterCropPad ----

TEST(CenterCropPadOp, CropPadAndAxes) {
  Tensor x = randomTensor(DataType::Float32, {7, 6, 3}, 30);
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  for (const Case& c : {Case{{5, 9, 3}, {}}, Case{{4, 4}, {0, 1}}, Case{{10, 1}, {-3, -1}}, Case{{2}, {1}},
                        Case{{8, 3, 6}, {}}, Case{{7}, {0}}}) {
    Node n;
    n.type = OpType::CenterCropPad;
    if (!c.axes.empty()) n.setInts("axes", c.axes);
    Tensor shape = makeTensor<int64_t>({static_cast<int64_t>(c.shape.size())}, c.shape);
    std::vector<Tensor> out;
    Status st = runOp(n, {in(x), constant(shape)}, 1, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    Shape target = x.shape();
    for (size_t i = 0; i < c.shape.size(); ++i) {
      int64_t a = c.axes.empty() ? static_cast<int64_t>(i) : c.axes[i];
      target[a < 0 ? a + 3 : a] = c.shape[i];
    }
    expectNear(out[0], build(DataType::Float32, target, [&](const std::vector<int64_t>& i) {
                 std::vector<int64_t> src(3);
                 for (int d = 0; d < 3; ++d) {
                   const int64_t len = x.shape()[d], t = target[d];
                   // Crop: start (len - t) / 2; pad: the input begins at (t - len) / 2.
                   src[d] = t <= len ? i[d] + (len - t) / 2 : i[d] - (t - len) / 2;
                   if (src[d] < 0 || src[d] >= len) return 0.0;
                 }
                 return el(x, src);
               }), 0, 0);
  }
  std::vector<Tensor> out;
  Node n;
  n.type = OpType::CenterCropPad;
  EXPECT_FALSE(runOp(n, {in(x), constant(makeTensor<int64_t>({2}, {1, 1}))}, 1, &out).isOk());  // 2 sizes, 3 axes
  EXPECT_FALSE(runOp(n, {in(x), constant(makeTensor<int64_t>({3}, {1, -1, 1}))}, 1, &out).isOk());
  n.setInts("axes", {3});
  EXPECT_FALSE(runOp(n, {in(x), constant(makeTensor<int64_t>({1}, {1}))}, 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
