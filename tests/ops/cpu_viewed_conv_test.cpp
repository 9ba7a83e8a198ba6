// Convolutions the CPU runs through a view of the same bytes (kernels/viewed_conv.cpp): k x 1
// over maps one column wide as 1 x k over maps one row high, and 1-D as 2-D. Odd lengths and
// channels, strides, dilations, padding, groups and depthwise, bias, residual and fused
// activations, one and two threads, against the reference kernel; and a session whose width
// changes from 1 to 3 between runs (the execution falls back to the model's own convolution).
#include "cpu_conv_case.h"
#include "op_test_util.h"
#include "osprey/interpreter.h"

namespace osprey::test {
namespace {

using Kind = FusedActivation::Kind;

TEST(CpuViewedConv, MatchesTheReference) {
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

struct Conv1dCase {
  int64_t n, c, length, m, kernel, group, stride, padBegin, padEnd, dilation;
  bool bias, residual;
  const char* activation;  // Osprey's fused activation attribute, or null
  int threads;
};

TEST(CpuViewedConv, OneDimensionalMatchesTheReference) {
  uint32_t seed = 100;
  for (const Conv1dCase& k : std::vector<Conv1dCase>{{1, 256, 400, 256, 3, 1, 1, 1, 1, 1, true, false, nullptr, 2},
                                                     {2, 13, 77, 17, 5, 1, 2, 2, 1, 1, false, true, "Relu", 1},
                                                     {1, 24, 101, 24, 31, 24, 1, 15, 15, 1, true, false, nullptr, 2},
                                                     {1, 32, 60, 48, 3, 4, 1, 2, 2, 2, true, true, "Tanh", 2},
                                                     {3, 5, 9, 7, 2, 1, 1, 0, 1, 1, true, false, nullptr, 3},
                                                     {1, 40, 200, 64, 1, 1, 1, 0, 0, 1, false, false, nullptr, 2}}) {
    SCOPED_TRACE("conv1d c " + std::to_string(k.c) + " length " + std::to_string(k.length) + " kernel " +
                 std::to_string(k.kernel) + " group " + std::to_string(k.group));
    Node node = makeNode(OpType::Conv);
    node.setInts("kernel_shape", {k.kernel});
    node.setInts("strides", {k.stride});
    node.setInts("dilations", {k.dilation});
    node.setInts("pads", {k.padBegin, k.padEnd});
    node.setInt("group", k.group);
    if (k.activation) node.setString("activation", k.activation);
    const int64_t outLength = (k.length + k.padBegin + k.padEnd - k.dilation * (k.kernel - 1) - 1) / k.stride + 1;
    std::vector<OpInput> inputs = {in(randomTensor(DataType::Float32, {k.n, k.c, k.length}, seed++, -1, 1)),
                                   constant(randomTensor(DataType::Float32, {k.m, k.c / k.group, k.kernel}, seed++, -1, 1))};
    if (k.bias || k.residual)
      inputs.push_back(k.bias ? constant(randomTensor(DataType::Float32, {k.m}, seed++, -1, 1)) : absent());
    if (k.residual) inputs.push_back(in(randomTensor(DataType::Float32, {k.n, k.m, outLength}, seed++, -2, 2)));
    std::vector<Tensor> y, ref;
    ASSERT_TRUE(runOp(node, inputs, 1, &y, k.threads).isOk());
    ASSERT_TRUE(referenceOp(node, inputs, 1, &ref).isOk());
    ASSERT_EQ(y[0].shape(), (Shape{k.n, k.m, outLength}));
    expectNear(y[0], ref[0], 1e-4, 1e-4);
  }
}

TEST(CpuViewedConv, WidthChangingBetweenRunsRunsTheModelsConvolution) {
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
