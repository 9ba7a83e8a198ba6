#include "converter/tflite/sparsity.h"

#include <cstring>

#include "core/graph.h"

namespace osprey::tfl {

namespace {

constexpr size_t kMaxLevels = 16;

Status indexVector(const tflite::DimensionMetadata& d, bool segments, std::vector<int64_t>* out) {
  const tflite::SparseIndexVector type = segments ? d.array_segments_type() : d.array_indices_type();
  const void* table = segments ? d.array_segments() : d.array_indices();
  out->clear();
  if (!table) return Status::invalidModel(std::string("a sparse dimension has no array_") + (segments ? "segments" : "indices"));
  auto copy = [&](const auto* values) {
    if (values) out->assign(values->begin(), values->end());
  };
  switch (type) {
    case tflite::SparseIndexVector_Int32Vector: copy(static_cast<const tflite::Int32Vector*>(table)->values()); break;
    case tflite::SparseIndexVector_Uint16Vector: copy(static_cast<const tflite::Uint16Vector*>(table)->values()); break;
    case tflite::SparseIndexVector_Uint8Vector: copy(static_cast<const tflite::Uint8Vector*>(table)->values()); break;
    default: return Status::invalidModel("a sparse dimension has an index vector of unknown type " + std::to_string(type));
  }
  return Status::ok();
}

struct Level {
  bool dense = true;
  int64_t size = 0;  // of the dimension or block this level walks
  std::vector<int64_t> segments, indices;
};

// TFLite's FormatConverter walk: levels in traversal order, leaves take the stored values in turn.
class Densifier {
 public:
  Densifier(const Shape& shape, std::vector<int> order, std::vector<int> blockMap, std::vector<int64_t> blockSize,
            std::vector<Level> levels, size_t elementSize, const uint8_t* values, size_t valueCount, uint8_t* dense)
      : shape_(shape), order_(std::move(order)), blockMap_(std::move(blockMap)), blockSize_(std::move(blockSize)),
        levels_(std::move(levels)), elementSize_(elementSize), values_(values), valueCount_(valueCount), dense_(dense),
        position_(levels_.size()) {}

  Status run() {
    OSPREY_RETURN_IF_ERROR(walk(0, 0));
    if (consumed_ != valueCount_)
      return Status::invalidModel("its sparsity metadata places " + std::to_string(consumed_) + " of its " +
                                  std::to_string(valueCount_) + " stored values");
    return Status::ok();
  }

 private:
  Status walk(size_t level, int64_t previous) {
    if (level == levels_.size()) return place();
    const Level& l = levels_[level];
    if (l.dense) {
      for (int64_t i = 0; i < l.size; ++i) {
        position_[level] = i;
        OSPREY_RETURN_IF_ERROR(walk(level + 1, previous * l.size + i));
      }
      return Status::ok();
    }
    if (previous + 1 >= static_cast<int64_t>(l.segments.size()))
      return Status::invalidModel("sparse level " + std::to_string(level) + " has " + std::to_string(l.segments.size()) +
                                  " segments; the walk needs segment " + std::to_string(previous + 1));
    for (int64_t i = l.segments[previous]; i < l.segments[previous + 1]; ++i) {
      position_[level] = l.indices[i];
      OSPREY_RETURN_IF_ERROR(walk(level + 1, i));
    }
    return Status::ok();
  }

  Status place() {
    if (consumed_ >= valueCount_)
      return Status::invalidModel("its sparsity metadata places more values than the " + std::to_string(valueCount_) +
                                  " it stores");
    const size_t rank = shape_.size();
    std::vector<int64_t>& index = index_;  // reused: one per stored value would allocate per weight
    for (size_t i = 0; i < rank; ++i) index[order_[i]] = position_[i];
    for (size_t i = rank; i < levels_.size(); ++i) {
      const int block = order_[i] - static_cast<int>(rank);
      index[blockMap_[block]] = index[blockMap_[block]] * blockSize_[block] + position_[i];
    }
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat = flat * shape_[d] + index[d];
    std::memcpy(dense_ + flat * elementSize_, values_ + consumed_ * elementSize_, elementSize_);
    ++consumed_;
    return Status::ok();
  }

