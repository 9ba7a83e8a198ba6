// The fp32 stem at Low precision (BackendConfig::fullPrecisionStem): the first convolution stays
// in fp32 while the rest runs in fp16, with a converting copy where the two meet.
#include <cmath>

#include "cuda_test_util.h"

namespace osprey::test {
namespace {

// x -> Conv A (3x3, Relu) -> s ; s -> Conv B (1x1) -> b ; Add(b, s) -> y. A is 69% of the
// convolution work, so a stem share of 0.5 keeps exactly A in fp32. Both `s` and `y` are outputs.
std::shared_ptr<Model> stemModel() {
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  auto activation = [&](const std::string& name, Shape shape) {
    TensorInfo t;
    t.name = name;
    t.dtype = DataType::Float32;
    t.shape = std::move(shape);
    return g.addTensor(t);
  };
  auto constant = [&](const std::string& name, Shape shape, uint32_t seed) {
    TensorInfo t;
    t.name = name;
    t.dtype = DataType::Float32;
    t.shape = shape;
    t.isConstant = true;
    Tensor v = randomTensor(DataType::Float32, shape, seed, -0.5, 0.5);
    t.data = ConstantData::copyOf(v.data(), v.bytes());
    return g.addTensor(t);
  };
  auto conv = [&](const std::string& name, std::vector<int> inputs, int out, int64_t k) {
    Node n = makeNode(OpType::Conv);
    n.name = name;
    n.inputs = std::move(inputs);
    n.outputs = {out};
    n.setInts("kernel_shape", {k, k});
    n.setInts("pads", {k / 2, k / 2, k / 2, k / 2});
    g.nodes.push_back(n);
  };
  const int x = activation("x", {2, 8, 12, 12});
  g.inputs.push_back(x);
  const int s = activation("s", {2, 16, 12, 12}), b = activation("b", {2, 16, 12, 12}), y = activation("y", {2, 16, 12, 12});
  conv("A", {x, constant("wa", {16, 8, 3, 3}, 1), constant("ba", {16}, 2)}, s, 3);
  g.nodes.back().setString("activation", "Relu");
  conv("B", {s, constant("wb", {16, 16, 1, 1}, 3)}, b, 1);
  Node add = makeNode(OpType::Add);
  add.name = "residual";
  add.inputs = {b, s};
  add.outputs = {y};
  g.nodes.push_back(add);
  g.outputs = {s, y};
  return model;
}

// The fp32 bound of the CUDA kernel tests, 1e-5 of the largest value.
double fp32Bound(const Tensor& t) {
  double m = 1;
  for (int64_t i = 0; i < t.elements(); ++i) m = std::max(m, std::fabs(at(t, i)));
  return 1e-5 * m;
}

// Runs the model at Low precision with the given stem share, three times with new values (later
// runs replay a CUDA graph holding the conversion), and checks it against the CPU in fp32: `y`
// within the fp16 bound, `s` within the fp32 bound when it belongs to the stem and, when it does
// not, off by more than 10 times that bound (fp16 storage), so the fp32 check can tell the two apart.
void expectStem(float share, int stemOps, bool sInStem) {
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(stemModel(), &interp).isOk());
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  BackendConfig low;
  low.precision = BackendConfig::Precision::Low;
  low.fullPrecisionStem = share;
  std::unique_ptr<Session> cuda, cpu;
  ASSERT_TRUE(interp->createSession(onCuda, low, &cuda).isOk());
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &cpu).isOk());
  std::vector<Tensor> got, want;
  for (uint32_t run = 0; run < 3; ++run) {
    std::map<std::string, Tensor> feeds{{"x", randomTensor(DataType::Float32, {2, 8, 12, 12}, 50 + run, -2, 2)}};
    Status st = cuda->run(feeds, &got);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_TRUE(cpu->run(feeds, &want).isOk());
  }
  for (auto& [key, count] : cuda->stats().opsByBackend) EXPECT_NE(key.rfind("cpu:", 0), 0u) << key << " ran on the CPU";
  EXPECT_EQ(cuda->stats().fullPrecisionOps, stemOps);
  ASSERT_EQ(got.size(), 2u);
  if (sInStem) {
    EXPECT_LE(maxAbsDiff(got[0], want[0]), fp32Bound(want[0]));  // `s`, read back from fp32
  } else {
    EXPECT_GT(maxAbsDiff(got[0], want[0]), 10 * fp32Bound(want[0]));
  }
  EXPECT_LE(maxAbsDiff(got[1], want[1]), 2e-2);
}

TEST(CudaPrecisionStem, FirstConvolutionStaysFp32) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectStem(0.5f, 1, true);
}

TEST(CudaPrecisionStem, WithoutStemEverythingIsFp16) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectStem(0.f, 0, false);
}

TEST(CudaPrecisionStem, ShareOfOneKeepsEveryConvolution) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  expectStem(1.f, 2, true);  // A and B; the Add after the last convolution is not in the stem
}

}  // namespace
}  // namespace osprey::test
