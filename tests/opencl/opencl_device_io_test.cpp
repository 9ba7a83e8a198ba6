// IoBinding on OpenCL: inputs and outputs in cl_mem buffers (allocated by the session, or the
// caller's own buffer of the same context), in both memory modes, match a run with host tensors;
// at precision low, where the backend stores half, binding float buffers is refused clearly.
#include "opencl_test_util.h"

namespace osprey::test {
namespace {

// x [2, 3, 9, 9] -> Conv(pads 1) -> Relu -> y [2, 5, 9, 9]
std::shared_ptr<Interpreter> convInterpreter() {
  Node conv = makeNode(OpType::Conv);
  conv.setInts("pads", {1, 1, 1, 1});
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(conv, {in(randomTensor(DataType::Float32, {2, 3, 9, 9}, 1)),
                                   constant(randomTensor(DataType::Float32, {5, 3, 3, 3}, 2))}, 1, &feeds);
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  return interp;
}

std::unique_ptr<Session> openclSession(const Interpreter& interp, BackendConfig::Precision precision) {
  std::unique_ptr<Session> session;
  EXPECT_TRUE(createOpenCLSession(interp, precision, &session).isOk());
  return session;
}

TEST(OpenCLDeviceIo, BufferInputsAndOutputsMatchAHostRun) {
  OSPREY_REQUIRE_OPENCL();
  auto interp = convInterpreter();
  const std::string x = interp->inputs().at(0).name, y = interp->outputs().at(0).name;
  for (auto memory : {OpenCLOptions::Memory::Buffer, OpenCLOptions::Memory::Image}) {
    ScopedOpenCLOptions mode([&](OpenCLOptions& o) { o.memory = memory; });
    auto session = openclSession(*interp, BackendConfig::Precision::Normal);
    ASSERT_TRUE(session);
    DeviceTensor dx, dy;
    ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 3, 9, 9}, &dx).isOk());
    ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 5, 9, 9}, &dy).isOk());
    EXPECT_EQ(dx.device, ForwardType::OpenCL);
    for (uint32_t run = 0; run < 3; ++run) {
      const Tensor input = randomTensor(DataType::Float32, {2, 3, 9, 9}, 30 + run);
      ASSERT_TRUE(session->copyToDevice(input, dx).isOk());
      IoBinding io;
      io.bindInput(x, dx);
      io.bindOutput(y, dy);
      const Status st = session->run(io);
      ASSERT_TRUE(st.isOk()) << st.message();
      Tensor got;
      ASSERT_TRUE(session->copyFromDevice(dy, &got).isOk());
      std::vector<Tensor> want;
      ASSERT_TRUE(session->run({{x, input}}, &want).isOk());
      ASSERT_EQ(got.shape(), want[0].shape());
      EXPECT_LE(maxAbsDiff(got, want[0]), 1e-5) << "run " << run;
    }
  }
}

TEST(OpenCLDeviceIo, PrecisionLowRefusesFloatBuffers) {
  OSPREY_REQUIRE_OPENCL();
  auto interp = convInterpreter();
  auto session = openclSession(*interp, BackendConfig::Precision::Low);
  ASSERT_TRUE(session);
  DeviceTensor dx;
  ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 3, 9, 9}, &dx).isOk());
  const Status st = session->copyToDevice(randomTensor(DataType::Float32, {2, 3, 9, 9}, 4), dx);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  EXPECT_NE(st.message().find("precision low"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace osprey::test

namespace osprey::test {
namespace {

// Plans of two input shapes kept side by side (BackendConfig::planCacheSize), each with its own
// OpenCL backend, and the session destroyed with both.
TEST(OpenCLPlanCache, TwoShapesThenDestroy) {
  OSPREY_REQUIRE_OPENCL();
  Node relu = makeNode(OpType::Relu);
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(relu, {in(randomTensor(DataType::Float32, {2, 3}, 1))}, 1, &feeds);
  model->graph.tensors[model->graph.inputs[0]].shape = {-1, 3};
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  const std::string x = interp->inputs().at(0).name;
  auto session = openclSession(*interp, BackendConfig::Precision::Normal);
  for (int64_t rows : {2, 5, 2, 5}) {
    const Tensor input = randomTensor(DataType::Float32, {rows, 3}, static_cast<uint32_t>(rows));
    std::vector<Tensor> out;
    ASSERT_TRUE(session->run({{x, input}}, &out).isOk());
    for (int64_t i = 0; i < input.elements(); ++i)
      EXPECT_EQ(out[0].data<float>()[i], std::max(0.f, input.data<float>()[i]));
  }
  session.reset();
}

}  // namespace
}  // namespace osprey::test
