#include "core/layout.h"

#include <algorithm>
#include <cstring>

#include "core/thread_pool.h"

namespace osprey {

namespace {
int packOf(Layout l) { return l == Layout::NC4HW4 ? 4 : l == Layout::NC8HW8 ? 8 : 1; }

// Element offset of (n, c, s) for a tensor with C channels and S spatial positions.
int64_t offsetOf(Layout l, int64_t n, int64_t c, int64_t s, int64_t C, int64_t S) {
  switch (l) {
    case Layout::NCHW: return (n * C + c) * S + s;
    case Layout::NHWC: return (n * S + s) * C + c;
    default: {
      int64_t p = packOf(l), blocks = (C + p - 1) / p;
      return (((n * blocks) + c / p) * S + s) * p + c % p;
    }
  }
}
// dst[c][r] = src[r][c] for every image of a [rows][cols] matrix, in tiles that stay in cache.
template <class T>
void transposeImages(const T* src, T* dst, int64_t images, int64_t rows, int64_t cols, ThreadPool* pool) {
  constexpr int64_t kTile = 32;
  const int64_t rowTiles = (rows + kTile - 1) / kTile, colTiles = (cols + kTile - 1) / kTile;
  const int64_t tiles = images * rowTiles * colTiles;
  parallelFor(tiles >= 8 ? pool : nullptr, tiles, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t image = t / (rowTiles * colTiles), r0 = t / colTiles % rowTiles * kTile, c0 = t % colTiles * kTile;
      const T* s = src + image * rows * cols;
      T* d = dst + image * rows * cols;
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) d[c * rows + r] = s[r * cols + c];
    }
  });
}

template <class T>
void transposeImagesOf(const void* src, void* dst, int64_t images, int64_t rows, int64_t cols, ThreadPool* pool) {
  transposeImages(static_cast<const T*>(src), static_cast<T*>(dst), images, rows, cols, pool);
}

}  // namespace

int64_t layoutElements(const Shape& shape, Layout layout) {
  int p = packOf(layout);
  if (p == 1 || shape.size() < 2) return shapeElements(shape);
  Shape s = shape;
  s[1] = (s[1] + p - 1) / p * p;
  return shapeElements(s);
}

Shape storedShape(const Shape& logical, Layout layout) {
  if (layout != Layout::NHWC || logical.size() < 3) return logical;
  Shape s;
  s.push_back(logical[0]);
  for (size_t i = 2; i < logical.size(); ++i) s.push_back(logical[i]);
  s.push_back(logical[1]);
  return s;
}

bool layoutMatters(const Shape& shape, Layout layout) {
  if (layout == Layout::NCHW || shape.size() != 4) return false;
  if (layout != Layout::NHWC) return true;
  return shape[1] > 1 && shape[2] * shape[3] > 1;
}

Status convertLayout(const void* src, Layout srcLayout, void* dst, Layout dstLayout, const Shape& shape,
                     size_t elementSize, ThreadPool* pool) {
  if (srcLayout == dstLayout || shape.size() < 2) {
    const size_t bytes = static_cast<size_t>(layoutElements(shape, srcLayout)) * elementSize;
    // One core copies about half of what two do from the caches this size lives in.
    constexpr size_t kBlock = 64 << 10;
    const int64_t blocks = static_cast<int64_t>((bytes + kBlock - 1) / kBlock);
    parallelFor(blocks >= 4 ? pool : nullptr, blocks, [&](int64_t begin, int64_t end) {
      const size_t lo = static_cast<size_t>(begin) * kBlock, hi = std::min(bytes, static_cast<size_t>(end) * kBlock);
      std::memcpy(static_cast<uint8_t*>(dst) + lo, static_cast<const uint8_t*>(src) + lo, hi - lo);
    }, kFineRangesPerThread);
    return Status::ok();
  }
  int64_t N = shape[0], C = shape[1], S = 1;
  for (size_t i = 2; i < shape.size(); ++i) S *= shape[i];
  const bool nchwNhwc = (srcLayout == Layout::NCHW && dstLayout == Layout::NHWC) ||
                        (srcLayout == Layout::NHWC && dstLayout == Layout::NCHW);
  if (nchwNhwc && (elementSize == 1 || elementSize == 2 || elementSize == 4 || elementSize == 8)) {
    // [C][S] into [S][C] per image, or back.
    const int64_t rows = srcLayout == Layout::NCHW ? C : S, cols = srcLayout == Layout::NCHW ? S : C;
    if (elementSize == 1) transposeImagesOf<uint8_t>(src, dst, N, rows, cols, pool);
    if (elementSize == 2) transposeImagesOf<uint16_t>(src, dst, N, rows, cols, pool);
    if (elementSize == 4) transposeImagesOf<uint32_t>(src, dst, N, rows, cols, pool);
    if (elementSize == 8) transposeImagesOf<uint64_t>(src, dst, N, rows, cols, pool);
    return Status::ok();
  }
  if (packOf(dstLayout) > 1) std::memset(dst, 0, static_cast<size_t>(layoutElements(shape, dstLayout)) * elementSize);
  auto* s8 = static_cast<const uint8_t*>(src);
  auto* d8 = static_cast<uint8_t*>(dst);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s)
        std::memcpy(d8 + offsetOf(dstLayout, n, c, s, C, S) * elementSize,
                    s8 + offsetOf(srcLayout, n, c, s, C, S) * elementSize, elementSize);
  return Status::ok();
}

}  // namespace osprey

namespace osprey {
Shape logicalShape(const Shape& stored, Layout layout) {
  if (layout != Layout::NHWC || stored.size() < 3) return stored;
  Shape s;
  s.push_back(stored[0]);
  s.push_back(stored.back());
  for (size_t i = 1; i + 1 < stored.size(); ++i) s.push_back(stored[i]);
  return s;
}
}  // namespace osprey
