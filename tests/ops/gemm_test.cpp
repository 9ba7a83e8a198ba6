// Gemm and MatMul against naive triple loops written here.
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "op_test_util.h"
#include "ops/op_def.h"

namespace osprey::test {
namespace {

// Element (r, c) of a 2-D tensor, read as its transpose when `trans`.
double at2(const Tensor& t, bool trans, int64_t r, int64_t c) {
  const int64_t cols = t.shape()[1];
  return trans ? at(t, c * cols + r) : at(t, r * cols + c);
}

double relu(double v) { return v > 0 ? v : 0; }

// Random operands in [lo, 4): non-negative for unsigned types so the naive double sums stay
// representable.
double lowFor(DataType t) { return t == DataType::UInt32 || t == DataType::UInt64 ? 0 : -4; }

struct GemmCase {
  int64_t M, N, K;
  bool transA = false, transB = false;
  float alpha = 1.f, beta = 1.f;
  bool hasC = true;
  Shape cShape{-1};  // {-1}: the full {M, N}
  bool relu = false;

  GemmCase(int64_t m, int64_t n, int64_t k, bool ta = false, bool tb = false)
      : M(m), N(n), K(k), transA(ta), transB(tb) {}
};

void checkGemm(const GemmCase& g, DataType dtype, double tol, uint32_t seed) {
  SCOPED_TRACE("M " + std::to_string(g.M) + " N " + std::to_string(g.N) + " K " + std::to_string(g.K));
  Tensor a = randomTensor(dtype, g.transA ? Shape{g.K, g.M} : Shape{g.M, g.K}, seed, lowFor(dtype), 4);
  Tensor b = randomTensor(dtype, g.transB ? Shape{g.N, g.K} : Shape{g.K, g.N}, seed + 1, lowFor(dtype), 4);
  Shape cs = g.cShape == Shape{-1} ? Shape{g.M, g.N} : g.cShape;
  Tensor c = randomTensor(dtype, cs, seed + 2, lowFor(dtype), 4);
  Node node;
  node.type = OpType::Gemm;
  if (g.transA) node.setInt("transA", 1);
  if (g.transB) node.setInt("transB", 1);
  if (g.alpha != 1.f) node.setFloat("alpha", g.alpha);
  if (g.beta != 1.f) node.setFloat("beta", g.beta);
  if (g.relu) node.setString("activation", "Relu");
  std::vector<OpInput> inputs{in(a), constant(b)};
  if (g.hasC) inputs.push_back(constant(c));
  std::vector<Tensor> outs;
  Status st = runOp(node, inputs, 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  Tensor expected(dtype, {g.M, g.N});
  for (int64_t i = 0; i < g.M; ++i)
    for (int64_t j = 0; j < g.N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < g.K; ++k) sum += at2(a, g.transA, i, k) * at2(b, g.transB, k, j);
      double v = g.alpha * sum;
      if (g.hasC) {
        // Unidirectional broadcast: a size-1 (or missing) dim of C repeats.
        int64_t ci = cs.size() == 2 && cs[0] != 1 ? i : 0;
        int64_t cj = !cs.empty() && cs.back() != 1 ? j : 0;
        v += g.beta * at(c, ci * (cs.size() == 2 ? cs[1] : 0) + cj);
      }
      storeFromDouble(dtype, expected.data(), i * g.N + j, g.relu ? relu(v) : v);
    }
  expectNear(outs[0], expected, tol, tol);
}

TEST(GemmTest, Transposes) {
  for (int t = 0; t < 4; ++t) {
    GemmCase g(13, 7, 127);
    g.transA = t & 1;
    g.transB = t & 2;
    checkGemm(g, DataType::Float32, 1e-4, 1 + t);
  }
}

TEST(GemmTest, AlphaBetaAndBroadcastC) {
  GemmCase g(13, 27, 19);
  g.alpha = 0.5f;
  g.beta = -2.f;
  checkGemm(g, DataType::Float32, 1e-4, 10);
  for (Shape cs : {Shape{27}, Shape{1, 27}, Shape{13, 1}, Shape{1}, Shape{}, Shape{1, 1}}) {
    SCOPED_TRACE(shapeToString(cs));
    g.cShape = cs;
    checkGemm(g, DataType::Float32, 1e-4, 11);
  }
  GemmCase noC(13, 7, 5);
  noC.hasC = false;
  noC.transB = true;
  noC.relu = true;
  checkGemm(noC, DataType::Float32, 1e-4, 12);
}

TEST(GemmTest, LargeAndOtherTypes) {
  checkGemm(GemmCase(37, 300, 150, false, true), DataType::Float32, 1e-3, 20);  // crosses the 256/128 tiles
  GemmCase scaled(13, 7, 19, true, false);
  scaled.alpha = 2.f;
  scaled.beta = 3.f;
  checkGemm(scaled, DataType::Float64, 1e-10, 21);
  checkGemm(GemmCase(13, 7, 19, false, true), DataType::Int32, 0, 22);
  checkGemm(GemmCase(13, 7, 19, true, true), DataType::Int64, 0, 23);
  checkGemm(GemmCase(13, 7, 19), DataType::UInt32, 0, 24);
  checkGemm(GemmCase(13, 7, 19, false, true), DataType::Float16, 5e-2, 25);
  checkGemm(GemmCase(13, 7, 19), DataType::BFloat16, 1e-1, 26);
}

TEST(GemmTest, Errors) {
  auto run = [](Node node, const Shape& as, const Shape& bs, const Shape& cs, DataType dtype = DataType::Float32) {
    node.type = OpType::Gemm;
    std::vector<OpInput> inputs{in(randomTensor(dtype, as, 1)), in(randomTensor(dtype, bs, 2))};
    if (!cs.empty()) inputs.push_back(in(randomTensor(dtype, cs, 3)));
    std::vector<Tensor> outs;
    return runOp(node, inputs, 1, &outs);
  };
  Node n;
  EXPECT_FALSE(run(n, {3, 4}, {5, 6}, {}).isOk());         // K mismatch
  EXPECT_FALSE(run(n, {2, 3, 4}, {4, 6}, {}).isOk());      // rank 3
  EXPECT_FALSE(run(n, {3, 4}, {4, 6}, {3, 5}).isOk());     // C does not broadcast
  EXPECT_FALSE(run(n, {3, 4}, {4, 6}, {2, 3, 6}).isOk());  // C rank 3
  EXPECT_FALSE(run(n, {3, 4}, {4, 6}, {}, DataType::Int8).isOk());
  Node t;
  t.setInt("transB", 1);
  EXPECT_FALSE(run(t, {3, 4}, {4, 6}, {}).isOk());
}

// Naive numpy matmul; shapes follow the 1-D promotion and batch broadcast rules.
Tensor naiveMatMul(const Tensor& a, const Tensor& b, const Shape& outShape, bool applyRelu) {
  Shape sa = a.shape().size() == 1 ? Shape{1, a.shape()[0]} : a.shape();
  Shape sb = b.shape().size() == 1 ? Shape{b.shape()[0], 1} : b.shape();
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  const size_t rank = std::max(sa.size(), sb.size()) - 2;
  Shape batch(rank);
  for (int d = 0; d < static_cast<int>(rank); ++d) {
    int ai = d - static_cast<int>(rank) + static_cast<int>(sa.size()) - 2;
    int bj = d - static_cast<int>(rank) + static_cast<int>(sb.size()) - 2;
    batch[d] = std::max(ai >= 0 ? sa[ai] : 1, bj >= 0 ? sb[bj] : 1);
  }
  Tensor y(a.dtype(), outShape);
  const int64_t batches = shapeElements(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Offsets of this batch element in A and B, walking the batch index from the last dim.
    int64_t rem = bi, offA = 0, offB = 0, strideA = M * K, strideB = K * N;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      int ai = d - static_cast<int>(rank) + static_cast<int>(sa.size()) - 2;
      int bj = d - static_cast<int>(rank) + static_cast<int>(sb.size()) - 2;
      if (ai >= 0) {
        offA += (sa[ai] == 1 ? 0 : idx) * strideA;
        strideA *= sa[ai];
      }
      if (bj >= 0) {
        offB += (sb[bj] == 1 ? 0 : idx) * strideB;
        strideB *= sb[bj];
      }
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < K; ++k) sum += at(a, offA + i * K + k) * at(b, offB + k * N + j);
        storeFromDouble(y.dtype(), y.data(), (bi * M + i) * N + j, applyRelu ? relu(sum) : sum);
      }
  }
  return y;
}

