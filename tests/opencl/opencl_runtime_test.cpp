// The OpenCL runtime and backend around the kernels: device facts, the disk cache of program
// binaries and tuned sizes, tuning levels, copies between every layout pair, and fallback of
// an op without an OpenCL kernel in the middle of a graph.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "backends/opencl/cl_backend.h"
#include "core/layout.h"
#include "opencl_test_util.h"

namespace osprey::test {
namespace {

using opencl::OpenCLBackend;
using opencl::OpenCLRuntime;
using opencl::RuntimeOptions;
using opencl::TuneLevel;

Node smallConv() {
  Node n = makeNode(OpType::Conv);
  n.setInts("pads", {1, 1, 1, 1});
  return n;
}
std::vector<OpInput> smallConvInputs() {
  return {in(randomTensor(DataType::Float32, {1, 5, 9, 7}, 1)),
          constant(randomTensor(DataType::Float32, {3, 5, 3, 3}, 2))};
}

TEST(OpenCLRuntime, DeviceFacts) {
  OSPREY_REQUIRE_OPENCL();
  std::unique_ptr<OpenCLRuntime> rt;
  Status st = OpenCLRuntime::create(RuntimeOptions(), &rt);
  ASSERT_TRUE(st) << st.message();
  const auto& f = rt->facts();
  EXPECT_FALSE(f.name.empty());
  EXPECT_GT(f.computeUnits, 0u);
  EXPECT_GT(f.maxWorkGroupSize, 0u);
  EXPECT_GT(f.maxAllocBytes, 0u);
  EXPECT_NE(f.summary().find("OpenCL"), std::string::npos) << f.summary();
}

// Images by default on GPUs, buffers on CPU devices and on NVIDIA and AMD GPUs (measured faster
// there); OpenCLOptions::memory overrides either way.
TEST(OpenCLRuntime, MemoryObjectDefaultPerDevice) {
  opencl::DeviceFacts gpu;
  gpu.type = CL_DEVICE_TYPE_GPU;
  gpu.vendor = "QUALCOMM";
  EXPECT_TRUE(opencl::imagesByDefault(gpu));
  gpu.vendor = "ARM";
  EXPECT_TRUE(opencl::imagesByDefault(gpu));
  gpu.vendor = "NVIDIA Corporation";
  EXPECT_FALSE(opencl::imagesByDefault(gpu));
  gpu.vendor = "Advanced Micro Devices, Inc.";
  EXPECT_FALSE(opencl::imagesByDefault(gpu));
  opencl::DeviceFacts cpu;
  cpu.type = CL_DEVICE_TYPE_CPU;
  cpu.vendor = "GenuineIntel";
  EXPECT_FALSE(opencl::imagesByDefault(cpu));

  OSPREY_REQUIRE_OPENCL();
  RuntimeOptions options;
  std::unique_ptr<OpenCLRuntime> rt;
  ASSERT_TRUE(OpenCLRuntime::create(options, &rt));
  const bool canImage = rt->facts().imageSupport;
  EXPECT_EQ(rt->useImages(), opencl::imagesByDefault(rt->facts()) && canImage) << rt->facts().summary();
  options.memory = opencl::MemoryMode::Image;
  ASSERT_TRUE(OpenCLRuntime::create(options, &rt));
  EXPECT_EQ(rt->useImages(), canImage);
  options.memory = opencl::MemoryMode::Buffer;
  ASSERT_TRUE(OpenCLRuntime::create(options, &rt));
  EXPECT_FALSE(rt->useImages());
}

// Half arithmetic needs cl_khr_fp16 and can be turned off; programs get -DUSE_FP16_MATH only
// with fp16 storage. The half kernels themselves are compile-checked by clang
// (check_cl_half_compile.sh): no device here has cl_khr_fp16.
TEST(OpenCLRuntime, HalfMathOnlyWithTheExtension) {
  opencl::DeviceFacts f;
  RuntimeOptions options;
  EXPECT_FALSE(opencl::halfMathOn(f, options));
  f.fp16 = true;
  EXPECT_TRUE(opencl::halfMathOn(f, options));
  OpenCLOptions off;
  off.halfMath = false;
  EXPECT_FALSE(opencl::halfMathOn(f, RuntimeOptions::fromConfig(off)));

  OSPREY_REQUIRE_OPENCL();
  std::unique_ptr<OpenCLRuntime> rt;
  ASSERT_TRUE(OpenCLRuntime::create(RuntimeOptions(), &rt));
  EXPECT_EQ(rt->halfMath(), rt->facts().fp16);
  BackendConfig config;
  OpenCLBackend normal(rt.get(), config);
  EXPECT_FALSE(normal.halfMath());
  EXPECT_EQ(normal.buildOptions(), "");
  config.precision = BackendConfig::Precision::Low;
  OpenCLBackend low(rt.get(), config);
  EXPECT_EQ(low.halfMath(), rt->facts().fp16);
  EXPECT_EQ(low.buildOptions(), rt->facts().fp16 ? "-DUSE_FP16 -DUSE_FP16_MATH" : "-DUSE_FP16");
}

TEST(OpenCLRuntime, DeviceSelectionByOptions) {
  OSPREY_REQUIRE_OPENCL();
  OpenCLOptions options;
  options.platform = "0";
  {
    std::unique_ptr<OpenCLRuntime> rt;
    EXPECT_TRUE(OpenCLRuntime::create(RuntimeOptions::fromConfig(options), &rt));
  }
  options.platform = "no such platform name";
  std::unique_ptr<OpenCLRuntime> rt;
  Status st = OpenCLRuntime::create(RuntimeOptions::fromConfig(options), &rt);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("no device matches"), std::string::npos) << st.message();
}

TEST(OpenCLRuntime, TuningLevels) {
  OSPREY_REQUIRE_OPENCL();
  using Tuning = OpenCLOptions::Tuning;
  for (Tuning level : {Tuning::None, Tuning::Fast, Tuning::Wide}) {
    SCOPED_TRACE(static_cast<int>(level));
    ScopedOpenCLOptions tune([level](OpenCLOptions& o) { o.tuning = level; });
    checkAgainstReference(smallConv(), smallConvInputs());
  }
}

TEST(OpenCLRuntime, DiskCacheRoundTrip) {
  OSPREY_REQUIRE_OPENCL();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("osprey-ocl-cache-test-" + std::to_string(::getpid()) + ".bin"))
          .string();
  std::remove(path.c_str());
  {
    ScopedOpenCLOptions cacheAndTune([&path](OpenCLOptions& o) {
      o.tuningCachePath = path;
      o.tuning = OpenCLOptions::Tuning::Fast;
    });
    // Each session's runtime writes the cache when it ends (conv: fixed work groups; Sigmoid: tuned).
    checkAgainstReference(smallConv(), smallConvInputs());
    checkAgainstReference(makeNode(OpType::Sigmoid), {in(randomTensor(DataType::Float32, {7, 13}, 3))});
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  RuntimeOptions options;
  options.cachePath = path;
  options.tune = TuneLevel::Fast;
  std::unique_ptr<OpenCLRuntime> rt;
  ASSERT_TRUE(OpenCLRuntime::create(options, &rt));
  EXPECT_GT(rt->tunedEntries(), 0u);
  cl_kernel k = nullptr;
  Status st = rt->kernel("conv", "conv2d_gemm", "", &k);
  ASSERT_TRUE(st) << st.message();
  clReleaseKernel(k);
  EXPECT_EQ(rt->programsBuilt(), 0) << "the program should come from the cache, not the compiler";
  EXPECT_EQ(rt->programsFromBinary(), 1);
  // makeCache / setCache in memory, and a corrupt cache is an error, not a crash.
  std::vector<uint8_t> bytes = rt->makeCache();
  std::unique_ptr<OpenCLRuntime> other;
  ASSERT_TRUE(OpenCLRuntime::create(RuntimeOptions(), &other));
  EXPECT_TRUE(other->setCache(bytes));
  EXPECT_EQ(other->tunedEntries(), rt->tunedEntries());
  bytes.resize(bytes.size() / 2);
  EXPECT_FALSE(other->setCache(bytes));
  EXPECT_FALSE(other->setCache({1, 2, 3}));
  std::remove(path.c_str());
}

void copiesBetweenEveryLayoutPair(const RuntimeOptions& options);

// Host NCHW -> device (each layout) -> device (each other layout) -> host NHWC and back.
TEST(OpenCLBackend, CopiesBetweenEveryLayoutPair) {
  OSPREY_REQUIRE_OPENCL();
  for (auto memory : {opencl::MemoryMode::Buffer, opencl::MemoryMode::Image}) {
    SCOPED_TRACE(memory == opencl::MemoryMode::Image ? "images" : "buffers");
    RuntimeOptions options;
    options.memory = memory;
    copiesBetweenEveryLayoutPair(options);
    if (HasFatalFailure()) return;
  }
}

void copiesBetweenEveryLayoutPair(const RuntimeOptions& options) {
  std::unique_ptr<OpenCLRuntime> rt;
  ASSERT_TRUE(OpenCLRuntime::create(options, &rt));
  const Shape shape{2, 13, 3, 5};
  Tensor source = randomTensor(DataType::Float32, shape, 7);
  const Layout layouts[] = {Layout::NCHW, Layout::NHWC, Layout::NC4HW4, Layout::NC8HW8};
  for (auto precision : {BackendConfig::Precision::Normal, BackendConfig::Precision::Low}) {
    BackendConfig config;
    config.precision = precision;
    auto backend = rt->onCreate(config);
    const double tol = precision == BackendConfig::Precision::Low ? 1e-3 : 0.0;
    for (Layout a : layouts) {
      for (Layout b : layouts) {
        SCOPED_TRACE(std::to_string(static_cast<int>(a)) + " -> " + std::to_string(static_cast<int>(b)));
        auto hostTensor = [&](Layout layout, std::vector<float>* storage, uint8_t** base) {
          RuntimeTensor t;
          t.name = "host";
          t.dtype = DataType::Float32;
          t.shape = shape;
          t.layout = layout;
          storage->assign(static_cast<size_t>(layoutElements(shape, layout)), 0.f);
          *base = reinterpret_cast<uint8_t*>(storage->data());
          t.chunk = std::make_shared<MemChunk>();
          t.chunk->base = base;
          return t;
        };
        std::vector<float> inStore, outStore;
        uint8_t *inBase = nullptr, *outBase = nullptr;
        RuntimeTensor hostIn = hostTensor(Layout::NCHW, &inStore, &inBase);
        std::copy(source.data<float>(), source.data<float>() + source.elements(), inStore.begin());
        RuntimeTensor dev1 = hostIn, dev2 = hostIn;
        dev1.chunk.reset();
        dev2.chunk.reset();
        dev1.layout = a;
        dev2.layout = b;
        auto m1 = backend->onAcquire(&dev1, StorageType::STATIC);
        auto m2 = backend->onAcquire(&dev2, StorageType::STATIC);
        ASSERT_TRUE(m1 && m2);
        RuntimeTensor hostOut = hostTensor(Layout::NHWC, &outStore, &outBase);
        ASSERT_TRUE(backend->onCopyBuffer(&hostIn, &dev1));
        ASSERT_TRUE(backend->onCopyBuffer(&dev1, &dev2));
        ASSERT_TRUE(backend->onCopyBuffer(&dev2, &hostOut));
        std::vector<float> back(static_cast<size_t>(source.elements()));
        ASSERT_TRUE(convertLayout(outStore.data(), Layout::NHWC, back.data(), Layout::NCHW, shape, 4));
        for (int64_t i = 0; i < source.elements(); ++i)
          ASSERT_NEAR(back[i], source.data<float>()[i], tol * std::fabs(source.data<float>()[i])) << i;
      }
    }
  }
}

// x -> Relu (OpenCL) -> Sin (no OpenCL kernel: CPU) -> Sigmoid (OpenCL) -> y.
TEST(OpenCLBackend, FallbackInsideAGraph) {
  OSPREY_REQUIRE_OPENCL();
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  auto tensor = [&](const std::string& name) {
    TensorInfo t;
    t.name = name;
    return g.addTensor(t);
  };
  TensorInfo x;
  x.name = "x";
  x.dtype = DataType::Float32;
  x.shape = {3, 13};
  const int xi = g.addTensor(x), a = tensor("a"), b = tensor("b"), y = tensor("y");
  g.inputs = {xi};
  g.outputs = {y};
  const OpType types[] = {OpType::Relu, OpType::Sin, OpType::Sigmoid};
  const int ios[][2] = {{xi, a}, {a, b}, {b, y}};
  for (int i = 0; i < 3; ++i) {
    Node n = makeNode(types[i]);
    n.name = std::string("n") + std::to_string(i);
    n.inputs = {ios[i][0]};
    n.outputs = {ios[i][1]};
    g.nodes.push_back(n);
  }
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp));
  ScheduleConfig schedule;
  schedule.backend = ForwardType::OpenCL;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(schedule, BackendConfig(), &session));
  Tensor input = randomTensor(DataType::Float32, {3, 13}, 9, -2, 2);
  std::vector<Tensor> out;
  Status st = session->run({{"x", input}}, &out);
  ASSERT_TRUE(st) << st.message();
  const auto& ops = session->stats().opsByBackend;
  EXPECT_EQ(ops.count("opencl:Relu"), 1u) << describeBackends(session->stats());
  EXPECT_EQ(ops.count("cpu:Sin"), 1u) << describeBackends(session->stats());
  EXPECT_EQ(ops.count("opencl:Sigmoid"), 1u) << describeBackends(session->stats());
  for (int64_t i = 0; i < input.elements(); ++i) {
    const double v = input.data<float>()[i];
    const double expected = 1.0 / (1.0 + std::exp(-std::sin(v > 0 ? v : 0)));
    ASSERT_NEAR(at(out[0], i), expected, 1e-5) << i;
  }
}

}  // namespace
}  // namespace osprey::test
