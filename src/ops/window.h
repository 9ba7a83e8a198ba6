// Sliding-window geometry shared by Conv, ConvTranspose and the pools: attribute parsing
// (kernel_shape, strides, dilations, pads, auto_pad) and output sizes. Spatial dims are padded
// at the front with size-1 dims to exactly three, so every kernel loops over (D, H, W).
#pragma once
#include <cstdint>
#include <vector>

#include "core/graph.h"

namespace osprey {

constexpr int kMaxSpatialRank = 3;
// Sizes, strides, dilations and pads beyond int32 are no real model's; bounding them keeps every
// product of two of them (extent, (out - 1) * stride) and the sums of such inside int64.
constexpr int64_t kMaxWindowValue = INT32_MAX;

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

struct Window {
  int rank = 0;  // the op's own spatial rank, 1..3
  // Index 3 - rank + d holds spatial dim d; the leading unused slots are neutral (size 1).
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t padBegin[3] = {0, 0, 0}, padEnd[3] = {0, 0, 0};
  AutoPad autoPad = AutoPad::NotSet;

  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t extent(int s) const { return (kernel[s] - 1) * dilation[s] + 1; }
  Shape outShape() const { return Shape(out + 3 - rank, out + 3); }
};

// Fills rank, in, kernel, strides, dilations, pads (begin/end as given) and auto_pad, checking
// lengths and ranges. `kernel` has one entry per spatial dim of `inSpatial`.
Status readWindow(const Node& node, const Shape& inSpatial, const std::vector<int64_t>& kernel, Window* w);

// Output size and effective pads of a forward window (Conv and the pools) after readWindow.
// ceil_mode rounds the output up, dropping a last window that would start in the end padding.
Status resolveForwardWindow(bool ceilMode, Window* w);

// A convolution's window from its node, input shape X [N, C, spatial...] and weight shape
// W [M, C/group, kernel...]: readWindow with W's kernel dims, then resolveForwardWindow.
Status readConvWindow(const Node& node, const Shape& x, const Shape& w, Window* out);

// Integer division rounding towards +infinity, for any sign of a and b > 0.
inline int64_t ceilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// The range [lo, hi) of output positions o in [0, outCount) for which o*stride + offset falls
// inside [0, inCount): the positions where one kernel tap reads (or writes) real data.
inline void validRange(int64_t offset, int64_t stride, int64_t inCount, int64_t outCount, int64_t* lo, int64_t* hi) {
  int64_t a = ceilDiv(-offset, stride), b = ceilDiv(inCount - offset, stride);
  *lo = a < 0 ? 0 : (a > outCount ? outCount : a);
  *hi = b < *lo ? *lo : (b > outCount ? outCount : b);
}

}  // namespace osprey
