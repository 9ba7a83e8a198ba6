// k x 1 convolutions over maps one column wide, which the CPU runs as 1 x k over maps one row
// high (kernels/column_conv.cpp): odd heights and channels, strides, dilations, padding along H,
// groups and depthwise, bias, residual and fused activations, one and two threads, against the
// reference kernel; and a session whose width changes from 1 to 3 between runs (the execution
// falls back to the model's own convolution).
#include "cpu_conv_case.h"
#include "op_test_util.h"
#include "osprey/interpreter.h"

namespace osprey::test {
namespace {

using Kind = FusedActivation::Kind;

TEST(CpuColumnConv, MatchesTheReference) {
  uint32_t seed = 1;
  // n, c, h, w, m, kh, kw, group, stride, pad, dilation, bias, act, residual, threads, pads.
  for (const CpuConvCase& k : std::vector<CpuConvCase>{
           {1, 256, 64, 1, 256, 3, 1, 1, 1, 0, 1, true, Kind::None, false, 2, {1, 0, 1, 0}},
           {2, 13, 29, 1, 17, 5, 1, 1, 2, 0, 1, false, Kind::Relu, false, 1, {2, 0, 1, 0}},
           {1, 12, 31, 1, 12, 3, 1, 12, 1, 0, 2, true, Kind::None, true, 2, {2, 0, 2, 0}},
           {1, 16, 20, 1, 24, 7, 1, 4, 1, 0, 1, true, Kind::Tanh, false, 2, {3, 0, 3, 0}},
           {3, 7, 9, 1, 33, 2, 1, 1, 1, 0, 1, true, Kind::None, true, 1, {0, 0, 1, 0}},
           {1, 40, 100, 1, 64, 3, 1, 1, 3, 0, 1, true, Kind::HardSwish, false, 2, {1, 0, 1, 0}}}) {
    SCOPED_TRACE(describeConvCase(k));
    const BuiltConv conv = buildConvCase(k, seed++);
    std::vector<Tensor> y, ref;
    ASSERT_TRUE(runOp(conv.node, conv.inputs, 1, &y, k.threads).isOk());
    ASSERT_TRUE(referenceOp(conv.node, conv.inputs, 1, &ref).isOk());
    ASSERT_EQ(y[0].shape(), conv.outShape);
    expectNear(y[0], ref[0], 1e-4, 1e-4);
  }
}

TEST(CpuColumnConv, WidthChangingBetweenRunsRunsTheModelsConvolution) {
  const CpuConvCase k{1, 8, 12, 1, 16, 3, 1, 1, 1, 0, 1, true, Kind::None, false, 2, {1, 0, 1, 0}};
  const BuiltConv conv = buildConvCase(k, 7);
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(conv.node, conv.inputs, 1, &feeds);
  model->graph.tensors[model->graph.inputs[0]].shape[3] = -1;
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ScheduleConfig schedule;
  schedule.threads = 2;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(schedule, BackendConfig(), &session).isOk());
  for (int64_t width : {1, 3, 1}) {
    SCOPED_TRACE("width " + std::to_string(width));
    std::vector<OpInput> inputs = conv.inputs;
    inputs[0] = in(randomTensor(DataType::Float32, {1, 8, 12, width}, 11 + static_cast<uint32_t>(width), -1, 1));
    std::map<std::string, Tensor> run = feeds;
    run.begin()->second = inputs[0].value;
    std::vector<Tensor> y, ref;
    const Status st = session->run(run, &y);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_TRUE(session->stats().referenceOps.empty());
    ASSERT_TRUE(referenceOp(conv.node, inputs, 1, &ref).isOk());
    expectNear(y[0], ref[0], 1e-4, 1e-4);
  }
}

}  // namespace
}  // namespace osprey::test
