// Runs with inputs and outputs in device memory (IoBinding + DeviceTensor): the results match a
// host run, the pipeline holds no host-to-device copy of the input, the plan for device inputs
// is kept beside the host one, and host outputs bound in advance are written in place.
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

// x [2, 3, 8, 8] -> Conv -> Relu -> GlobalAveragePool -> y [2, 4, 1, 1]
std::shared_ptr<Interpreter> convInterpreter() {
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  TensorInfo xi;
  xi.name = "x";
  xi.dtype = DataType::Float32;
  xi.shape = {2, 3, 8, 8};
  const int x = g.addTensor(xi);
  g.inputs.push_back(x);
  TensorInfo wi;
  wi.name = "w";
  wi.dtype = DataType::Float32;
  wi.shape = {4, 3, 3, 3};
  wi.isConstant = true;
  const Tensor w = randomTensor(DataType::Float32, wi.shape, 3);
  wi.data = ConstantData::copyOf(w.data(), w.bytes());
  const int wIdx = g.addTensor(wi);
  auto tensor = [&](const char* name) {
    TensorInfo t;
    t.name = name;
    return g.addTensor(t);
  };
  const int c = tensor("c"), r = tensor("r"), y = tensor("y");
  auto add = [&](OpType type, std::vector<int> ins, int out) {
    Node n = makeNode(type);
    n.name = std::string(opTypeName(type)) + std::to_string(out);
    n.inputs = std::move(ins);
    n.outputs = {out};
    g.nodes.push_back(n);
  };
  add(OpType::Conv, {x, wIdx}, c);
  g.nodes.back().setInts("pads", {1, 1, 1, 1});
  add(OpType::Relu, {c}, r);
  add(OpType::GlobalAveragePool, {r}, y);
  g.outputs.push_back(y);
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  return interp;
}

TEST(CudaDeviceIo, DeviceInputsAndOutputsMatchAHostRun) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  auto interp = convInterpreter();
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(onCuda, BackendConfig(), &session).isOk());
  DeviceTensor x, y;
  ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 3, 8, 8}, &x).isOk());
  ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 4, 1, 1}, &y).isOk());
  for (uint32_t run = 0; run < 4; ++run) {  // new values each run: replayed graphs read them
    const Tensor input = randomTensor(DataType::Float32, {2, 3, 8, 8}, 50 + run);
    ASSERT_TRUE(session->copyToDevice(input, x).isOk());
    IoBinding io;
    io.bindInput("x", x);
    io.bindOutput("y", y);
    const Status st = session->run(io);
    ASSERT_TRUE(st.isOk()) << st.message();
      Tensor got;
    ASSERT_TRUE(session->copyFromDevice(y, &got).isOk());
    std::vector<Tensor> want;
    ASSERT_TRUE(session->run({{"x", input}}, &want).isOk());  // the host plan, kept beside
    EXPECT_LE(maxAbsDiff(got, want[0]), 1e-5) << "run " << run;
    // A host output bound in advance is written in place.
    Tensor preallocated(DataType::Float32, {2, 4, 1, 1});
    IoBinding host;
    host.bindInput("x", x);
    host.bindOutput("y", preallocated);
    ASSERT_TRUE(session->run(host).isOk());
    EXPECT_LE(maxAbsDiff(preallocated, want[0]), 1e-5);
  }
  EXPECT_EQ(session->stats().plansMade, 2);  // the device-input plan and the host-input plan
  session->setProfiling(true);
  IoBinding io;
  io.bindInput("x", x);
  io.bindOutput("y", y);
  ASSERT_TRUE(session->run(io).isOk());
  int commands = 0;
  for (const OpTiming& t : session->lastRunProfile()) {
    EXPECT_TRUE(t.opType != "CopyToDevice" && t.opType != "CopyToHost") << t.opType;
    ++commands;
  }
  EXPECT_GT(commands, 2);
  std::vector<Tensor> host;
  ASSERT_TRUE(session->run({{"x", randomTensor(DataType::Float32, {2, 3, 8, 8}, 60)}}, &host).isOk());
  bool uploads = false;  // the host-input plan uploads its input inside the run
  for (const OpTiming& t : session->lastRunProfile()) uploads |= t.opType == "CopyToDevice";
  EXPECT_TRUE(uploads);
}

// Without kept plans, a host run after a device-input run plans its input back on the host.
TEST(CudaDeviceIo, HostRunAfterDeviceRunWithoutPlanCache) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  auto interp = convInterpreter();
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  BackendConfig config;
  config.planCacheSize = 0;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(onCuda, config, &session).isOk());
  const Tensor input = randomTensor(DataType::Float32, {2, 3, 8, 8}, 70);
  DeviceTensor x, y;
  ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 3, 8, 8}, &x).isOk());
  ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 4, 1, 1}, &y).isOk());
  ASSERT_TRUE(session->copyToDevice(input, x).isOk());
  IoBinding io;
  io.bindInput("x", x);
  io.bindOutput("y", y);
  ASSERT_TRUE(session->run(io).isOk());
  Tensor got;
  ASSERT_TRUE(session->copyFromDevice(y, &got).isOk());
  std::vector<Tensor> want;
  const Status st = session->run({{"x", input}}, &want);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_LE(maxAbsDiff(got, want[0]), 1e-5);
}

TEST(CudaDeviceIo, WrongBindingsAreErrors) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  auto interp = convInterpreter();
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(onCuda, BackendConfig(), &session).isOk());
  DeviceTensor x, small;
  ASSERT_TRUE(session->allocateDevice(DataType::Float32, {2, 3, 8, 8}, &x).isOk());
  ASSERT_TRUE(session->allocateDevice(DataType::Float32, {1, 4, 1, 1}, &small).isOk());
  IoBinding io;
  io.bindInput("x", x);
  io.bindOutput("y", small);
  const Status st = session->run(io);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("output 'y'"), std::string::npos) << st.message();
  IoBinding missing;
  EXPECT_EQ(session->run(missing).code(), StatusCode::InvalidArgument);
  DeviceTensor cpu = x;
  cpu.device = ForwardType::OpenCL;
  IoBinding wrong;
  wrong.bindInput("x", cpu);
  EXPECT_EQ(session->run(wrong).code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace osprey::test
