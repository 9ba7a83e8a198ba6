// The tensor-bundle reader (tensor_bundle.h).
#include "converter/tensorflow/tensor_bundle.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "converter/proto_wire.h"
#include "core/files.h"

namespace osprey::tf {

namespace {

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;       // two block handles padded to 40 bytes, then the magic
constexpr size_t kBlockTrailerSize = 5;  // compression type byte, masked CRC-32C
// Keys share prefixes with the key before them; bounding what they may expand to keeps a small
// hostile index from asking for gigabytes. Real indexes expand by less than 2x.
constexpr size_t kMaxExpansion = 8;
constexpr size_t kExpansionAllowance = size_t{1} << 20;

Status tableError(const std::string& file, const std::string& what) {
  return Status::invalidModel("malformed TensorFlow variables index " + file + ": " + what);
}

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

Status readHandle(const uint8_t* data, size_t& pos, size_t limit, const std::string& file, const char* which,
                  BlockHandle* out) {
  if (wire::readVarint(data, pos, limit, &out->offset) != wire::kVarintOk ||
      wire::readVarint(data, pos, limit, &out->size) != wire::kVarintOk)
    return tableError(file, std::string("the ") + which + " handle is cut short");
  return Status::ok();
}

// The contents of the block at `h`, after checking its trailer.
Status blockContents(const uint8_t* data, size_t size, const BlockHandle& h, const std::string& file,
                     const std::string& which, const uint8_t** begin, size_t* length) {
  if (h.offset > size || h.size > size - h.offset || size - h.offset - h.size < kBlockTrailerSize)
    return Status::invalidModel("truncated TensorFlow variables index " + file + ": the " + which + " block (" +
                                std::to_string(h.size) + " bytes at offset " + std::to_string(h.offset) +
                                ") ends past the end of the file (" + std::to_string(size) + " bytes)");
  const uint8_t* block = data + h.offset;
  const uint8_t type = block[h.size];
  if (type != 0)
    return Status::unsupported("TensorFlow variables index " + file + ": the " + which + " block is compressed (type " +
                               std::to_string(type) + "); Osprey reads uncompressed tables, as TensorFlow writes them");
  uint32_t stored = 0;
  std::memcpy(&stored, block + h.size + 1, 4);
  if (maskCrc32c(crc32c(block, static_cast<size_t>(h.size) + 1)) != stored)
    return tableError(file, "the checksum of the " + which + " block (offset " + std::to_string(h.offset) +
                                ") does not match its bytes");
  *begin = block;
  *length = static_cast<size_t>(h.size);
  return Status::ok();
}

// Calls fn(key, value) for each entry of a block.
template <class Fn>
Status eachBlockEntry(const uint8_t* block, size_t size, const std::string& file, const std::string& which,
                      size_t* budget, Fn&& fn) {
  if (size < 4) return tableError(file, "the " + which + " block is shorter than its restart count");
  uint32_t restarts = 0;
  std::memcpy(&restarts, block + size - 4, 4);
  if (restarts > (size - 4) / 4) return tableError(file, "the " + which + " block has more restart points than bytes");
  const size_t limit = size - 4 - size_t{restarts} * 4;
  std::string key;
  for (size_t pos = 0; pos < limit;) {
    uint64_t shared = 0, unshared = 0, valueLength = 0;
    const size_t at = pos;
    if (wire::readVarint(block, pos, limit, &shared) != wire::kVarintOk ||
        wire::readVarint(block, pos, limit, &unshared) != wire::kVarintOk ||
        wire::readVarint(block, pos, limit, &valueLength) != wire::kVarintOk)
      return tableError(file, "an entry of the " + which + " block is cut short (offset " + std::to_string(at) + ")");
    if (shared > key.size())
      return tableError(file, "an entry of the " + which + " block shares more of the previous key than it has");
    if (unshared > limit - pos || valueLength > limit - pos - unshared)
      return tableError(file, "an entry of the " + which + " block overruns it (offset " + std::to_string(at) + ")");
    if (shared + unshared + valueLength > *budget) return tableError(file, "its keys expand to too many bytes");
    *budget -= shared + unshared + valueLength;
    key.resize(shared);
    key.append(reinterpret_cast<const char*>(block + pos), unshared);
    pos += unshared;
    OSPREY_RETURN_IF_ERROR(fn(key, block + pos, static_cast<size_t>(valueLength)));
    pos += valueLength;
  }
  return Status::ok();
}

const std::array<uint32_t, 256>& crcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

using wire::Ctx;
using wire::Field;
using wire::FieldSpec;
using wire::MessageSpec;

constexpr FieldSpec kHeaderFields[] = {{1, "num_shards", wire::kVarint}, {2, "endianness", wire::kVarint}};
constexpr MessageSpec kHeader = {"BundleHeaderProto", kHeaderFields, 2};
constexpr FieldSpec kEntryFields[] = {{1, "dtype", wire::kVarint},  {2, "shape", wire::kLen},
                                      {3, "shard_id", wire::kVarint}, {4, "offset", wire::kVarint},
                                      {5, "size", wire::kVarint},   {6, "crc32c", wire::kFixed32},
                                      {7, "slices", wire::kLen}};
constexpr MessageSpec kEntry = {"BundleEntryProto", kEntryFields, 7};

template <class Fn>
Status eachField(const Ctx& c, const MessageSpec& spec, Fn&& fn) {
  wire::Reader r(c, spec, 0, c.size);
  Field f;
  for (;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    OSPREY_RETURN_IF_ERROR(fn(f));
  }
}

}  // namespace

uint32_t crc32c(const uint8_t* data, size_t size) {
  const auto& table = crcTable();
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ data[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t maskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

Status readSSTable(const uint8_t* data, size_t size, const std::string& file, std::vector<TableEntry>* out) {
  out->clear();
  if (size < kFooterSize)
    return Status::invalidModel("truncated TensorFlow variables index " + file + ": " + std::to_string(size) +
                                " bytes, shorter than a table's footer (48)");
  const uint8_t* footer = data + size - kFooterSize;
  uint64_t magic = 0;
  std::memcpy(&magic, footer + 40, 8);
  if (magic != kTableMagic)
    return tableError(file, "it does not end with the table magic number (a truncated or foreign file)");
  BlockHandle metaindex, index;
  size_t pos = 0;
  OSPREY_RETURN_IF_ERROR(readHandle(footer, pos, 40, file, "metaindex", &metaindex));
  OSPREY_RETURN_IF_ERROR(readHandle(footer, pos, 40, file, "index", &index));
  const uint8_t* indexBlock = nullptr;
  size_t indexSize = 0;
  OSPREY_RETURN_IF_ERROR(blockContents(data, size, metaindex, file, "metaindex", &indexBlock, &indexSize));
  OSPREY_RETURN_IF_ERROR(blockContents(data, size, index, file, "index", &indexBlock, &indexSize));
  size_t budget = kMaxExpansion * size + kExpansionAllowance;
  std::string lastKey;
  return eachBlockEntry(indexBlock, indexSize, file, "index", &budget,
                        [&](const std::string&, const uint8_t* value, size_t length) -> Status {
                          BlockHandle h;
                          size_t p = 0;
                          OSPREY_RETURN_IF_ERROR(readHandle(value, p, length, file, "data block", &h));
                          const uint8_t* block = nullptr;
                          size_t blockSize = 0;
                          OSPREY_RETURN_IF_ERROR(blockContents(data, size, h, file, "data", &block, &blockSize));
                          return eachBlockEntry(block, blockSize, file, "data", &budget,
                                                [&](const std::string& key, const uint8_t* v, size_t n) -> Status {
                                                  if (!out->empty() && key <= lastKey)
                                                    return tableError(file, "its keys are not in order at '" + key + "'");
                                                  lastKey = key;
                                                  out->push_back({key, std::string(reinterpret_cast<const char*>(v), n)});
                                                  return Status::ok();
                                                });
                        });
}

Status TensorBundle::parseIndex(const uint8_t* data, size_t size, const std::string& file) {
  entries_.clear();
  std::vector<TableEntry> table;
  OSPREY_RETURN_IF_ERROR(readSSTable(data, size, file, &table));
  bool header = false;
  for (const TableEntry& e : table) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(e.value.data());
    if (e.key.empty()) {
      header = true;
      Ctx c{bytes, e.value.size(), "TensorFlow bundle header", 4};
      int64_t endianness = 0, shards = 1;
      OSPREY_RETURN_IF_ERROR_IN(eachField(c, kHeader, [&](const Field& f) {
                                  (f.spec->number == 1 ? shards : endianness) = static_cast<int64_t>(f.bits);
                                  return Status::ok();
                                }),
                                file);
      if (endianness != 0)
        return Status::unsupported("TensorFlow variables index " + file + ": the bundle is big-endian");
      if (shards < 1 || shards > 99999) return tableError(file, std::to_string(shards) + " shards");
      numShards_ = static_cast<int32_t>(shards);
      continue;
    }
    BundleEntry entry;
    Ctx c{bytes, e.value.size(), "TensorFlow bundle entry", 4};
    Status st = eachField(c, kEntry, [&](const Field& f) -> Status {
      switch (f.spec->number) {
        case 1: entry.dtype = static_cast<int32_t>(f.bits); return Status::ok();
        case 2: return parseTensorShape(bytes + f.begin, f.end - f.begin, "TensorFlow bundle entry shape", &entry.shape);
        case 3: entry.shardId = static_cast<int32_t>(f.bits); return Status::ok();
        case 4: entry.offset = static_cast<int64_t>(f.bits); return Status::ok();
        case 5: entry.size = static_cast<int64_t>(f.bits); return Status::ok();
        case 6: entry.maskedCrc32c = static_cast<uint32_t>(f.bits); return Status::ok();
        default: entry.sliced = true; return Status::ok();
      }
    });
    OSPREY_RETURN_IF_ERROR_IN(st.withContext("entry '" + e.key + "'"), file);
    if (entry.offset < 0 || entry.size < 0)
      return tableError(file, "entry '" + e.key + "' has a negative offset or size");
    entries_[e.key] = std::move(entry);
  }
  if (!header) return tableError(file, "it has no bundle header (the entry of the empty key)");
  for (const auto& [key, entry] : entries_)
    if (!entry.sliced && (entry.shardId < 0 || entry.shardId >= numShards_))
      return tableError(file, "entry '" + key + "' is in shard " + std::to_string(entry.shardId) + " of " +
                                  std::to_string(numShards_));
  return Status::ok();
}

Status TensorBundle::open(const std::string& prefix, TensorBundle* out) {
  const std::string index = prefix + ".index";
  std::vector<uint8_t> bytes;
  OSPREY_RETURN_IF_ERROR(readFile(index, &bytes));
  out->prefix_ = prefix;
  return out->parseIndex(bytes.data(), bytes.size(), index);
}

std::string TensorBundle::shardPath(int32_t shard) const {
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, ".data-%05d-of-%05d", static_cast<int>(shard), static_cast<int>(numShards_));
  return prefix_ + suffix;
}

Status TensorBundle::decode(const std::string& key, const BundleEntry& entry, const uint8_t* data, size_t size,
                            const std::string& shard, TfTensor* out) {
  const std::string label = "variable '" + key + "' in " + shard;
  if (entry.sliced) return Status::unsupported(label + " is saved in slices (a partitioned variable)");
  const DataType dt = dataTypeOf(entry.dtype);
  if (dt == DataType::Undefined || dt == DataType::String)
    return Status::unsupported(label + " is of type " + tfTypeName(entry.dtype));
  if (entry.shape.unknownRank) return Status::invalidModel(label + " has an unknown rank");
  out->tfType = entry.dtype;
  out->shape.clear();
  for (int64_t d : entry.shape.dims) {
    if (d < 0) return Status::invalidModel(label + " has an unknown dimension");
    out->shape.push_back(d);
  }
  if (!shapeBytesFit(out->shape, dataTypeSize(dt)))
    return Status::invalidModel(label + ": shape " + shapeToString(out->shape) + " is too large");
  const uint64_t expected = static_cast<uint64_t>(shapeElements(out->shape)) * dataTypeSize(dt);
  if (expected != static_cast<uint64_t>(entry.size) || size != expected)
    return Status::invalidModel(label + ": " + std::to_string(entry.size) + " bytes do not hold " + tfTypeName(entry.dtype) +
                                " " + shapeToString(out->shape));
  if (maskCrc32c(crc32c(data, size)) != entry.maskedCrc32c)
    return Status::invalidModel(label + ": the checksum does not match its bytes (a damaged shard)");
  out->bytes.assign(data, data + size);
  return Status::ok();
}

Status TensorBundle::read(const std::string& key, TfTensor* out) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) return Status::notFound("the variables index " + prefix_ + ".index has no entry '" + key + "'");
  const BundleEntry& entry = it->second;
  const std::string shard = shardPath(entry.shardId);
  std::error_code ec;
  const uintmax_t fileSize = std::filesystem::file_size(shard, ec);
  if (ec) return Status::notFound("cannot read TensorFlow variables shard " + shard + " (for '" + key + "'): " + ec.message());
  if (static_cast<uint64_t>(entry.offset) > fileSize || static_cast<uint64_t>(entry.size) > fileSize - entry.offset)
    return Status::invalidModel("truncated TensorFlow variables shard " + shard + ": variable '" + key + "' needs bytes [" +
                                std::to_string(entry.offset) + ", " + std::to_string(entry.offset + entry.size) +
                                ") of " + std::to_string(fileSize));
  std::vector<uint8_t> bytes(static_cast<size_t>(entry.size));
  std::ifstream file(shard, std::ios::binary);
  file.seekg(entry.offset);
  if (!file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())))
    return Status::notFound("cannot read TensorFlow variables shard " + shard + " (for '" + key + "')");
  return decode(key, entry, bytes.data(), bytes.size(), shard, out);
}

}  // namespace osprey::tf
