// What a Raster does: an output described as 3-D strided copies from the op's inputs. Backends
// receive it in OpRef; geometry/ lowers data-movement ops to it and runs it on the host.
#pragma once
#include <cstdint>
#include <vector>

namespace osprey {

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

}  // namespace osprey
