// Layout conversion, the one place that knows how NCHW, NHWC and channel-packed layouts map.
#pragma once
#include "osprey/status.h"
#include "osprey/types.h"

namespace osprey {

class ThreadPool;

// Elements a tensor of `shape` occupies in `layout` (packed layouts round channels up).
int64_t layoutElements(const Shape& shape, Layout layout);
// Shape as stored for a logical (NCHW-order) shape: NHWC permutes rank-4 shapes.
Shape storedShape(const Shape& logical, Layout layout);
// Whether a tensor of logical `shape` is stored differently in NCHW and in `layout`. For NHWC:
// rank 4 with more than one channel and more than one spatial position, so a pooled
// [N, C, 1, 1] vector has the same bytes in both and never constrains a choice; packed layouts
// pad channels and matter for every rank-4 tensor.
bool layoutMatters(const Shape& shape, Layout layout);
// Copies a tensor of logical shape `shape` (N, C, spatial...) between layouts. Tensors of
// rank < 2 have one layout only and are copied as is. Padding channels are zero-filled. With a
// pool, large copies are split over its threads.
Status convertLayout(const void* src, Layout srcLayout, void* dst, Layout dstLayout, const Shape& shape,
                     size_t elementSize, ThreadPool* pool = nullptr);

}  // namespace osprey

namespace osprey {
// Inverse of storedShape: the NCHW-order shape of a tensor stored in `layout`.
Shape logicalShape(const Shape& stored, Layout layout);
}  // namespace osprey
