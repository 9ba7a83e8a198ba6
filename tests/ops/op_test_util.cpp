#include "op_test_util.h"

#include <cmath>

#include "core/graph.h"
#include "ops/op_def.h"

namespace osprey::test {

std::shared_ptr<Model> oneNodeModel(Node node, const std::vector<OpInput>& inputs, int numOutputs,
                                    std::map<std::string, Tensor>* feeds) {
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  node.inputs.clear();
  node.outputs.clear();
  if (node.name.empty()) node.name = "op";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].absent) {
      node.inputs.push_back(-1);
      continue;
    }
    TensorInfo t;
    t.name = "x" + std::to_string(i);
    t.dtype = inputs[i].value.dtype();
    t.shape = inputs[i].value.shape();
    if (inputs[i].constant) {
      t.isConstant = true;
      if (t.dtype == DataType::String) {
        t.data.strings = inputs[i].value.strings();
      } else {
        t.data = ConstantData::copyOf(inputs[i].value.data(), inputs[i].value.bytes());
      }
      node.inputs.push_back(g.addTensor(t));
    } else {
      int idx = g.addTensor(t);
      g.inputs.push_back(idx);
      node.inputs.push_back(idx);
      (*feeds)[t.name] = inputs[i].value;
    }
  }
  for (int i = 0; i < numOutputs; ++i) {
    TensorInfo t;
    t.name = "y" + std::to_string(i);
    int idx = g.addTensor(t);
    node.outputs.push_back(idx);
    g.outputs.push_back(idx);
  }
  g.nodes.push_back(node);
  return model;
}

Status runOp(Node node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* outputs, int threads) {
  return runOpWith(std::move(node), inputs, numOutputs, outputs, threads, BackendConfig(), nullptr);
}

Status runOpWith(Node node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* outputs,
                 int threads, const BackendConfig& config, int* relaid) {
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(std::move(node), inputs, numOutputs, &feeds);
  std::shared_ptr<Interpreter> interp;
  OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(model, &interp));
  std::unique_ptr<Session> session;
  ScheduleConfig schedule;
  schedule.threads = threads;
  OSPREY_RETURN_IF_ERROR(interp->createSession(schedule, config, &session));
  OSPREY_RETURN_IF_ERROR(session->run(feeds, outputs));
  if (relaid) *relaid = session->stats().relaidTensors;
  return Status::ok();
}

Status referenceOp(Node node, const std::vector<OpInput>& inputs, int numOutputs, std::vector<Tensor>* outputs) {
  const OpDef& def = opDef(node.type);
  // Ops that only move data have no kernel of their own: their reference is the lowering run by
  // the CPU backend's Raster.
  if (!def.reference) return runOp(std::move(node), inputs, numOutputs, outputs);
  TensorViews in(inputs.size()), out(static_cast<size_t>(numOutputs));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].absent) {
      in[i].present = false;
      continue;
    }
    in[i].dtype = inputs[i].value.dtype();
    in[i].shape = inputs[i].value.shape();
    in[i].data = const_cast<void*>(inputs[i].value.data());
  }
  OSPREY_RETURN_IF_ERROR(def.shape(node, in, out));
  outputs->clear();
  for (auto& o : out) {
    outputs->emplace_back(o.dtype, o.shape);
    o.data = outputs->back().data();
  }
  return def.reference(node, in, out, nullptr);
}

Tensor run1(const Node& node, const std::vector<OpInput>& inputs) {
  std::vector<Tensor> out;
  Status st = runOp(node, inputs, 1, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return st.isOk() && !out.empty() ? out[0] : Tensor();
}

void expectEqualValues(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  for (int64_t i = 0; i < actual.elements(); ++i) ASSERT_EQ(at(actual, i), at(expected, i)) << "element " << i;
}

Tensor naiveMap(const Tensor& x, DataType outType, const std::function<double(double)>& f) {
  Tensor r(outType, x.shape());
  for (int64_t i = 0; i < x.elements(); ++i) storeFromDouble(outType, r.data(), i, f(at(x, i)));
  return r;
}

void expectUnaryFormulas(const std::vector<UnaryFormula>& cases, double float32Tolerance) {
  uint32_t seed = 1;
  for (const UnaryFormula& c : cases) {
    for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16, DataType::BFloat16}) {
      SCOPED_TRACE(std::string(opTypeName(c.type)) + " " + dataTypeName(dt));
      Node node;
      node.type = c.type;
      c.attrs(node);
      Tensor x = randomTensor(dt, {3, 13, 7}, seed++, c.lo, c.hi);
      const double tol = dt == DataType::Float64   ? 1e-12
                         : dt == DataType::Float32 ? float32Tolerance
                         : dt == DataType::Float16 ? 2e-3
                                                   : 1e-2;
      expectNear(run1(node, {in(x)}), naiveMap(x, dt, c.f), tol, tol);
    }
  }
}

Tensor randomTensor(DataType dtype, const Shape& shape, uint32_t seed, double lo, double hi) {
  Tensor t(dtype, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.elements(); ++i) {
    double v = dist(gen);
    if (dtype != DataType::Float32 && dtype != DataType::Float64 && dtype != DataType::Float16 &&
        dtype != DataType::BFloat16)
      v = std::floor(v);
    storeFromDouble(dtype, t.data(), i, v);
  }
  return t;
}

double maxAbsDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), b.dtype());
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < a.elements(); ++i) m = std::max(m, std::fabs(at(a, i) - at(b, i)));
  return m;
}

void expectNear(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  ASSERT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(actual.dtype(), expected.dtype());
  for (int64_t i = 0; i < actual.elements(); ++i) {
    double a = at(actual, i), e = at(expected, i);
    if (std::isnan(e)) {
      ASSERT_TRUE(std::isnan(a)) << "element " << i;
      continue;
    }
    if (std::isinf(e)) {
      ASSERT_EQ(a, e) << "element " << i;
      continue;
    }
    ASSERT_NEAR(a, e, atol + rtol * std::fabs(e)) << "element " << i << " of shape " << shapeToString(actual.shape());
  }
}

}  // namespace osprey::test
