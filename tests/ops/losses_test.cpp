// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against naive loops written here over
// (N, C, d...) multi-indices, for every reduction, with and without weights and ignore_index.
#include <cmath>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace osprey::test {
namespace {

struct LossCase {
  std::string reduction;
  bool weighted = false;
  bool ignore = false;
};

// loss per position from log-probabilities lp (N, C, inner); returns the reduced or full tensor.
Tensor naiveLoss(const std::vector<double>& lp, const Shape& xShape, const Tensor& target, const Tensor* weight,
                 const LossCase& c, int64_t ignoreIndex) {
  const int64_t n = xShape[0], classes = xShape[1], inner = target.elements() / n;
  std::vector<double> loss(target.elements());
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t p = b * inner + d, t = static_cast<int64_t>(at(target, p));
      if (c.ignore && t == ignoreIndex) continue;
      const double w = weight ? at(*weight, t) : 1.0;
      loss[p] = -lp[(b * classes + t) * inner + d] * w;
      sum += loss[p];
      wsum += w;
    }
  if (c.reduction == "none") {
    Tensor y(DataType::Float32, target.shape());
    for (size_t i = 0; i < loss.size(); ++i) y.data<float>()[i] = static_cast<float>(loss[i]);
    return y;
  }
  Tensor y(DataType::Float32, {});
  y.data<float>()[0] = static_cast<float>(c.reduction == "sum" ? sum : sum / wsum);
  return y;
}

Tensor randomTargets(const Shape& shape, int64_t classes, int64_t ignoreIndex, uint32_t seed) {
  Tensor t = randomTensor(DataType::Int64, shape, seed, 0, static_cast<double>(classes));
  for (int64_t i = 0; i < t.elements(); i += 5) t.data<int64_t>()[i] = ignoreIndex;  // some ignored positions
  return t;
}

const std::vector<LossCase> kCases = {{"none", false, false}, {"sum", false, false}, {"mean", false, false},
                                      {"none", true, true},   {"sum", true, true},   {"mean", true, true},
                                      {"mean", false, true},  {"mean", true, false}};

TEST(NllLossOp, ReductionsWeightsIgnoreIndex) {
  for (const Shape& xShape : {Shape{5, 4}, Shape{3, 5, 7}, Shape{2, 3, 4, 3}}) {
    Tensor x = randomTensor(DataType::Float32, xShape, 1, -3, 0);
    Shape tShape{xShape[0]};
    for (size_t d = 2; d < xShape.size(); ++d) tShape.push_back(xShape[d]);
    const int64_t classes = xShape[1], ignoreIndex = classes - 1;
    Tensor target = randomTargets(tShape, classes - 1, ignoreIndex, 2);
    Tensor weight = randomTensor(DataType::Float32, {classes}, 3, 0.5, 2);
    std::vector<double> lp(x.elements());
    for (int64_t i = 0; i < x.elements(); ++i) lp[i] = at(x, i);
    for (const LossCase& c : kCases) {
      SCOPED_TRACE(shapeToString(xShape) + " " + c.reduction + (c.weighted ? " weighted" : "") +
                   (c.ignore ? " ignore" : ""));
      Node node;
      node.type = OpType::NegativeLogLikelihoodLoss;
      node.setString("reduction", c.reduction);
      if (c.ignore) node.setInt("ignore_index", ignoreIndex);
      std::vector<OpInput> ins{in(x), in(target)};
      if (c.weighted) ins.push_back(in(weight));
      std::vector<Tensor> out;
      Status st = runOp(node, ins, 1, &out);
      ASSERT_TRUE(st.isOk()) << st.message();
      expectNear(out[0], naiveLoss(lp, xShape, target, c.weighted ? &weight : nullptr, c, ignoreIndex), 1e-5, 1e-5);
    }
  }
}

TEST(SoftmaxCrossEntropyOp, WithLogProb) {
  const Shape xShape{3, 5, 7};
  Tensor x = randomTensor(DataType::Float32, xShape, 10, -4, 4);
  Tensor target = randomTargets({3, 7}, 4, 4, 11);
  Tensor weight = randomTensor(DataType::Float32, {5}, 12, 0.5, 2);
  std::vector<double> lp(x.elements());
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t d = 0; d < 7; ++d) {
      double mx = -INFINITY, s = 0;
      for (int64_t c = 0; c < 5; ++c) mx = std::max(mx, at(x, (b * 5 + c) * 7 + d));
      for (int64_t c = 0; c < 5; ++c) s += std::exp(at(x, (b * 5 + c) * 7 + d) - mx);
      for (int64_t c = 0; c < 5; ++c) lp[(b * 5 + c) * 7 + d] = at(x, (b * 5 + c) * 7 + d) - mx - std::log(s);
    }
  Tensor expectedLp(DataType::Float32, xShape);
  for (int64_t i = 0; i < x.elements(); ++i) expectedLp.data<float>()[i] = static_cast<float>(lp[i]);
  for (const LossCase& c : kCases) {
    SCOPED_TRACE(c.reduction + (c.weighted ? " weighted" : "") + (c.ignore ? " ignore" : ""));
    Node node;
    node.type = OpType::SoftmaxCrossEntropyLoss;
    node.setString("reduction", c.reduction);
    if (c.ignore) node.setInt("ignore_index", 4);
    std::vector<OpInput> ins{in(x), in(target)};
    if (c.weighted) ins.push_back(in(weight));
    std::vector<Tensor> out;
    Status st = runOp(node, ins, 2, &out);
    ASSERT_TRUE(st.isOk()) << st.message();
    expectNear(out[0], naiveLoss(lp, xShape, target, c.weighted ? &weight : nullptr, c, 4), 1e-5, 1e-5);
    expectNear(out[1], expectedLp, 1e-5, 1e-5);
  }
}

TEST(LossOps, Errors) {
  std::vector<Tensor> out;
  Tensor x = randomTensor(DataType::Float32, {3, 4}, 20);
  Node nll;
  nll.type = OpType::NegativeLogLikelihoodLoss;
  EXPECT_FALSE(runOp(nll, {in(x), in(randomTensor(DataType::Int64, {4}, 21, 0, 3))}, 1, &out).isOk());  // shape
  Tensor outOfRange = makeTensor<int64_t>({3}, {0, 7, 1});
  EXPECT_FALSE(runOp(nll, {in(x), in(outOfRange)}, 1, &out).isOk());
  Node bad = nll;
  bad.setString("reduction", "max");
  EXPECT_FALSE(runOp(bad, {in(x), in(makeTensor<int64_t>({3}, {0, 1, 2}))}, 1, &out).isOk());
  Node sce;
  sce.type = OpType::SoftmaxCrossEntropyLoss;
  EXPECT_FALSE(runOp(sce, {in(x), in(randomTensor(DataType::Float32, {3}, 22))}, 1, &out).isOk());  // float target
  EXPECT_FALSE(runOp(sce, {in(x), in(makeTensor<int64_t>({3}, {0, 1, 2})), in(randomTensor(DataType::Float32, {3}, 23))},
                     1, &out)
                   .isOk());  // weight of the wrong length
}

}  // namespace
}  // namespace osprey::test
