// image2d storage (OpenCLOptions::memory Image): the ImagePool's reuse, the fallback to buffers
// for tensors beyond the image limits (alone and mixed with images in one kernel), and copies
// in every direction between the host, images and buffers. The kernels themselves run in both
// modes in every op test (checkAgainstReference).
#include <cmath>

#include "backends/opencl/cl_backend.h"
#include "opencl_test_util.h"

namespace osprey::test {
namespace {

using opencl::MemoryMode;
using opencl::OpenCLBackend;
using opencl::OpenCLRuntime;
using opencl::RuntimeOptions;

std::unique_ptr<OpenCLRuntime> imageRuntime() {
  RuntimeOptions options;
  options.memory = MemoryMode::Image;
  std::unique_ptr<OpenCLRuntime> rt;
  if (!OpenCLRuntime::create(options, &rt)) return nullptr;
  return rt;
}

RuntimeTensor deviceTensor(const Shape& shape) {
  RuntimeTensor t;
  t.name = "t";
  t.dtype = DataType::Float32;
  t.shape = shape;
  return t;
}

// A host tensor over `storage`.
RuntimeTensor hostTensor(const Shape& shape, std::vector<float>* storage, uint8_t** base) {
  RuntimeTensor t = deviceTensor(shape);
  t.name = "host";
  *base = reinterpret_cast<uint8_t*>(storage->data());
  t.chunk = std::make_shared<MemChunk>();
  t.chunk->base = base;
  return t;
}

TEST(OpenCLImage, PoolReusesImagesByExtent) {
  OSPREY_REQUIRE_OPENCL();
  auto rt = imageRuntime();
  ASSERT_TRUE(rt);
  if (!rt->useImages()) GTEST_SKIP() << "the device has no usable CL_R float images";
  auto backend = rt->onCreate(BackendConfig());
  auto* cl = static_cast<OpenCLBackend*>(backend.get());
  RuntimeTensor a = deviceTensor({2, 13, 3, 5}), b = a, c = deviceTensor({7, 9});
  auto ma = backend->onAcquire(&a, StorageType::DYNAMIC);
  ASSERT_TRUE(ma);
  const opencl::DeviceRef ra = cl->ref(&a);
  ASSERT_TRUE(ra.image);
  EXPECT_EQ(ra.width * ra.height >= 390u, true);
  EXPECT_EQ(cl->dynamicImagePool().created(), 1);
  ma.reset();  // the image goes back to the pool ...
  EXPECT_EQ(cl->dynamicImagePool().freeImages(), 1u);
  auto mb = backend->onAcquire(&b, StorageType::DYNAMIC);  // ... and the same extent takes it
  EXPECT_EQ(cl->ref(&b).mem, ra.mem);
  EXPECT_EQ(cl->dynamicImagePool().created(), 1);
  auto mc = backend->onAcquire(&c, StorageType::DYNAMIC);  // another extent: a new image
  EXPECT_NE(cl->ref(&c).mem, ra.mem);
  EXPECT_EQ(cl->dynamicImagePool().created(), 2);
  // A DYNAMIC image freed while a plan is made is written again when the plan runs: STATIC
  // tensors (uploaded before it runs) never take one.
  mc.reset();
  RuntimeTensor s = deviceTensor({7, 9});
  auto ms = backend->onAcquire(&s, StorageType::STATIC);
  ASSERT_TRUE(ms);
  EXPECT_NE(cl->ref(&s).mem, cl->ref(&c).mem);
  EXPECT_EQ(cl->dynamicImagePool().freeImages(), 1u);
  // fp16 storage takes half images (or buffers where the device's half images are unusable).
  BackendConfig low;
  low.precision = BackendConfig::Precision::Low;
  auto half = rt->onCreate(low);
  RuntimeTensor h = deviceTensor({2, 13, 3, 5});
  auto mh = half->onAcquire(&h, StorageType::DYNAMIC);
  ASSERT_TRUE(mh);
  if (rt->halfImages()) {
    EXPECT_NE(static_cast<OpenCLBackend*>(half.get())->ref(&h).mem, ra.mem);
  }
}

// Tensors beyond the image limits are buffers; copies go host <-> image, image <-> buffer,
// buffer <-> buffer, image <-> image, in every direction.
TEST(OpenCLImage, FallbackToBuffersAndCopiesInEveryDirection) {
  OSPREY_REQUIRE_OPENCL();
  auto rt = imageRuntime();
  ASSERT_TRUE(rt);
  if (!rt->useImages()) GTEST_SKIP() << "the device has no usable CL_R float images";
  for (auto precision : {BackendConfig::Precision::Normal, BackendConfig::Precision::Low}) {
    rt->setImageLimits(0, 0);
    BackendConfig config;
    config.precision = precision;
    auto backend = rt->onCreate(config);
    auto* cl = static_cast<OpenCLBackend*>(backend.get());
    const Shape shape{3, 7, 11};  // 231 elements: 3 full rows of 64 texels and a partial one
    Tensor source = randomTensor(DataType::Float32, shape, 5);
    rt->setImageLimits(64, 8);
    RuntimeTensor img1 = deviceTensor(shape), img2 = img1, buf1 = img1, buf2 = img1;
    auto m1 = backend->onAcquire(&img1, StorageType::STATIC);
    auto m2 = backend->onAcquire(&img2, StorageType::STATIC);
    rt->setImageLimits(64, 2);  // 231 elements no longer fit: buffers
    auto m3 = backend->onAcquire(&buf1, StorageType::STATIC);
    auto m4 = backend->onAcquire(&buf2, StorageType::STATIC);
    ASSERT_TRUE(m1 && m2 && m3 && m4);
    const bool images = precision == BackendConfig::Precision::Normal || rt->halfImages();
    EXPECT_EQ(cl->ref(&img1).image, images);
    EXPECT_FALSE(cl->ref(&buf1).image);
    std::vector<float> inStore(source.data<float>(), source.data<float>() + source.elements());
    std::vector<float> outStore(inStore.size(), 0.f);
    uint8_t *inBase = nullptr, *outBase = nullptr;
    RuntimeTensor hostIn = hostTensor(shape, &inStore, &inBase), hostOut = hostTensor(shape, &outStore, &outBase);
    // host -> image -> buffer -> buffer -> image -> image -> host
    ASSERT_TRUE(backend->onCopyBuffer(&hostIn, &img1));
    ASSERT_TRUE(backend->onCopyBuffer(&img1, &buf1));
    ASSERT_TRUE(backend->onCopyBuffer(&buf1, &buf2));
    ASSERT_TRUE(backend->onCopyBuffer(&buf2, &img2));
    ASSERT_TRUE(backend->onCopyBuffer(&img2, &img1));
    ASSERT_TRUE(backend->onCopyBuffer(&img1, &hostOut));
    const double tol = precision == BackendConfig::Precision::Low ? 1e-3 : 0.0;
    for (size_t i = 0; i < inStore.size(); ++i) ASSERT_NEAR(outStore[i], inStore[i], tol * std::fabs(inStore[i])) << i;
    // buffer -> host as well
    std::fill(outStore.begin(), outStore.end(), 0.f);
    ASSERT_TRUE(backend->onCopyBuffer(&buf1, &hostOut));
    for (size_t i = 0; i < inStore.size(); ++i) ASSERT_NEAR(outStore[i], inStore[i], tol * std::fabs(inStore[i])) << i;
  }
}

// An image cannot be read and written by one kernel: an in-place op (input == output, which
// the pipeline does not make today, but an execution may) reads a copy of its input.
TEST(OpenCLImage, InPlaceOpReadsACopy) {
  OSPREY_REQUIRE_OPENCL();
  auto rt = imageRuntime();
  ASSERT_TRUE(rt);
  if (!rt->useImages()) GTEST_SKIP() << "the device has no usable CL_R float images";
  auto backend = rt->onCreate(BackendConfig());
  auto* cl = static_cast<OpenCLBackend*>(backend.get());
  const Shape shape{3, 5, 7};
  RuntimeTensor t = deviceTensor(shape);
  auto mem = backend->onAcquire(&t, StorageType::STATIC);
  ASSERT_TRUE(mem);
  ASSERT_TRUE(cl->ref(&t).image);
  Tensor source = randomTensor(DataType::Float32, shape, 9);
  std::vector<float> inStore(source.data<float>(), source.data<float>() + source.elements());
  std::vector<float> outStore(inStore.size(), 0.f);
  uint8_t *inBase = nullptr, *outBase = nullptr;
  RuntimeTensor hostIn = hostTensor(shape, &inStore, &inBase), hostOut = hostTensor(shape, &outStore, &outBase);
  ASSERT_TRUE(backend->onCopyBuffer(&hostIn, &t));
  Node node = makeNode(OpType::Neg);
  OpRef op;
  op.type = node.type;
  op.node = &node;
  std::vector<RuntimeTensor*> io{&t};
  auto exec = opencl::clKernelCreator(OpType::Neg)(cl, op, io, io);
  ASSERT_TRUE(exec);
  ASSERT_TRUE(exec->onResize(io, io));
  Status st = exec->onExecute(io, io);
  ASSERT_TRUE(st) << st.message();
  ASSERT_TRUE(backend->onCopyBuffer(&t, &hostOut));
  for (size_t i = 0; i < inStore.size(); ++i) ASSERT_EQ(outStore[i], -inStore[i]) << i;
}

// With limits of 64x4 texels, tensors above 256 elements fall back to buffers: kernels then get
// image and buffer arguments side by side (per-argument storage options).
TEST(OpenCLImage, KernelsWithImagesAndBuffersMixed) {
  OSPREY_REQUIRE_OPENCL();
  ScopedOpenCLOptions limits([](OpenCLOptions& o) {
    o.memory = OpenCLOptions::Memory::Image;
    o.imageMaxWidth = 64;
    o.imageMaxHeight = 4;
  });
  // Binary broadcast: a (390 elements, buffer) + b (65, image) -> y (buffer).
  checkInOneMemoryMode(makeNode(OpType::Add), {in(randomTensor(DataType::Float32, {2, 13, 3, 5}, 1)),
                                               in(randomTensor(DataType::Float32, {13, 1, 5}, 2))});
  // Conv: input 180 (image), weights 3*5*9 = 135 (image), output 2*3*9*7... = 378 (buffer).
  Node conv = makeNode(OpType::Conv);
  conv.setInts("pads", {1, 1, 1, 1});
  checkInOneMemoryMode(conv, {in(randomTensor(DataType::Float32, {1, 5, 6, 6}, 3)),
                              constant(randomTensor(DataType::Float32, {9, 5, 3, 3}, 4))});
  // Concat (Raster) of an image input and a buffer input.
  Node concat = makeNode(OpType::Concat);
  concat.setInt("axis", 1);
  checkInOneMemoryMode(concat, {in(randomTensor(DataType::Float32, {2, 3, 5}, 5)),
                                in(randomTensor(DataType::Float32, {2, 40, 5}, 6))});
}

}  // namespace
}  // namespace osprey::test
