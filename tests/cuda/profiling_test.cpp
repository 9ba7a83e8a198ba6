// Per-op profiling on the CUDA backend: commands are timed by CUDA events between them, which a
// captured graph holds as event nodes, so replayed runs are timed on the device. Checked here:
// every command is in the profile, the device's commands follow one another on the stream
// without overlapping, profiling changes no result (eager, captured or replayed), and runs
// replay a graph without events again once profiling stops.
#include "cuda_test_util.h"

#include <cstring>

#include "../unit/graph_builder.h"

namespace osprey::test {
namespace {

// x [64, 96] -> MatMul [96, 96] -> Relu -> MatMul [96, 40] -> Sigmoid, 2 ops repeated.
std::shared_ptr<Interpreter> chainInterpreter() {
  GraphBuilder b;
  int x = b.input("x", {64, 96});
  for (int layer = 0; layer < 3; ++layer) {
    x = b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {96, 96}, 10 + layer))});
    x = b.op(OpType::Relu, {x});
  }
  x = b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {96, 40}, 20))});
  b.output(b.op(OpType::Sigmoid, {x}));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  return interp;
}

void expectSameOutputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].bytes(), b[i].bytes()) << what;
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].bytes()), 0) << what << ", output " << i;
  }
}

TEST(CudaProfiling, DeviceTimesInStreamOrderAndSameResults) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  auto interp = chainInterpreter();
  for (const bool deviceIo : {false, true}) {
    SCOPED_TRACE(deviceIo ? "device tensors" : "host tensors");
    ScheduleConfig onCuda;
    onCuda.backend = ForwardType::CUDA;
    std::unique_ptr<Session> session;
    ASSERT_TRUE(interp->createSession(onCuda, BackendConfig(), &session).isOk());
    const Tensor x = randomTensor(DataType::Float32, {64, 96}, 3);
    IoBinding io;
    DeviceTensor dx, dy;
    if (deviceIo) {
      ASSERT_TRUE(session->allocateDevice(DataType::Float32, {64, 96}, &dx).isOk());
      ASSERT_TRUE(session->allocateDevice(DataType::Float32, {64, 40}, &dy).isOk());
      ASSERT_TRUE(session->copyToDevice(x, dx).isOk());
      io.bindInput("x", dx);
      io.bindOutput(session->outputs()[0].name, dy);
    }
    auto run = [&](std::vector<Tensor>* out) {
      if (!deviceIo) return session->run({{"x", x}}, out);
      OSPREY_RETURN_IF_ERROR(session->run(io));
      out->resize(1);
      return session->copyFromDevice(dy, &(*out)[0]);
    };
    std::vector<Tensor> expected;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(run(&expected).isOk());  // the third replays a graph

    session->setProfiling(true);
    for (int i = 0; i < 3; ++i) {  // captured with its events, then replayed
      std::vector<Tensor> got;
      const Status st = run(&got);
      ASSERT_TRUE(st.isOk()) << st.message();
      expectSameOutputs(expected, got, "profiled run " + std::to_string(i));
      const std::vector<OpTiming>& profile = session->lastRunProfile();
      int onDevice = 0;
      const OpTiming* previous = nullptr;
      for (const OpTiming& t : profile) {
        EXPECT_GE(t.durationUs, 0.0) << t.opType;
        EXPECT_GE(t.startUs, 0.0) << t.opType;
        if (t.backend != "cuda") continue;
        if (t.opType.rfind("Copy", 0) != 0) ++onDevice;
        // One stream: a device op starts after the previous one ended (events are exact to
        // about half a microsecond).
        if (previous) {
          EXPECT_GE(t.startUs + 1.0, previous->startUs + previous->durationUs) << t.opType << " after " << previous->opType;
        }
        previous = &t;
      }
      EXPECT_EQ(onDevice, 8);  // 4 MatMuls, 3 Relus, 1 Sigmoid
    }
    session->setProfiling(false);
    for (int i = 0; i < 3; ++i) {
      std::vector<Tensor> got;
      ASSERT_TRUE(run(&got).isOk());
      expectSameOutputs(expected, got, "run after profiling " + std::to_string(i));
    }
  }
}

// Run callbacks read each op's output between ops: a session that replays a captured graph runs
// op by op while they are given (Backend::onStepwise), then replays again.
TEST(CudaProfiling, CallbacksReadEveryOpAfterGraphReplay) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  auto interp = chainInterpreter();
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(onCuda, BackendConfig(), &session).isOk());
  const Tensor x = randomTensor(DataType::Float32, {64, 96}, 4);
  std::vector<Tensor> expected;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session->run({{"x", x}}, &expected).isOk());  // the third replays
  for (const bool profiled : {false, true}) {
    SCOPED_TRACE(profiled ? "profiled" : "not profiled");
    session->setProfiling(profiled);
    std::vector<std::string> ops;
    Tensor lastSeen;
    RunCallbacks callbacks;
    callbacks.after = [&](const OpCallbackInfo& op, const OpTensors& outputs) {
      ops.push_back(op.type);
      EXPECT_TRUE(outputs.read(0, &lastSeen).isOk()) << op.type;
      return true;
    };
    std::vector<Tensor> got;
    const Status st = session->run({{"x", x}}, &got, callbacks);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(ops.size(), 8u);
    expectSameOutputs(expected, got, "run with callbacks");
    expectSameOutputs(expected, {lastSeen}, "the last op's output as its callback read it");
    session->setProfiling(false);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(session->run({{"x", x}}, &got).isOk());
      expectSameOutputs(expected, got, "run after the callbacks " + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace osprey::test
