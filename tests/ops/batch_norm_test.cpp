// BatchNormalization (inference and training form) against the formula evaluated naively here.
#include <cmath>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

Tensor naiveBatchNorm(const Tensor& x, const Tensor& scale, const Tensor& b, const Tensor& mean, const Tensor& var,
                      double epsilon) {
  Tensor y(x.dtype(), x.shape());
  const int64_t C = x.shape()[1];
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape().size(); ++d) inner *= x.shape()[d];
  for (int64_t i = 0; i < x.elements(); ++i) {
    int64_t c = (i / inner) % C;
    double v = (at(x, i) - at(mean, c)) / std::sqrt(at(var, c) + epsilon) * at(scale, c) + at(b, c);
    storeFromDouble(y.dtype(), y.data(), i, v);
  }
  return y;
}

void checkBatchNorm(const Shape& xs, DataType dtype, DataType paramType, float epsilon, double tol, uint32_t seed) {
  SCOPED_TRACE("x " + shapeToString(xs));
  const Shape cs{xs[1]};
  Tensor x = randomTensor(dtype, xs, seed, -3, 3);
  Tensor scale = randomTensor(paramType, cs, seed + 1, 0.5, 2);
  Tensor b = randomTensor(paramType, cs, seed + 2);
  Tensor mean = randomTensor(paramType, cs, seed + 3);
  Tensor var = randomTensor(paramType, cs, seed + 4, 0.1, 3);
  Node node;
  node.type = OpType::BatchNormalization;
  if (epsilon >= 0) node.setFloat("epsilon", epsilon);
  std::vector<Tensor> outs;
  Status st = runOp(node, {in(x), constant(scale), constant(b), constant(mean), constant(var)}, 1, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(outs[0], naiveBatchNorm(x, scale, b, mean, var, epsilon >= 0 ? static_cast<double>(epsilon) : 1e-5), tol,
             tol);
}

TEST(BatchNormTest, Float32Ranks) {
  checkBatchNorm({2, 5, 13, 11}, DataType::Float32, DataType::Float32, -1, 1e-5, 1);
  checkBatchNorm({3, 7}, DataType::Float32, DataType::Float32, 1e-3f, 1e-5, 2);
  checkBatchNorm({2, 3, 13}, DataType::Float32, DataType::Float32, 0.1f, 1e-5, 3);
  checkBatchNorm({1, 4, 3, 5, 7}, DataType::Float32, DataType::Float32, 1e-5f, 1e-5, 4);
}

TEST(BatchNormTest, OtherFloatTypesAndMixedParams) {
  checkBatchNorm({2, 5, 13, 11}, DataType::Float64, DataType::Float64, 1e-5f, 1e-7, 5);
  checkBatchNorm({2, 5, 13, 11}, DataType::Float16, DataType::Float16, 1e-5f, 1e-2, 6);
  checkBatchNorm({2, 5, 13, 11}, DataType::Float16, DataType::Float32, 1e-5f, 1e-2, 7);
  checkBatchNorm({2, 5, 13, 11}, DataType::BFloat16, DataType::Float32, 1e-5f, 5e-2, 8);
}

TEST(BatchNormTest, Errors) {
  auto run = [](Node node, const Shape& xs, const Shape& cs, int outputs = 1, DataType dtype = DataType::Float32) {
    node.type = OpType::BatchNormalization;
    std::vector<OpInput> inputs{in(randomTensor(dtype, xs, 1))};
    for (int i = 0; i < 4; ++i) inputs.push_back(constant(randomTensor(DataType::Float32, cs, 2 + i, 0.5, 1)));
    std::vector<Tensor> outs;
    return runOp(node, inputs, outputs, &outs);
  };
  Node plain;
  EXPECT_TRUE(run(plain, {2, 3, 4}, {3}).isOk());
  EXPECT_FALSE(run(plain, {2, 3, 4}, {4}).isOk());                      // channel mismatch
  EXPECT_FALSE(run(plain, {6}, {6}).isOk());                            // rank 1
  EXPECT_FALSE(run(plain, {2, 3, 4}, {3}, 3).isOk());                   // running stats outputs
  EXPECT_FALSE(run(plain, {2, 3, 4}, {3}, 1, DataType::Int32).isOk());  // dtype
}

// training_mode = 1: normalised by the batch's own mean and variance (over every axis but 1,
// divided by the count), running_mean / running_var = input * momentum + batch * (1 - momentum).
TEST(BatchNormTest, TrainingModeUsesBatchStatistics) {
  const Shape xs{3, 5, 7, 2}, cs{5};
  Tensor x = randomTensor(DataType::Float32, xs, 11, -3, 3);
  Tensor scale = randomTensor(DataType::Float32, cs, 12, 0.5, 2), b = randomTensor(DataType::Float32, cs, 13);
  Tensor mean = randomTensor(DataType::Float32, cs, 14), var = randomTensor(DataType::Float32, cs, 15, 0.1, 3);
  Node node;
  node.type = OpType::BatchNormalization;
  node.setInt("training_mode", 1);
  node.setFloat("momentum", 0.7f);
  node.setFloat("epsilon", 1e-3f);
  std::vector<Tensor> outs;
  Status st = runOp(node, {in(x), constant(scale), constant(b), constant(mean), constant(var)}, 3, &outs);
  ASSERT_TRUE(st.isOk()) << st.message();
  Tensor batchMean(DataType::Float32, cs), batchVar(DataType::Float32, cs), runMean(DataType::Float32, cs),
      runVar(DataType::Float32, cs);
  const int64_t inner = 7 * 2, count = 3 * inner;
  for (int64_t c = 0; c < 5; ++c) {
    double sum = 0, squares = 0;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < inner; ++i) sum += at(x, (n * 5 + c) * inner + i);
    const double m = sum / count;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < inner; ++i) squares += (at(x, (n * 5 + c) * inner + i) - m) * (at(x, (n * 5 + c) * inner + i) - m);
    storeFromDouble(DataType::Float32, batchMean.data(), c, m);
    storeFromDouble(DataType::Float32, batchVar.data(), c, squares / count);
    storeFromDouble(DataType::Float32, runMean.data(), c, at(mean, c) * 0.7 + m * (1 - 0.7));
    storeFromDouble(DataType::Float32, runVar.data(), c, at(var, c) * 0.7 + squares / count * (1 - 0.7));
  }
  expectNear(outs[0], naiveBatchNorm(x, scale, b, batchMean, batchVar, 1e-3), 1e-5, 1e-5);
  expectNear(outs[1], runMean, 1e-6, 1e-6);
  expectNear(outs[2], runVar, 1e-6, 1e-6);
}

}  // namespace
}  // namespace osprey::test