// Runs shape function and reference kernel directly on a multi-thread pool.
Tensor runThreaded(const Node& node, const Tensor& a, const Tensor& b, int threads) {
  const OpDef& def = opDef(node.type);
  TensorViews in(2), out(1);
  const Tensor* src[2] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    in[i].dtype = src[i]->dtype();
    in[i].shape = src[i]->shape();
    in[i].data = const_cast<void*>(src[i]->data());
  }
  EXPECT_TRUE(def.shape(node, in, out).isOk());
  Tensor result(out[0].dtype, out[0].shape);
  out[0].data = result.data();
  ThreadPool pool(threads);
  EXPECT_TRUE(def.reference(node, in, out, &pool).isOk());
  return result;
}

void checkMatMul(const Shape& as, const Shape& bs, const Shape& expectedShape, DataType dtype = DataType::Float32,
                 double tol = 1e-4, bool applyRelu = false, uint32_t seed = 1) {
  SCOPED_TRACE(shapeToString(as) + " x " + shapeToString(bs));
  Tensor a = randomTensor(dtype, as, seed, lowFor(dtype), 4);
  Tensor b = randomTensor(dtype, bs, seed + 1, lowFor(dtype), 4);
  Node node;
  node.type = OpType::MatMul;
  if (applyRelu) node.setString("activation", "Relu");
  std::vector<Tensor> outs;
  Status st = runOp(node, {in(a), constant(b)}, 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(outs[0].shape(), expectedShape);
  Tensor expected = naiveMatMul(a, b, expectedShape, applyRelu);
  expectNear(outs[0], expected, tol, tol);
  expectNear(runThreaded(node, a, b, 3), expected, tol, tol);
}

TEST(MatMulTest, TwoDimensional) {
  checkMatMul({13, 127}, {127, 7}, {13, 7});
  checkMatMul({37, 150}, {150, 300}, {37, 300}, DataType::Float32, 1e-3);
  checkMatMul({1, 5}, {5, 1}, {1, 1});
}

TEST(MatMulTest, OneDimensionalOperands) {
  checkMatMul({7}, {7, 5}, {5});
  checkMatMul({3, 7}, {7}, {3});
  checkMatMul({7}, {7}, {});
  checkMatMul({7}, {2, 7, 5}, {2, 5});
  checkMatMul({2, 3, 7}, {7}, {2, 3});
}

TEST(MatMulTest, BatchBroadcast) {
  checkMatMul({2, 3, 13, 7}, {7, 5}, {2, 3, 13, 5});     // shared B: folded into one product
  checkMatMul({13, 7}, {2, 3, 7, 5}, {2, 3, 13, 5});     // shared A
  checkMatMul({2, 1, 13, 7}, {3, 7, 5}, {2, 3, 13, 5});  // both broadcast
  checkMatMul({1, 3, 13, 7}, {2, 1, 7, 5}, {2, 3, 13, 5});
  checkMatMul({4, 13, 7}, {4, 7, 5}, {4, 13, 5});
  checkMatMul({1, 1, 13, 7}, {7, 5}, {1, 1, 13, 5});
  checkMatMul({2, 0, 7}, {7, 5}, {2, 0, 5});
}

TEST(MatMulTest, TypesAndActivation) {
  checkMatMul({2, 13, 7}, {7, 5}, {2, 13, 5}, DataType::Float32, 1e-4, true);
  checkMatMul({2, 13, 7}, {2, 7, 5}, {2, 13, 5}, DataType::Float64, 1e-10);
  checkMatMul({2, 13, 7}, {7, 5}, {2, 13, 5}, DataType::Int32, 0);
  checkMatMul({13, 7}, {3, 7, 5}, {3, 13, 5}, DataType::Int64, 0, true);
  checkMatMul({13, 7}, {7, 5}, {13, 5}, DataType::UInt64, 0);
  checkMatMul({2, 13, 7}, {7, 5}, {2, 13, 5}, DataType::Float16, 5e-2);
  checkMatMul({2, 13, 7}, {7, 5}, {2, 13, 5}, DataType::BFloat16, 1e-1);
}

TEST(MatMulTest, Errors) {
  auto run = [](const Shape& as, const Shape& bs, DataType dtype = DataType::Float32) {
    Node node;
    node.type = OpType::MatMul;
    std::vector<Tensor> outs;
    return runOp(node, {in(randomTensor(dtype, as, 1)), in(randomTensor(dtype, bs, 2))}, 1, &outs);
  };
  EXPECT_FALSE(run({3, 4}, {5, 6}).isOk());
  EXPECT_FALSE(run({2, 3, 4}, {3, 4, 6}).isOk());
  EXPECT_FALSE(run({}, {4, 6}).isOk());
  EXPECT_FALSE(run({3, 4}, {4, 6}, DataType::Bool).isOk());
  EXPECT_FALSE(run({3}, {4}).isOk());
}

// MatMul with a bias [N] (input 2): A @ B + bias over every row, then the activation; through
// the CPU backend (constant B and activation B) and the reference kernel directly.
void checkMatMulBias(const Shape& as, const Shape& bs, const Shape& expectedShape, DataType dtype = DataType::Float32,
                     double tol = 1e-4, bool applyRelu = false, uint32_t seed = 1) {
  SCOPED_TRACE(shapeToString(as) + " x " + shapeToString(bs) + " + bias");
  Tensor a = randomTensor(dtype, as, seed, lowFor(dtype), 4);
  Tensor b = randomTensor(dtype, bs, seed + 1, lowFor(dtype), 4);
  Tensor bias = randomTensor(dtype, {expectedShape.back()}, seed + 2, lowFor(dtype), 4);
  Tensor expected = naiveMatMul(a, b, expectedShape, false);
  const int64_t N = expectedShape.back();
  for (int64_t i = 0; i < expected.elements(); ++i) {
    const double v = at(expected, i) + at(bias, i % N);
    storeFromDouble(dtype, expected.data(), i, applyRelu ? relu(v) : v);
  }
  Node node;
  node.type = OpType::MatMul;
  if (applyRelu) node.setString("activation", "Relu");
  for (bool constantB : {true, false}) {
    std::vector<Tensor> outs;
    Status st = runOp(node, {in(a), constantB ? constant(b) : in(b), constant(bias)}, 1, &outs);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_EQ(outs[0].shape(), expectedShape);
    expectNear(outs[0], expected, tol, tol);
  }
  std::vector<Tensor> ref;
  Status st = referenceOp(node, {in(a), in(b), in(bias)}, 1, &ref);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(ref[0], expected, tol, tol);
}

TEST(MatMulBiasTest, ShapesAndBroadcast) {
  checkMatMulBias({13, 7}, {7, 5}, {13, 5});
  checkMatMulBias({1, 129}, {129, 33}, {1, 33}, DataType::Float32, 1e-4, true);
  checkMatMulBias({3, 7}, {7, 33}, {3, 33});
  checkMatMulBias({17, 129}, {129, 5}, {17, 5}, DataType::Float32, 1e-4, true);
  checkMatMulBias({7}, {7, 5}, {5});                               // 1-D A
  checkMatMulBias({2, 13, 7}, {2, 7, 5}, {2, 13, 5});              // batched 3-D
  checkMatMulBias({2, 3, 13, 7}, {7, 33}, {2, 3, 13, 33});         // shared B
  checkMatMulBias({2, 1, 3, 7}, {3, 7, 5}, {2, 3, 3, 5}, DataType::Float32, 1e-4, true);  // both broadcast
  checkMatMulBias({13, 7}, {2, 7, 5}, {2, 13, 5});                 // shared A
}

TEST(MatMulBiasTest, OtherTypes) {
  checkMatMulBias({2, 13, 7}, {7, 5}, {2, 13, 5}, DataType::Float64, 1e-10, true);
  checkMatMulBias({2, 13, 7}, {7, 5}, {2, 13, 5}, DataType::Float16, 5e-2);
  checkMatMulBias({13, 7}, {7, 5}, {13, 5}, DataType::Int32, 0, true);
}

TEST(MatMulBiasTest, Errors) {
  auto run = [](const Shape& as, const Shape& bs, const Shape& biasShape, DataType biasType = DataType::Float32) {
    Node node;
    node.type = OpType::MatMul;
    node.name = "mm_bias";
    std::vector<Tensor> outs;
    return runOp(node,
                 {in(randomTensor(DataType::Float32, as, 1)), constant(randomTensor(DataType::Float32, bs, 2)),
                  constant(randomTensor(biasType, biasShape, 3))},
                 1, &outs);
  };
  EXPECT_TRUE(run({3, 4}, {4, 6}, {6}).isOk());
  for (const Shape& bad : {Shape{5}, Shape{1, 6}, Shape{3, 6}, Shape{}, Shape{4}}) {
    Status st = run({3, 4}, {4, 6}, bad);
    ASSERT_FALSE(st.isOk()) << shapeToString(bad);
    EXPECT_NE(st.message().find("bias"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("mm_bias"), std::string::npos) << st.message();
  }
  Status st = run({3, 4}, {4, 6}, {6}, DataType::Float64);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("bias"), std::string::npos) << st.message();
  st = run({3, 4}, {4}, {1});  // B 1-D: the output has no N dimension
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("bias"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace osprey::test
