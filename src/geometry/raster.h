// Raster: an output described as 3-D strided copies from inputs. Data-movement ops (Transpose,
// Slice, Concat, Pad, Tile, ...) lower to this, so a backend that runs Raster runs all of them.
#pragma once
#include <cstdint>
#include <vector>

namespace osprey {

class ThreadPool;

struct RasterView {
  int64_t offset = 0;            // in elements
  int64_t stride[3] = {0, 0, 1};  // in elements
};

struct RasterRegion {
  int input = 0;  // which input of the op the elements come from
  RasterView src, dst;
  int64_t size[3] = {1, 1, 1};
  int64_t count() const { return size[0] * size[1] * size[2]; }
};

struct RasterPlan {
  std::vector<RasterRegion> regions;
  bool fill = false;  // the regions do not cover the output: fill it with fillValue first
  double fillValue = 0.0;
};

// Copies `plan` into `dst` (elements of elementSize bytes) from srcs[region.input]; large
// regions on the pool's threads when one is given.
void executeRaster(const RasterPlan& plan, const std::vector<const void*>& srcs, void* dst,
                   int64_t dstElements, int elementSize, int dtypeForFill, ThreadPool* pool = nullptr);

// Merges adjacent dimensions that are contiguous in both views, drops size-1 dimensions and
// joins regions that continue one another, so backends run fewer, longer copies.
void simplifyRegion(RasterRegion& region);
void fuseRegions(std::vector<RasterRegion>& regions);

// A region copying a whole tensor of n elements from input `input` to dst offset 0.
RasterRegion contiguousRegion(int input, int64_t n);

}  // namespace osprey
