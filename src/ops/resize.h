// Resize's sampling plan, shared by the reference kernel and the backends' fast paths: for each
// axis, the input taps (clamped index, weight) of every output coordinate.
#pragma once
#include <vector>

#include "ops/op_def.h"

namespace osprey {

struct ResizeTap {
  int64_t index;  // clamped into the input: samples beyond the border repeat the edge
  double weight;
};

// The taps of every output coordinate of one axis: taps[first[x] .. first[x+1]).
struct ResizeAxisTaps {
  std::vector<size_t> first;
  std::vector<ResizeTap> taps;
  std::vector<bool> outside;  // tf_crop_and_resize sampled beyond the input
};

// Osprey's attribute `integer_rounding = "half_up"` on a Resize of integer codes: results are
// rounded half up (floor(v + 0.5)), as LiteRT's int8 bilinear resize rounds, instead of being
// truncated toward zero.
bool resizeRoundsHalfUp(const Node& node);

// The taps of every axis of Resize `node` at these inputs (scales, sizes and roi read from
// theirs), and the value of outside samples.
Status resizeTaps(const Node& node, const TensorViews& inputs, std::vector<ResizeAxisTaps>* taps,
                  double* extrapolation);

}  // namespace osprey
