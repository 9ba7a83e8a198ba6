// IoBinding on the CPU: outputs bound to the caller's tensors are written in place, every input
// must be bound, and device memory is refused on a backend that has none.
#include <gtest/gtest.h>

#include <cstring>

#include "../ops/op_test_util.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

std::unique_ptr<Session> matMulSession(std::shared_ptr<Interpreter>* keep) {
  GraphBuilder b;
  const int x = b.input("x", {-1, 6});
  b.output(b.op(OpType::Relu, {b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {6, 4}, 1))})}));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  EXPECT_TRUE(Interpreter::fromModel(model, keep).isOk());
  std::unique_ptr<Session> session;
  EXPECT_TRUE((*keep)->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  return session;
}

TEST(IoBinding, HostOutputsAreWrittenInPlace) {
  std::shared_ptr<Interpreter> interp;
  auto session = matMulSession(&interp);
  const std::string out = interp->outputs()[0].name;
  std::vector<float> buffer(3 * 4, -1.f);
  const Tensor y = Tensor::wrap(DataType::Float32, {3, 4}, buffer.data());
  for (uint32_t run = 0; run < 3; ++run) {
    const Tensor x = randomTensor(DataType::Float32, {3, 6}, 10 + run);
    IoBinding io;
    io.bindInput("x", x);
    io.bindOutput(out, y);
    const Status st = session->run(io);
    ASSERT_TRUE(st.isOk()) << st.message();
    std::vector<Tensor> want;
    ASSERT_TRUE(session->run({{"x", x}}, &want).isOk());
    EXPECT_EQ(std::memcmp(buffer.data(), want[0].data(), want[0].bytes()), 0) << run;
  }
}

TEST(IoBinding, WrongBindingsAreErrors) {
  std::shared_ptr<Interpreter> interp;
  auto session = matMulSession(&interp);
  const std::string out = interp->outputs()[0].name;
  IoBinding none;
  EXPECT_EQ(session->run(none).code(), StatusCode::InvalidArgument);  // x is not bound
  IoBinding wrongShape;
  wrongShape.bindInput("x", randomTensor(DataType::Float32, {3, 6}, 2));
  wrongShape.bindOutput(out, Tensor(DataType::Float32, {2, 4}));
  const Status st = session->run(wrongShape);
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_NE(st.message().find("output '" + out + "'"), std::string::npos) << st.message();
  DeviceTensor device;
  device.shape = {3, 6};
  device.data = reinterpret_cast<void*>(0x1000);
  IoBinding onDevice;
  onDevice.bindInput("x", device);
  EXPECT_EQ(session->run(onDevice).code(), StatusCode::InvalidArgument);  // a CPU session has no device
  DeviceTensor allocated;
  EXPECT_EQ(session->allocateDevice(DataType::Float32, {3, 6}, &allocated).code(), StatusCode::Unsupported);
}

}  // namespace
}  // namespace osprey::test
