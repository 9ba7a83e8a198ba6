// TensorFlow's tensor bundle (a SavedModel's variables/ folder, a TF2 checkpoint): an index
// file, which is an SSTable (leveldb's table format) mapping each tensor's key to a
// BundleEntryProto, and data shards holding the tensors' bytes. Every offset and length read
// from the files is checked against what was read, so a damaged bundle is an error naming the
// file, never a crash (fuzz/tensorflow_bundle_fuzz.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "converter/tensorflow/tf_proto.h"

namespace osprey::tf {

struct TableEntry {
  std::string key;
  std::string value;
};

// Every entry of an SSTable held whole in `data`, in key order. `file` names it in errors.
// Blocks compressed with snappy (TensorFlow writes none) are refused.
Status readSSTable(const uint8_t* data, size_t size, const std::string& file, std::vector<TableEntry>* out);

// CRC-32C (Castagnoli), as leveldb and the bundle's entries use it; masked as they store it.
uint32_t crc32c(const uint8_t* data, size_t size);
uint32_t maskCrc32c(uint32_t crc);

// Where one tensor of the bundle lies.
struct BundleEntry {
  int32_t dtype = DT_INVALID;
  TensorShape shape;
  int32_t shardId = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t maskedCrc32c = 0;
  bool sliced = false;  // saved in slices (partitioned variables), which Osprey does not join
};

class TensorBundle {
 public:
  // Reads `prefix`.index ("dir/variables/variables.index"); the shards are read as tensors are.
  static Status open(const std::string& prefix, TensorBundle* out);
  // Parses index bytes; `file` names the index in errors (what open() and the fuzzer call).
  Status parseIndex(const uint8_t* data, size_t size, const std::string& file);

  const std::map<std::string, BundleEntry>& entries() const { return entries_; }
  int32_t numShards() const { return numShards_; }
  std::string shardPath(int32_t shard) const;
  // Reads the tensor `key` from its shard, checking its size and checksum.
  Status read(const std::string& key, TfTensor* out) const;
  // The tensor of `entry` from the bytes of its shard (`shard` names the file in errors).
  static Status decode(const std::string& key, const BundleEntry& entry, const uint8_t* data, size_t size,
                       const std::string& shard, TfTensor* out);

 private:
  std::string prefix_;
  int32_t numShards_ = 1;
  std::map<std::string, BundleEntry> entries_;
};

}  // namespace osprey::tf
