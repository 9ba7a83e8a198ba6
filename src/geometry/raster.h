// Raster: an output described as 3-D strided copies from inputs. Data-movement ops (Transpose,
// Slice, Concat, Pad, Tile, ...) lower to this, so a backend that runs Raster runs all of them.
#pragma once
#include <cstdint>
#include <vector>

#include "core/raster_plan.h"

namespace osprey {

class ThreadPool;

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
