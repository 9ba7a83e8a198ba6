// The .npy format: magic "\x93NUMPY", version, header length, then a Python dict literal
// such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces
// and a newline, then the raw elements. The dict is parsed by a tiny literal parser rather
// than by pattern matching, so reordered keys or odd spacing still read and junk does not.
#include "core/npy.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <string_view>

namespace osprey {
namespace {

static_assert(std::endian::native == std::endian::little, "npy data is copied as little-endian bytes");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct NpyCode {
  DataType type;
  const char* code;  // kind letter + element size, without the byte-order character
};
constexpr NpyCode kCodes[] = {
    {DataType::Float32, "f4"}, {DataType::Float16, "f2"}, {DataType::Float64, "f8"}, {DataType::Int8, "i1"},
    {DataType::Int16, "i2"},   {DataType::Int32, "i4"},   {DataType::Int64, "i8"},   {DataType::UInt8, "u1"},
    {DataType::UInt16, "u2"},  {DataType::UInt32, "u4"},  {DataType::UInt64, "u8"},  {DataType::Bool, "b1"},
};

Status parseDescr(const std::string& descr, DataType* out) {
  if (descr.size() == 3) {
    char order = descr[0];
    std::string_view code(descr.data() + 1, 2);
    for (const NpyCode& c : kCodes) {
      if (code != c.code) continue;
      // '|' (not applicable) and '=' (native, little here) are as good as '<'; a single
      // byte has no order, so even '>' is fine for it.
      if (order == '<' || order == '|' || order == '=' || (order == '>' && dataTypeSize(c.type) == 1)) {
        *out = c.type;
        return Status::ok();
      }
      if (order == '>')
        return Status::unsupported(".npy dtype '" + descr + "' is big-endian; only little-endian is supported");
    }
  }
  return Status::unsupported(".npy dtype '" + descr +
                             "' is not supported (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, little-endian)");
}

// Parses the header dict. Only the three keys numpy writes are accepted, each exactly once.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  Status parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!consume('{')) return error("expected '{'");
    for (;;) {
      skipSpace();
      if (consume('}')) break;
      std::string key;
      OSPREY_RETURN_IF_ERROR(string(&key));
      skipSpace();
      if (!consume(':')) return error("expected ':' after '" + key + "'");
      skipSpace();
      bool* seen = nullptr;
      if (key == "descr") {
        if (peek() == '[') return Status::unsupported(".npy file holds a structured dtype; only plain numeric arrays are supported");
        OSPREY_RETURN_IF_ERROR(string(descr));
        seen = &haveDescr;
      } else if (key == "fortran_order") {
        OSPREY_RETURN_IF_ERROR(boolean(fortran));
        seen = &haveFortran;
      } else if (key == "shape") {
        OSPREY_RETURN_IF_ERROR(tuple(shape));
        seen = &haveShape;
      } else {
        return error("unknown key '" + key + "'");
      }
      if (*seen) return error("key '" + key + "' appears twice");
      *seen = true;
      skipSpace();
      if (consume(',')) continue;
      if (consume('}')) break;
      return error("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != s_.size()) return error("unexpected text after the dict");
    if (!haveDescr || !haveFortran || !haveShape)
      return error(std::string("missing key '") + (!haveDescr ? "descr" : !haveFortran ? "fortran_order" : "shape") + "'");
    return Status::ok();
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  Status error(const std::string& what) const {
    return Status::invalidArgument("corrupt .npy header: " + what + " (header position " + std::to_string(pos_) + ")");
  }
  Status string(std::string* out) {
    char q = peek();
    if (q != '\'' && q != '"') return error("expected a quoted string");
    size_t close = s_.find(q, pos_ + 1);
    if (close == std::string_view::npos) return error("unterminated string");
    *out = std::string(s_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
    return Status::ok();
  }
  Status boolean(bool* out) {
    for (std::string_view word : {"True", "False"}) {
      if (s_.substr(pos_, word.size()) == word) {
        *out = word == "True";
        pos_ += word.size();
        return Status::ok();
      }
    }
    return error("expected True or False");
  }
  // "(2, 3)", "(3,)", "()"; a trailing 'L' is how Python 2 wrote long integers.
  Status tuple(std::vector<int64_t>* out) {
    out->clear();
    if (!consume('(')) return error("expected '(' for shape");
    for (;;) {
      skipSpace();
      if (consume(')')) return Status::ok();
      if (peek() < '0' || peek() > '9') return error("expected a non-negative integer in shape");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        int d = peek() - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return error("shape dimension too large");
        v = v * 10 + d;
        ++pos_;
      }
      consume('L');
      out->push_back(v);
      skipSpace();
      if (consume(',')) continue;
      skipSpace();
      if (consume(')')) return Status::ok();
      return error("expected ',' or ')' in shape");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

uint32_t readLE(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}

Status readNpyImpl(const uint8_t* b, size_t size, NpyArray* out) {
  if (size < kMagicLen + 4) return Status::invalidArgument("not a .npy file: only " + std::to_string(size) + " bytes");
  if (std::memcmp(b, kMagic, kMagicLen) != 0) return Status::invalidArgument("not a .npy file: bad magic bytes");
  int major = b[6], minor = b[7];
  // Version 1 has a 2-byte header length; 2 and 3 a 4-byte one (3 only allows UTF-8 text).
  size_t lenBytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
  if (lenBytes == 0 || minor != 0)
    return Status::unsupported(".npy format version " + std::to_string(major) + "." + std::to_string(minor) + " is not supported");
  size_t headerStart = kMagicLen + 2 + lenBytes;
  if (size < headerStart) return Status::invalidArgument("truncated .npy file: header length cut off");
  size_t headerLen = readLE(b + 8, lenBytes);
  if (headerLen > size - headerStart)
    return Status::invalidArgument("truncated .npy file: header of " + std::to_string(headerLen) + " bytes ends past end of file (" +
                                   std::to_string(size) + " bytes)");

  std::string descr;
  bool fortran = false;
  NpyArray a;
  std::string_view header(reinterpret_cast<const char*>(b + headerStart), headerLen);
  OSPREY_RETURN_IF_ERROR(HeaderParser(header).parse(&descr, &fortran, &a.shape));
  OSPREY_RETURN_IF_ERROR(parseDescr(descr, &a.dtype));
  int64_t n = shapeElements(a.shape);
  size_t longDims = 0;  // with at most one dim above 1, Fortran and C order are the same bytes
  for (int64_t d : a.shape) longDims += d > 1;
  if (fortran && longDims > 1 && n > 0)
    return Status::unsupported(".npy array " + shapeToString(a.shape) + " is in Fortran order; save it C-ordered (np.ascontiguousarray)");
  size_t es = dataTypeSize(a.dtype);
  if (n < 0 || static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / es)
    return Status::invalidArgument("corrupt .npy header: shape " + shapeToString(a.shape) + " is too large");
  size_t bytes = static_cast<size_t>(n) * es;
  size_t dataStart = headerStart + headerLen;
  // Trailing bytes are allowed, as np.load allows them (several arrays saved into one file).
  if (bytes > size - dataStart)
    return Status::invalidArgument("truncated .npy file: " + std::string(dataTypeName(a.dtype)) + " " + shapeToString(a.shape) +
                                   " needs " + std::to_string(bytes) + " bytes of data, file has " + std::to_string(size - dataStart));
  a.data.assign(b + dataStart, b + dataStart + bytes);
  *out = std::move(a);
  return Status::ok();
}

template <class Fn>
Status guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Status::outOfMemory("out of memory while handling a .npy file");
  } catch (const std::exception& e) {
    return Status::internal(std::string("unexpected error while handling a .npy file: ") + e.what());
  }
}

}  // namespace

Status readNpyBytes(const uint8_t* bytes, size_t size, NpyArray* out) {
  if (!out) return Status::invalidArgument("readNpyBytes: null output");
  *out = NpyArray();
  if (!bytes && size) return Status::invalidArgument("readNpyBytes: null data");
  return guarded([&] { return readNpyImpl(bytes, size, out); });
}

Status readNpy(const std::string& path, NpyArray* out) {
  if (!out) return Status::invalidArgument("readNpy: null output");
  *out = NpyArray();
  return guarded([&]() -> Status {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return Status::notFound("cannot open '" + path + "': no such file");
    uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) return Status::invalidArgument("cannot read '" + path + "': " + ec.message());
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    std::ifstream in(path, std::ios::binary);
    if (!in || (size && !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size))))
      return Status::invalidArgument("cannot read '" + path + "'");
    return readNpyImpl(bytes.data(), bytes.size(), out).withContext(path);
  });
}

