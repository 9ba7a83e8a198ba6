#include "core/memory_planner.h"

#include <algorithm>
#include <climits>

namespace osprey {

void MemoryPlanner::reset() {
  intervals_.clear();
  clock_ = 0;
  peak_ = 0;
}

std::shared_ptr<MemChunk> MemoryPlanner::acquire(size_t bytes) {
  auto chunk = std::make_shared<MemChunk>();
  chunk->base = &base_;
  chunk->size = bytes;
  size_t aligned = (std::max<size_t>(bytes, 1) + alignment_ - 1) / alignment_ * alignment_;
  intervals_.push_back({chunk, aligned, clock_++, INT64_MAX});
  return chunk;
}

void MemoryPlanner::release(const std::shared_ptr<MemChunk>& chunk) {
  for (auto it = intervals_.rbegin(); it != intervals_.rend(); ++it) {
    if (it->chunk == chunk && it->end == INT64_MAX) {
      it->end = clock_++;
      return;
    }
  }
}

size_t MemoryPlanner::plan() {
  std::vector<size_t> order(intervals_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return intervals_[a].size > intervals_[b].size; });
  std::vector<size_t> placed;  // indices already given offsets
  std::vector<std::pair<size_t, size_t>> busy;  // [offset, offset+size) of overlapping placed chunks
  peak_ = 0;
  for (size_t idx : order) {
    Interval& cur = intervals_[idx];
    busy.clear();
    for (size_t p : placed) {
      const Interval& o = intervals_[p];
      if (o.begin < cur.end && cur.begin < o.end) busy.push_back({o.chunk->offset, o.chunk->offset + o.size});
    }
    std::sort(busy.begin(), busy.end());
    size_t bestOffset = SIZE_MAX, bestGap = SIZE_MAX, cursor = 0;
    for (auto& [lo, hi] : busy) {
      if (lo > cursor) {
        size_t gap = lo - cursor;
        if (gap >= cur.size && gap < bestGap) {
          bestGap = gap;
          bestOffset = cursor;
        }
      }
      cursor = std::max(cursor, hi);
    }
    if (bestOffset == SIZE_MAX) bestOffset = cursor;  // no gap fits: place after the last busy chunk
    cur.chunk->offset = bestOffset;
    peak_ = std::max(peak_, bestOffset + cur.size);
    placed.push_back(idx);
  }
  return peak_;
}

size_t MemoryPlanner::sumBytes() const {
  size_t s = 0;
  for (auto& i : intervals_) s += i.chunk->size;
  return s;
}

}  // namespace osprey
