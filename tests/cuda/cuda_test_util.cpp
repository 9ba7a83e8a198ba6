#include "cuda_test_util.h"

#include <cmath>

#include "core/graph.h"
#include "ops/op_def.h"

namespace osprey::test {

namespace {

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
      t.data = ConstantData::copyOf(inputs[i].value.data(), inputs[i].value.bytes());
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

double maxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.elements(); ++i) m = std::max(m, std::fabs(at(t, i)));
  return m;
}

}  // namespace

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

Status runOpOnCuda(Node node, const std::vector<OpInput>& inputs, int numOutputs, bool lowPrecision, CudaRun* out, int runs) {
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(std::move(node), inputs, numOutputs, &feeds);
  std::shared_ptr<Interpreter> interp;
  OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(model, &interp));
  ScheduleConfig schedule;
  schedule.backend = ForwardType::CUDA;
  BackendConfig config;
  if (lowPrecision) config.precision = BackendConfig::Precision::Low;
  std::unique_ptr<Session> session;
  OSPREY_RETURN_IF_ERROR(interp->createSession(schedule, config, &session));
  for (int r = 0; r < runs; ++r) OSPREY_RETURN_IF_ERROR(session->run(feeds, &out->outputs));
  out->onCpu.clear();
  for (auto& [key, count] : session->stats().opsByBackend)
    if (key.rfind("cpu:", 0) == 0) out->onCpu.push_back(key);
  return Status::ok();
}

void expectCudaMatchesReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs, double fp32Tolerance,
                                double fp16Tolerance) {
  std::vector<Tensor> expected;
  Status st = referenceOp(node, inputs, numOutputs, &expected);
  ASSERT_TRUE(st.isOk()) << st.message();
  for (bool low : {false, true}) {
    CudaRun run;
    st = runOpOnCuda(node, inputs, numOutputs, low, &run, 3);
    ASSERT_TRUE(st.isOk()) << st.message();
    std::string fallbacks;
    for (auto& f : run.onCpu) fallbacks += f + " ";
    EXPECT_TRUE(run.onCpu.empty()) << "ran on the CPU: " << fallbacks;
    ASSERT_EQ(run.outputs.size(), expected.size());
    const double tol = low ? fp16Tolerance : fp32Tolerance;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(run.outputs[i].shape(), expected[i].shape());
      ASSERT_EQ(run.outputs[i].dtype(), expected[i].dtype());
      const double bound = tol * std::max(1.0, maxAbs(expected[i]));
      EXPECT_LE(maxAbsDiff(run.outputs[i], expected[i]), bound) << (low ? "fp16" : "fp32") << " output " << i;
    }
  }
}

}  // namespace osprey::test
