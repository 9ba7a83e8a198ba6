#include "geometry/raster.h"

#include <algorithm>
#include <cstring>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "geometry/geometry.h"

namespace osprey {

namespace {

// Regions of at least this many elements are copied by the pool's threads: a single thread
// moved ViT's 197 x 192 Q / K / V slices at about 10 GB/s.
constexpr int64_t kParallelElements = 16384;

// Rows [row0, row1) of the region's size[0] x size[1] rows, columns [x0, x1) of each.
template <class T>
void copyRows(const RasterRegion& r, const T* src, T* dst, int64_t row0, int64_t row1, int64_t x0, int64_t x1) {
  const int64_t ss = r.src.stride[2], ds = r.dst.stride[2];
  for (int64_t row = row0; row < row1; ++row) {
    const int64_t z = row / r.size[1], y = row % r.size[1];
    const T* s = src + r.src.offset + z * r.src.stride[0] + y * r.src.stride[1];
    T* d = dst + r.dst.offset + z * r.dst.stride[0] + y * r.dst.stride[1];
    if (ss == 1 && ds == 1) {
      std::memcpy(d + x0, s + x0, static_cast<size_t>(x1 - x0) * sizeof(T));
    } else {
      for (int64_t x = x0; x < x1; ++x) d[x * ds] = s[x * ss];
    }
  }
}

template <class T>
void copyRegion(const RasterRegion& r, const T* src, T* dst, ThreadPool* pool) {
  const int64_t rows = r.size[0] * r.size[1], width = r.size[2];
  // Rows run in any order on the pool: a region with a zero output stride writes some elements
  // more than once, the last write wins, and so it stays on one thread.
  bool distinct = true;
  for (int i = 0; i < 3; ++i) distinct = distinct && (r.size[i] == 1 || r.dst.stride[i] != 0);
  if (!pool || !distinct || r.count() < kParallelElements) return copyRows(r, src, dst, 0, rows, 0, width);
  if (rows == 1) {  // one long run: cut it into pieces of whole cache lines
    constexpr int64_t kLine = 64 / sizeof(T);
    parallelFor(pool, (width + kLine - 1) / kLine, [&](int64_t b, int64_t e) {
      copyRows(r, src, dst, 0, 1, b * kLine, std::min(width, e * kLine));
    }, 2);
    return;
  }
  parallelFor(pool, rows, [&](int64_t b, int64_t e) { copyRows(r, src, dst, b, e, 0, width); }, 2);
}

template <class T>
void runPlan(const RasterPlan& plan, const std::vector<const void*>& srcs, void* dst, ThreadPool* pool) {
  for (const RasterRegion& r : plan.regions)
    copyRegion(r, static_cast<const T*>(srcs[r.input]), static_cast<T*>(dst), pool);
}
}  // namespace

void executeRaster(const RasterPlan& plan, const std::vector<const void*>& srcs, void* dst, int64_t dstElements,
                   int elementSize, int dtypeForFill, ThreadPool* pool) {
  if (plan.fill) {
    if (plan.fillValue == 0.0) {
      std::memset(dst, 0, static_cast<size_t>(dstElements) * elementSize);
    } else {
      for (int64_t i = 0; i < dstElements; ++i) storeFromDouble(static_cast<DataType>(dtypeForFill), dst, i, plan.fillValue);
    }
  }
  switch (elementSize) {
    case 1: runPlan<uint8_t>(plan, srcs, dst, pool); break;
    case 2: runPlan<uint16_t>(plan, srcs, dst, pool); break;
    case 4: runPlan<uint32_t>(plan, srcs, dst, pool); break;
    case 8: runPlan<uint64_t>(plan, srcs, dst, pool); break;
    default: break;
  }
}

void simplifyRegion(RasterRegion& r) {
  // Collect non-trivial dims (outer to inner), merge where inner*size == outer in both views.
  int64_t size[3], ss[3], ds[3];
  int n = 0;
  for (int i = 0; i < 3; ++i) {
    if (r.size[i] == 1) continue;
    if (n > 0 && ss[n - 1] == r.src.stride[i] * r.size[i] && ds[n - 1] == r.dst.stride[i] * r.size[i]) {
      size[n - 1] *= r.size[i];
      ss[n - 1] = r.src.stride[i];
      ds[n - 1] = r.dst.stride[i];
      continue;
    }
    size[n] = r.size[i];
    ss[n] = r.src.stride[i];
    ds[n] = r.dst.stride[i];
    ++n;
  }
  int pad = 3 - n;
  for (int i = 0; i < 3; ++i) {
    if (i < pad) {
      r.size[i] = 1;
      r.src.stride[i] = 0;
      r.dst.stride[i] = 0;
    } else {
      r.size[i] = size[i - pad];
      r.src.stride[i] = ss[i - pad];
      r.dst.stride[i] = ds[i - pad];
    }
  }
  if (n == 0) {
    r.src.stride[2] = 1;
    r.dst.stride[2] = 1;
  }
}

void fuseRegions(std::vector<RasterRegion>& regions) {
  for (auto& r : regions) simplifyRegion(r);
  // Regions that repeat one 2-D copy at a constant step become one 3-D region.
  std::vector<RasterRegion> out;
  for (auto& r : regions) {
    if (!out.empty()) {
      RasterRegion& last = out.back();
      bool twoD = r.size[0] == 1 && last.input == r.input && last.size[1] == r.size[1] && last.size[2] == r.size[2] &&
                  last.src.stride[1] == r.src.stride[1] && last.src.stride[2] == r.src.stride[2] &&
                  last.dst.stride[1] == r.dst.stride[1] && last.dst.stride[2] == r.dst.stride[2];
      if (twoD) {
        int64_t sstep = r.src.offset - last.src.offset, dstep = r.dst.offset - last.dst.offset;
        if (last.size[0] == 1) {
          last.src.stride[0] = sstep;
          last.dst.stride[0] = dstep;
          last.size[0] = 2;
          continue;
        }
        if (sstep == last.src.stride[0] * last.size[0] && dstep == last.dst.stride[0] * last.size[0]) {
          ++last.size[0];
          continue;
        }
      }
    }
    out.push_back(r);
  }
  regions.swap(out);
}

RasterRegion contiguousRegion(int input, int64_t n) {
  RasterRegion r;
  r.input = input;
  r.size[2] = n;
  return r;
}

std::vector<int64_t> stridesOf(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

void appendBoxCopy(std::vector<RasterRegion>& regions, int input, int64_t srcOffset,
                   const std::vector<int64_t>& srcStrides, int64_t dstOffset, const std::vector<int64_t>& dstStrides,
                   const Shape& sizes) {
  for (int64_t d : sizes)
    if (d == 0) return;
  // Drop size-1 dims and merge dims contiguous in both views.
  std::vector<int64_t> sz, ss, ds;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (!sz.empty() && ss.back() == srcStrides[i] * sizes[i] && ds.back() == dstStrides[i] * sizes[i]) {
      sz.back() *= sizes[i];
      ss.back() = srcStrides[i];
      ds.back() = dstStrides[i];
      continue;
    }
    sz.push_back(sizes[i]);
    ss.push_back(srcStrides[i]);
    ds.push_back(dstStrides[i]);
  }
  while (sz.size() < 3) {
    sz.insert(sz.begin(), 1);
    ss.insert(ss.begin(), 0);
    ds.insert(ds.begin(), 0);
  }
  size_t outer = sz.size() - 3;
  std::vector<int64_t> idx(outer, 0);
  for (;;) {
    RasterRegion r;
    r.input = input;
    r.src.offset = srcOffset;
    r.dst.offset = dstOffset;
    for (size_t i = 0; i < outer; ++i) {
      r.src.offset += idx[i] * ss[i];
      r.dst.offset += idx[i] * ds[i];
    }
    for (int k = 0; k < 3; ++k) {
      r.size[k] = sz[outer + k];
      r.src.stride[k] = ss[outer + k];
      r.dst.stride[k] = ds[outer + k];
    }
    regions.push_back(r);
    int i = static_cast<int>(outer) - 1;
    while (i >= 0 && ++idx[i] == sz[i]) idx[i--] = 0;
    if (i < 0) break;
  }
}

}  // namespace osprey
