// Protobuf wire format, read by hand and bounds-checked: the layer under the frontends' readers
// of protobuf files (ONNX models, Caffe weights). A message is walked with Reader, which skips
// fields its MessageSpec does not name and turns any overrun into "truncated ..." (the buffer
// ended) or "malformed ..." (a length inside disagrees with its enclosing message).
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>

#include "osprey/status.h"

namespace osprey::wire {

constexpr uint64_t kMaxFieldNumber = (1u << 29) - 1;

enum Wire : uint8_t { kVarint = 0, kFixed64 = 1, kLen = 2, kGroupStart = 3, kGroupEnd = 4, kFixed32 = 5 };

// How a field Osprey reads is encoded. A repeated scalar may also arrive packed (as kLen).
struct FieldSpec {
  uint32_t number;
  const char* name;
  Wire wire;
  bool packable = false;
};
struct MessageSpec {
  const char* name;
  const FieldSpec* fields;
  size_t count;
  const FieldSpec* find(uint32_t n) const {
    for (size_t i = 0; i < count; ++i)
      if (fields[i].number == n) return &fields[i];
    return nullptr;
  }
};

// State of one parse call: the whole buffer (offsets in messages are into it) and the depth.
struct Ctx {
  const uint8_t* buf;
  size_t size;
  const char* what;  // "ONNX model", "ONNX tensor", "Caffe weights"
  int maxDepth;      // nesting limit, so hostile input cannot exhaust the stack
  int depth = 0;

  Status malformed(const std::string& detail, size_t offset) const {
    return Status::invalidModel("malformed " + std::string(what) + ": " + detail + " (offset " +
                                std::to_string(offset) + ")");
  }
  // `item` ran past `limit`: if that is the end of the buffer the input was cut short,
  // otherwise a length inside the message is wrong.
  Status overrun(const std::string& item, size_t offset, size_t limit) const {
    if (limit == size)
      return Status::invalidModel("truncated " + std::string(what) + ": " + item +
                                  " ends past end of buffer (offset " + std::to_string(offset) + ")");
    return malformed(item + " overruns its enclosing message", offset);
  }
  std::string str(size_t begin, size_t end) const {
    return std::string(reinterpret_cast<const char*>(buf) + begin, end - begin);
  }
};

enum VarintResult { kVarintOk, kVarintOverrun, kVarintTooLong };

inline VarintResult readVarint(const uint8_t* buf, size_t& pos, size_t limit, uint64_t* v) {
  uint64_t r = 0;
  for (int shift = 0; shift <= 63; shift += 7) {
    if (pos >= limit) return kVarintOverrun;
    uint8_t b = buf[pos++];
    r |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return kVarintOk;
    }
  }
  return kVarintTooLong;
}

inline std::string fieldLabel(const MessageSpec& m, uint32_t number, const FieldSpec* spec) {
  if (spec) return "field '" + std::string(spec->name) + "' (" + m.name + ")";
  return "field #" + std::to_string(number) + " (" + m.name + ")";
}

struct Field {
  const FieldSpec* spec = nullptr;  // nullptr: the message has no more fields
  const MessageSpec* msg = nullptr;
  Wire wire = kVarint;
  uint64_t bits = 0;          // a varint's value, or a fixed32/fixed64's bits
  size_t begin = 0, end = 0;  // a length-delimited payload
  size_t offset = 0;          // where the field's tag starts

  std::string label() const { return fieldLabel(*msg, spec->number, spec); }
};

class Reader {
 public:
  Reader(const Ctx& c, const MessageSpec& m, size_t begin, size_t end) : c_(c), m_(m), pos_(begin), end_(end) {}

