// Runs too small for the CPU's workers to pay for their wake-up run on the calling thread alone
// (CPUBackend::onPlannedWork); larger ones, and those whose work is not counted, use the pool.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/thread_pool.h"
#include "graph_builder.h"
#include "osprey/osprey.h"

namespace osprey::test {
namespace {

TEST(SerialRun, ParallelForRunsInlineOnTheThreadThatAsked) {
  ThreadPool pool(2);
  const bool before = exchangeSerialRun(true);
  std::atomic<int> calls{0};
  const std::thread::id caller = std::this_thread::get_id();
  parallelFor(&pool, 1000, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1000);
  });
  EXPECT_EQ(calls.load(), 1);
  // Another thread is not serial: the flag is the calling thread's.
  std::thread([&] { EXPECT_FALSE(serialRun()); }).join();
  EXPECT_TRUE(exchangeSerialRun(before));
}

// Whether the ops of a two-thread run of g see the serial flag (callbacks run on the run's thread).
bool runsSerially(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::unique_ptr<Session> session = cpuSessionOf(g, 2);
  bool serial = true;
  RunCallbacks callbacks;
  callbacks.before = [&](const OpCallbackInfo&, const OpTensors&) {
    serial &= serialRun();
    return true;
  };
  std::vector<Tensor> out;
  EXPECT_TRUE(session->run(feeds, &out, callbacks).isOk());
  EXPECT_FALSE(serialRun());  // restored when the run ends
  return serial;
}

TEST(SerialRun, SmallPlansRunOnTheCallerAlone) {
  GraphBuilder small;
  small.output(small.op(OpType::Relu, {small.input("x", {2, 3})}));
  EXPECT_TRUE(runsSerially(small.g, {{"x", Tensor(DataType::Float32, {2, 3})}}));

  GraphBuilder large;  // 2 * 256^3 = 33.5 M flops
  const int x = large.input("x", {256, 256});
  large.output(large.op(OpType::MatMul, {x, large.floats(std::vector<float>(256 * 256, 0.5f), {256, 256})}));
  EXPECT_FALSE(runsSerially(large.g, {{"x", Tensor(DataType::Float32, {256, 256})}}));

  // An LSTM's steps count their gates' products: 2 * 64 steps * (4 * 128 * (128 + 128)) = 16.8 M.
  GraphBuilder lstm;
  const int seq = lstm.input("seq", {64, 1, 128});
  const int w = lstm.floats(std::vector<float>(4 * 128 * 128, 0.01f), {1, 4 * 128, 128});
  const int r = lstm.floats(std::vector<float>(4 * 128 * 128, 0.01f), {1, 4 * 128, 128});
  lstm.output(lstm.op(OpType::LSTM, {seq, w, r}));
  lstm.g.nodes.back().setInt("hidden_size", 128);
  EXPECT_FALSE(runsSerially(lstm.g, {{"seq", Tensor(DataType::Float32, {64, 1, 128})}}));

  // A 2x upsampling to 96x80x120 uses the pool: bilinear counts a multiply-add for each of an
  // output's 4 taps (7.4 M), nearest its 0.9 M outputs written at 8 each (the same 7.4 M); the
  // same nearest upsampling of 8 channels of 20x30 (19 200 outputs, 154 K) stays on the caller.
  for (const char* mode : {"linear", "nearest"}) {
    GraphBuilder resize;
    const int image = resize.input("x", {1, 96, 40, 60});
    resize.output(resize.op(OpType::Resize, {image, -1, resize.floats({1, 1, 2, 2}, {4})}));
    resize.g.nodes.back().setString("mode", mode);
    EXPECT_FALSE(runsSerially(resize.g, {{"x", Tensor(DataType::Float32, {1, 96, 40, 60})}})) << mode;
  }
  GraphBuilder thin;
  const int image = thin.input("x", {1, 8, 20, 30});
  thin.output(thin.op(OpType::Resize, {image, -1, thin.floats({1, 1, 2, 2}, {4})}));
  thin.g.nodes.back().setString("mode", "nearest");
  EXPECT_TRUE(runsSerially(thin.g, {{"x", Tensor(DataType::Float32, {1, 8, 20, 30})}}));
}

}  // namespace
}  // namespace osprey::test
