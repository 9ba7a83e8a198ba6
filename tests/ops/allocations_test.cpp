// What a run allocates: nothing per op (a parallelFor runs for most ops of every run). The
// replaced global operator new counts the allocations of the thread that asked for counting.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "core/graph.h"
#include "core/thread_pool.h"
#include "osprey/interpreter.h"
#include "../unit/graph_builder.h"

namespace {
thread_local bool tCounting = false;
thread_local int64_t tAllocations = 0;

void* countedMalloc(std::size_t size) noexcept {
  if (tCounting) ++tAllocations;
  return std::malloc(size == 0 ? 1 : size);
}
}  // namespace

// Every form that a delete here may free is replaced, not only plain new: where a sanitizer's
// runtime serves the other forms (new[], the nothrow new of std::stable_sort's buffer), its
// memory would reach this free, a mismatch; without one, libstdc++'s forms call plain new anyway.
void* operator new(std::size_t size) {
  if (void* p = countedMalloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return countedMalloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return countedMalloc(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace osprey {
namespace {

TEST(Allocations, NoneInAParallelForOfALambdaWithManyCaptures) {
  ThreadPool pool(2);
  std::vector<int64_t> sums(1000, 0);  // one slot per index: no two threads share one
  int64_t a = 1, b = 2, c = 3, d = 4, e = 5;
  auto job = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sums[i] += a + b + c + d + e;
  };
  parallelFor(&pool, 1000, job);  // workers started and warm
  tCounting = true;
  tAllocations = 0;
  for (int r = 0; r < 10; ++r) {
    parallelFor(&pool, 1000, job);
    parallelFor(&pool, 1000, job, 8);
    parallelFor(&pool, 1000, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sums[i] += a + b + c + d + e;
    });
  }
  tCounting = false;
  EXPECT_EQ(tAllocations, 0);
  int64_t total = 0;
  for (int64_t s : sums) total += s;
  EXPECT_EQ(total, 31 * 1000 * 15);
}

// A chain of `blocks` blocks of Conv, Add (broadcast), Relu, Mul (broadcast), MatMul, Softmax,
// and the spatial ReduceMean added back (broadcast).
Graph chainOfBlocks(int blocks) {
  test::GraphBuilder b;
  const int64_t c = 8, h = 7, w = 9;
  int x = b.input("x", {1, c, h, w});
  Tensor convWeight(DataType::Float32, {c, c, 3, 3}), matWeight(DataType::Float32, {w, w});
  for (int64_t i = 0; i < convWeight.elements(); ++i) convWeight.data<float>()[i] = 0.01f * static_cast<float>(i % 7);
  for (int64_t i = 0; i < matWeight.elements(); ++i) matWeight.data<float>()[i] = 0.02f * static_cast<float>(i % 5);
  for (int k = 0; k < blocks; ++k) {
    x = b.op(OpType::Conv, {x, b.weights(convWeight)});
    b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
    x = b.op(OpType::Add, {x, b.floats(std::vector<float>(w, 0.5f), {w})});
    x = b.op(OpType::Relu, {x});
    x = b.op(OpType::Mul, {x, b.floats(std::vector<float>(c, 0.9f), {c, 1, 1})});
    x = b.op(OpType::MatMul, {x, b.weights(matWeight)});
    x = b.op(OpType::Softmax, {x});
    x = b.op(OpType::Add, {x, b.op(OpType::ReduceMean, {x, b.ints({2, 3})})});
  }
  b.output(x);
  return b.g;
}

// Allocations made by the third run of a session over chainOfBlocks(blocks) at 2 threads.
int64_t allocationsOfARun(int blocks) {
  auto model = std::make_shared<Model>();
  model->graph = chainOfBlocks(blocks);
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ScheduleConfig schedule;
  schedule.threads = 2;
  std::unique_ptr<Session> session;
  Status st = interp->createSession(schedule, BackendConfig(), &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  if (!session) return -1;
  Tensor x(DataType::Float32, {1, 8, 7, 9});
  std::vector<Tensor> outputs;
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(session->run({{"x", x}}, &outputs).isOk());
  tCounting = true;
  tAllocations = 0;
  st = session->run({{"x", x}}, &outputs);
  tCounting = false;
  EXPECT_TRUE(st.isOk()) << st.message();
  return tAllocations;
}

// A run allocates its outputs and some bookkeeping of its inputs, never anything per op.
TEST(Allocations, NonePerOpInARun) {
  EXPECT_EQ(allocationsOfARun(6), allocationsOfARun(2));
}

}  // namespace
}  // namespace osprey
