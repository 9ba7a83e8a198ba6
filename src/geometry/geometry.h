// Helpers that data-movement ops use to describe their outputs as Raster regions.
#pragma once
#include <vector>

#include "geometry/raster.h"
#include "osprey/types.h"

namespace osprey {

// Row-major strides of a shape, in elements.
std::vector<int64_t> stridesOf(const Shape& shape);

// Appends regions copying an N-d box: element idx goes from srcOffset + sum(idx*srcStrides)
// to dstOffset + sum(idx*dstStrides). Dimensions are merged where possible; boxes of more than
// three dimensions become one region per index of the leading dimensions.
void appendBoxCopy(std::vector<RasterRegion>& regions, int input, int64_t srcOffset,
                   const std::vector<int64_t>& srcStrides, int64_t dstOffset, const std::vector<int64_t>& dstStrides,
                   const Shape& sizes);

}  // namespace osprey
