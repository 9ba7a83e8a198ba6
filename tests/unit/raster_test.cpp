#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "geometry/geometry.h"
#include "geometry/raster.h"

namespace osprey {
namespace {

// Runs a box copy through appendBoxCopy + fuseRegions + executeRaster and compares with
// direct index arithmetic.
void checkBox(const Shape& sizes, const std::vector<int64_t>& srcStrides, const std::vector<int64_t>& dstStrides,
              int64_t srcLen, int64_t dstLen) {
  std::vector<float> src(srcLen), dst(dstLen, -1.f), expect(dstLen, -1.f);
  std::iota(src.begin(), src.end(), 0.f);
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t total = shapeElements(sizes);
  for (int64_t n = 0; n < total; ++n) {
    int64_t so = 0, dof = 0, rem = n;
    for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
      int64_t i = rem % sizes[d];
      rem /= sizes[d];
      so += i * srcStrides[d];
      dof += i * dstStrides[d];
    }
    expect[dof] = src[so];
  }
  RasterPlan plan;
  appendBoxCopy(plan.regions, 0, 0, srcStrides, 0, dstStrides, sizes);
  fuseRegions(plan.regions);
  executeRaster(plan, {src.data()}, dst.data(), dstLen, 4, static_cast<int>(DataType::Float32));
  EXPECT_EQ(dst, expect);
}

TEST(Raster, TransposeOf5DBox) {
  Shape s = {2, 3, 5, 7, 4};
  auto in = stridesOf(s);
  // dst is the (4,0,3,1,2) permutation of src
  Shape ds = {4, 2, 7, 3, 5};
  auto dstr = stridesOf(ds);
  std::vector<int64_t> dstStrides = {dstr[1], dstr[3], dstr[4], dstr[2], dstr[0]};
  checkBox(s, in, dstStrides, shapeElements(s), shapeElements(ds));
}

TEST(Raster, ContiguousCopyMergesToOneRegion) {
  RasterPlan plan;
  Shape s = {3, 13, 127};
  appendBoxCopy(plan.regions, 0, 0, stridesOf(s), 0, stridesOf(s), s);
  fuseRegions(plan.regions);
  ASSERT_EQ(plan.regions.size(), 1u);
  EXPECT_EQ(plan.regions[0].size[2], 3 * 13 * 127);
}

TEST(Raster, BroadcastSourceStrideZero) {
  Shape s = {4, 13};
  checkBox(s, {0, 1}, stridesOf(s), 13, 4 * 13);
}

TEST(Raster, FuseRegionsJoinsRepeatedCopies) {
  std::vector<RasterRegion> regions;
  for (int i = 0; i < 5; ++i) {
    RasterRegion r;
    r.src.offset = i * 10;
    r.dst.offset = i * 20;
    r.size[1] = 2;
    r.size[2] = 3;
    r.src.stride[1] = 5;
    r.dst.stride[1] = 7;
    regions.push_back(r);
  }
  std::vector<float> src(60), dst1(120, 0.f), dst2(120, 0.f);
  std::iota(src.begin(), src.end(), 1.f);
  RasterPlan a{regions, false, 0}, b{regions, false, 0};
  executeRaster(a, {src.data()}, dst1.data(), 120, 4, 1);
  fuseRegions(b.regions);
  EXPECT_EQ(b.regions.size(), 1u);
  executeRaster(b, {src.data()}, dst2.data(), 120, 4, 1);
  EXPECT_EQ(dst1, dst2);
}

TEST(Raster, RandomBoxesMatchIndexArithmetic) {
  std::mt19937 gen(3);
  for (int t = 0; t < 50; ++t) {
    int rank = 1 + gen() % 5;
    Shape s(rank);
    for (auto& d : s) d = 1 + gen() % 5;
    std::vector<int> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    Shape ds(rank);
    for (int i = 0; i < rank; ++i) ds[i] = s[perm[i]];
    auto dstr = stridesOf(ds);
    std::vector<int64_t> dstStrides(rank);
    for (int i = 0; i < rank; ++i) dstStrides[perm[i]] = dstr[i];
    checkBox(s, stridesOf(s), dstStrides, shapeElements(s), shapeElements(ds));
  }
}

}  // namespace
}  // namespace osprey
