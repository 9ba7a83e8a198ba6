// Raster on the pool's threads against the same plan run on one thread: large regions (a slice
// of rows, a transpose with a strided inner dimension, one long contiguous run, a 3-D region)
// and small ones, with 1, 2 and 3 threads; every element of the output written exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "geometry/raster.h"

namespace osprey {
namespace {

RasterRegion region(int64_t s0, int64_t s1, int64_t s2, RasterView src, RasterView dst) {
  RasterRegion r;
  r.size[0] = s0, r.size[1] = s1, r.size[2] = s2;
  r.src = src, r.dst = dst;
  return r;
}

RasterView view(int64_t offset, int64_t a, int64_t b, int64_t c) {
  RasterView v;
  v.offset = offset;
  v.stride[0] = a, v.stride[1] = b, v.stride[2] = c;
  return v;
}

void expectSameWithPool(const RasterPlan& plan, int64_t srcElements, int64_t dstElements) {
  std::vector<uint32_t> src(static_cast<size_t>(srcElements));
  for (int64_t i = 0; i < srcElements; ++i) src[i] = static_cast<uint32_t>(i * 2654435761u);
  const std::vector<const void*> srcs{src.data()};
  std::vector<uint32_t> expected(static_cast<size_t>(dstElements), 0xdeadbeefu);
  executeRaster(plan, srcs, expected.data(), dstElements, 4, 0);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    std::vector<uint32_t> got(static_cast<size_t>(dstElements), 0xdeadbeefu);
    executeRaster(plan, srcs, got.data(), dstElements, 4, 0, &pool);
    for (int64_t i = 0; i < dstElements; ++i) ASSERT_EQ(got[i], expected[i]) << "threads " << threads << " index " << i;
  }
}

TEST(CpuRaster, SliceOfRows) {
  // [197, 576] -> the middle [197, 192], as a ViT block's Q / K / V slices.
  RasterPlan plan;
  plan.regions.push_back(region(1, 197, 192, view(192, 0, 576, 1), view(0, 0, 192, 1)));
  expectSameWithPool(plan, 197 * 576, 197 * 192);
}

TEST(CpuRaster, TransposeWithStridedInner) {
  // [301, 203] -> [203, 301]: the inner dimension reads with a stride.
  RasterPlan plan;
  plan.regions.push_back(region(1, 203, 301, view(0, 0, 1, 203), view(0, 0, 301, 1)));
  expectSameWithPool(plan, 301 * 203, 203 * 301);
}

TEST(CpuRaster, OneLongRunAndAThreeDRegion) {
  RasterPlan run;
  run.regions.push_back(region(1, 1, 50003, view(7, 0, 0, 1), view(0, 0, 0, 1)));
  expectSameWithPool(run, 50010, 50003);
  // [2, 58, 147] channel shuffle-like: halves interleaved, two regions into one output.
  RasterPlan shuffle;
  shuffle.regions.push_back(region(2, 58, 147, view(0, 58 * 147, 147, 1), view(0, 147, 2 * 147, 1)));
  shuffle.regions.push_back(region(1, 3, 5, view(0, 0, 5, 1), view(2 * 58 * 147, 0, 5, 1)));  // small: one thread
  expectSameWithPool(shuffle, 2 * 58 * 147, 2 * 58 * 147 + 15);
}

TEST(CpuRaster, FillThenLargeRegion) {
  RasterPlan plan;
  plan.fill = true;
  plan.fillValue = 0.0;
  plan.regions.push_back(region(1, 150, 130, view(0, 0, 130, 1), view(5, 0, 140, 1)));  // padded rows
  expectSameWithPool(plan, 150 * 130, 150 * 140 + 5);
}

}  // namespace
}  // namespace osprey