Status writeNpy(const std::string& path, DataType dtype, const std::vector<int64_t>& shape, const void* data) {
  const char* code = nullptr;
  for (const NpyCode& c : kCodes)
    if (c.type == dtype) code = c.code;
  if (!code)
    return Status::unsupported(std::string("cannot write ") + dataTypeName(dtype) + " to .npy: NumPy has no such dtype" +
                               (dtype == DataType::BFloat16 ? " (convert bfloat16 to float32 first)" : ""));
  int64_t n = shapeElements(shape);
  size_t es = dataTypeSize(dtype);
  if (n < 0 || static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / es)
    return Status::invalidArgument("writeNpy: invalid shape " + shapeToString(shape));
  size_t bytes = static_cast<size_t>(n) * es;
  if (!data && bytes) return Status::invalidArgument("writeNpy: null data for shape " + shapeToString(shape));

  return guarded([&]() -> Status {
    // Written as numpy writes it, so files are byte-identical to np.save's.
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ",";
    std::string header = std::string("{'descr': '") + (es == 1 ? '|' : '<') + code + "', 'fortran_order': False, 'shape': (" + dims + "), }";
    // Pad so the data starts 64-byte aligned (numpy's choice, lets readers map it directly).
    size_t preamble = header.size() + 1 > 65535 - 64 ? 12 : 10;
    size_t total = preamble + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string pre(kMagic, kMagicLen);
    pre += static_cast<char>(preamble == 10 ? 1 : 2);
    pre += '\0';
    for (size_t i = 0; i < preamble - 8; ++i) pre += static_cast<char>((header.size() >> (8 * i)) & 0xff);

    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return Status::invalidArgument("cannot open '" + path + "' for writing: " + std::strerror(errno));
    bool ok = std::fwrite(pre.data(), 1, pre.size(), f) == pre.size() &&
              std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
              (bytes == 0 || std::fwrite(data, 1, bytes, f) == bytes);
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) return Status::invalidArgument("cannot write '" + path + "': " + std::strerror(errno));
    return Status::ok();
  });
}

}  // namespace osprey
