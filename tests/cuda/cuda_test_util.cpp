#include "cuda_test_util.h"

#include <cmath>
#include <cstdlib>

#include "core/graph.h"
#include "ops/op_def.h"

namespace osprey::test {

namespace {

double maxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.elements(); ++i) m = std::max(m, std::fabs(at(t, i)));
  return m;
}

}  // namespace

Status runOpOnCuda(Node node, const std::vector<OpInput>& inputs, int numOutputs, bool lowPrecision, CudaRun* out, int runs,
                   CudaOptions::Layout layout) {
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(std::move(node), inputs, numOutputs, &feeds);
  std::shared_ptr<Interpreter> interp;
  OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(model, &interp));
  ScheduleConfig schedule;
  schedule.backend = ForwardType::CUDA;
  BackendConfig config;
  if (lowPrecision) config.precision = BackendConfig::Precision::Low;
  config.fullPrecisionStem = 0;  // the kernels under test run in fp16, not in an fp32 stem
  config.cuda.layout = layout;
  std::unique_ptr<Session> session;
  OSPREY_RETURN_IF_ERROR(interp->createSession(schedule, config, &session));
  for (int r = 0; r < runs; ++r) OSPREY_RETURN_IF_ERROR(session->run(feeds, &out->outputs));
  out->onCpu.clear();
  out->relaidTensors = session->stats().relaidTensors;
  for (auto& [key, count] : session->stats().opsByBackend)
    if (key.rfind("cpu:", 0) == 0) out->onCpu.push_back(key);
  return Status::ok();
}

void expectCudaMatchesReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs, double fp32Tolerance,
                                double fp16Tolerance) {
  std::vector<Tensor> expected;
  Status st = referenceOp(node, inputs, numOutputs, &expected);
  ASSERT_TRUE(st.isOk()) << st.message();
  // fp32; fp16 with 4-D activations in NHWC where the executions support it; fp16 all NCHW.
  for (int variant = 0; variant < 3; ++variant) {
    const bool low = variant > 0;
    CudaRun run;
    st = runOpOnCuda(node, inputs, numOutputs, low, &run, 3,
                     variant == 2 ? CudaOptions::Layout::NCHW : CudaOptions::Layout::Auto);
    ASSERT_TRUE(st.isOk()) << st.message();
    const char* label = variant == 0 ? "fp32" : variant == 1 ? "fp16" : "fp16 NCHW";
    if (variant != 1) EXPECT_EQ(run.relaidTensors, 0) << label;
    std::string fallbacks;
    for (auto& f : run.onCpu) fallbacks += f + " ";
    EXPECT_TRUE(run.onCpu.empty()) << label << " ran on the CPU: " << fallbacks;
    ASSERT_EQ(run.outputs.size(), expected.size());
    const double tol = low ? fp16Tolerance : fp32Tolerance;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(run.outputs[i].shape(), expected[i].shape());
      ASSERT_EQ(run.outputs[i].dtype(), expected[i].dtype());
      const double bound = tol * std::max(1.0, maxAbs(expected[i]));
      EXPECT_LE(maxAbsDiff(run.outputs[i], expected[i]), bound) << label << " output " << i;
    }
  }
}

}  // namespace osprey::test