  const Shape& shape_;
  std::vector<int> order_, blockMap_;
  std::vector<int64_t> blockSize_;
  std::vector<Level> levels_;
  size_t elementSize_;
  const uint8_t* values_;
  size_t valueCount_;
  uint8_t* dense_;
  std::vector<int64_t> position_, index_ = std::vector<int64_t>(shape_.size());
  size_t consumed_ = 0;
};

bool isPermutation(const std::vector<int>& v, size_t begin, size_t end) {
  std::vector<bool> seen(end - begin, false);
  for (size_t i = begin; i < end; ++i) {
    if (v[i] < static_cast<int>(begin) || v[i] >= static_cast<int>(end) || seen[v[i] - begin]) return false;
    seen[v[i] - begin] = true;
  }
  return true;
}

Status densifyChecked(const tflite::SparsityParameters& sp, const Shape& shape, size_t elementSize,
                      const uint8_t* values, size_t valueBytes, std::vector<uint8_t>* dense) {
  const size_t rank = shape.size();
  std::vector<int> order, blockMap;
  if (sp.traversal_order()) order.assign(sp.traversal_order()->begin(), sp.traversal_order()->end());
  if (sp.block_map()) blockMap.assign(sp.block_map()->begin(), sp.block_map()->end());
  const size_t levelCount = order.size();
  const auto* metadata = sp.dim_metadata();
  if (levelCount < rank || levelCount > kMaxLevels || levelCount - rank != blockMap.size() || !metadata ||
      metadata->size() != levelCount)
    return Status::invalidModel("its sparsity has " + std::to_string(levelCount) + " traversal levels, " +
                                std::to_string(blockMap.size()) + " blocks and " +
                                std::to_string(metadata ? metadata->size() : 0) + " dimension entries for rank " +
                                std::to_string(rank));
  if (!isPermutation(order, 0, rank) || !isPermutation(order, rank, levelCount))
    return Status::invalidModel("its sparsity traversal order is not a permutation of its dimensions, then its blocks");
  for (int64_t d : shape)
    if (d < 0) return Status::invalidModel("a sparse constant needs a known shape");
  Shape blocked = shape;
  std::vector<int64_t> blockSize(blockMap.size());
  for (size_t b = 0; b < blockMap.size(); ++b) {
    if (blockMap[b] < 0 || blockMap[b] >= static_cast<int>(rank) || (b > 0 && blockMap[b] <= blockMap[b - 1]))
      return Status::invalidModel("its sparsity block map is not increasing dimensions");
    // TFLite reads a block's size from the entry that the traversal order names for it.
    const tflite::DimensionMetadata* m = metadata->Get(order[rank + b]);
    blockSize[b] = m ? m->dense_size() : 0;
    if (blockSize[b] <= 0 || shape[blockMap[b]] % blockSize[b] != 0)
      return Status::invalidModel("its block size " + std::to_string(blockSize[b]) + " does not divide dimension " +
                                  std::to_string(blockMap[b]) + " of " + shapeToString(shape));
    blocked[blockMap[b]] /= blockSize[b];
  }
  std::vector<Level> levels(levelCount);
  for (size_t l = 0; l < levelCount; ++l) {
    const tflite::DimensionMetadata* m = metadata->Get(static_cast<flatbuffers::uoffset_t>(l));
    if (!m) return Status::invalidModel("its sparsity dimension entry " + std::to_string(l) + " is null");
    Level& level = levels[l];
    level.size = l < rank ? blocked[order[l]] : blockSize[order[l] - rank];
    level.dense = m->format() == tflite::DimensionType_DENSE;
    const std::string where = "sparsity level " + std::to_string(l);
    if (level.dense) {
      if (m->dense_size() != level.size)
        return Status::invalidModel(where + " is dense of size " + std::to_string(m->dense_size()) + "; its dimension has " +
                                    std::to_string(level.size));
      continue;
    }
    if (m->format() != tflite::DimensionType_SPARSE_CSR)
      return Status::invalidModel(where + " has unknown format " + std::to_string(m->format()));
    OSPREY_RETURN_IF_ERROR(indexVector(*m, true, &level.segments).withContext(where));
    OSPREY_RETURN_IF_ERROR(indexVector(*m, false, &level.indices).withContext(where));
    for (size_t i = 0; i < level.segments.size(); ++i)
      if (level.segments[i] < 0 || (i > 0 && level.segments[i] < level.segments[i - 1]) ||
          level.segments[i] > static_cast<int64_t>(level.indices.size()))
        return Status::invalidModel(where + ": its segments must rise from 0 to at most its " +
                                    std::to_string(level.indices.size()) + " indices");
    for (int64_t index : level.indices)
      if (index < 0 || index >= level.size)
        return Status::invalidModel(where + ": index " + std::to_string(index) + " is outside its size " +
                                    std::to_string(level.size));
  }
  // Real sparse weights keep a tenth to a half of their elements; a file claiming far more
  // dense elements than it stores would only make the import allocate without bound.
  const size_t valueCount = valueBytes / elementSize;
  constexpr int64_t kMaxExpansion = 1024;
  if (!shapeBytesFit(shape, elementSize) ||
      shapeElements(shape) > kMaxExpansion * static_cast<int64_t>(valueCount) + (int64_t{1} << 16))
    return Status::invalidModel("its shape " + shapeToString(shape) + " is over " + std::to_string(kMaxExpansion) +
                                " times the " + std::to_string(valueCount) + " values it stores");
  dense->assign(static_cast<size_t>(shapeElements(shape)) * elementSize, 0);
  Densifier walker(shape, order, blockMap, blockSize, std::move(levels), elementSize, values, valueCount, dense->data());
  return walker.run();
}

}  // namespace

Status densify(const std::string& tensorName, const tflite::SparsityParameters& sparsity, const Shape& shape,
               size_t elementSize, const uint8_t* values, size_t valueBytes, std::vector<uint8_t>* dense) {
  Status st;
  if (elementSize == 0 || valueBytes % elementSize != 0)
    st = Status::invalidModel("its " + std::to_string(valueBytes) + " bytes of stored values are not whole elements");
  else
    st = densifyChecked(sparsity, shape, elementSize, values, valueBytes, dense);
  return st.withContext("sparse constant tensor '" + tensorName + "'");
}

}  // namespace osprey::tfl
