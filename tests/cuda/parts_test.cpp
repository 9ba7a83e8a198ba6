// Tensors placed inside others on the CUDA backend: q, k and v sliced from one packed tensor
// read where they lie, and a Concat whose producers write into its output, each at offsets of
// whole 256-byte lines; slices and parts at other offsets are still copied. Every result is
// checked against the CPU's, in fp32 and fp16 storage, over two runs (the second replays the
// captured graph).
#include <cmath>
#include <utility>

#include "../unit/graph_builder.h"
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

int gather(GraphBuilder& b, int data, int64_t index) {
  const int y = b.op(OpType::Gather, {data, b.integers(DataType::Int64, {index}, {})});
  b.g.nodes.back().setInt("axis", 0);
  return y;
}

// relu(x) sliced into three along axis 0, then q + k * v, concatenated with -q along axis 0.
Graph slicesAndConcat(const Shape& shape) {
  GraphBuilder b;
  const int x = b.input("x", shape);
  const int packed = b.op(OpType::Relu, {x});
  const int q = gather(b, packed, 0), k = gather(b, packed, 1), v = gather(b, packed, 2);
  const int sum = b.op(OpType::Add, {q, b.op(OpType::Mul, {k, v})});
  const int y = b.op(OpType::Concat, {b.op(OpType::Sigmoid, {sum}), b.op(OpType::Neg, {q})});
  b.g.nodes.back().setInt("axis", 0);
  b.output(y);
  return b.g;
}

// The views (parts placed and ops run as views) of the CUDA session and of the CPU one, which
// places every part.
std::pair<int, int> runAndCompare(const Graph& g, const Shape& shape, bool low) {
  auto model = std::make_shared<Model>();
  model->graph = g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  BackendConfig config;
  if (low) config.precision = BackendConfig::Precision::Low;
  std::unique_ptr<Session> cuda, cpu;
  Status st = interp->createSession(onCuda, config, &cuda);
  EXPECT_TRUE(st) << st.message();
  EXPECT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &cpu));
  if (!cuda || !cpu) return {-1, -1};
  for (int run = 0; run < 2; ++run) {
    const Tensor x = randomTensor(DataType::Float32, shape, 10 + run);
    std::vector<Tensor> got, want;
    st = cuda->run({{"x", x}}, &got);
    EXPECT_TRUE(st) << st.message();
    EXPECT_TRUE(cpu->run({{"x", x}}, &want));
    if (got.size() != 1 || want.size() != 1) return {-1, -1};
    EXPECT_EQ(got[0].shape(), want[0].shape());
    const double tolerance = low ? 1e-2 : 1e-5;
    for (int64_t i = 0; i < want[0].elements(); ++i) {
      const float e = want[0].data<float>()[i], a = got[0].data<float>()[i];
      if (std::fabs(a - e) > tolerance * std::max(1.0, std::fabs(double(e)))) {
        ADD_FAILURE() << "run " << run << " element " << i << ": " << a << " vs CPU " << e;
        return {-1, -1};
      }
    }
  }
  return {cuda->stats().views, cpu->stats().views};
}

TEST(CudaParts, SlicesAndConcatPartsAtAlignedOffsets) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  const Shape shape{3, 64, 64};  // slices of 4096 elements: 16 KiB in fp32, 8 KiB in fp16
  for (bool low : {false, true}) {
    const auto [cudaViews, cpuViews] = runAndCompare(slicesAndConcat(shape), shape, low);
    EXPECT_EQ(cpuViews, 4);  // q, k, v, and the Concat (its two parts)
    EXPECT_EQ(cudaViews, cpuViews) << "low " << low;
  }
}

TEST(CudaParts, UnalignedOffsetsStillCopy) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  const Shape shape{3, 5, 7};  // slices of 35 elements: offsets of 140 and 70 bytes
  for (bool low : {false, true}) {
    const auto [cudaViews, cpuViews] = runAndCompare(slicesAndConcat(shape), shape, low);
    EXPECT_EQ(cpuViews, 4);
    EXPECT_EQ(cudaViews, 1) << "low " << low;  // q alone, at offset 0
  }
}

}  // namespace
}  // namespace osprey::test
