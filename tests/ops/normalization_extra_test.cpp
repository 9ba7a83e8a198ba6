// InstanceNormalization, GroupNormalization, LRN, LpNormalization, MeanVarianceNormalization
// and RMSNormalization against naive double loops written here, which find each element's
// normalisation group from its multi-index.
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "converter/onnx/onnx_import.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

std::vector<int64_t> multiIndex(const Shape& s, int64_t flat) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) idx[d] = flat % s[d], flat /= s[d];
  return idx;
}

int64_t flatIndex(const Shape& s, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

// Mean and biased variance of the elements sharing key(i) with element i, for every i.
void groupStats(const Tensor& x, const std::function<int64_t(int64_t)>& key, std::vector<double>* mean,
                std::vector<double>* var) {
  const int64_t n = x.elements();
  mean->assign(n, 0);
  var->assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    double s = 0, c = 0;
    for (int64_t j = 0; j < n; ++j)
      if (key(j) == key(i)) s += at(x, j), c += 1;
    const double m = s / c;
    double v = 0;
    for (int64_t j = 0; j < n; ++j)
      if (key(j) == key(i)) v += (at(x, j) - m) * (at(x, j) - m);
    (*mean)[i] = m;
    (*var)[i] = v / c;
  }
}

Tensor run(Node node, const std::vector<OpInput>& inputs) {
  std::vector<Tensor> out;
  Status st = runOp(node, inputs, 1, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return st.isOk() ? out[0] : Tensor();
}

TEST(InstanceNormOp, MatchesNaive) {
  const Shape shape{2, 3, 5, 7};
  Tensor x = randomTensor(DataType::Float32, shape, 1, -3, 5);
  Tensor scale = randomTensor(DataType::Float32, {3}, 2, 0.5, 2), bias = randomTensor(DataType::Float32, {3}, 3);
  Node node = makeNode(OpType::InstanceNormalization);
  node.setFloat("epsilon", 0.01f);
  std::vector<double> mean, var;
  groupStats(x, [&](int64_t i) { return i / 35; }, &mean, &var);
  Tensor expected(DataType::Float32, shape);
  for (int64_t i = 0; i < x.elements(); ++i) {
    const int64_t c = multiIndex(shape, i)[1];
    storeFromDouble(DataType::Float32, expected.data(), i,
                    (at(x, i) - mean[i]) / std::sqrt(var[i] + double(0.01f)) * at(scale, c) + at(bias, c));
  }
  expectNear(run(node, {in(x), in(scale), in(bias)}), expected, 1e-5, 1e-5);
}

TEST(GroupNormOp, GroupsAndDtypes) {
  const Shape shape{2, 6, 3, 5};
  for (int64_t groups : {1, 2, 3, 6}) {
    for (DataType dt : {DataType::Float32, DataType::Float16}) {
      SCOPED_TRACE("groups " + std::to_string(groups) + " " + dataTypeName(dt));
      Tensor x = randomTensor(dt, shape, 10 + groups, -2, 4);
      Tensor scale = randomTensor(dt, {6}, 20, 0.5, 2), bias = randomTensor(dt, {6}, 21);
      Node node = makeNode(OpType::GroupNormalization);
      node.setInt("num_groups", groups);
      std::vector<double> mean, var;
      const int64_t perGroup = 6 / groups * 15;
      groupStats(x, [&](int64_t i) { return i / perGroup; }, &mean, &var);
      Tensor expected(dt, shape);
      for (int64_t i = 0; i < x.elements(); ++i) {
        const int64_t c = multiIndex(shape, i)[1];
        storeFromDouble(dt, expected.data(), i,
                        (at(x, i) - mean[i]) / std::sqrt(var[i] + double(1e-5f)) * at(scale, c) + at(bias, c));
      }
      const double tol = dt == DataType::Float16 ? 1e-2 : 1e-5;
      expectNear(run(node, {in(x), in(scale), in(bias)}), expected, tol, tol);
    }
  }
}

// GroupNormalization-18 took scale and bias per group; the importer repeats constant ones over
// each group's channels (opset 21's form) and declines non-constant ones with a clear status.
TEST(GroupNormOp, ImportsOpset18PerGroupScale) {
  auto floatTensor = [](const std::string& name, const std::vector<float>& v) {
    onnx::TensorProto t;
    t.name = name;
    t.dtype = DataType::Float32;
    t.rawType = 1;
    t.dims = {static_cast<int64_t>(v.size())};
    t.data.resize(v.size() * 4);
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
  };
  auto makeModel = [&](bool constantScale) {
    onnx::ModelProto m;
    m.irVersion = 8;
    m.opsets = {{"", 18}};
    onnx::ValueInfo x;
    x.name = "x", x.hasType = true, x.elemType = 1, x.hasShape = true, x.dims = {2, 6, 5};
    m.graph.inputs.push_back(x);
    onnx::ValueInfo y = x;
    y.name = "y";
    m.graph.outputs.push_back(y);
    m.graph.initializers.push_back(floatTensor("bias", {0.5f, -1.f, 2.f}));
    if (constantScale) {
      m.graph.initializers.push_back(floatTensor("scale", {1.5f, 0.25f, -2.f}));
    } else {
      onnx::ValueInfo sc = x;
      sc.name = "scale", sc.dims = {3};
      m.graph.inputs.push_back(sc);
    }
    onnx::NodeProto n;
    n.opType = "GroupNormalization";
    n.name = "gn";
    n.inputs = {"x", "scale", "bias"};
    n.outputs = {"y"};
    onnx::AttributeProto groups;
    groups.name = "num_groups", groups.type = onnx::kAttrInt, groups.i = 3;
    n.attributes.push_back(groups);
    m.graph.nodes.push_back(n);
    return m;
  };
  auto model = std::make_shared<Model>();
  int nodes = 0;
  onnx::ModelProto withScale = makeModel(true);
  Status st = onnx::importModel(&withScale, model.get(), &nodes);
  ASSERT_TRUE(st.isOk()) << st.message();
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  Tensor x = randomTensor(DataType::Float32, {2, 6, 5}, 90, -2, 3);
  std::vector<Tensor> out;
  st = session->run({{"x", x}}, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  const double scale[3] = {1.5, 0.25, -2}, bias[3] = {0.5, -1, 2};
  std::vector<double> mean, var;
  groupStats(x, [](int64_t i) { return i / 10; }, &mean, &var);  // 2 channels x 5 per group
  Tensor expected(DataType::Float32, {2, 6, 5});
  for (int64_t i = 0; i < x.elements(); ++i) {
    const int64_t g = i / 10 % 3;
    storeFromDouble(DataType::Float32, expected.data(), i,
                    (at(x, i) - mean[i]) / std::sqrt(var[i] + double(1e-5f)) * scale[g] + bias[g]);
  }
  expectNear(out[0], expected, 1e-5, 1e-5);
  auto declined = std::make_shared<Model>();
  onnx::ModelProto withoutScale = makeModel(false);
  st = onnx::importModel(&withoutScale, declined.get(), &nodes);
  EXPECT_FALSE(st.isOk());
}

TEST(LrnOp, OddAndEvenSizes) {
  const Shape shape{2, 7, 3, 4};
  Tensor x = randomTensor(DataType::Float32, shape, 30, -2, 2);
  for (int64_t size : {1, 3, 4}) {
    SCOPED_TRACE("size " + std::to_string(size));
    Node node = makeNode(OpType::LRN);
    node.setInt("size", size);
    node.setFloat("alpha", 0.3f);
    node.setFloat("beta", 0.6f);
    node.setFloat("bias", 1.5f);
    Tensor expected(DataType::Float32, shape);
    for (int64_t i = 0; i < x.elements(); ++i) {
      std::vector<int64_t> idx = multiIndex(shape, i);
      const int64_t c = idx[1];
      double sq = 0;
      for (int64_t k = c - (size - 1) / 2; k <= c + size / 2; ++k) {
        if (k < 0 || k >= shape[1]) continue;
        idx[1] = k;
        sq += at(x, flatIndex(shape, idx)) * at(x, flatIndex(shape, idx));
      }
      storeFromDouble(DataType::Float32, expected.data(), i,
                      at(x, i) / std::pow(double(1.5f) + double(0.3f) / size * sq, double(0.6f)));
    }
    expectNear(run(node, {in(x)}), expected, 1e-5, 1e-5);
  }
}

TEST(LpNormOp, EveryAxisAndP) {
  const Shape shape{3, 5, 7};
  Tensor x = randomTensor(DataType::Float32, shape, 40, -2, 2);
  for (int64_t i = 0; i < 7; ++i) x.data<float>()[i] = 0.f;  // a zero vector along the last axis
  for (int64_t p : {1, 2}) {
    for (int64_t axis = -1; axis < 3; ++axis) {
      SCOPED_TRACE("p " + std::to_string(p) + " axis " + std::to_string(axis));
      const int64_t a = axis < 0 ? axis + 3 : axis;
      Node node = makeNode(OpType::LpNormalization);
      node.setInt("p", p);
      node.setInt("axis", axis);
      Tensor expected(DataType::Float32, shape);
      for (int64_t i = 0; i < x.elements(); ++i) {
        std::vector<int64_t> idx = multiIndex(shape, i);
        double norm = 0;
        for (int64_t k = 0; k < shape[a]; ++k) {
          idx[a] = k;
          const double v = at(x, flatIndex(shape, idx));
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        storeFromDouble(DataType::Float32, expected.data(), i, norm == 0 ? 0.0 : at(x, i) / (p == 1 ? norm : std::sqrt(norm)));
      }
      expectNear(run(node, {in(x)}), expected, 1e-6, 1e-5);
    }
  }
}

TEST(MvnOp, DefaultAndCustomAxes) {
  const Shape shape{2, 3, 4, 5};
  Tensor x = randomTensor(DataType::Float32, shape, 50, -1, 3);
  for (const std::vector<int64_t>& axes : std::vector<std::vector<int64_t>>{{0, 2, 3}, {1}, {-1, 0}}) {
    SCOPED_TRACE("axes " + shapeToString(axes));
    Node node = makeNode(OpType::MeanVarianceNormalization);
    if (axes != std::vector<int64_t>{0, 2, 3}) node.setInts("axes", axes);
    std::vector<bool> reduced(4, false);
    for (int64_t a : axes) reduced[a < 0 ? a + 4 : a] = true;
    std::vector<double> mean, var;
    groupStats(
        x,
        [&](int64_t i) {
          std::vector<int64_t> idx = multiIndex(shape, i);
          for (int d = 0; d < 4; ++d)
            if (reduced[d]) idx[d] = 0;
          return flatIndex(shape, idx);
        },
        &mean, &var);
    Tensor expected(DataType::Float32, shape);
    for (int64_t i = 0; i < x.elements(); ++i)
      storeFromDouble(DataType::Float32, expected.data(), i, (at(x, i) - mean[i]) / (std::sqrt(var[i]) + 1e-9));
    expectNear(run(node, {in(x)}), expected, 1e-5, 1e-5);
  }
}

TEST(RmsNormOp, AxesAndBroadcastScale) {
  const Shape shape{3, 5, 7};
  Tensor x = randomTensor(DataType::Float32, shape, 60, -2, 3);
  const std::vector<std::pair<int64_t, Shape>> cases = {{-1, {7}}, {1, {5, 7}}, {1, {1, 7}}, {0, {3, 5, 7}}, {2, {1}}};
  uint32_t seed = 61;
  for (const auto& [axis, scaleShape] : cases) {
    SCOPED_TRACE("axis " + std::to_string(axis) + " scale " + shapeToString(scaleShape));
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Tensor scale = randomTensor(DataType::Float32, scaleShape, seed++, 0.5, 2);
    Node node = makeNode(OpType::RMSNormalization);
    node.setInt("axis", axis);
    node.setFloat("epsilon", 0.1f);
    int64_t n = 1;
    for (int64_t d = a; d < 3; ++d) n *= shape[d];
    Tensor expected(DataType::Float32, shape);
    for (int64_t i = 0; i < x.elements(); ++i) {
      double sq = 0;
      for (int64_t j = i / n * n; j < i / n * n + n; ++j) sq += at(x, j) * at(x, j);
      std::vector<int64_t> idx = multiIndex(shape, i), sidx;
      for (size_t d = 0; d < scaleShape.size(); ++d)
        sidx.push_back(scaleShape[d] == 1 ? 0 : idx[3 - scaleShape.size() + d]);
      storeFromDouble(DataType::Float32, expected.data(), i,
                      at(x, i) / std::sqrt(sq / n + double(0.1f)) * at(scale, flatIndex(scaleShape, sidx)));
    }
    expectNear(run(node, {in(x), in(scale)}), expected, 1e-5, 1e-5);
  }
}

TEST(NormalizationExtraOps, Errors) {
  std::vector<Tensor> out;
  Tensor x = randomTensor(DataType::Float32, {2, 6, 3}, 70);
  Node group = makeNode(OpType::GroupNormalization);
  group.setInt("num_groups", 4);
  Tensor six = randomTensor(DataType::Float32, {6}, 71);
  EXPECT_FALSE(runOp(group, {in(x), in(six), in(six)}, 1, &out).isOk());
  Node inst = makeNode(OpType::InstanceNormalization);
  EXPECT_FALSE(runOp(inst, {in(x), in(randomTensor(DataType::Float32, {5}, 72)), in(six)}, 1, &out).isOk());
  Node lrn = makeNode(OpType::LRN);
  EXPECT_FALSE(runOp(lrn, {in(x)}, 1, &out).isOk());  // size is required
  Node lp = makeNode(OpType::LpNormalization);
  lp.setInt("p", 3);
  EXPECT_FALSE(runOp(lp, {in(x)}, 1, &out).isOk());
  Node rms = makeNode(OpType::RMSNormalization);
  rms.setInt("axis", 3);
  EXPECT_FALSE(runOp(rms, {in(x), in(randomTensor(DataType::Float32, {3}, 73))}, 1, &out).isOk());
  Node rmsScale = makeNode(OpType::RMSNormalization);
  EXPECT_FALSE(runOp(rmsScale, {in(x), in(randomTensor(DataType::Float32, {4}, 74))}, 1, &out).isOk());
  Node mvn = makeNode(OpType::MeanVarianceNormalization);
  mvn.setInts("axes", {0, 5});
  EXPECT_FALSE(runOp(mvn, {in(x)}, 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