  // Moves to the next field the spec names, skipping (but still bounds-checking) others.
  Status next(Field* f) {
    while (pos_ < end_) {
      size_t start = pos_;
      uint64_t tag = 0;
      if (VarintResult r = readVarint(c_.buf, pos_, end_, &tag); r != kVarintOk)
        return varintError(r, std::string("field tag (") + m_.name + ")", start);
      uint64_t number = tag >> 3;
      if (number == 0 || number > kMaxFieldNumber)
        return c_.malformed("invalid field number " + std::to_string(number) + " in " + m_.name, start);
      const FieldSpec* spec = m_.find(static_cast<uint32_t>(number));
      auto label = [&] { return fieldLabel(m_, static_cast<uint32_t>(number), spec); };
      Wire wire = static_cast<Wire>(tag & 7);
      switch (wire) {
        case kVarint:
          if (VarintResult r = readVarint(c_.buf, pos_, end_, &f->bits); r != kVarintOk)
            return varintError(r, label(), start);
          break;
        case kFixed64:
        case kFixed32: {
          size_t n = wire == kFixed64 ? 8 : 4;
          if (end_ - pos_ < n) return c_.overrun(label(), start, end_);
          uint64_t bits = 0;
          std::memcpy(&bits, c_.buf + pos_, n);
          f->bits = bits;
          pos_ += n;
          break;
        }
        case kLen: {
          uint64_t len = 0;
          if (VarintResult r = readVarint(c_.buf, pos_, end_, &len); r != kVarintOk)
            return varintError(r, "length of " + label(), start);
          if (len > end_ - pos_) return c_.overrun(label(), start, end_);
          f->begin = pos_;
          f->end = pos_ + static_cast<size_t>(len);
          pos_ = f->end;
          break;
        }
        case kGroupStart:
        case kGroupEnd:
          return Status::unsupported(std::string(c_.what) + ": " + label() +
                                     " uses protobuf groups (wire type " + std::to_string(wire) +
                                     "), which Osprey does not read (offset " + std::to_string(start) + ")");
        default:
          return c_.malformed(label() + " has invalid wire type " + std::to_string(wire), start);
      }
      if (!spec) continue;
      if (wire != spec->wire && !(spec->packable && wire == kLen))
        return c_.malformed(label() + " has wire type " + std::to_string(wire) + ", expected " +
                                std::to_string(spec->wire),
                            start);
      f->spec = spec;
      f->msg = &m_;
      f->wire = wire;
      f->offset = start;
      return Status::ok();
    }
    f->spec = nullptr;
    return Status::ok();
  }

 private:
  Status varintError(VarintResult r, const std::string& item, size_t start) const {
    if (r == kVarintOverrun) return c_.overrun(item, start, end_);
    return c_.malformed(item + ": varint longer than 10 bytes", start);
  }

  const Ctx& c_;
  const MessageSpec& m_;
  size_t pos_, end_;
};

// Calls fn(bits) for each element of a repeated scalar field, whether packed or not.
template <class Fn>
Status forEachScalar(const Ctx& c, const Field& f, Fn&& fn) {
  if (f.wire != kLen) {
    fn(f.bits);
    return Status::ok();
  }
  if (f.spec->wire == kVarint) {
    for (size_t pos = f.begin; pos < f.end;) {
      uint64_t v = 0;
      size_t at = pos;
      VarintResult r = readVarint(c.buf, pos, f.end, &v);
      if (r == kVarintOverrun) return c.overrun("packed " + f.label(), at, f.end);
      if (r == kVarintTooLong) return c.malformed("packed " + f.label() + ": varint longer than 10 bytes", at);
      fn(v);
    }
    return Status::ok();
  }
  size_t n = f.spec->wire == kFixed64 ? 8 : 4;
  if ((f.end - f.begin) % n != 0)
    return c.malformed("packed " + f.label() + " is " + std::to_string(f.end - f.begin) +
                           " bytes, not a multiple of " + std::to_string(n),
                       f.offset);
  for (size_t pos = f.begin; pos < f.end; pos += n) {
    uint64_t bits = 0;
    std::memcpy(&bits, c.buf + pos, n);
    fn(bits);
  }
  return Status::ok();
}

// Runs parse(begin, end) on a nested message, refusing to go deeper than c.maxDepth.
template <class Fn>
Status nested(Ctx& c, const Field& f, Fn&& parse) {
  if (c.depth >= c.maxDepth)
    return c.malformed("messages nested more than " + std::to_string(c.maxDepth) + " levels deep at " +
                           f.label(),
                       f.offset);
  ++c.depth;
  Status s = parse(f.begin, f.end);
  --c.depth;
  return s;
}

inline float bitsToFloat(uint64_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits)); }
inline double bitsToDouble(uint64_t bits) { return std::bit_cast<double>(bits); }

}  // namespace osprey::wire
